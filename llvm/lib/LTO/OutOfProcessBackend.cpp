//===- OutOfProcessBackend.cpp - ThinLTO backend jobs run by a distributor ===//
//
// Our implementation of llvm::lto::createOutOfProcessThinBackend. After the
// thin link, LTO calls start() once per ThinLTO module and then wait(). The
// backend is a short pipeline:
//
//   start()  per module, on the thread pool: look the module up in the
//            ThinLTO cache (a hit goes to the link at once), else write its
//            index shard and make a job. A streaming distributor
//            (docs/manifest.md) gets the job right away, started with the
//            first; a local slot of the linker's may take it instead.
//   wait()   one-shot: write the copies of archive members the jobs read
//            (and, for dtlto-backend, the LTO configuration and the combined
//            index), the manifest (in task order, as LLVM does) and its side
//            file, and start the distributor. Then, until every job has its
//            object or the distributor has exited: objects the distributor
//            reports done (event channel) are checked and linked as they
//            come; free local slots take jobs the farm has not started, and
//            run again jobs that take far longer than their size predicts
//            (hedging; the first good object wins). When the distributor has
//            exited, every object it left is checked, and each job still
//            without one is compiled here, by LLVM's in-process ThinLTO
//            backend from the modules and index already in memory: a
//            failing farm costs time, not the build.
//
// A job's object reaches the link exactly once, from whichever source gives
// a good one first (finishJob).
//
// Every temporary file is registered before it is created and removed when
// the backend is destroyed (or by the signal handler), unless --save-temps.
//
//===----------------------------------------------------------------------===//

#include "dtlto/BackendConfig.h"
#include "dtlto/Cache.h"
#include "dtlto/Distributor.h"
#include "dtlto/Events.h"
#include "dtlto/LinkReport.h"
#include "dtlto/Manifest.h"
#include "dtlto/ObjectCheck.h"
#include "dtlto/Options.h"
#include "dtlto/Plugin.h"
#include "dtlto/PluginHost.h"
#include "dtlto/PreparedInputs.h"
#include "dtlto/Shards.h"
#include "dtlto/TempFiles.h"
#include "dtlto/WorkerTrace.h"
#include "dtlto/WriteFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/LTO/LTO.h"
#include "llvm/LTO/LTOBackend.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/TimeProfiler.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <queue>
#include <unistd.h>

using namespace llvm;
using namespace llvm::lto;
using namespace dtlto;

namespace {

/// What the linker told us, copied: LLD's strings need not outlive the call
/// that creates the backend.
struct Settings {
  IndexWriteCallback OnWrite;
  bool ShouldEmitIndexFiles = false;
  bool ShouldEmitImportsFiles = false;
  std::string LinkerOutputFile;
  std::string Distributor;
  std::vector<std::string> DistributorArgs;
  std::string RemoteCompiler;
  std::vector<std::string> RemoteCompilerPrependArgs;
  std::vector<std::string> RemoteCompilerArgs;
  bool SaveTemps = false;
};

static std::vector<std::string> toStrings(ArrayRef<StringRef> Refs) {
  return std::vector<std::string>(Refs.begin(), Refs.end());
}

using Clock = std::chrono::steady_clock;
static double secondsSince(Clock::time_point Start) {
  return std::chrono::duration<double>(Clock::now() - Start).count();
}

/// When an event says it happened (its "t", the distributor's clock, which
/// is this machine's), on our clock; not before Floor, and not after now.
/// An event without a time, or one from the future, happened now. A
/// distributor that learns of several jobs at once (batch workers that reply
/// in groups) says when each started and ended, and the hedging rate needs
/// those times, not when the news came.
static Clock::time_point whenSaid(const JobEvent &E, Clock::time_point Floor) {
  Clock::time_point Now = Clock::now();
  if (!E.Time)
    return Now;
  double Ago = std::chrono::duration<double>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count() -
               *E.Time;
  if (Ago <= 0)
    return Now;
  return std::max(Floor, Now - std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(Ago)));
}

static Error makeError(const Twine &Msg) {
  return createStringError(inconvertibleErrorCode(), Msg);
}

/// A time-trace scope of ours, finer than LLVM's own DTLTO scopes (which we
/// record under LLVM's names); not recorded in upstream-compatible mode, so
/// that its traces hold LLVM's scopes alone.
class ExtraScope {
  TimeTraceProfilerEntry *Entry = nullptr;

public:
  ExtraScope(bool Compat, StringRef Name, StringRef Detail = "") {
    if (!Compat && getTimeTraceProfilerInstance())
      Entry = timeTraceProfilerBegin(Name, Detail);
  }
  ~ExtraScope() {
    if (Entry)
      timeTraceProfilerEnd(Entry);
  }
  ExtraScope(const ExtraScope &) = delete;
  ExtraScope &operator=(const ExtraScope &) = delete;
};

/// Where a job's object came from.
enum class Source { None, Cache, Farm, LocalSlot, Hedge, Fallback };

/// The same, as the link report names it.
static ReportSource reported(Source From) {
  switch (From) {
  case Source::None:
    return ReportSource::None;
  case Source::Cache:
    return ReportSource::Cache;
  case Source::Farm:
    return ReportSource::Distributor;
  case Source::LocalSlot:
    return ReportSource::LocalSlot;
  case Source::Hedge:
    return ReportSource::Hedge;
  case Source::Fallback:
    return ReportSource::Fallback;
  }
  return ReportSource::None;
}

/// The state of one module's backend compilation.
struct JobState {
  Job J;
  bool Started = false;
  bool CacheHit = false;
  /// Set on a cache miss: the entry the verified object is stored in, and
  /// why it could not be, if it could not.
  std::string CacheEntry;
  std::string CacheWriteFailure;
  std::vector<RequiredSymbol> RequiredSymbols;
  /// With a plugin: the index shard, never written to a file, until the
  /// job is handed over (then it goes with the job's frame, or is dropped
  /// for a local slot).
  SmallString<0> Shard;
  /// What compiling the job in the linker needs.
  std::optional<BitcodeModule> Module;
  const FunctionImporter::ImportMapTy *ImportList = nullptr;
  const GVSummaryMapTy *DefinedGlobals = nullptr;
  /// Why the job is compiled in the linker after the farm; empty when not.
  std::string FallbackReason;
  /// What went wrong with the job (the first thing), and the warnings it
  /// drew, reported on the main thread in job order once no other thread
  /// runs, whichever thread got there first.
  std::string Failure;
  std::vector<std::string> Warnings;

  // Scheduling, guarded by the backend's Mu once the job is made.
  Source From = Source::None; // set when its object is in the link
  bool Handed = false;        // given to the distributor, as job Id
  uint64_t Id = 0;
  bool FarmStarted = false; // it said so on the event channel
  bool FarmGaveUp = false;  // it failed for good, or its object was bad
  bool LocalCopy = false;   // a local slot runs (or ran) it
  bool Cancelled = false;   // the farm was told it need not run it
  Clock::time_point HandedAt, FarmStartedAt;
  bool finished() const { return From != Source::None; }
  /// Since when the farm has had it: its start, as said, or its hand-over.
  Clock::time_point farmSince() const {
    return FarmStarted ? FarmStartedAt : HandedAt;
  }
};

class OutOfProcessBackend : public ThinBackendProc {
public:
  OutOfProcessBackend(const Config &Conf, ModuleSummaryIndex &CombinedIndex,
                      const DenseMap<StringRef, GVSummaryMapTy> &DefinedGVs,
                      AddStreamFn AddStream, FileCache Cache,
                      ThreadPoolStrategy Parallelism, const Settings &S)
      : ThinBackendProc(Conf, CombinedIndex, DefinedGVs, S.OnWrite,
                        S.ShouldEmitImportsFiles, Parallelism),
        S(S), AddStream(std::move(AddStream)), Cache(std::move(Cache)),
        Temps(S.SaveTemps) {
    // Keeps DTLTO cache entries apart from in-process ones.
    Conf.Dtlto = true;
    for (GlobalValue::GUID G : CombinedIndex.cfiFunctionDefs().guids())
      CfiFunctionDefs.insert(G);
    for (GlobalValue::GUID G : CombinedIndex.cfiFunctionDecls().guids())
      CfiFunctionDecls.insert(G);
  }

  void setup(unsigned NumTasks, unsigned TaskOffset, Triple TT) override {
    this->TaskOffset = TaskOffset;
    this->TT = std::move(TT);
    Jobs.resize(NumTasks);
  }

  Error start(
      unsigned Task, BitcodeModule BM,
      const FunctionImporter::ImportMapTy &ImportList,
      const FunctionImporter::ExportSetTy &ExportList,
      const std::map<GlobalValue::GUID, GlobalValue::LinkageTypes> &ResolvedODR,
      MapVector<StringRef, BitcodeModule> &ModuleMap) override;

