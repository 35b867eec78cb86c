//===- OutOfProcessBackend.cpp - ThinLTO backend jobs run by a distributor ===//
//
// Our implementation of llvm::lto::createOutOfProcessThinBackend. After the
// thin link, LTO calls start() once per ThinLTO module and then wait(). The
// backend is a short pipeline:
//
//   start()  per module, on the thread pool: look the module up in the
//            ThinLTO cache (a hit is handed to the link by the cache), else
//            write its index shard and record a job.
//   wait()   write the manifest (largest job first), run the distributor,
//            check every object it produced, and hand each object to the
//            link (and to the cache) through the usual AddStream interface.
//
// Every temporary file is registered before it is created and removed when
// the backend is destroyed (or by the signal handler), unless --save-temps.
//
//===----------------------------------------------------------------------===//

#include "dtlto/Cache.h"
#include "dtlto/Distributor.h"
#include "dtlto/Manifest.h"
#include "dtlto/ObjectCheck.h"
#include "dtlto/Options.h"
#include "dtlto/Shards.h"
#include "dtlto/TempFiles.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/LTO/LTO.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/TimeProfiler.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>
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

/// The state of one module's backend compilation.
struct JobState {
  Job J;
  bool Started = false;
  bool CacheHit = false;
  /// Set on a cache miss: where the verified object must go so that it is
  /// both cached and added to the link.
  AddStreamFn CacheStream;
  std::vector<std::string> RequiredSymbols;
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
  Error failLink(Error E);
  Error checkSettings();
  Error prepareJob(JobState &State, BitcodeModule BM,
                   const FunctionImporter::ImportMapTy &ImportList,
                   const FunctionImporter::ExportSetTy &ExportList,
                   const std::map<GlobalValue::GUID, GlobalValue::LinkageTypes>
                       &ResolvedODR,
                   const MapVector<StringRef, BitcodeModule> &ModuleMap);
  Error addObject(JobState &State);
  void recordError(Error E);
  void printSummary(size_t Distributed, double DistributorSeconds);

  const Settings S;
  AddStreamFn AddStream;
  FileCache Cache;
  TempFileSet Temps;
  DenseSet<GlobalValue::GUID> CfiFunctionDefs, CfiFunctionDecls;

  unsigned TaskOffset = 0;
  Triple TT;
  std::vector<JobState> Jobs;

  // Resolved on the first start(): a bad distributor is reported before any
  // shard is written.
  std::optional<std::string> DistributorPath;
  std::optional<SignalGuard> Signals;
  CommonPart Common;
  std::string CompileID;
  Clock::time_point StartTime;
  unsigned FailedJobs = 0;
};

} // namespace

void OutOfProcessBackend::recordError(Error E) {
  std::lock_guard<std::mutex> Lock(ErrMu);
  if (!Err) {
    Err = std::move(E);
    return;
  }
  ++FailedJobs;
  consumeError(std::move(E));
}

Error OutOfProcessBackend::checkSettings() {
  StartTime = Clock::now();
  Expected<std::string> Path = findDistributor(S.Distributor);
  if (!Path)
    return Path.takeError();
  DistributorPath = *Path;
  Signals.emplace();
  if (S.RemoteCompiler.empty())
    return createStringError(
        inconvertibleErrorCode(),
        "DTLTO needs a remote compiler: pass --thinlto-remote-compiler=<clang> "
        "(/thinlto-remote-compiler: for lld-link), or link through clang with "
        "-fthinlto-distributor=, which passes itself");
  if (TT.str().empty())
    return createStringError(inconvertibleErrorCode(),
                             "DTLTO cannot tell the target triple of the link");
  Common = makeCommonPart(Conf, TT, S.LinkerOutputFile, S.RemoteCompiler,
                          S.RemoteCompilerPrependArgs, S.RemoteCompilerArgs);
  if (Cache.isValid())
    CompileID = remoteCompileID(Common.Args, Common.Inputs);
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
    return createStringError(inconvertibleErrorCode(),
                             "DTLTO: unexpected ThinLTO task " + Twine(Task));

  JobState &State = Jobs[Task - TaskOffset];
  State.Started = true;
  State.J.Task = Task;
  State.J.ModuleID = std::string(BM.getModuleIdentifier());
  State.J.ObjectPath = objectPath(S.LinkerOutputFile, State.J.ModuleID, Task);
  State.J.ShardPath = shardPath(State.J.ObjectPath);

  // ImportList, ExportList, ResolvedODR and ModuleMap outlive wait().
  BackendThreadPool.async([&, BM] {
    if (Error E = prepareJob(State, BM, ImportList, ExportList, ResolvedODR,
                             ModuleMap))
      recordError(std::move(E));
  });
  if (OnWrite)
    OnWrite(originalName(State.J.ModuleID));
  return Error::success();
}

