//===- dtlto-backend.cpp - One ThinLTO backend job, as in-process ---------===//
//
// Runs DTLTO jobs exactly as LLVM's in-process ThinLTO backend would run them
// in the linker: the linker's LTO configuration (read from --config, written
// by the engine), the link's combined summary index (--combined-index), the
// module's import list (from its shard, -fthinlto-index=), imported modules
// loaded lazily from their files, then lto::thinBackend, the same function
// in-process ThinLTO calls. The object is the one in-process ThinLTO makes.
//
// It takes the job shape every distributor already runs:
//   common.args = dtlto-backend --config=<c> --combined-index=<i>
//   job.args    = <module> -fthinlto-index=<shard> -o <object>
// With --batch it runs many jobs in one process: each line of stdin is a job's
// arguments as a JSON array of strings, and each job gets one line on stdout,
// {"ok":true} or {"ok":false,"error":"..."}, once its object is written.
//
//===----------------------------------------------------------------------===//

#include "dtlto/BackendConfig.h"
#include "dtlto/WriteFile.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/CodeGen/CommandFlags.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/ModuleSummaryIndex.h"
#include "llvm/LTO/Config.h"
#include "llvm/LTO/LTOBackend.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include <iostream>
#include <string>

using namespace llvm;

static codegen::RegisterCodeGenFlags CodeGenFlags;

static const char *const Usage =
    "usage: dtlto-backend --config=<file> --combined-index=<file>\n"
    "                     <module> -fthinlto-index=<shard> -o <object>\n"
    "       dtlto-backend --config=<file> --combined-index=<file> --batch\n"
    "\n"
    "Runs ThinLTO backend jobs exactly as in-process ThinLTO runs them in the\n"
    "linker. The engine writes --config and --combined-index once per link and\n"
    "lists both in the manifest's common.inputs. With --batch, each line of\n"
    "stdin is one job's arguments as a JSON array of strings; each job gets one\n"
    "line on stdout, {\"ok\":true} or {\"ok\":false,\"error\":\"...\"}.\n";

static Error fail(const Twine &Msg) {
  return createStringError(inconvertibleErrorCode(), Msg);
}

namespace {
struct JobArgs {
  std::string Module, Shard, Object;
};

/// A module file and the ThinLTO module in it.
struct ModuleFile {
  std::unique_ptr<MemoryBuffer> Buffer;
  BitcodeModule BM;
};

/// What every job of a link shares, loaded once per process.
struct Link {
  lto::Config Conf;
  std::unique_ptr<ModuleSummaryIndex> Index;
  DenseMap<StringRef, GVSummaryMapTy> DefinedPerModule;
  /// Module files opened so far. A batch worker's jobs import from the same
  /// few modules again and again; opening each once, as in-process ThinLTO
  /// does with its inputs, saves about 1% of CPython's backend time. The
  /// files do not change while the link's jobs run.
  StringMap<std::unique_ptr<ModuleFile>> Files;
};
} // namespace

// Parses a job's own arguments: <module> -fthinlto-index=<shard> -o <object>.
static Expected<JobArgs> parseJobArgs(ArrayRef<std::string> Args) {
  JobArgs J;
  for (size_t I = 0; I < Args.size(); ++I) {
    StringRef A = Args[I];
    if (A.consume_front("-fthinlto-index="))
      J.Shard = A.str();
    else if (A == "-o" && I + 1 < Args.size())
      J.Object = Args[++I];
    else if (!A.starts_with("-") || A.starts_with("./-") || A == "-")
      J.Module = A.str();
    else
      return fail("unknown job argument '" + A + "'");
  }
  if (J.Module.empty() || J.Shard.empty() || J.Object.empty())
    return fail("a job needs <module> -fthinlto-index=<shard> -o <object>");
  return J;
}