  Error wait() override;

private:
  Error runJobs();
  Error startFarm(ArrayRef<const Job *> ManifestJobs, bool Streaming);
  void keepWholeManifest(ArrayRef<JobState *> Pending);
  Error ensureStreamingFarm();
  void handOver(JobState &State);
  void onEventLine(StringRef Line, StringRef Payload);
  // DoneAt: when the farm finished the job (its done event's time).
  void takeFarmObject(JobState &State, bool AfterExit, Clock::time_point DoneAt,
                      std::optional<StringRef> Payload = std::nullopt);
  std::string pluginLinkFrame();
  DistributorProcess::InProcessFn pluginRunner();
  StringRef moduleBytes(StringRef ModuleID);
  std::string farmName() const;
  void fillLocalSlots(std::unique_lock<std::mutex> &Lock);
  void recordHandedOver(JobState &State);
  double hedgeRate();
  JobState *pickForLocalSlot(Source &Kind);
  void runInLocalSlot(JobState &State, Source Kind);
  bool finishJob(JobState &State, StringRef Object, Source From);
  Expected<SmallString<0>> compileToBuffer(JobState &State, Source Kind);
  Error writeInputCopies(ArrayRef<JobState *> Pending);
  Error writeCopiesOnce(ArrayRef<std::string> ModuleIDs);
  Error writeNativeBackendFiles();
  Error failLink(Error E);
  Error checkSettings();
  Error prepareJob(JobState &State,
                   const FunctionImporter::ExportSetTy &ExportList,
                   const std::map<GlobalValue::GUID, GlobalValue::LinkageTypes>
                       &ResolvedODR);
  bool lookUpCache(JobState &State, StringRef Key);
  void storeInCache(JobState &State, StringRef Object);
  void warnCacheWrites(ArrayRef<JobState *> Order);
  Expected<std::unique_ptr<MemoryBuffer>>
  loadObject(const JobState &State, std::optional<StringRef> Payload);
  Error addObject(JobState &State, StringRef Object);
  static void jobFailed(JobState &State, Error E);
  TraceSettings trace() const {
    return {Conf.TimeTraceEnabled, Conf.TimeTraceGranularity};
  }
  void warn(const Twine &Msg);
  void emitWarnings(ArrayRef<JobState *> Order);
  static Error jobFailures(ArrayRef<JobState *> Order);
  void printSummary();

  const Settings S;
  AddStreamFn AddStream;
  FileCache Cache;
  TempFileSet Temps;
  DenseSet<GlobalValue::GUID> CfiFunctionDefs, CfiFunctionDecls;

  unsigned TaskOffset = 0;
  Triple TT;
  std::vector<JobState> Jobs;
  MapVector<StringRef, BitcodeModule> *ModuleMap = nullptr;

  // Resolved on the first start(): a bad setting is reported before any
  // shard is written.
  std::optional<std::string> DistributorPath;
  /// The distributor's arguments: the user's, or, with a plugin, the
  /// plugin host's (the plugin, then the user's).
  std::vector<std::string> FarmArgs;
  /// A plugin (Plugin.h): inputs and objects go in memory.
  std::optional<PluginChoice> Plugin;
  bool LocalFallback = true;
  bool Compat = false; // upstream-compatible mode (Options.h)
  unsigned TimeoutSeconds = 0;
  std::optional<SignalGuard> Signals;
  CommonPart Common;
  std::optional<NativeBackendFiles> Native;
  std::string CompileID;
  Clock::time_point StartTime;
  /// What the summary line tells.
  struct {
    size_t Jobs = 0, Distributed = 0, FellBack = 0, LocalSlot = 0, Hedged = 0;
    bool DistributorRan = false;
    double DistributorSeconds = 0;
  } Run;

  // The distributor and the jobs' scheduling. Mu guards every JobState's
  // scheduling fields and what follows; Changed wakes wait() when a job is
  // finished, a local slot frees up, an event arrives or the farm exits.
  std::mutex Mu;
  std::condition_variable Changed;
  bool Streaming = false;
  std::mutex FarmStartMu; // held while the streaming farm is being started
  // With a plugin: module files mapped for their bytes, once each. Every
  // frame shares them: its job channel sends from them, and a plugin in
  // the linker reads them in place, maybe after the backend has gone (one
  // left behind in a plugin's call).
  std::mutex MappedMu;
  using MappedFiles = StringMap<std::unique_ptr<MemoryBuffer>>;
  std::shared_ptr<MappedFiles> Mapped = std::make_shared<MappedFiles>();
  std::unique_ptr<DistributorProcess> Farm;
  std::optional<std::string> FarmStartFailure;
  bool FarmExited = false;
  Clock::time_point FarmStart;
  std::vector<JobState *> Handed; // by id: manifest order, or sending order
  size_t Unfinished = 0;          // jobs made, without an object yet
  unsigned LocalSlots = 0, LocalBusy = 0;
  double HedgeFactor = 0;
  Clock::time_point LastEventAt; // the last line on the event channel
  std::optional<DefaultThreadPool> LocalPool;
  std::vector<double> SecondsPerByte; // of finished jobs, for hedging
  // What a free local slot may take, found without walking every job (a
  // pick per local job over all jobs is quadratic in a 30,000-job link).
  // Entries go stale (a job started, finished, or taken) and are dropped
  // when met: none comes back, so each is looked at a bounded number of
  // times.
  using Candidate = std::pair<uint64_t, size_t>; // input bytes, job id
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>>
      NotStarted;                  // smallest first
  std::deque<JobState *> GaveUp;   // the farm failed them, oldest first
  double HedgeRate = 0;            // median of SecondsPerByte...
  size_t HedgeRateSamples = 0;     // ...when it had this many
  std::string EventChannelProblem;    // the first bad line, for one warning
  size_t EventsSeen = 0;
  std::mutex CopiesMu; // streaming: held while a job's copies are written
  StringSet<> CopiesWritten;
};

} // namespace

void OutOfProcessBackend::jobFailed(JobState &State, Error E) {
  if (State.Failure.empty())
    State.Failure = toString(std::move(E));
  else
    consumeError(std::move(E));
  LinkReport::jobFailed(State.J, State.Failure);
}

// One error line for the link, however many jobs failed: the first failed
// job in Order, and how many more failed. Order is task order (documented),
// so the same inputs give the same message.
Error OutOfProcessBackend::jobFailures(ArrayRef<JobState *> Order) {
  const JobState *First = nullptr;
  unsigned More = 0;
  for (const JobState *State : Order) {
    if (State->Failure.empty())
      continue;
    if (First)
      ++More;
    else
      First = State;
  }
  if (!First)
    return Error::success();
  if (!More)
    return makeError(First->Failure);
  return makeError(First->Failure + " (and " + Twine(More) + " more DTLTO job" +
                   (More == 1 ? "" : "s") + " failed)");
}

// Warnings go through the linker's diagnostic handler ("ld.lld: warning:",
// and --fatal-warnings applies), always from the main thread.
void OutOfProcessBackend::warn(const Twine &Msg) {
  if (Conf.DiagHandler)
    Conf.DiagHandler(DiagnosticInfoGeneric(Msg, DS_Warning));
  else
    errs() << "warning: " << Msg << "\n";
}

// The warnings the jobs drew on pool threads, in Order.
void OutOfProcessBackend::emitWarnings(ArrayRef<JobState *> Order) {
  for (JobState *State : Order) {
    for (const std::string &Msg : State->Warnings)
      warn(Msg);
    State->Warnings.clear();
  }
}

