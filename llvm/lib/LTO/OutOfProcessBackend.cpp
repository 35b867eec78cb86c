//===- OutOfProcessBackend.cpp - ThinLTO backend jobs run by a distributor ===//
//
// Our implementation of llvm::lto::createOutOfProcessThinBackend. After the
// thin link, LTO calls start() once per ThinLTO module and then wait(). The
// backend is a short pipeline:
//
//   start()  per module, on the thread pool: look the module up in the
//            ThinLTO cache (a hit is handed to the link by the cache), else
//            write its index shard and record a job.
//   wait()   write the copies of archive members the jobs read (and, for
//            dtlto-backend, the LTO configuration and the combined index),
//            write the manifest (in task order, as LLVM does) and its side
//            file (each job's size, for our distributors), run the distributor,
//            check every object it produced, and hand each object to the
//            link (and to the cache) through the usual AddStream interface.
//            A job the distributor failed to deliver (or all of them, when
//            the distributor itself failed) is compiled here instead, by
//            LLVM's in-process ThinLTO backend from the modules and index
//            already in memory: a failing farm costs time, not the build.
//
// Every temporary file is registered before it is created and removed when
// the backend is destroyed (or by the signal handler), unless --save-temps.
//
//===----------------------------------------------------------------------===//

#include "dtlto/BackendConfig.h"
#include "dtlto/Cache.h"
#include "dtlto/Distributor.h"
#include "dtlto/LinkReport.h"
#include "dtlto/Manifest.h"
#include "dtlto/ObjectCheck.h"
#include "dtlto/Options.h"
#include "dtlto/PreparedInputs.h"
#include "dtlto/Shards.h"
#include "dtlto/TempFiles.h"
#include "dtlto/WorkerTrace.h"
#include "dtlto/WriteFile.h"

#include "llvm/ADT/STLExtras.h"
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
#include <chrono>
#include <optional>
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
  /// What compiling the job in the linker needs.
  std::optional<BitcodeModule> Module;
  const FunctionImporter::ImportMapTy *ImportList = nullptr;
  const GVSummaryMapTy *DefinedGlobals = nullptr;
  /// Why the job is compiled in the linker; empty when it is not.
  std::string FallbackReason;
  /// What went wrong with the job (the first thing), and the warnings it
  /// drew. A job is worked on by one pool thread at a time, and these are
  /// read on the main thread after the pool is drained, so they need no
  /// lock; keeping them per job lets the link report them in job order,
  /// whichever thread got there first.
  std::string Failure;
  std::vector<std::string> Warnings;
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

  Error start(unsigned Task, BitcodeModule BM,
              const FunctionImporter::ImportMapTy &ImportList,
              const FunctionImporter::ExportSetTy &ExportList,
              const std::map<GlobalValue::GUID, GlobalValue::LinkageTypes>
                  &ResolvedODR,
              MapVector<StringRef, BitcodeModule> &ModuleMap) override;

  Error wait() override;

private:
  Error runJobs();
  Error writeInputCopies(ArrayRef<JobState *> Pending);
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
  Expected<std::unique_ptr<MemoryBuffer>> loadObject(const JobState &State);
  Error addObject(JobState &State, StringRef Object);
  Error compileInLinker(JobState &State);
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
    size_t Jobs = 0, Distributed = 0, FellBack = 0;
    bool DistributorRan = false;
    double DistributorSeconds = 0;
  } Run;
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
  Expected<std::string> Path = findDistributor(S.Distributor);
  if (!Path)
    return Path.takeError();
  DistributorPath = *Path;
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
  if (isNativeBackend(S.RemoteCompiler))
    Native = NativeBackendFiles{backendConfigPath(S.LinkerOutputFile),
                                combinedIndexPath(S.LinkerOutputFile)};
  auto MakeCommon = [&](const NativeBackendFiles *Files) {
    return makeCommonPart(Conf, TT, S.LinkerOutputFile, S.RemoteCompiler,
                          S.RemoteCompilerPrependArgs, S.RemoteCompilerArgs,
                          Files);
  };
  Common = MakeCommon(Native ? &*Native : nullptr);
  if (Cache.isValid()) {
    // The per-link files of dtlto-backend are named by the linker's pid:
    // key by what they hold (the configuration and the index are keyed
    // already), not by their names.
    NativeBackendFiles Stable{"<config>", "<combined-index>"};
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
    if (Error E = prepareJob(State, ExportList, ResolvedODR))
      jobFailed(State, std::move(E));
    LinkReport::jobPrepared(State.J, State.CacheHit);
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
      if (Error E = addObject(State, *Object))
        jobFailed(State, std::move(E));
      touchCacheEntry(Entry);
      return true;
    }
    State.Warnings.push_back("discarded the damaged ThinLTO cache entry '" +
                             Entry + "' for '" + J.ModuleID + "': " +
                             toString(std::move(Bad)) + "; it is rebuilt");
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
         (More ? " (nor " + Twine(More) + (More == 1 ? " more object)" : " more objects)")
               : Twine()));
}