static Expected<std::unique_ptr<MemoryBuffer>> readFile(StringRef Path,
                                                        StringRef What) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buf = MemoryBuffer::getFile(
      Path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!Buf)
    return fail("cannot read the " + What + " '" + Path +
                "': " + Buf.getError().message());
  return std::move(*Buf);
}

// The ThinLTO module in the file at Path, opened on first use.
static Expected<BitcodeModule> openModule(Link &L, StringRef Path,
                                          StringRef What) {
  std::unique_ptr<ModuleFile> &F = L.Files[Path];
  if (F)
    return F->BM;
  Expected<std::unique_ptr<MemoryBuffer>> Buf = readFile(Path, What);
  if (!Buf)
    return Buf.takeError();
  Expected<BitcodeModule> BM = lto::findThinLTOModule(**Buf);
  if (!BM)
    return fail("'" + Path + "' holds no ThinLTO module: " +
                toString(BM.takeError()));
  F.reset(new ModuleFile{std::move(*Buf), *BM});
  return F->BM;
}

static Error runJob(Link &L, const JobArgs &J) {
  Expected<BitcodeModule> BM = openModule(L, J.Module, "module");
  if (!BM)
    return BM.takeError();

  Expected<std::unique_ptr<ModuleSummaryIndex>> Shard =
      getModuleSummaryIndexForFile(J.Shard);
  if (!Shard)
    return fail("cannot read the index shard '" + J.Shard +
                "': " + toString(Shard.takeError()));

  // A module that defines nothing live (all its code compiled out) has no
  // summaries, but is still a module of the link.
  static const GVSummaryMapTy NoDefinitions;
  if (!L.Index->modulePaths().count(J.Module))
    return fail("the combined index knows no module '" + J.Module +
                "': the job does not belong to this link");
  auto DefinedIt = L.DefinedPerModule.find(J.Module);
  const GVSummaryMapTy &Defined = DefinedIt == L.DefinedPerModule.end()
                                      ? NoDefinitions
                                      : DefinedIt->second;

  lto::LTOLLVMContext Context(L.Conf);
  Expected<std::unique_ptr<Module>> M = BM->parseModule(Context);
  if (!M)
    return fail("cannot load '" + J.Module + "': " + toString(M.takeError()));

  // The import list the thin link made for this module, as its shard has it.
  FunctionImporter::ImportIDTable ImportIDs;
  FunctionImporter::ImportMapTy ImportList(ImportIDs);
  lto::initImportList(**M, **Shard, ImportList);

  // Imported modules, loaded lazily from their files by the importer.
  MapVector<StringRef, BitcodeModule> ModuleMap;
  for (StringRef Source : ImportList.getSourceModules()) {
    Expected<BitcodeModule> SourceBM =
        openModule(L, Source, "imported module");
    if (!SourceBM)
      return SourceBM.takeError();
    ModuleMap.insert({Source, *SourceBM});
  }

  SmallString<0> Object;
  auto AddStream = [&](unsigned, const Twine &)
      -> Expected<std::unique_ptr<CachedFileStream>> {
    return std::make_unique<CachedFileStream>(
        std::make_unique<raw_svector_ostream>(Object));
  };
  if (Error E = lto::thinBackend(L.Conf, /*Task=*/0, AddStream, **M, *L.Index,
                                 ImportList, Defined, &ModuleMap,
                                 L.Conf.CodeGenOnly))
    return E;
  // Atomically: a distributor that collects outputs never sees half an object.
  return dtlto::writeFile(J.Object, "object",
                          [&](raw_ostream &OS) { OS << Object; },
                          /*Atomic=*/true);
}