Error OutOfProcessBackend::checkSettings() {
  StartTime = Clock::now();
  if (Error E = LinkReport::begin(
          S.LinkerOutputFile,
          distributorShortName(S.Distributor, S.DistributorArgs),
          S.RemoteCompiler, Cache.isValid(), Jobs.size()))
    return E;
  Expected<std::optional<PluginChoice>> P = findPlugin(S.Distributor);
  if (!P)
    return P.takeError();
  Plugin = *P;
  FarmArgs = S.DistributorArgs;
  if (Plugin) {
    DistributorPath = Plugin->Host;
    FarmArgs.insert(FarmArgs.begin(), Plugin->Plugin);
  } else {
    Expected<std::string> Path = findDistributor(S.Distributor);
    if (!Path)
      return Path.takeError();
    DistributorPath = *Path;
  }
  Signals.emplace();
  // Without a remote compiler common.args[0] is empty, as with LLVM's own
  // DTLTO: a distributor may pick the compiler itself. (lld-link requires
  // one; LLD checks that.)
  if (TT.str().empty())
    return makeError("DTLTO cannot tell the target triple of the link");
  Expected<bool> CompatMode = upstreamCompat();
  if (!CompatMode)
    return CompatMode.takeError();
  Compat = *CompatMode;
  Expected<bool> Fallback = localFallback();
  if (!Fallback)
    return Fallback.takeError();
  LocalFallback = *Fallback;
  Expected<unsigned> Timeout = distributorTimeout();
  if (!Timeout)
    return Timeout.takeError();
  TimeoutSeconds = *Timeout;
  Expected<StreamMode> Mode = streamMode();
  if (!Mode)
    return Mode.takeError();
  // A plugin always streams: the host speaks nothing else.
  Streaming = Plugin ||
              (!Compat && (*Mode == StreamMode::On ||
                           (*Mode == StreamMode::Auto &&
                            speaksStreamProtocol(*DistributorPath, FarmArgs))));
  // By default the linker's own core joins a streaming farm: the link holds
  // that core while it waits anyway, and with it stragglers are hedged
  // (bench/farm.py: 0.64x one-shot's wall on a farm with a slow host). A
  // one-shot distributor gets the whole manifest, exactly as LLVM's engine
  // gives it, unless local jobs are asked for.
  Expected<std::optional<unsigned>> Local = localJobs();
  if (!Local)
    return Local.takeError();
  LocalSlots = Compat ? 0 : Local->value_or(Streaming ? 1 : 0);
  Expected<double> Hedge = hedgeFactor();
  if (!Hedge)
    return Hedge.takeError();
  HedgeFactor = *Hedge;
  if (LocalSlots)
    LocalPool.emplace(hardware_concurrency(LocalSlots));
  if (isNativeBackend(S.RemoteCompiler))
    Native = NativeBackendFiles{backendConfigPath(S.LinkerOutputFile)};
  auto MakeCommon = [&](const NativeBackendFiles *Files) {
    return makeCommonPart(Conf, TT, S.LinkerOutputFile, S.RemoteCompiler,
                          S.RemoteCompilerPrependArgs, S.RemoteCompilerArgs,
                          Files);
  };
  Common = MakeCommon(Native ? &*Native : nullptr);
  if (Cache.isValid()) {
    // dtlto-backend's configuration is named by the linker's pid: key by
    // what it holds (keyed already), not by its name.
    NativeBackendFiles Stable{"<config>"};
    CommonPart KeyPart = MakeCommon(Native ? &Stable : nullptr);
    CompileID = remoteCompileID(KeyPart.Args, KeyPart.Inputs);
    // Cache keys hash the -mllvm options. Ours change how jobs run, not what
    // they produce: drop them, so that e.g. -dtlto-verbose does not miss the
    // cache. LTO owns the Config it lends us as const (and nothing after the
    // thin link reads these options but the keys); Config cannot be copied.
    erase_if(const_cast<std::vector<std::string> &>(Conf.MllvmArgs),
             isEngineOption);
  }
  return Error::success();
}

Error OutOfProcessBackend::start(
    unsigned Task, BitcodeModule BM,
    const FunctionImporter::ImportMapTy &ImportList,
    const FunctionImporter::ExportSetTy &ExportList,
    const std::map<GlobalValue::GUID, GlobalValue::LinkageTypes> &ResolvedODR,
    MapVector<StringRef, BitcodeModule> &ModuleMap) {
  if (!DistributorPath)
    if (Error E = checkSettings())
      return failLink(std::move(E));
  if (Task < TaskOffset || Task - TaskOffset >= Jobs.size())
    return makeError("DTLTO: unexpected ThinLTO task " + Twine(Task));
  this->ModuleMap = &ModuleMap;

  JobState &State = Jobs[Task - TaskOffset];
  {
    std::lock_guard<std::mutex> Lock(Mu);
    ++Unfinished;
  }
  State.Started = true;
  State.J.Task = Task;
  State.J.ModuleID = std::string(BM.getModuleIdentifier());
  State.J.ObjectPath = objectPath(S.LinkerOutputFile, State.J.ModuleID, Task);
  State.J.ShardPath = shardPath(State.J.ObjectPath);
  State.Module = BM;
  State.ImportList = &ImportList;
  static const GVSummaryMapTy NoSummaries;
  auto Defined = ModuleToDefinedGVSummaries.find(State.J.ModuleID);
  State.DefinedGlobals = Defined == ModuleToDefinedGVSummaries.end()
                             ? &NoSummaries
                             : &Defined->second;

  // ImportList, ExportList, ResolvedODR and ModuleMap outlive wait().
  BackendThreadPool.async([&] {
    WorkerTrace Worker(trace());
    Error E = prepareJob(State, ExportList, ResolvedODR);
    LinkReport::jobPrepared(State.J, State.CacheHit);
    if (E)
      jobFailed(State, std::move(E));
    else if (Streaming && !State.CacheHit)
      handOver(State);
  });
  if (OnWrite)
    OnWrite(originalName(State.J.ModuleID));
  return Error::success();
}

// Looks the job up in the cache. A hit is checked like a fresh object and
// added to the link as the object alone: the entry's digest trailer stays in
// the cache (wasm-ld, for one, reads an object to its end, so the cache
// cannot hand it the entry file as LLVM's cache does). A damaged entry is
// removed and the job rebuilds it. Returns true on a hit.
bool OutOfProcessBackend::lookUpCache(JobState &State, StringRef Key) {
  const Job &J = State.J;
  std::string Entry = cacheEntryPath(Cache.getCacheDirectoryPath(), Key);
  if (ErrorOr<std::unique_ptr<MemoryBuffer>> Buf = MemoryBuffer::getFile(
          Entry, /*IsText=*/false, /*RequiresNullTerminator=*/false)) {
    Expected<StringRef> Object = readCacheEntry((*Buf)->getBuffer());
    Error Bad = Object ? checkObject(MemoryBufferRef(*Object, Entry), TT,
                                     State.RequiredSymbols)
                       : Object.takeError();
    if (!Bad) {
      finishJob(State, *Object, Source::Cache);
      touchCacheEntry(Entry);
      return true;
    }
    State.Warnings.push_back(
        "discarded the damaged ThinLTO cache entry '" + Entry + "' for '" +
        J.ModuleID + "': " + toString(std::move(Bad)) + "; it is rebuilt");
    sys::fs::remove(Entry);
  }
  State.CacheEntry = Entry;
  return false;
}

// A cache is only an optimisation: an entry that cannot be written (a full
// disk, no permission, the directory gone) is a warning, and the link goes
// on with the object it has.
void OutOfProcessBackend::storeInCache(JobState &State, StringRef Object) {
  if (State.CacheEntry.empty())
    return;
  if (Error E = writeCacheEntryFile(State.CacheEntry, Object))
    State.CacheWriteFailure = toString(std::move(E));
}

// One warning for the link, however many entries could not be written (a
// full cache disk fails them all): the first in Order, and how many more.
void OutOfProcessBackend::warnCacheWrites(ArrayRef<JobState *> Order) {
  const JobState *First = nullptr;
  size_t More = 0;
  for (const JobState *State : Order) {
    if (State->CacheWriteFailure.empty())
      continue;
    if (First)
      ++More;
    else
      First = State;
  }
  if (First)
    warn(First->CacheWriteFailure + "; linking on without caching it" +
         (More ? " (nor " + Twine(More) +
                     (More == 1 ? " more object)" : " more objects)")
               : Twine()));
}

Error OutOfProcessBackend::prepareJob(
    JobState &State, const FunctionImporter::ExportSetTy &ExportList,
    const std::map<GlobalValue::GUID, GlobalValue::LinkageTypes> &ResolvedODR) {
  Job &J = State.J;
  ExtraScope Scope(Compat, "DTLTO prepare job", J.ModuleID);
  State.RequiredSymbols = requiredSymbols(CombinedIndex, *State.DefinedGlobals);

  // A module without a hash cannot be keyed safely; in-process ThinLTO does
  // not cache it either.
  if (Cache.isValid() && CombinedIndex.modulePaths().count(J.ModuleID) &&
      all_of(CombinedIndex.getModuleHash(J.ModuleID),
             [](uint32_t V) { return V != 0; })) {
    std::string Key = computeLTOCacheKey(
        Conf, CombinedIndex, J.ModuleID, *State.ImportList, ExportList,
        ResolvedODR, *State.DefinedGlobals, CfiFunctionDefs, CfiFunctionDecls);
    if (lookUpCache(State, recomputeLTOCacheKey(Key, CompileID))) {
      State.CacheHit = true;
      return Error::success();
    }
  }

  // LLVM's own engine keeps the shards as the index files of
  // --thinlto-emit-index-files; ours writes those under the module's own
  // name, as in-process ThinLTO does, and the shards go.
  if (!(Compat && S.ShouldEmitIndexFiles))
    Temps.add(J.ShardPath);
  Temps.add(J.ObjectPath);
  ShardRequest Req;
  Req.ModuleID = J.ModuleID;
  Req.ShardPath = J.ShardPath;
  Req.EmitName = originalName(J.ModuleID);
  Req.EmitIndexFile = S.ShouldEmitIndexFiles;
  Req.EmitImportsFile = ShouldEmitImportsFiles;
  // dtlto-backend, like clang, reads the job's summaries from its shard.
  Req.AddReferencedDeclarations = true;
  Req.AddCalledDeclarations = TT.isOSBinFormatCOFF();
  if (Plugin)
    Req.InMemory = &State.Shard;
  TimeTraceScope ShardScope("Emit individual index for DTLTO", J.ShardPath);
  Expected<std::vector<std::string>> ImportedFrom = writeShard(
      CombinedIndex, ModuleToDefinedGVSummaries, *State.ImportList, Req);
  if (!ImportedFrom)
    return ImportedFrom.takeError();
  J.ImportedFrom = std::move(*ImportedFrom);

  J.InputBytes = State.Module->getBuffer().size();
  for (const std::string &M : J.ImportedFrom) {
    auto It = ModuleMap->find(M);
    if (It != ModuleMap->end())
      J.InputBytes += It->second.getBuffer().size();
  }
  return Error::success();
}