Error OutOfProcessBackend::prepareJob(
    JobState &State, const FunctionImporter::ExportSetTy &ExportList,
    const std::map<GlobalValue::GUID, GlobalValue::LinkageTypes>
        &ResolvedODR) {
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
  Req.AddReferencedDeclarations = !Native;
  Req.AddCalledDeclarations = TT.isOSBinFormatCOFF();
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
OutOfProcessBackend::loadObject(const JobState &State) {
  const Job &J = State.J;
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
  LinkReport::objectLinked(J, Object.size());
  return (*Stream)->commit();
}

// Exactly what in-process ThinLTO does for one module. The object does not
// enter the cache: its key says "compiled by the remote compiler".
Error OutOfProcessBackend::compileInLinker(JobState &State) {
  ExtraScope Scope(Compat, "DTLTO compile in the linker", State.J.ModuleID);
  LinkReport::LocalCompile Reported(State.J);
  LTOLLVMContext Context(Conf);
  Expected<std::unique_ptr<llvm::Module>> M =
      State.Module->parseModule(Context);
  if (!M)
    return M.takeError();
  // LLD names the object after the module, as for a distributed one.
  std::string Name = originalName(State.J.ModuleID);
  AddStreamFn AddNamed = [&](unsigned Task, const Twine &) {
    return AddStream(Task, Name);
  };
  return thinBackend(Conf, State.J.Task, AddNamed, **M, CombinedIndex,
                     *State.ImportList, *State.DefinedGlobals, ModuleMap,
                     Conf.CodeGenOnly);
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
// job's module and the modules it imports from.
Error OutOfProcessBackend::writeInputCopies(ArrayRef<JobState *> Pending) {
  ExtraScope Scope(Compat, "DTLTO write input copies");
  std::vector<std::string> Read;
  StringSet<> Seen;
  for (const JobState *State : Pending) {
    if (Seen.insert(State->J.ModuleID).second)
      Read.push_back(State->J.ModuleID);
    for (const std::string &M : State->J.ImportedFrom)
      if (Seen.insert(M).second)
        Read.push_back(M);
  }
  return writeCopies(
      Read, trace(), [this](StringRef Path) { Temps.add(Path); },
      [this](StringRef Path) { Temps.forget(Path); });
}

// dtlto-backend gets the linker's LTO configuration and the whole combined
// index, once per link, and runs each job from them as in-process ThinLTO.
Error OutOfProcessBackend::writeNativeBackendFiles() {
  ExtraScope Scope(Compat, "DTLTO write dtlto-backend inputs");
  std::vector<std::string> Mllvm;
  for (const std::string &A : Conf.MllvmArgs)
    if (!isEngineOption(A))
      Mllvm.push_back(A);
  Temps.add(Native->Config);
  if (Error E = writeBackendConfig(Native->Config, Conf, Mllvm))
    return E;
  Temps.add(Native->CombinedIndex);
  return writeFile(Native->CombinedIndex, "combined index",
                   [&](raw_ostream &OS) { writeIndexToFile(CombinedIndex, OS); });
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
  emitWarnings(Started);
  if (Error E = jobFailures(Started))
    return E;

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

  // Task order, as LLVM's own DTLTO (and tests of distributors written for
  // it, which map jobs to results by position); our distributors schedule
  // the largest first from the side file.
  std::vector<const Job *> ManifestJobs;
  for (const JobState *State : Pending)
    ManifestJobs.push_back(&State->J);

  if (Error E = writeInputCopies(Pending))
    return E;
  if (Native)
    if (Error E = writeNativeBackendFiles())
      return E;

  std::string Manifest = manifestPath(S.LinkerOutputFile);
  {
    TimeTraceScope Scope("Emit DTLTO JSON");
    Temps.add(Manifest);
    if (Error E = writeManifest(Manifest, Common, ManifestJobs))
      return E;
    if (!Compat) {
      std::string Side = engineInfoPath(Manifest);
      Temps.add(Side);
      if (Error E = writeEngineInfo(Side, Common, ManifestJobs))
        return E;
    }
  }

  Clock::time_point DistributorStart = Clock::now();
  Error DistributorError = Error::success();
  {
    TimeTraceScope Scope("Execute DTLTO distributor", *DistributorPath);
    LinkReport::distributorStarted(ManifestJobs);
    DistributorError = runDistributor(*DistributorPath, S.DistributorArgs,
                                      Manifest, TimeoutSeconds);
  }

  Run.DistributorRan = true;
  Run.DistributorSeconds = secondsSince(DistributorStart);
  LinkReport::distributorEnded(static_cast<bool>(DistributorError));
  // What a compiler that failed (a full disk) or was stopped left beside
  // the objects: the distributor's process group is gone by now.
  {
    std::vector<std::string> Objects;
    for (const JobState *State : Pending)
      Objects.push_back(State->J.ObjectPath);
    for (const std::string &Stray : strayCompilerFiles(Objects))
      sys::fs::remove(Stray);
  }
  if (DistributorError && !LocalFallback)
    return makeError(toString(std::move(DistributorError)) +
                     (S.SaveTemps ? "" : "; link with --save-temps to keep "
                                         "the manifest and the shards"));
  // Every object there is gets checked, even after the distributor failed:
  // one that died partway keeps what it finished, and only the rest is
  // compiled in the linker.
  bool Failed = static_cast<bool>(DistributorError);
  {
    TimeTraceScope Scope("Add DTLTO files to the link");
    for (JobState *State : Pending)
      BackendThreadPool.async([this, State, Failed] {
        WorkerTrace Worker(trace());
        Expected<std::unique_ptr<MemoryBuffer>> Obj = loadObject(*State);
        if (!Obj) {
          if (!LocalFallback)
            return jobFailed(*State, Obj.takeError());
          State->FallbackReason = toString(Obj.takeError());
          LinkReport::fellBack(State->J, State->FallbackReason);
          // After a failed distributor one warning says it all.
          if (!Failed)
            State->Warnings.push_back(State->FallbackReason +
                                      "; compiled it in the linker instead");
          return;
        }
        if (Error E = addObject(*State, (*Obj)->getBuffer()))
          return jobFailed(*State, std::move(E));
        storeInCache(*State, (*Obj)->getBuffer());
      });
    BackendThreadPool.wait();
  }
  size_t FellBack = count_if(Pending, [](const JobState *State) {
    return !State->FallbackReason.empty();
  });
  if (Failed) {
    size_t Kept = Pending.size() - FellBack;
    auto Jobs = [](size_t N) {
      return std::to_string(N) + (N == 1 ? " job" : " jobs");
    };
    std::string What =
        !FellBack ? "; the objects of all " + Jobs(Kept) +
                        " passed the checks and are used"
        : !Kept   ? "; compiling its " + Jobs(FellBack) + " in the linker instead"
                  : "; kept the objects of " + Jobs(Kept) +
                        " that passed the checks, compiling the other " +
                        Jobs(FellBack) + " in the linker instead";
    warn(toString(std::move(DistributorError)) + What);
  }
  warnCacheWrites(Pending);
  emitWarnings(Pending);
  if (Error E = jobFailures(Pending))
    return E;

  if (FellBack) {
    ExtraScope Scope(Compat, "DTLTO compile in the linker");
    for (JobState *State : Pending) {
      if (State->FallbackReason.empty())
        continue;
      BackendThreadPool.async([this, State] {
        WorkerTrace Worker(trace());
        if (Error E = compileInLinker(*State))
          jobFailed(*State, std::move(E));
      });
    }
    BackendThreadPool.wait();
  }
  if (Error E = jobFailures(Pending))
    return E;

  {
    TimeTraceScope Scope("Remove DTLTO temporary files");
    Temps.removeAll();
  }
  Run.FellBack = FellBack;
  printSummary();
  return Error::success();
}

// Printed when asked for, and whenever jobs had to be compiled in the
// linker: what ran where, and how many jobs each path took.
//   dtlto: 33 ThinLTO jobs: 3 from the cache, 30 given to 'python3 local.py'
//   (0.85 s): 28 objects from it, 2 compiled in the linker; backend 0.90 s
void OutOfProcessBackend::printSummary() {
  if (!verbose() && !Run.FellBack)
    return;
  raw_ostream &OS = errs();
  OS << "dtlto: " << Run.Jobs << " ThinLTO jobs: ";
  if (!Run.DistributorRan) {
    OS << "all from the cache, no distributor started";
  } else {
    OS << (Run.Jobs - Run.Distributed) << " from the cache, " << Run.Distributed
       << " given to '" << distributorShortName(S.Distributor, S.DistributorArgs)
       << "'" << format(" (%.2f s): ", Run.DistributorSeconds)
       << (Run.Distributed - Run.FellBack) << " objects from it, "
       << Run.FellBack << " compiled in the linker";
  }
  OS << format("; backend %.2f s\n", secondsSince(StartTime));
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
        Conf, CombinedIndex, DefinedGVs, std::move(AddStream),
        std::move(Cache), Parallelism, S);
  };
  return ThinBackend(Make, Parallelism);
}