Error OutOfProcessBackend::prepareJob(
    JobState &State, BitcodeModule BM,
    const FunctionImporter::ImportMapTy &ImportList,
    const FunctionImporter::ExportSetTy &ExportList,
    const std::map<GlobalValue::GUID, GlobalValue::LinkageTypes> &ResolvedODR,
    const MapVector<StringRef, BitcodeModule> &ModuleMap) {
  Job &J = State.J;
  static const GVSummaryMapTy NoSummaries;
  auto DefinedIt = ModuleToDefinedGVSummaries.find(J.ModuleID);
  const GVSummaryMapTy &Defined = DefinedIt == ModuleToDefinedGVSummaries.end()
                                      ? NoSummaries
                                      : DefinedIt->second;

  // A module without a hash cannot be keyed safely; in-process ThinLTO does
  // not cache it either.
  if (Cache.isValid() && CombinedIndex.modulePaths().count(J.ModuleID) &&
      all_of(CombinedIndex.getModuleHash(J.ModuleID),
             [](uint32_t V) { return V != 0; })) {
    std::string Key = computeLTOCacheKey(
        Conf, CombinedIndex, J.ModuleID, ImportList, ExportList, ResolvedODR,
        Defined, CfiFunctionDefs, CfiFunctionDecls);
    Key = recomputeLTOCacheKey(Key, CompileID);
    Expected<AddStreamFn> CacheStream = Cache(J.Task, Key, J.ModuleID);
    if (!CacheStream)
      return CacheStream.takeError();
    // On a hit the cache has already handed the object to the link.
    if (!*CacheStream) {
      State.CacheHit = true;
      return Error::success();
    }
    State.CacheStream = std::move(*CacheStream);
  }

  Temps.add(J.ShardPath);
  Temps.add(J.ObjectPath);
  ShardRequest Req;
  Req.ModuleID = J.ModuleID;
  Req.ShardPath = J.ShardPath;
  Req.EmitName = originalName(J.ModuleID);
  Req.EmitIndexFile = S.ShouldEmitIndexFiles;
  Req.EmitImportsFile = ShouldEmitImportsFiles;
  Expected<std::vector<std::string>> ImportedFrom =
      writeShard(CombinedIndex, ModuleToDefinedGVSummaries, ImportList, Req);
  if (!ImportedFrom)
    return ImportedFrom.takeError();
  J.ImportedFrom = std::move(*ImportedFrom);

  J.InputBytes = BM.getBuffer().size();
  for (const std::string &M : J.ImportedFrom) {
    auto It = ModuleMap.find(M);
    if (It != ModuleMap.end())
      J.InputBytes += It->second.getBuffer().size();
  }
  State.RequiredSymbols = requiredSymbols(CombinedIndex, Defined);
  return Error::success();
}