Expected<std::unique_ptr<MemoryBuffer>>
OutOfProcessBackend::loadObject(const JobState &State,
                                std::optional<StringRef> Payload) {
  const Job &J = State.J;
  if (Plugin) {
    // The object came in memory, or not at all: a plugin leaves no files.
    if (!Payload)
      return makeError(farmName() + " returned no object for '" + J.ModuleID +
                       "'");
    std::unique_ptr<MemoryBuffer> Obj = MemoryBuffer::getMemBufferCopy(
        *Payload, J.ModuleID + " (object from the plugin)");
    if (Error E = checkObject(*Obj, TT, State.RequiredSymbols))
      return makeError("the DTLTO job for '" + J.ModuleID +
                       "' returned a bad object: " + toString(std::move(E)));
    return std::move(Obj);
  }
  ErrorOr<std::unique_ptr<MemoryBuffer>> Obj =
      MemoryBuffer::getFile(J.ObjectPath, /*IsText=*/false,
                            /*RequiresNullTerminator=*/false);
  // The words of LLVM's own engine first, for tools that look for them.
  if (!Obj)
    return makeError("DTLTO backend compilation: cannot open native object "
                     "file: " +
                     J.ObjectPath + ": " + Obj.getError().message() +
                     "; the distributor exited 0 without running the DTLTO "
                     "job for '" +
                     J.ModuleID + "' or without fetching its output");
  // LLVM's own engine checks nothing more.
  if (Compat)
    return std::move(*Obj);
  if (Error E = checkObject(**Obj, TT, State.RequiredSymbols))
    return makeError("the DTLTO job for '" + J.ModuleID +
                     "' returned a bad object: " + toString(std::move(E)));
  return std::move(*Obj);
}

// A verified object goes to the link.
Error OutOfProcessBackend::addObject(JobState &State, StringRef Object) {
  const Job &J = State.J;
  Expected<std::unique_ptr<CachedFileStream>> Stream =
      AddStream(J.Task, originalName(J.ModuleID));
  if (!Stream)
    return Stream.takeError();
  *(*Stream)->OS << Object;
  LinkReport::objectLinked(J, Object.size(), reported(State.From));
  return (*Stream)->commit();
}

// Claims the job for Object: the first good object of a job goes to the
// link, any later one (a hedged copy, a late farm object) is dropped.
// Returns whether Object was taken.
bool OutOfProcessBackend::finishJob(JobState &State, StringRef Object,
                                    Source From) {
  bool Last;
  {
    std::lock_guard<std::mutex> Lock(Mu);
    if (State.finished())
      return false;
    State.From = From;
    Last = --Unfinished == 0;
    // The farm need not finish a job the linker did itself.
    if (Streaming && Farm && State.Handed && From != Source::Farm &&
        !State.Cancelled) {
      State.Cancelled = true;
      LinkReport::cancelSent(State.J);
      Farm->send(cancelLine(State.Id));
    }
  }
  // runJobs' loop waits for the last object, not for each: on this VM a
  // wake-up is a reschedule interrupt and two task switches, and a link
  // has one per job (a local slot that frees up says so itself).
  if (Last)
    Changed.notify_all();
  if (Error E = addObject(State, Object))
    jobFailed(State, std::move(E));
  return true;
}

// Exactly what in-process ThinLTO does for one module, into memory, so that
// the object goes to the link through finishJob like any other. A local
// slot's object enters the cache (it is the farm's, byte for byte); the
// fallback's does not: its job failed on the farm.
Expected<SmallString<0>> OutOfProcessBackend::compileToBuffer(JobState &State,
                                                              Source Kind) {
  ExtraScope Scope(Compat, "DTLTO compile in the linker", State.J.ModuleID);
  LinkReport::LocalCompile Reported(State.J, reported(Kind));
  LTOLLVMContext Context(Conf);
  Expected<std::unique_ptr<llvm::Module>> M =
      State.Module->parseModule(Context);
  if (!M)
    return M.takeError();
  auto Object = std::make_unique<SmallString<0>>();
  SmallString<0> *Out = Object.get();
  AddStreamFn IntoMemory =
      [Out](unsigned,
            const Twine &) -> Expected<std::unique_ptr<CachedFileStream>> {
    return std::make_unique<CachedFileStream>(
        std::make_unique<raw_svector_ostream>(*Out));
  };
  if (Error E = thinBackend(Conf, State.J.Task, IntoMemory, **M, CombinedIndex,
                            *State.ImportList, *State.DefinedGlobals, ModuleMap,
                            Conf.CodeGenOnly))
    return std::move(E);
  return std::move(*Object);
}

Error OutOfProcessBackend::wait() {
  Error E = runJobs();
  LinkReport::backendEnded(static_cast<bool>(E));
  Signals.reset();
  if (E)
    return failLink(std::move(E));
  return Error::success();
}

// LLD's ELF driver stops when LTO fails; its COFF driver links on and adds
// errors that only follow from the first (an undefined entry point, with no
// object back). For COFF, report the error as LLD would and end the link
// here, removing every temporary file (and LLD's own) first.
Error OutOfProcessBackend::failLink(Error E) {
  if (!TT.isOSBinFormatCOFF() || !Conf.DiagHandler)
    return E;
  std::string Msg = toString(std::move(E));
  Conf.DiagHandler(DiagnosticInfoGeneric(Msg, DS_Error));
  Temps.removeAll();
  sys::RunInterruptHandlers();
  outs().flush();
  errs().flush();
  _exit(1);
}

// The copies of archive members and FatLTO bitcode that the jobs read: each
// job's module and the modules it imports from. Each copy is written once:
// streaming writes a job's copies just before the job is sent, the others'
// wait until those they share are on disk.
Error OutOfProcessBackend::writeInputCopies(ArrayRef<JobState *> Pending) {
  std::vector<std::string> Read;
  StringSet<> Seen;
  for (const JobState *State : Pending) {
    if (Seen.insert(State->J.ModuleID).second)
      Read.push_back(State->J.ModuleID);
    for (const std::string &M : State->J.ImportedFrom)
      if (Seen.insert(M).second)
        Read.push_back(M);
  }
  return writeCopiesOnce(Read);
}

Error OutOfProcessBackend::writeCopiesOnce(ArrayRef<std::string> ModuleIDs) {
  std::lock_guard<std::mutex> Lock(CopiesMu);
  std::vector<std::string> New;
  for (const std::string &ID : ModuleIDs)
    if (!CopiesWritten.contains(ID))
      New.push_back(ID);
  if (New.empty())
    return Error::success();
  ExtraScope Scope(Compat, "DTLTO write input copies");
  if (Error E = writeCopies(
          New, trace(), [this](StringRef Path) { Temps.add(Path); },
          [this](StringRef Path) { Temps.forget(Path); }))
    return E;
  for (const std::string &ID : New)
    CopiesWritten.insert(ID);
  return Error::success();
}

// dtlto-backend gets the linker's LTO configuration once per link, and runs
// each job from it and the job's shard as in-process ThinLTO.
Error OutOfProcessBackend::writeNativeBackendFiles() {
  ExtraScope Scope(Compat, "DTLTO write dtlto-backend inputs");
  std::vector<std::string> Mllvm;
  for (const std::string &A : Conf.MllvmArgs)
    if (!isEngineOption(A))
      Mllvm.push_back(A);
  Temps.add(Native->Config);
  return writeBackendConfig(Native->Config, Conf, Mllvm);
}