// Runs jobs named on stdin until it closes.
static int runBatch(Link &L) {
  std::string Line;
  while (std::getline(std::cin, Line)) {
    if (StringRef(Line).trim().empty())
      continue;
    Error E = Error::success();
    Expected<json::Value> V = json::parse(Line);
    std::vector<std::string> Args;
    if (!V) {
      E = fail("a batch line is not JSON: " + toString(V.takeError()));
    } else if (const json::Array *A = V->getAsArray()) {
      for (const json::Value &Arg : *A)
        if (std::optional<StringRef> S = Arg.getAsString())
          Args.push_back(S->str());
      if (Args.size() != A->size())
        E = fail("a batch line must be a JSON array of strings");
    } else {
      E = fail("a batch line must be a JSON array of strings");
    }
    if (!E) {
      Expected<JobArgs> J = parseJobArgs(Args);
      E = J ? runJob(L, *J) : J.takeError();
    }
    json::Object Result{{"ok", !E}};
    if (E)
      Result["error"] = toString(std::move(E));
    outs() << json::Value(std::move(Result)) << "\n";
    outs().flush();
  }
  return 0;
}

int main(int argc, const char **argv) {
  InitLLVM X(argc, argv);
  std::string ConfigPath, IndexPath;
  bool Batch = false;
  std::vector<std::string> JobArgv;
  for (int I = 1; I < argc; ++I) {
    StringRef A = argv[I];
    if (A.consume_front("--config="))
      ConfigPath = A.str();
    else if (A.consume_front("--combined-index="))
      IndexPath = A.str();
    else if (A == "--batch")
      Batch = true;
    else if (A == "--help" || A == "-h") {
      outs() << Usage;
      return 0;
    } else if (A == "--version") {
      outs() << "dtlto-backend " DTLTO_VERSION " (LLVM " LLVM_VERSION_STRING
                ")\n";
      return 0;
    } else
      JobArgv.push_back(A.str());
  }
  auto Die = [](Error E) {
    errs() << "dtlto-backend: error: " << toString(std::move(E)) << "\n";
    return 1;
  };
  if (ConfigPath.empty() || IndexPath.empty())
    return Die(fail("--config= and --combined-index= are required\n" +
                    Twine(Usage)));

  Link L;
  Expected<dtlto::BackendConfigHeader> H =
      dtlto::readBackendConfig(ConfigPath, L.Conf);
  if (!H)
    return Die(H.takeError());
  // The link's -mllvm options, as the linker parsed them.
  std::vector<const char *> ClArgs{"dtlto-backend (-mllvm)"};
  for (const std::string &A : H->MllvmArgs)
    ClArgs.push_back(A.c_str());
  if (!cl::ParseCommandLineOptions(ClArgs.size(), ClArgs.data(), "", &errs()))
    return 1;
  L.Conf.DiagHandler = [](const DiagnosticInfo &DI) {
    DiagnosticPrinterRawOStream DP(errs());
    errs() << "dtlto-backend: ";
    if (DI.getSeverity() == DS_Error)
      errs() << "error: ";
    else if (DI.getSeverity() == DS_Warning)
      errs() << "warning: ";
    DI.print(DP);
    errs() << "\n";
  };

  InitializeAllTargets();
  InitializeAllTargetMCs();
  InitializeAllAsmPrinters();
  InitializeAllAsmParsers();

  Expected<std::unique_ptr<ModuleSummaryIndex>> Index =
      getModuleSummaryIndexForFile(IndexPath);
  if (!Index)
    return Die(fail("cannot read the combined index '" + IndexPath +
                    "': " + toString(Index.takeError())));
  L.Index = std::move(*Index);
  L.Index->collectDefinedGVSummariesPerModule(L.DefinedPerModule);

  if (Batch) {
    int RC = runBatch(L);
    // Every object is written and every reply flushed. The distributor waits
    // for its workers after the link's last job: freeing the combined index
    // and modules here would only make the link wait longer.
    outs().flush();
    sys::Process::Exit(RC, /*NoCleanup=*/true);
  }
  Expected<JobArgs> J = parseJobArgs(JobArgv);
  if (!J)
    return Die(J.takeError());
  if (Error E = runJob(L, *J))
    return Die(std::move(E));
  return 0;
}