Error OutOfProcessBackend::addObject(JobState &State) {
  const Job &J = State.J;
  ErrorOr<std::unique_ptr<MemoryBuffer>> Obj =
      MemoryBuffer::getFile(J.ObjectPath, /*IsText=*/false,
                            /*RequiresNullTerminator=*/false);
  if (!Obj)
    return createStringError(Obj.getError(),
                             "the DTLTO job for '" + J.ModuleID +
                                 "' produced no object '" + J.ObjectPath +
                                 "': " + Obj.getError().message() +
                                 "; the distributor exited 0 without running "
                                 "the job or without fetching its output");
  if (Error E = checkObject(**Obj, TT, State.RequiredSymbols))
    return createStringError(inconvertibleErrorCode(),
                             "the DTLTO job for '" + J.ModuleID +
                                 "' returned a bad object: " +
                                 toString(std::move(E)));

  // A verified object goes to the cache, which adds it to the link, or
  // straight to the link.
  AddStreamFn &Add = State.CacheStream ? State.CacheStream : AddStream;
  Expected<std::unique_ptr<CachedFileStream>> Stream =
      Add(J.Task, originalName(J.ModuleID));
  if (!Stream)
    return Stream.takeError();
  *(*Stream)->OS << (*Obj)->getBuffer();
  return (*Stream)->commit();
}

Error OutOfProcessBackend::wait() {
  Error E = runJobs();
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

Error OutOfProcessBackend::runJobs() {
  {
    TimeTraceScope Scope("DTLTO write index shards");
    BackendThreadPool.wait();
  }
  if (Err)
    return std::move(*Err);

  std::vector<JobState *> Pending;
  for (JobState &State : Jobs)
    if (State.Started && !State.CacheHit)
      Pending.push_back(&State);
  if (Pending.empty()) {
    printSummary(0, 0);
    return Error::success();
  }

  // Largest first, so that in-order dispatch balances the load.
  llvm::stable_sort(Pending, [](const JobState *A, const JobState *B) {
    return A->J.InputBytes > B->J.InputBytes;
  });
  std::vector<const Job *> ManifestJobs;
  for (const JobState *State : Pending)
    ManifestJobs.push_back(&State->J);

  std::string Manifest = manifestPath(S.LinkerOutputFile);
  {
    TimeTraceScope Scope("DTLTO write manifest");
    Temps.add(Manifest);
    if (Error E = writeManifest(Manifest, Common, ManifestJobs))
      return E;
  }

  Clock::time_point DistributorStart = Clock::now();
  {
    TimeTraceScope Scope("DTLTO run distributor", *DistributorPath);
    if (Error E = runDistributor(*DistributorPath, S.DistributorArgs, Manifest))
      return E;
  }
  double DistributorSeconds = secondsSince(DistributorStart);

  {
    TimeTraceScope Scope("DTLTO add objects");
    for (JobState *State : Pending)
      BackendThreadPool.async([this, State] {
        if (Error E = addObject(*State))
          recordError(std::move(E));
      });
    BackendThreadPool.wait();
  }
  if (Err) {
    // One error line for the link, however many jobs failed.
    if (!FailedJobs)
      return std::move(*Err);
    return createStringError(inconvertibleErrorCode(),
                             toString(std::move(*Err)) + " (and " +
                                 Twine(FailedJobs) + " more DTLTO job" +
                                 (FailedJobs == 1 ? "" : "s") + " failed)");
  }

  {
    TimeTraceScope Scope("DTLTO remove temporary files");
    Temps.removeAll();
  }
  printSummary(Pending.size(), DistributorSeconds);
  return Error::success();
}

void OutOfProcessBackend::printSummary(size_t Distributed,
                                       double DistributorSeconds) {
  if (!verbose())
    return;
  size_t Total = count_if(Jobs, [](const JobState &J) { return J.Started; });
  errs() << "dtlto: " << Total << " ThinLTO jobs: " << (Total - Distributed)
         << " from the cache, " << Distributed << " run by '"
         << sys::path::filename(S.Distributor) << "'";
  errs() << format(" in %.2f s; backend total %.2f s\n", DistributorSeconds,
                   secondsSince(StartTime));
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