// Writes what the jobs share and the manifest (streaming: with no jobs),
// and starts the distributor with its channels.
Error OutOfProcessBackend::startFarm(ArrayRef<const Job *> ManifestJobs,
                                     bool Stream) {
  std::string Manifest, LinkFrame;
  if (Plugin) {
    // No manifest, no files: the host gets what the jobs share in memory.
    LinkFrame = pluginLinkFrame();
  } else if (Native) {
    if (Error E = writeNativeBackendFiles())
      return E;
  }
  if (!Plugin) {
    Manifest = manifestPath(S.LinkerOutputFile);
    TimeTraceScope Scope("Emit DTLTO JSON");
    Temps.add(Manifest);
    if (Error E = writeManifest(Manifest, Common, ManifestJobs))
      return E;
    if (!Compat) {
      std::string Side = engineInfoPath(Manifest);
      Temps.add(Side);
      if (Error E = writeEngineInfo(Side, Common, ManifestJobs, Stream))
        return E;
    }
  }
  FarmStart = Clock::now();
  LinkReport::distributorStarted(ManifestJobs);
  auto OnEvent = [this](StringRef Line, StringRef Payload) {
    onEventLine(Line, Payload);
  };
  auto OnExit = [this] {
    {
      std::lock_guard<std::mutex> Lock(Mu);
      FarmExited = true;
    }
    Changed.notify_all();
  };
  Expected<std::unique_ptr<DistributorProcess>> P =
      Plugin && Plugin->InProcess
          ? DistributorProcess::startInProcess(farmName(), pluginRunner(),
                                               OnEvent, OnExit)
          : DistributorProcess::start(*DistributorPath, FarmArgs, Manifest,
                                      Stream, /*Payloads=*/bool(Plugin),
                                      OnEvent, OnExit);
  if (!P) {
    LinkReport::distributorEnded(/*Failed=*/true);
    return P.takeError();
  }
  if (Plugin)
    (*P)->send(std::move(LinkFrame));
  std::lock_guard<std::mutex> Lock(Mu);
  Farm = std::move(*P);
  Run.DistributorRan = true;
  return Error::success();
}

// The plugin host on a thread of the linker (-dtlto-plugin-in-process),
// with its own copy of what it needs: it may outlive this backend when
// stuck in the plugin.
DistributorProcess::InProcessFn OutOfProcessBackend::pluginRunner() {
  PluginHostSetup Setup;
  Setup.Plugin = Plugin->Plugin;
  Setup.Args.assign(FarmArgs.begin() + 1, FarmArgs.end());
  Setup.Backend = Plugin->Backend;
  Setup.Prefix = "dtlto";
  return [Setup](HostMailbox &Mailbox) {
    PluginHostSetup S = Setup;
    S.Mailbox = &Mailbox;
    return runPluginHost(S);
  };
}

// What a plugin's jobs share: the common args, and what dtlto-backend reads
// besides a job's inputs (the LTO configuration), which plugins that run
// dtlto-backend need whatever the remote compiler.
std::string OutOfProcessBackend::pluginLinkFrame() {
  ExtraScope Scope(Compat, "DTLTO serialize plugin inputs");
  std::vector<std::string> Mllvm;
  for (const std::string &A : Conf.MllvmArgs)
    if (!isEngineOption(A))
      Mllvm.push_back(A);
  // A configuration dtlto-backend cannot reproduce (backendConfigText says
  // which) goes as none: plugins that run dtlto-backend then fail its jobs,
  // which the linker compiles; plugins that run clang do not read it.
  Expected<std::string> Config = backendConfigText(Conf, Mllvm);
  if (!Config) {
    consumeError(Config.takeError());
    Config = std::string();
  }
  std::vector<std::string> NativeFiles;
  if (Native) {
    // A plugin that asks for files gets them at these names (the host
    // writes them); registered so that a crashed host leaves none.
    NativeFiles = {Native->Config};
    Temps.add(Native->Config);
  }
  return linkFrame(S.LinkerOutputFile, TT.str(), Common.Args, NativeFiles,
                   *Config);
}

// A module file's bytes for a plugin: the copy input preparation holds in
// memory, or the file the module ID names, mapped (not copied, never
// written). A BitcodeModule's own buffer is no file: the bitcode magic and
// the string table are outside it. Empty when there is neither: the job
// then fails on the plugin's side and the linker compiles it.
StringRef OutOfProcessBackend::moduleBytes(StringRef ModuleID) {
  if (std::optional<MemoryBufferRef> Copy = preparedCopy(ModuleID))
    return Copy->getBuffer();
  std::lock_guard<std::mutex> Lock(MappedMu);
  std::unique_ptr<MemoryBuffer> &Buf = (*Mapped)[ModuleID];
  if (!Buf) {
    ErrorOr<std::unique_ptr<MemoryBuffer>> File = MemoryBuffer::getFile(
        ModuleID, /*IsText=*/false, /*RequiresNullTerminator=*/false);
    if (!File)
      return StringRef();
    Buf = std::move(*File);
  }
  return Buf->getBuffer();
}

// The distributor as messages name it.
std::string OutOfProcessBackend::farmName() const {
  if (Plugin)
    return "the DTLTO distributor plugin '" + S.Distributor + "'";
  return "the DTLTO distributor '" +
         distributorName(*DistributorPath, FarmArgs) + "'";
}

// --save-temps keeps the manifest to rerun the link's jobs by hand. A
// streaming distributor got one without jobs, so once it is gone the kept
// one is rewritten whole, every job in task order, as a one-shot manifest.
void OutOfProcessBackend::keepWholeManifest(ArrayRef<JobState *> Pending) {
  std::vector<const Job *> All;
  for (const JobState *State : Pending)
    All.push_back(&State->J);
  std::string Manifest = manifestPath(S.LinkerOutputFile);
  Error E = writeManifest(Manifest, Common, All);
  if (!E && !Compat)
    E = writeEngineInfo(engineInfoPath(Manifest), Common, All,
                        /*Streaming=*/false);
  if (E)
    warn(toString(std::move(E)) + " (the one --save-temps keeps)");
}

// Streaming: the farm starts with the first job to send. A farm that cannot
// be started leaves its jobs to the linker (with the local fallback on).
Error OutOfProcessBackend::ensureStreamingFarm() {
  std::lock_guard<std::mutex> Lock(FarmStartMu);
  if (FarmStartFailure)
    return makeError(*FarmStartFailure);
  {
    std::lock_guard<std::mutex> L(Mu);
    if (Farm)
      return Error::success();
  }
  if (Error E = startFarm({}, /*Stream=*/true)) {
    FarmStartFailure = toString(std::move(E));
    return makeError(*FarmStartFailure);
  }
  return Error::success();
}

// Streaming, on the pool thread that made the job: a free local slot takes
// it, else it goes to the distributor at once, its copies written first.
void OutOfProcessBackend::handOver(JobState &State) {
  {
    std::unique_lock<std::mutex> Lock(Mu);
    if (LocalBusy < LocalSlots) {
      ++LocalBusy;
      State.LocalCopy = true;
      State.Shard = SmallString<0>(); // the linker compiles from its index
      LocalPool->async(
          [this, &State] { runInLocalSlot(State, Source::LocalSlot); });
      return;
    }
  }
  if (Error E = ensureStreamingFarm()) {
    consumeError(std::move(E)); // reported once, by wait()
    return;
  }
  ExtraScope Scope(Compat, "DTLTO hand job over", State.J.ModuleID);
  std::vector<StringRef> Contents;
  SmallString<0> Shard;
  if (Plugin) {
    // The bitcode the linker has in memory (archive members included: no
    // copies are written), and the shard: an exact copy, since it may
    // wait long for a paced host, and it grew by doubling.
    Shard = State.Shard.str();
    State.Shard = SmallString<0>();
    Contents = {moduleBytes(State.J.ModuleID), Shard};
    for (const std::string &M : State.J.ImportedFrom)
      Contents.push_back(moduleBytes(M));
  } else {
    std::vector<std::string> Read = {State.J.ModuleID};
    Read.insert(Read.end(), State.J.ImportedFrom.begin(),
                State.J.ImportedFrom.end());
    if (Error E = writeCopiesOnce(Read))
      return jobFailed(State, std::move(E));
  }
  std::unique_lock<std::mutex> Lock(Mu);
  recordHandedOver(State);
  // Before the job is sent: its events find it in the report.
  LinkReport::jobHandedOver(State.J, State.Id);
  if (!Plugin) {
    Farm->send(jobRecordLine(State.Id, State.J));
    return;
  }
  // Not while events wait for Mu. No event can name the job before it is
  // sent, and Farm stays until every job is handed over. The bytes go from
  // where they are (the linker's buffers, and mapped files the frame keeps),
  // and the shard goes with the frame: freed once written (in the linker:
  // once the plugin is done with the job), it is not held for the rest of
  // the link (30,000 jobs' shards are 20 to 130 MB).
  // The line is made when the frame is written; the job's fields no longer
  // change.
  Lock.unlock();
  Farm->sendFrame(
      [&State](ArrayRef<StringRef> Body) {
        return jobFrameLine(State.Id, State.J, Body);
      },
      std::move(Contents), std::move(Shard), Mapped);
}

// One line of the event channel, on the distributor's reader thread.
void OutOfProcessBackend::onEventLine(StringRef Line, StringRef Payload) {
  if (Line.trim().empty())
    return;
  Expected<JobEvent> E = parseJobEvent(Line);
  std::unique_lock<std::mutex> Lock(Mu);
  LastEventAt = Clock::now();
  if (E && E->Id >= Handed.size())
    E = makeError("job " + Twine(E->Id) + " does not exist (" +
                  Twine(Handed.size()) + " jobs)");
  if (!E) {
    LinkReport::badEvent();
    std::string Why = toString(E.takeError());
    if (EventChannelProblem.empty()) {
      std::string Shown = Line.take_front(80).str();
      for (char &C : Shown)
        if (!isPrint(C))
          C = '?';
      EventChannelProblem = "ignored a line of the DTLTO event channel of '" +
                            distributorShortName(S.Distributor, FarmArgs) +
                            "', '" + Shown + (Line.size() > 80 ? "...'" : "'") +
                            ": " + Why +
                            " (docs/manifest.md, \"The event channel\")";
    }
    return;
  }
  JobState &State = *Handed[E->Id];
  ++EventsSeen;
  LinkReport::jobEvent(*E);
  // Whether runJobs' loop has something new to do: a job the farm gave up
  // on is a free local slot's (its other reasons, the last object and a
  // slot freeing up, wake it where they happen; hedging looks by itself).
  bool Wake = true;
  switch (E->What) {
  case JobEvent::Started:
    State.FarmStarted = true;
    State.FarmStartedAt = whenSaid(*E, State.HandedAt);
    Wake = false;
    break;
  case JobEvent::Failed:
    Wake = !E->Retry;
    if (!E->Retry && !State.finished()) {
      if (!State.FarmGaveUp)
        GaveUp.push_back(&State);
      State.FarmGaveUp = true;
      State.FallbackReason = (Plugin ? farmName() : "the DTLTO distributor") +
                             " failed the job for '" + State.J.ModuleID + "'" +
                             (E->Reason.empty() ? "" : ": " + E->Reason);
    }
    break;
  case JobEvent::Done:
    if (State.finished()) {
      Wake = false;
      break;
    }
    {
      Clock::time_point DoneAt = whenSaid(*E, State.farmSince());
      Lock.unlock();
      takeFarmObject(State, /*AfterExit=*/false, DoneAt,
                     Plugin ? std::optional<StringRef>(Payload) : std::nullopt);
    }
    Lock.lock();
    // Taken: finishJob woke the loop if it was the last. Rejected: the
    // job is among those given up.
    Wake = !State.finished();
    break;
  default:
    break;
  }
  Lock.unlock();
  if (Wake)
    Changed.notify_all();
}

// The distributor's object for a job: checked, then linked (and cached). A
// bad one leaves the job to a local slot now, or to the fallback.
void OutOfProcessBackend::takeFarmObject(JobState &State, bool AfterExit,
                                         Clock::time_point DoneAt,
                                         std::optional<StringRef> Payload) {
  Expected<std::unique_ptr<MemoryBuffer>> Obj = loadObject(State, Payload);
  if (!Obj) {
    std::string Why = toString(Obj.takeError());
    std::lock_guard<std::mutex> Lock(Mu);
    if (State.finished())
      return;
    // A bad object reported done is the farm's answer; after the farm has
    // exited, a failure it reported says more than the missing object.
    if (!AfterExit) {
      State.FallbackReason = Why;
      if (!State.FarmGaveUp)
        GaveUp.push_back(&State);
      State.FarmGaveUp = true;
    } else if (State.FallbackReason.empty()) {
      State.FallbackReason = Why;
    }
    return;
  }
  StringRef Object = (*Obj)->getBuffer();
  if (!finishJob(State, Object, Source::Farm))
    return;
  storeInCache(State, Object);
  double Seconds =
      std::chrono::duration<double>(DoneAt - State.farmSince()).count();
  std::lock_guard<std::mutex> Lock(Mu);
  SecondsPerByte.push_back(Seconds / std::max<uint64_t>(State.J.InputBytes, 1));
}

// What a free local slot does next, in this order: a job the farm gave up
// on; a job the farm has not started (the smallest: the farm starts the
// largest first); a job the farm has run far longer than its size predicts
// (hedging: the rate is the median seconds per input byte of the jobs
// finished so far, the linker's own included, so one finished job is
// enough; a farm that started every job and finishes none is hedged once a
// local slot has done one). Under Mu.
JobState *OutOfProcessBackend::pickForLocalSlot(Source &Kind) {
  auto Taken = [](const JobState *State) {
    return State->finished() || State->LocalCopy;
  };
  while (!GaveUp.empty() && Taken(GaveUp.front()))
    GaveUp.pop_front();
  if (!GaveUp.empty()) {
    Kind = Source::Fallback;
    return GaveUp.front();
  }
  while (!NotStarted.empty()) {
    JobState *State = Handed[NotStarted.top().second];
    if (!Taken(State) && !State->FarmStarted && !State->FarmGaveUp) {
      Kind = Source::LocalSlot;
      return State;
    }
    NotStarted.pop();
  }
  double Rate = hedgeRate();
  if (!Rate)
    return nullptr;
  // Only near the link's end (every job started): each job once.
  JobState *Straggler = nullptr;
  double Worst = 0;
  Clock::time_point Now = Clock::now();
  for (JobState *State : Handed) {
    if (Taken(State) || !State->FarmStarted)
      continue;
    double Ran =
        std::chrono::duration<double>(Now - State->FarmStartedAt).count();
    double Predicted = Rate * std::max<uint64_t>(State->J.InputBytes, 1);
    double Over = Ran / std::max(Predicted, 1e-3);
    if (Ran >= 1.0 && Over > HedgeFactor && Over > Worst) {
      Worst = Over;
      Straggler = State;
    }
  }
  Kind = Source::Hedge;
  return Straggler;
}

// The median of finished jobs' seconds per input byte (the upper one of an
// even count); Rates is not empty.
static double medianRate(std::vector<double> Rates) {
  auto Mid = Rates.begin() + Rates.size() / 2;
  std::nth_element(Rates.begin(), Mid, Rates.end());
  return *Mid;
}

// The hedging rate, recomputed once the samples have grown by a sixteenth
// (so all recomputations together cost about as much as sorting them once).
// Under Mu.
double OutOfProcessBackend::hedgeRate() {
  if (HedgeFactor <= 0 || SecondsPerByte.empty())
    return 0;
  size_t N = SecondsPerByte.size();
  if (N != HedgeRateSamples &&
      (HedgeRateSamples < 64 || N >= HedgeRateSamples + HedgeRateSamples / 16)) {
    HedgeRate = medianRate(SecondsPerByte);
    HedgeRateSamples = N;
  }
  return HedgeRate;
}

// A job given to the distributor gets its id, in order. Under Mu.
void OutOfProcessBackend::recordHandedOver(JobState &State) {
  State.Handed = true;
  State.Id = Handed.size();
  State.HandedAt = Clock::now();
  Handed.push_back(&State);
  NotStarted.push({State.J.InputBytes, State.Id});
}

void OutOfProcessBackend::fillLocalSlots(std::unique_lock<std::mutex> &Lock) {
  while (LocalBusy < LocalSlots) {
    Source Kind;
    JobState *State = pickForLocalSlot(Kind);
    if (!State)
      return;
    ++LocalBusy;
    State->LocalCopy = true;
    // The farm need not run what the linker now runs itself.
    if (Streaming && Farm && !State->FarmStarted) {
      State->Cancelled = true;
      LinkReport::cancelSent(State->J);
      Farm->send(cancelLine(State->Id));
    }
    LocalPool->async([this, State, Kind] { runInLocalSlot(*State, Kind); });
  }
}

void OutOfProcessBackend::runInLocalSlot(JobState &State, Source Kind) {
  Clock::time_point Start = Clock::now();
  {
    WorkerTrace Worker(trace());
    // A local slot that took a job the farm gave up on is its fallback.
    if (Kind == Source::Fallback)
      LinkReport::fellBack(State.J, State.FallbackReason);
    Expected<SmallString<0>> Object = compileToBuffer(State, Kind);
    if (!Object)
      jobFailed(State, Object.takeError());
    else if (finishJob(State, *Object, Kind) && Kind != Source::Fallback)
      // A job the farm would have run: its object, which is the farm's
      // byte for byte, serves the next link as the farm's would (a cache
      // filled by a link with local slots would otherwise miss their jobs).
      storeInCache(State, *Object);
  }
  {
    std::lock_guard<std::mutex> Lock(Mu);
    --LocalBusy;
    SecondsPerByte.push_back(secondsSince(Start) /
                             std::max<uint64_t>(State.J.InputBytes, 1));
  }
  Changed.notify_all();
}

Error OutOfProcessBackend::runJobs() {
  {
    ExtraScope Scope(Compat, "DTLTO write index shards");
    BackendThreadPool.wait();
  }
  // Jobs are reported in task order, which is also the manifest's.
  std::vector<JobState *> Started;
  for (JobState &State : Jobs)
    if (State.Started)
      Started.push_back(&State);
  if (Streaming) {
    // Streaming jobs may be running on the farm or in local slots: the
    // warnings and errors of preparation wait until nothing else runs.
    std::lock_guard<std::mutex> Lock(Mu);
    if (Farm)
      Farm->send(endLine());
  } else {
    emitWarnings(Started);
    if (Error E = jobFailures(Started))
      return E;
  }

  std::vector<JobState *> Pending;
  for (JobState *State : Started)
    if (!State->CacheHit)
      Pending.push_back(State);
  Run.Jobs = Started.size();
  Run.Distributed = Pending.size();
  if (Pending.empty()) {
    printSummary();
    return Error::success();
  }

  if (!Streaming) {
    // Local slots claim the smallest jobs before the farm sees them; the
    // farm gets the others, in task order, as LLVM's own DTLTO (and tests of
    // distributors written for it, which map jobs to results by position);
    // our distributors schedule the largest first from the side file.
    std::vector<JobState *> BySize = Pending;
    llvm::stable_sort(BySize, [](const JobState *A, const JobState *B) {
      return A->J.InputBytes < B->J.InputBytes;
    });
    {
      std::lock_guard<std::mutex> Lock(Mu);
      for (JobState *State : BySize) {
        if (LocalBusy == LocalSlots)
          break;
        ++LocalBusy;
        State->LocalCopy = true;
        LocalPool->async(
            [this, State] { runInLocalSlot(*State, Source::LocalSlot); });
      }
    }
    std::vector<JobState *> ToFarm;
    std::vector<const Job *> ManifestJobs;
    for (JobState *State : Pending)
      if (!State->LocalCopy) {
        ToFarm.push_back(State);
        ManifestJobs.push_back(&State->J);
      }
    if (Error E = writeInputCopies(ToFarm))
      return E;
    {
      std::lock_guard<std::mutex> Lock(Mu);
      for (JobState *State : ToFarm)
        recordHandedOver(*State);
    }
    if (!ToFarm.empty())
      if (Error E = startFarm(ManifestJobs, /*Stream=*/false)) {
        // As a distributor that failed: its jobs go to the fallback.
        if (!LocalFallback)
          return E;
        FarmStartFailure = toString(std::move(E));
      }
  }

  // Until every job has an object, or the farm is gone (or out of time).
  Error DistributorError = Error::success();
  bool StoppedByUs = false;
  {
    TimeTraceScope Scope("Execute DTLTO distributor",
                         Plugin ? S.Distributor : *DistributorPath);
    std::optional<Clock::time_point> Deadline, AllInAt;
    const auto CancelGrace = std::chrono::seconds(10);
    std::unique_lock<std::mutex> Lock(Mu);
    if (Farm && TimeoutSeconds)
      Deadline = FarmStart + std::chrono::seconds(TimeoutSeconds);
    for (;;) {
      if (LocalSlots)
        fillLocalSlots(Lock);
      if ((!Farm && !LocalBusy) || (Farm && FarmExited))
        break;
      // Every job has its object. A farm left with nothing but copies of
      // jobs the linker did itself (one-shot has no way to cancel them) is
      // stopped; any other is let finish, and say what it did, by itself.
      if (!Unfinished && !LocalBusy &&
          (!Farm || (!Streaming && any_of(Handed, [](const JobState *S) {
            return S->From != Source::Farm;
          }))))
        break;
      // A streaming farm that still runs once every object is in has been
      // told to cancel what it runs; once it has said nothing for 10 s it
      // is stopped: a farm that ignores cancels must not hold up a link
      // that has everything.
      if (!Unfinished && !LocalBusy && Farm && Streaming) {
        if (!AllInAt)
          AllInAt = Clock::now();
        // Quiet since every object came in, or since its last event: a
        // farm answering cancels one by one on a loaded machine is waited
        // for.
        AllInAt = std::max(*AllInAt, LastEventAt);
        if (Clock::now() >= *AllInAt + CancelGrace)
          break;
      }
      if (Deadline && Clock::now() >= *Deadline) {
        Lock.unlock();
        Farm->stop();
        Lock.lock();
        DistributorError = makeError(
            farmName() + " did not finish within " + Twine(TimeoutSeconds) +
            " s (-mllvm -dtlto-distributor-timeout / "
            "DTLTO_DISTRIBUTOR_TIMEOUT) and was stopped");
        StoppedByUs = true;
        break;
      }
      // Hedging looks at how long jobs have run: look again now and then.
      Clock::time_point Wake = Clock::now() + std::chrono::hours(24);
      if (LocalSlots && HedgeFactor > 0)
        Wake = Clock::now() + std::chrono::milliseconds(200);
      if (AllInAt)
        Wake = std::min(Wake, *AllInAt + CancelGrace);
      if (Deadline)
        Wake = std::min(Wake, *Deadline);
      Changed.wait_until(Lock, Wake);
    }
    std::unique_ptr<DistributorProcess> P = std::move(Farm);
    bool Exited = FarmExited;
    Lock.unlock();
    if (P) {
      // Every job has its object: what the farm still runs is not needed.
      if (!Exited && !StoppedByUs) {
        P->stop();
        StoppedByUs = true;
      }
      if (!StoppedByUs)
        DistributorError = P->exitStatus();
      // A plugin's crash is its host's: say so in the plugin's name.
      if (Plugin && !StoppedByUs && DistributorError && !P->exitCode()) {
        consumeError(std::move(DistributorError));
        DistributorError =
            makeError(farmName() + " crashed (its host process " +
                      (P->exitSignal()
                           ? "was killed by signal " + Twine(*P->exitSignal()) +
                                 ", " + strsignal(*P->exitSignal())
                           : Twine("was lost")) +
                      "); the linker is unharmed");
      }
      // A plugin that cannot be loaded is a setting to fix, not a farm
      // that failed: the host said why, and the link stops.
      if (Plugin && !StoppedByUs &&
          P->exitCode() == std::optional<int>(PluginLoadFailedExitCode)) {
        consumeError(std::move(DistributorError));
        P.reset();
        if (LocalPool)
          LocalPool->wait();
        return makeError(farmName() +
                         " could not be loaded; the message above says why "
                         "(docs/plugins.md)");
      }
      P.reset(); // its threads are gone: no more events
      LinkReport::distributorEnded(static_cast<bool>(DistributorError));
    }
  }
  Run.DistributorSeconds = Run.DistributorRan ? secondsSince(FarmStart) : 0;
  // A plugin had no manifest to keep.
  if (Streaming && S.SaveTemps && Run.DistributorRan && !Plugin)
    keepWholeManifest(Pending);
  if (FarmStartFailure && !DistributorError)
    DistributorError = makeError(*FarmStartFailure);

  // What a compiler that failed (a full disk) or was stopped left beside
  // the objects: the distributor's process group is gone by now.
  {
    std::vector<std::string> Objects;
    for (const JobState *State : Pending)
      Objects.push_back(State->J.ObjectPath);
    for (const std::string &Stray : strayCompilerFiles(Objects))
      sys::fs::remove(Stray);
  }
  if (!EventChannelProblem.empty())
    warn(EventChannelProblem);
  if (DistributorError && !LocalFallback) {
    if (LocalPool)
      LocalPool->wait();
    return makeError(toString(std::move(DistributorError)) +
                     (S.SaveTemps || Plugin
                          ? ""
                          : "; link with --save-temps to keep "
                            "the manifest and the shards"));
  }
  // Every object there is gets checked, even after the distributor failed:
  // one that died partway keeps what it finished, and only the rest is
  // compiled in the linker.
  bool Failed = static_cast<bool>(DistributorError);
  {
    TimeTraceScope Scope("Add DTLTO files to the link");
    for (JobState *State : Handed)
      if (!State->finished())
        BackendThreadPool.async([this, State] {
          WorkerTrace Worker(trace());
          takeFarmObject(*State, /*AfterExit=*/true, Clock::now());
        });
    BackendThreadPool.wait();
  }
  // Local slots finish what they run (a hedged copy may still win).
  if (LocalPool)
    LocalPool->wait();
  // A streaming distributor that reported nothing and left no object may
  // not speak the protocol at all (it got a manifest without jobs): one
  // warning says so, rather than one per job. Not when the linker's slots
  // did every job it was sent: a farm slow to answer (a loaded machine)
  // owes nothing then.
  bool Unheard = !Failed && Streaming && !Plugin && !EventsSeen &&
                 any_of(Handed,
                        [](const JobState *S) { return !S->finished(); }) &&
                 none_of(Pending, [](const JobState *S) {
                   return S->From == Source::Farm;
                 });
  std::string UnheardWhy;
  if (Unheard) {
    UnheardWhy =
        "the DTLTO distributor '" +
        distributorName(*DistributorPath, FarmArgs) + "' was sent " +
        std::to_string(Handed.size()) +
        " jobs on the job channel and reported none, nor left their "
        "objects: does it speak the streaming protocol (docs/manifest.md)? "
        "-mllvm -dtlto-stream=off (DTLTO_STREAM=0) gives it a whole manifest";
    if (!LocalFallback)
      return makeError(UnheardWhy);
  }
  std::vector<JobState *> FellBack;
  for (JobState *State : Pending) {
    // Compiled by a local slot once the farm had failed it.
    if (State->From == Source::Fallback && !Failed)
      State->Warnings.push_back(State->FallbackReason +
                                "; compiled it in the linker instead");
    if (State->finished() || !State->Failure.empty())
      continue;
    if (State->FallbackReason.empty())
      State->FallbackReason =
          FarmStartFailure ? *FarmStartFailure
                           : "the DTLTO distributor returned no object for '" +
                                 State->J.ModuleID + "'";
    if (!LocalFallback) {
      jobFailed(*State, makeError(State->FallbackReason));
      continue;
    }
    FellBack.push_back(State);
    LinkReport::fellBack(State->J, State->FallbackReason);
    // After a failed distributor one warning says it all.
    if (!Failed && !Unheard)
      State->Warnings.push_back(State->FallbackReason +
                                "; compiled it in the linker instead");
  }
  if (Failed) {
    size_t Kept = Pending.size() - FellBack.size();
    auto Jobs = [](size_t N) {
      return std::to_string(N) + (N == 1 ? " job" : " jobs");
    };
    std::string What =
        FellBack.empty() ? "; the objects of all " + Jobs(Kept) +
                               " passed the checks and are used"
        : !Kept ? "; compiling its " + Jobs(FellBack.size()) +
                      " in the linker instead"
                : "; kept the objects of " + Jobs(Kept) +
                      " that passed the checks, compiling the other " +
                      Jobs(FellBack.size()) + " in the linker instead";
    warn(toString(std::move(DistributorError)) + What);
  }
  if (Unheard && !FellBack.empty())
    warn(UnheardWhy + "; compiling " + Twine(FellBack.size()) +
         " jobs in the linker instead");
  warnCacheWrites(Pending);
  emitWarnings(Started);
  if (Error E = jobFailures(Started))
    return E;

  if (!FellBack.empty()) {
    ExtraScope Scope(Compat, "DTLTO compile in the linker");
    for (JobState *State : FellBack)
      BackendThreadPool.async([this, State] {
        WorkerTrace Worker(trace());
        Expected<SmallString<0>> Object =
            compileToBuffer(*State, Source::Fallback);
        if (!Object)
          jobFailed(*State, Object.takeError());
        else
          finishJob(*State, *Object, Source::Fallback);
      });
    BackendThreadPool.wait();
  }
  if (Error E = jobFailures(Pending))
    return E;

  {
    TimeTraceScope Scope("Remove DTLTO temporary files");
    Temps.removeAll();
  }
  Run.Distributed = Handed.size();
  for (const JobState *State : Pending) {
    Run.FellBack += State->From == Source::Fallback;
    Run.LocalSlot += State->From == Source::LocalSlot;
    Run.Hedged += State->From == Source::Hedge;
  }
  printSummary();
  return Error::success();
}

// Printed when asked for, and whenever jobs had to be compiled in the
// linker: what ran where, and how many jobs each path took.
//   dtlto: 33 ThinLTO jobs: 3 from the cache, 30 given to 'python3 local.py'
//   (0.85 s): 28 objects from it, 2 compiled in the linker; backend 0.90 s
// With local slots: "...; 4 run by the linker's 2 local slots (1 hedged)".
// Verbose, then the rate of the finished jobs that hedging uses:
//   dtlto: jobs ran at a median of 0.812 s per MiB of input (28 jobs; ...)
void OutOfProcessBackend::printSummary() {
  if (!verbose() && !Run.FellBack)
    return;
  auto Count = [&](Source From) {
    return count_if(Jobs, [&](const JobState &S) { return S.From == From; });
  };
  size_t Cached = Count(Source::Cache);
  raw_ostream &OS = errs();
  OS << "dtlto: " << Run.Jobs << " ThinLTO jobs: ";
  if (!Run.DistributorRan && !Run.LocalSlot && !Run.Hedged) {
    OS << "all from the cache, no distributor started";
  } else {
    OS << Cached << " from the cache, ";
    if (Run.DistributorRan && Plugin)
      OS << Handed.size() << " given to plugin '"
         << sys::path::filename(S.Distributor) << "'"
         << (Plugin->InProcess ? " (in the linker, in memory, "
                               : " (in memory, ")
         << format("%.2f s): ", Run.DistributorSeconds)
         << Count(Source::Farm) << " objects from it, " << Run.FellBack
         << " compiled in the linker";
    else if (Run.DistributorRan)
      OS << Handed.size() << " given to '"
         << distributorShortName(S.Distributor, FarmArgs) << "'"
         << format(Streaming ? " (streaming, %.2f s): " : " (%.2f s): ",
                   Run.DistributorSeconds)
         << Count(Source::Farm) << " objects from it, " << Run.FellBack
         << " compiled in the linker";
    else
      OS << "no distributor started";
    if (LocalSlots)
      OS << "; " << (Run.LocalSlot + Run.Hedged) << " run by the linker's "
         << LocalSlots << " local slot" << (LocalSlots == 1 ? "" : "s") << " ("
         << Run.Hedged << " hedged)";
  }
  OS << format("; backend %.2f s\n", secondsSince(StartTime));
  if (!verbose())
    return;
  // The rate hedging judges stragglers by: a farm job is timed from its
  // started event to its done event, at the times the events give.
  std::vector<double> Rates;
  {
    std::lock_guard<std::mutex> Lock(Mu);
    Rates = SecondsPerByte;
  }
  if (Rates.empty())
    return;
  size_t Finished = Rates.size();
  OS << format("dtlto: jobs ran at a median of %.3f s per MiB of input (%zu "
               "jobs; the distributor's timed by its events)\n",
               medianRate(std::move(Rates)) * 1024 * 1024, Finished);
}

ThinBackend lto::createOutOfProcessThinBackend(
    ThreadPoolStrategy Parallelism, IndexWriteCallback OnWrite,
    bool ShouldEmitIndexFiles, bool ShouldEmitImportsFiles,
    StringRef LinkerOutputFile, StringRef Distributor,
    ArrayRef<StringRef> DistributorArgs, StringRef RemoteCompiler,
    ArrayRef<StringRef> RemoteCompilerPrependArgs,
    ArrayRef<StringRef> RemoteCompilerArgs, bool SaveTemps) {
  Settings S;
  S.OnWrite = std::move(OnWrite);
  S.ShouldEmitIndexFiles = ShouldEmitIndexFiles;
  S.ShouldEmitImportsFiles = ShouldEmitImportsFiles;
  S.LinkerOutputFile =
      LinkerOutputFile.empty() ? "a.out" : std::string(LinkerOutputFile);
  S.Distributor = std::string(Distributor);
  S.DistributorArgs = toStrings(DistributorArgs);
  S.RemoteCompiler = std::string(RemoteCompiler);
  S.RemoteCompilerPrependArgs = toStrings(RemoteCompilerPrependArgs);
  S.RemoteCompilerArgs = toStrings(RemoteCompilerArgs);
  S.SaveTemps = SaveTemps;

  auto Make = [=](const Config &Conf, ModuleSummaryIndex &CombinedIndex,
                  const DenseMap<StringRef, GVSummaryMapTy> &DefinedGVs,
                  AddStreamFn AddStream, FileCache Cache) {
    return std::make_unique<OutOfProcessBackend>(
        Conf, CombinedIndex, DefinedGVs, std::move(AddStream), std::move(Cache),
        Parallelism, S);
  };
  return ThinBackend(Make, Parallelism);
}
