//===- dtlto-backend.cpp - One ThinLTO backend job, as in-process ---------===//
//
// Runs DTLTO jobs exactly as LLVM's in-process ThinLTO backend would run them
// in the linker: the linker's LTO configuration (read from --config, written
// by the engine), the module's share of the link's summary index and its
// import list (its shard, -fthinlto-index=), imported modules loaded lazily
// from their files, then lto::thinBackend, the same function in-process
// ThinLTO calls. The object is the one in-process ThinLTO makes.
//
// It takes the job shape every distributor already runs:
//   common.args = dtlto-backend --config=<c>
//   job.args    = <module> -fthinlto-index=<shard> -o <object>
// A job reads nothing of the rest of the program: its inputs grow with its
// module and its imports, not with the link.
// With --batch it runs many jobs in one process: each line of stdin is a job's
// arguments as a JSON array of strings, and each job gets one line on stdout,
// {"ok":true} or {"ok":false,"error":"..."}, once its object is written; when
// stderr is a file the reply also says where the job's output on it ends
// ("stderr_end", an offset), so a distributor may queue the next job early,
// and when the job ended ("t", seconds since the epoch). A worker that still
// holds two queued jobs or more when one ends keeps that job's reply and
// sends it with the next ones: a distributor that queues small jobs deep is
// woken once for several.
// Without --config it is the farm side of distcc and icecream:
// `-c <bundle> -o <object>` runs the one job in the bundle (Bundle.h,
// docs/bundle.md).
//
//===----------------------------------------------------------------------===//

#include "Bundle.h"
#include "KeptMemory.h"
#include "dtlto/BackendCache.h"
#include "dtlto/BackendConfig.h"
#include "dtlto/WriteFile.h"

#include "llvm/ADT/StringSet.h"
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
#include "llvm/Support/Memory.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <mutex>
#include <optional>
#include <poll.h>
#include <string>
#include <unistd.h>

using namespace llvm;

static codegen::RegisterCodeGenFlags CodeGenFlags;

static const char *const Usage =
    "usage: dtlto-backend --config=<file>\n"
    "                     <module> -fthinlto-index=<shard> -o <object>\n"
    "       dtlto-backend --config=<file> --batch\n"
    "       dtlto-backend -c <bundle>|- -o <object>\n"
    "       dtlto-backend --memory\n"
    "       dtlto-backend --llvm-options\n"
    "\n"
    "Runs ThinLTO backend jobs exactly as in-process ThinLTO runs them in the\n"
    "linker. The engine writes --config once per link and lists it in the\n"
    "manifest's common.inputs; each job's summaries come from its shard. With\n"
    "--batch, each line of stdin is one job's arguments as a JSON array of\n"
    "strings; each job gets one line on stdout, {\"ok\":true} or\n"
    "{\"ok\":false,\"error\":\"...\"}.\n"
    "Without --config it runs the one job of a bundle\n"
    "(what distcc and icecream send, see docs/bundle.md) and writes its object\n"
    "to -o; other options, which those daemons add, are ignored.\n"
    "With --memory it is a worker of the local distributor plugin: the link\n"
    "and its jobs come on stdin and the objects go to stdout, no file is\n"
    "touched (docs/plugins.md).\n"
    "A worker keeps the module files it has read, up to\n"
    "DTLTO_BACKEND_CACHE_MIB (default 64; 0 keeps none past its job); a --memory\n"
    "worker keeps what the plugin tells it to, within the same budget.\n"
    "--llvm-options lists every option the link's -mllvm options are parsed\n"
    "against: LLVM's own (it is linked with all of LLVM, as libLLVM.so is).\n";

static Error fail(const Twine &Msg) {
  return createStringError(inconvertibleErrorCode(), Msg);
}

namespace {
struct JobArgs {
  std::string Module, Shard, Object;
};

/// A module file and the ThinLTO module in it.
struct ModuleFile : dtlto::Kept {
  std::unique_ptr<MemoryBuffer> Buffer;
  BitcodeModule BM;
  uint64_t LastJob = 0; // the last job that used it
};

/// What every job of a link shares, loaded once per process.
struct Link {
  lto::Config Conf;
  /// Module files opened so far. A batch worker's jobs import from the same
  /// few modules again and again; opening each once, as in-process ThinLTO
  /// does with its inputs, saves about 1% of CPython's backend time. The
  /// files do not change while the link's jobs run. Bounded: a worker of a
  /// 30,000-module link would otherwise end up holding most of the
  /// program's bitcode (190 MiB a worker at module scale 0.1), so past
  /// CacheBytes the files the longest unused go, between jobs.
  StringMap<std::unique_ptr<ModuleFile>, dtlto::KeptAllocator> Files;
  uint64_t FileBytes = 0; // held in Files
  uint64_t CacheBytes = uint64_t(64) << 20;
  uint64_t Job = 0; // jobs begun
  /// A --memory worker reads no file: every module comes with the job.
  bool NoFiles = false;
};
} // namespace

// The module files a batch worker keeps between jobs (BackendCache.h).
static Error setCacheBudget(Link &L) {
  Expected<uint64_t> Bytes = dtlto::backendCacheBytes();
  if (!Bytes)
    return Bytes.takeError();
  L.CacheBytes = *Bytes;
  return Error::success();
}

// The cached module file Name, marked as used by this job; null if absent.
static ModuleFile *cachedFile(Link &L, StringRef Name) {
  auto It = L.Files.find(Name);
  if (It == L.Files.end())
    return nullptr;
  It->second->LastJob = L.Job;
  return It->second.get();
}

// Adds a module file, read for this job, to the cache.
static ModuleFile &keepFile(Link &L, StringRef Name,
                            std::unique_ptr<MemoryBuffer> Buffer,
                            BitcodeModule BM) {
  L.FileBytes += Buffer->getBufferSize();
  std::unique_ptr<ModuleFile> &F = L.Files[Name];
  F.reset(new ModuleFile{{}, std::move(Buffer), BM, L.Job});
  return *F;
}

// After a job: back under the budget (BackendCache.h's rule).
static void trimFiles(Link &L) {
  if (L.FileBytes <= L.CacheBytes)
    return;
  std::vector<dtlto::HeldFile> Files;
  for (const auto &E : L.Files)
    Files.push_back(
        {E.second->LastJob, E.second->Buffer->getBufferSize(), E.first()});
  for (const std::string &Name :
       dtlto::filesToDrop(std::move(Files), L.FileBytes, L.CacheBytes))
    L.Files.erase(Name);
}

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

namespace {
/// A module's bytes that a worker keeps between jobs, mapped. In malloc's
/// heap, thousands of them would pin the arena the jobs' own memory comes
/// and goes in. The object and its name are kept memory too (KeptMemory.h).
class KeptBuffer : public MemoryBuffer, public dtlto::Kept {
  dtlto::KeptName Name;

protected:
  explicit KeptBuffer(StringRef N) : Name(N) {}
  void setBytes(const char *Start, size_t Size) {
    init(Size ? Start : "", Size ? Start + Size : "",
         /*RequiresNullTerminator=*/false);
  }

public:
  StringRef getBufferIdentifier() const override { return Name.str(); }
  BufferKind getBufferKind() const override { return MemoryBuffer_MMap; }
};

/// A batch worker's module file, mapped whatever its size
/// (MemoryBuffer::getFile would read a file of less than four pages into
/// the heap).
class MappedFile : public KeptBuffer {
  sys::fs::mapped_file_region Region;

public:
  MappedFile(sys::fs::mapped_file_region R, StringRef Path)
      : KeptBuffer(Path), Region(std::move(R)) {
    setBytes(Region.const_data(), Region.size());
  }
};

/// A module sent to a --memory worker, which keeps it until a job drops
/// it, in pages mapped for it alone.
class SentModule : public KeptBuffer {
  sys::OwningMemoryBlock Pages;

  SentModule(StringRef Name, sys::MemoryBlock Block, size_t Size)
      : KeptBuffer(Name), Pages(Block) {
    setBytes(static_cast<const char *>(Pages.base()), Size);
  }

public:
  /// Size bytes to be filled (data()); null if they cannot be mapped.
  static std::unique_ptr<SentModule> create(StringRef Name, size_t Size) {
    std::error_code EC;
    sys::MemoryBlock Block = sys::Memory::allocateMappedMemory(
        Size, nullptr, sys::Memory::MF_READ | sys::Memory::MF_WRITE, EC);
    if (EC)
      return nullptr;
    return std::unique_ptr<SentModule>(new SentModule(Name, Block, Size));
  }
  char *data() { return static_cast<char *>(Pages.base()); }
};
} // namespace

static Expected<std::unique_ptr<MemoryBuffer>> readFile(StringRef Path,
                                                        StringRef What) {
  auto Fail = [&](std::error_code EC) {
    return fail("cannot read the " + What + " '" + Path + "': " + EC.message());
  };
  Expected<sys::fs::file_t> FD = sys::fs::openNativeFileForRead(Path);
  if (!FD)
    return Fail(errorToErrorCode(FD.takeError()));
  sys::fs::file_status Status;
  std::error_code EC = sys::fs::status(*FD, Status);
  if (EC || Status.getSize() == 0) {
    // Nothing to map (mmap refuses an empty file); the bitcode reader then
    // names what is wrong with it.
    sys::fs::closeFile(*FD);
    if (EC)
      return Fail(EC);
    return MemoryBuffer::getMemBuffer("", Path, /*RequiresNullTerminator=*/false);
  }
  sys::fs::mapped_file_region Region(*FD, sys::fs::mapped_file_region::readonly,
                                     Status.getSize(), 0, EC);
  sys::fs::closeFile(*FD);
  if (!EC)
    return std::make_unique<MappedFile>(std::move(Region), Path);
  // Not a file that maps (a directory), or out of mappings (vm.max_map_count,
  // with a large DTLTO_BACKEND_CACHE_MIB of small files): read it as LLVM
  // does, which also names what is wrong.
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buf = MemoryBuffer::getFile(
      Path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!Buf)
    return Fail(Buf.getError());
  return std::move(*Buf);
}

// The ThinLTO module in the file at Path, opened on first use.
static Expected<BitcodeModule> openModule(Link &L, StringRef Path,
                                          StringRef What) {
  if (ModuleFile *F = cachedFile(L, Path))
    return F->BM;
  if (L.NoFiles)
    return fail("the job needs the " + What + " '" + Path +
                "', which it neither sent nor named as held");
  Expected<std::unique_ptr<MemoryBuffer>> Buf = readFile(Path, What);
  if (!Buf)
    return Buf.takeError();
  Expected<BitcodeModule> BM = lto::findThinLTOModule(**Buf);
  if (!BM)
    return fail("'" + Path + "' holds no ThinLTO module: " +
                toString(BM.takeError()));
  return keepFile(L, Path, std::move(*Buf), *BM).BM;
}

// Compiles Module into Object. Its shard (ShardName in errors) is the
// backend's index, as for clang: the module's own summaries, those it
// imports and those it refers to, as the thin link left them (in-process
// ThinLTO looks these up in the whole index), and its import list.
static Error compileModule(Link &L, StringRef ModuleName,
                           const ModuleSummaryIndex &Shard,
                           StringRef ShardName, SmallString<0> &Object) {
  Expected<BitcodeModule> BM = openModule(L, ModuleName, "module");
  if (!BM)
    return BM.takeError();

  if (!Shard.modulePaths().count(ModuleName))
    return fail("the index shard '" + ShardName + "' knows no module '" +
                ModuleName + "': the job does not belong to this link");
  // A module that defines nothing live (all its code compiled out) has no
  // summaries, but is still a module of the link.
  DenseMap<StringRef, GVSummaryMapTy> DefinedPerModule;
  Shard.collectDefinedGVSummariesPerModule(DefinedPerModule);
  const GVSummaryMapTy &Defined = DefinedPerModule[ModuleName];

  lto::LTOLLVMContext Context(L.Conf);
  Expected<std::unique_ptr<Module>> M = BM->parseModule(Context);
  if (!M)
    return fail("cannot load '" + ModuleName + "': " + toString(M.takeError()));

  // The import list the thin link made for this module, as its shard has it.
  FunctionImporter::ImportIDTable ImportIDs;
  FunctionImporter::ImportMapTy ImportList(ImportIDs);
  lto::initImportList(**M, Shard, ImportList);

  // Imported modules, loaded lazily from their files by the importer.
  MapVector<StringRef, BitcodeModule> ModuleMap;
  for (StringRef Source : ImportList.getSourceModules()) {
    Expected<BitcodeModule> SourceBM =
        openModule(L, Source, "imported module");
    if (!SourceBM)
      return SourceBM.takeError();
    ModuleMap.insert({Source, *SourceBM});
  }

  auto AddStream = [&](unsigned, const Twine &)
      -> Expected<std::unique_ptr<CachedFileStream>> {
    return std::make_unique<CachedFileStream>(
        std::make_unique<raw_svector_ostream>(Object));
  };
  return lto::thinBackend(L.Conf, /*Task=*/0, AddStream, **M, Shard,
                          ImportList, Defined, &ModuleMap, L.Conf.CodeGenOnly);
}

// Runs Work on the worker's job thread and waits for it. A worker's loop,
// batch or --memory, runs there whole, so that no job is handed from one
// thread to another (two wake-ups of a sleeping thread a job). glibc gives
// that thread a malloc arena of its own, apart from the main thread's (the
// configuration); what the worker keeps between jobs is in no arena at all
// (module files and sent modules mapped, their entries and names in
// KeptMemory.h's pages). Kept in the jobs' arena, it fragmented it: a worker
// of a 30,000-module link spent twice in-process's time in malloc.
template <typename T> static T onJobThread(function_ref<T()> Work) {
  static DefaultThreadPool Pool(hardware_concurrency(1));
  std::optional<T> Result;
  Pool.async([&] {
    // The pool names it llvm-worker-0; profiles count it as the worker's.
    static std::once_flag Named;
    std::call_once(Named, [] { set_thread_name("dtlto-backend"); });
    Result.emplace(Work());
  });
  Pool.wait();
  return std::move(*Result);
}

static Error runJob(Link &L, const JobArgs &J) {
  // The module first: a job without it is reported as such, whatever else
  // is wrong with it.
  if (Expected<BitcodeModule> BM = openModule(L, J.Module, "module"); !BM)
    return BM.takeError();
  Expected<std::unique_ptr<ModuleSummaryIndex>> Shard =
      getModuleSummaryIndexForFile(J.Shard);
  if (!Shard)
    return fail("cannot read the index shard '" + J.Shard +
                "': " + toString(Shard.takeError()));
  SmallString<0> Object;
  if (Error E = compileModule(L, J.Module, **Shard, J.Shard, Object))
    return E;
  // Atomically: a distributor that collects outputs never sees half an object.
  return dtlto::writeFile(J.Object, "object",
                          [&](raw_ostream &OS) { OS << Object; },
                          dtlto::WriteMode::Atomic);
}

namespace {
/// A batch worker's stdin: one job per line. Lines already sent are taken in
/// without waiting, so that the worker knows how many jobs it holds.
class JobLines {
  std::string Buf;
  size_t Pos = 0; // where the next line starts
  bool Ended = false;

  // Reads what stdin has; without Wait, only if something is there now. At
  // its end a last line without a newline gets one, so that every line in
  // Buf ends with one.
  void readSome(bool Wait) {
    if (Ended)
      return;
    if (!Wait) {
      pollfd P{STDIN_FILENO, POLLIN, 0};
      if (::poll(&P, 1, 0) <= 0)
        return;
    }
    char Chunk[65536];
    ssize_t N;
    do
      N = ::read(STDIN_FILENO, Chunk, sizeof(Chunk));
    while (N < 0 && errno == EINTR);
    Buf.erase(0, Pos);
    Pos = 0;
    if (N > 0) {
      Buf.append(Chunk, N);
      return;
    }
    Ended = true;
    if (!Buf.empty() && Buf.back() != '\n')
      Buf += '\n';
  }

public:
  /// The next line, waiting for it; none once stdin has ended.
  std::optional<std::string> next() {
    for (;;) {
      if (size_t End = Buf.find('\n', Pos); End != std::string::npos) {
        std::string Line = Buf.substr(Pos, End - Pos);
        Pos = End + 1;
        return Line;
      }
      if (Ended)
        return std::nullopt;
      readSome(/*Wait=*/true);
    }
  }

  /// Whether next() has a line without waiting.
  bool hasLine() const { return Buf.find('\n', Pos) != std::string::npos; }

  /// How many jobs are waiting, with whatever has arrived by now.
  size_t held() {
    readSome(/*Wait=*/false);
    return std::count(Buf.begin() + Pos, Buf.end(), '\n');
  }
};
} // namespace

// Runs jobs named on stdin until it closes. Replies are written when the
// distributor needs them: a worker that still holds two jobs or more after
// one ends keeps that job's reply with the next ones, so that a distributor
// that queues jobs deep is woken once for several (each wake-up of another
// process on a busy machine costs about what a small job's own work does).
// A failure, or holding one job or none, sends every reply kept.
static int runBatch(Link &L) {
  JobLines In;
  std::string Replies;
  auto Send = [&] {
    outs() << Replies;
    outs().flush();
    Replies.clear();
  };
  for (;;) {
    // Never wait for a job with replies kept.
    if (!Replies.empty() && !In.hasLine())
      Send();
    std::optional<std::string> Line = In.next();
    if (!Line)
      break;
    if (StringRef(*Line).trim().empty())
      continue;
    Error E = Error::success();
    Expected<json::Value> V = json::parse(*Line);
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
      ++L.Job;
      E = J ? runJob(L, *J) : J.takeError();
      trimFiles(L);
    }
    bool Ok = !E;
    json::Object Result{{"ok", Ok}};
    if (E)
      Result["error"] = toString(std::move(E));
    // Where this job's output on stderr ends (errs() is unbuffered, so it is
    // all written): a distributor that queues our next job before it reads
    // this reply can then tell the two jobs' output apart. Only a file has
    // an offset; on a pipe or a terminal there is none to give.
    if (off_t End = ::lseek(STDERR_FILENO, 0, SEEK_CUR); End >= 0)
      Result["stderr_end"] = int64_t(End);
    // When the job ended: its reply may wait for the next ones.
    Result["t"] = std::chrono::duration<double>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
    raw_string_ostream(Replies) << json::Value(std::move(Result)) << "\n";
    if (!Ok || In.held() <= 1)
      Send();
  }
  // Every reply is sent: the loop ends only when a line was waited for.
  return 0;
}

// Sets up what every job of the link shares: the configuration (Text, named
// ConfigName in errors), the -mllvm options in it and the targets.
static Error loadConfig(Link &L, StringRef ConfigName, StringRef Text) {
  Expected<dtlto::BackendConfigHeader> H =
      dtlto::parseBackendConfig(ConfigName, Text, L.Conf);
  if (!H)
    return H.takeError();
  // The link's -mllvm options, as the linker parsed them.
  std::vector<const char *> ClArgs{"dtlto-backend (-mllvm)"};
  for (const std::string &A : H->MllvmArgs)
    ClArgs.push_back(A.c_str());
  if (!cl::ParseCommandLineOptions(ClArgs.size(), ClArgs.data(), "", &errs()))
    return fail("the link's -mllvm options are not this dtlto-backend's");
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
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Memory mode: the worker of the local plugin (docs/plugins.md)
//===----------------------------------------------------------------------===//
//
// `dtlto-backend --memory` reads everything from stdin and writes objects to
// stdout; it touches no file. Each message is one JSON line followed by the
// bytes it announces:
//   in:  {"config": C}                         then the configuration, once
//        {"drop": [N...],
//         "inputs": [{"name": N, "size": S} or {"name": N, "held": true}...]}
//                                               then the bytes of each input
//                                               with a size: the module, its
//                                               shard, the modules it imports
//   out: {"ok": true, "bytes": B}              then the object
//        {"ok": false, "error": "..."}
// The worker holds every module it was sent (the shard, inputs[1], is the
// job's own) until a job's "drop" names it, so each module crosses the pipe
// once and later jobs name it as held. The plugin decides what the worker
// holds (DTLTO_BACKEND_CACHE_MIB is its budget): the worker never drops a
// module on its own, so the plugin may send a job before the answer to the
// one before it. A held module the worker does not hold (never sent, or
// not ThinLTO bitcode) is a broken protocol: the worker exits, and the
// plugin starts another.

namespace {
/// Standard input, read in lines and runs of bytes. Only a line passes
/// through Buf; a run of bytes goes straight where it is kept, so that a
/// module is copied once, and Buf never holds more than a read's worth
/// past the line taken last (the plugin writes the next job while this
/// one runs, so Buf is rarely empty when it is read into).
class Input {
  std::string Buf;
  size_t Pos = 0;

  static ssize_t readSome(char *To, size_t N) {
    ssize_t Got;
    do
      Got = ::read(0, To, N);
    while (Got < 0 && errno == EINTR);
    return Got;
  }

  bool fill() {
    Buf.erase(0, Pos);
    Pos = 0;
    char Chunk[1 << 16];
    ssize_t N = readSome(Chunk, sizeof(Chunk));
    if (N <= 0)
      return false;
    Buf.append(Chunk, N);
    return true;
  }

public:
  bool line(std::string &Out) {
    for (;;) {
      size_t NL = Buf.find('\n', Pos);
      if (NL != std::string::npos) {
        Out = Buf.substr(Pos, NL - Pos);
        Pos = NL + 1;
        return true;
      }
      if (!fill())
        return false;
    }
  }
  /// The next N bytes, into To: what Buf has of them, then the rest read
  /// into To itself.
  bool bytes(char *To, size_t N) {
    size_t Have = std::min(N, Buf.size() - Pos);
    if (Have) // To is null for an empty module (no pages mapped)
      memcpy(To, Buf.data() + Pos, Have);
    Pos += Have;
    while (Have < N) {
      ssize_t Got = readSome(To + Have, N - Have);
      if (Got <= 0)
        return false;
      Have += Got;
    }
    return true;
  }
};
} // namespace

static int die(Error E);

static void reply(const json::Object &O, StringRef Payload = "") {
  outs() << json::Value(json::Object(O)) << "\n" << Payload;
  outs().flush();
}

// The --memory worker's jobs, on its job thread (onJobThread): the modules
// it holds are SentModules, apart from the jobs' arena.
static int runMemoryJobs(Input &In, Link &L) {
  std::string Line;
  while (In.line(Line)) {
    Expected<json::Value> V = json::parse(Line);
    const json::Object *O = V ? V->getAsObject() : nullptr;
    if (!V)
      consumeError(V.takeError());
    const json::Array *Inputs = O ? O->getArray("inputs") : nullptr;
    if (!Inputs || Inputs->size() < 2)
      return die(fail("--memory: a job must be {\"inputs\": [...]} with "
                      "its module and shard"));
    if (const json::Array *Drop = O->getArray("drop"))
      for (const json::Value &Name : *Drop)
        if (std::optional<StringRef> N = Name.getAsString())
          L.Files.erase(*N);
    // (name, bytes); no bytes for a module the worker holds.
    std::vector<std::pair<std::string, std::unique_ptr<MemoryBuffer>>> Files;
    for (const json::Value &F : *Inputs) {
      const json::Object *FO = F.getAsObject();
      std::optional<StringRef> Name = FO ? FO->getString("name") : std::nullopt;
      if (Name && FO->getBoolean("held").value_or(false)) {
        if (Files.size() == 1)
          return die(fail("--memory: the index shard '" + *Name +
                          "' cannot be held: send it with each job"));
        if (!L.Files.count(*Name))
          return die(fail("--memory: the job names '" + *Name +
                          "' as held, but this worker does not hold it (it "
                          "was never sent, or was dropped)"));
        Files.emplace_back(Name->str(), nullptr);
        continue;
      }
      int64_t Size = FO ? FO->getInteger("size").value_or(-1) : -1;
      if (!Name || Size < 0)
        return die(fail("--memory: an input without its name, size or "
                        "bytes"));
      // The shard goes with its job; a module stays until a job drops it.
      std::unique_ptr<MemoryBuffer> Data;
      char *To = nullptr;
      if (Files.size() == 1) {
        std::unique_ptr<WritableMemoryBuffer> Shard =
            WritableMemoryBuffer::getNewUninitMemBuffer(Size, *Name);
        To = Shard ? Shard->getBufferStart() : nullptr;
        Data = std::move(Shard);
      } else if (std::unique_ptr<SentModule> M = SentModule::create(*Name, Size)) {
        To = M->data();
        Data = std::move(M);
      }
      if (!Data)
        return die(fail("--memory: no memory for the " + Twine(Size) +
                        " bytes of '" + *Name + "'"));
      if (!In.bytes(To, Size))
        return die(fail("--memory: an input without its name, size or "
                        "bytes"));
      Files.emplace_back(Name->str(), std::move(Data));
    }
    // Every module sent is kept, whatever becomes of the job, until a job
    // drops it: the plugin counts on it. One that is not ThinLTO bitcode
    // cannot be, and fails the job.
    ++L.Job;
    Error E = Error::success();
    for (size_t I = 0; I < Files.size(); ++I) {
      if (I == 1)
        continue; // the shard
      const std::string &Name = Files[I].first;
      if (cachedFile(L, Name))
        continue; // held, or sent twice
      std::unique_ptr<MemoryBuffer> Buf = std::move(Files[I].second);
      Expected<BitcodeModule> BM = lto::findThinLTOModule(*Buf);
      if (!BM) {
        E = joinErrors(std::move(E),
                       fail("'" + Name + "' holds no ThinLTO module: " +
                            toString(BM.takeError())));
        continue;
      }
      keepFile(L, Name, std::move(Buf), *BM);
    }
    SmallString<0> Object;
    if (!E) {
      const std::string &ShardName = Files[1].first; // never held
      Expected<std::unique_ptr<ModuleSummaryIndex>> Shard =
          getModuleSummaryIndex(Files[1].second->getMemBufferRef());
      E = !Shard ? fail("cannot read the index shard '" + ShardName +
                        "': " + toString(Shard.takeError()))
                 : compileModule(L, Files[0].first, **Shard, ShardName, Object);
    }
    if (E)
      reply(json::Object{{"ok", false}, {"error", toString(std::move(E))}});
    else
      reply(json::Object{{"ok", true}, {"bytes", int64_t(Object.size())}},
            Object);
  }
  return 0;
}

static int runMemoryWorker() {
  Input In;
  std::string Line, Config;
  if (!In.line(Line))
    return 0;
  Expected<json::Value> Head = json::parse(Line);
  const json::Object *H = Head ? Head->getAsObject() : nullptr;
  if (!Head)
    consumeError(Head.takeError());
  std::optional<int64_t> ConfigSize = H ? H->getInteger("config") : std::nullopt;
  if (ConfigSize && *ConfigSize >= 0)
    Config.resize(*ConfigSize);
  if (!ConfigSize || *ConfigSize < 0 || !In.bytes(Config.data(), Config.size()))
    return die(fail("--memory: the first message must be "
                    "{\"config\": C} and its bytes"));
  Link L;
  L.NoFiles = true;
  if (Error E = loadConfig(L, "<memory>", Config))
    return die(std::move(E));

  int RC = onJobThread<int>([&] { return runMemoryJobs(In, L); });
  // It exits without freeing what it holds, as a batch worker does.
  outs().flush();
  sys::Process::Exit(RC, /*NoCleanup=*/true);
}

namespace {
/// dtlto-backend's own command line.
struct Invocation {
  std::string ConfigPath;
  bool Batch = false;
  std::vector<std::string> JobArgv;
};
} // namespace

static int die(Error E) {
  errs() << "dtlto-backend: error: " << toString(std::move(E)) << "\n";
  return 1;
}

// Runs the job(s) of Inv. With ObjectOverride, the job's object is written
// there instead of to its -o (a bundle's job writes where its daemon says).
static int runInvocation(const Invocation &Inv, StringRef ObjectOverride) {
  if (Inv.ConfigPath.empty())
    return die(fail("--config= is required\n" + Twine(Usage)));

  Link L;
  if (Error E = setCacheBudget(L))
    return die(std::move(E));
  ErrorOr<std::unique_ptr<MemoryBuffer>> Config =
      MemoryBuffer::getFile(Inv.ConfigPath);
  if (!Config)
    return die(fail("the dtlto-backend configuration '" + Inv.ConfigPath +
                    "' cannot be read: " + Config.getError().message()));
  if (Error E = loadConfig(L, Inv.ConfigPath, (*Config)->getBuffer()))
    return die(std::move(E));

  if (Inv.Batch) {
    int RC = onJobThread<int>([&] { return runBatch(L); });
    // Every object is written and every reply flushed. The distributor waits
    // for its workers after the link's last job: freeing the modules here
    // would only make the link wait longer.
    outs().flush();
    sys::Process::Exit(RC, /*NoCleanup=*/true);
  }
  Expected<JobArgs> J = parseJobArgs(Inv.JobArgv);
  if (!J)
    return die(J.takeError());
  if (!ObjectOverride.empty())
    J->Object = ObjectOverride.str();
  if (Error E = onJobThread<Error>([&] { return runJob(L, *J); }))
    return die(std::move(E));
  return 0;
}

// Parses dtlto-backend's own options; the rest are the job's arguments.
static Invocation parseInvocation(ArrayRef<std::string> Args) {
  Invocation Inv;
  for (const std::string &Arg : Args) {
    StringRef A = Arg;
    if (A.consume_front("--config="))
      Inv.ConfigPath = A.str();
    else if (A == "--batch")
      Inv.Batch = true;
    else
      Inv.JobArgv.push_back(Arg);
  }
  return Inv;
}

//===----------------------------------------------------------------------===//
// Bundle mode: the farm side of distcc and icecream (docs/bundle.md)
//===----------------------------------------------------------------------===//
//
// The daemon runs us as the compiler of a one-file compile: distccd as
// `dtlto-backend -c /tmp/distccd_XXXX.i -o /tmp/distccd_XXXX.o`, iceccd as
// `/usr/bin/dtlto-backend -x c ... - -o <file>` with the bundle on stdin, in
// the chroot of the job's environment. The bundle's files are unpacked into
// a private directory next to the output, at the paths they have below the
// link's directory (the index shard names imported modules by those paths),
// the job runs there, its object goes to -o, and the directory is removed,
// on a stop signal too.

/// Everything unpacked, in creation order, and the compiler we started: what
/// a stop signal must remove and kill. Written only before the job starts.
static std::vector<std::string> Unpacked;
static volatile sig_atomic_t ChildPid = 0;

static void removeUnpacked() {
  for (auto It = Unpacked.rbegin(); It != Unpacked.rend(); ++It)
    if (::unlink(It->c_str()) != 0)
      ::rmdir(It->c_str());
}

static void onStopSignal() {
  if (ChildPid > 0)
    ::kill(ChildPid, SIGKILL);
  removeUnpacked();
  // LLVM's handler has restored the default actions: die of the signal.
  ::signal(SIGTERM, SIG_DFL);
  ::raise(SIGTERM);
}

namespace {
/// The daemon-shaped command line: its input, and its -o.
struct FarmArgs {
  std::string Input, Output;
};
} // namespace

// Takes -o and the one input; the options the daemons add for a C compile
// (-c, -x c, -Xclang -main-file-name -Xclang <name>, -fpreprocessed,
// --param ..., -no-canonical-prefixes) mean nothing for a bundle.
static Expected<FarmArgs> parseFarmArgs(ArrayRef<std::string> Args) {
  static const StringSet<> WithValue = {"-x",      "-Xclang", "--param",
                                        "-target", "-MF",     "-MT",
                                        "-MQ",     "-include"};
  FarmArgs F;
  for (size_t I = 0; I < Args.size(); ++I) {
    StringRef A = Args[I];
    if (A == "-o" && I + 1 < Args.size()) {
      F.Output = Args[++I];
    } else if (WithValue.count(A)) {
      ++I;
    } else if (A == "-" || !A.starts_with("-")) {
      if (!F.Input.empty())
        return fail("two inputs, '" + F.Input + "' and '" + A +
                    "': a bundle run takes one");
      F.Input = A.str();
    }
  }
  if (F.Input.empty() || F.Output.empty())
    return fail("without --config=, dtlto-backend runs a bundle: -c <bundle> "
                "-o <object> (or '-' for stdin)\n" +
                Twine(Usage));
  return F;
}

// Creates Root/Name's directories and the file itself, recording each.
static Error unpackFile(StringRef Root, const dtlto::BundleFile &F,
                        StringSet<> &MadeDirs) {
  SmallString<256> Path(Root);
  SmallVector<StringRef, 8> Parts;
  StringRef(F.Name).split(Parts, '/');
  for (size_t I = 0; I + 1 < Parts.size(); ++I) {
    sys::path::append(Path, Parts[I]);
    if (MadeDirs.insert(Path).second) {
      if (std::error_code EC = sys::fs::create_directory(Path))
        return fail("cannot create '" + Path + "': " + EC.message());
      Unpacked.push_back(std::string(Path));
    }
  }
  sys::path::append(Path, Parts.back());
  Unpacked.push_back(std::string(Path));
  return dtlto::writeFile(Path, "unpacked file",
                          [&](raw_ostream &OS) { OS << F.Data; });
}

// Runs the bundle's compiler in the current directory.
static Error runCommand(const dtlto::Bundle &B) {
  std::string Program = B.Args[0];
  if (!StringRef(Program).contains('/')) {
    ErrorOr<std::string> Found = sys::findProgramByName(Program);
    if (!Found)
      return fail("cannot find the compiler '" + Program +
                  "' of the bundle's job in PATH");
    Program = *Found;
  }
  std::vector<StringRef> Argv(B.Args.begin(), B.Args.end());
  std::string Err;
  bool ExecFailed = false;
  sys::ProcessInfo PI = sys::ExecuteNoWait(Program, Argv, std::nullopt, {}, 0,
                                           &Err, &ExecFailed);
  if (ExecFailed)
    return fail("cannot run '" + Program + "': " + Err);
  ChildPid = PI.Pid;
  sys::ProcessInfo Done = sys::Wait(PI, std::nullopt, &Err);
  ChildPid = 0;
  if (Done.ReturnCode != 0)
    return fail("'" + B.Args[0] + "' " +
                (Done.ReturnCode < 0 ? "crashed" + (Err.empty() ? "" : ": " + Err)
                                     : "exited with " +
                                           std::to_string(Done.ReturnCode)));
  return Error::success();
}

static int runBundle(ArrayRef<std::string> Args) {
  Expected<FarmArgs> F = parseFarmArgs(Args);
  if (!F)
    return die(F.takeError());
  Expected<dtlto::Bundle> B = dtlto::readBundle(F->Input);
  if (!B)
    return die(B.takeError());

  SmallString<256> Output(F->Output);
  if (std::error_code EC = sys::fs::make_absolute(Output))
    return die(fail("cannot resolve '" + F->Output + "': " + EC.message()));
  SmallString<256> OldCwd;
  if (std::error_code EC = sys::fs::current_path(OldCwd))
    return die(fail("cannot find the current directory: " + EC.message()));

  // Next to the output: the daemon gave us that directory to write in.
  SmallString<256> Root;
  SmallString<256> Prefix = sys::path::parent_path(Output);
  sys::path::append(Prefix, ".dtlto-bundle");
  if (std::error_code EC = sys::fs::createUniqueDirectory(Prefix, Root))
    return die(fail("cannot create a directory next to '" + Output +
                    "': " + EC.message()));
  Unpacked.push_back(std::string(Root));
  sys::SetInterruptFunction(onStopSignal);

  auto Run = [&]() -> int {
    StringSet<> MadeDirs;
    MadeDirs.insert(Root);
    for (const dtlto::BundleFile &File : B->Files)
      if (Error E = unpackFile(Root, File, MadeDirs))
        return die(std::move(E));
    SmallString<256> Cwd(Root);
    if (B->Cwd != ".") {
      SmallVector<StringRef, 8> Parts;
      StringRef(B->Cwd).split(Parts, '/');
      for (StringRef P : Parts) {
        sys::path::append(Cwd, P);
        if (MadeDirs.insert(Cwd).second) {
          if (std::error_code EC = sys::fs::create_directory(Cwd))
            return die(fail("cannot create '" + Cwd + "': " + EC.message()));
          Unpacked.push_back(std::string(Cwd));
        }
      }
    }
    if (std::error_code EC = sys::fs::set_current_path(Cwd))
      return die(fail("cannot enter '" + Cwd + "': " + EC.message()));

    if (B->Kind == "backend") {
      std::vector<std::string> Own(B->Args.begin() + 1, B->Args.end());
      return runInvocation(parseInvocation(Own), Output);
    }
    // The object's directory, which the compiler expects to be there.
    SmallString<256> Object(Root);
    sys::path::append(Object, B->Output);
    StringRef ObjectDir = sys::path::parent_path(Object);
    if (!MadeDirs.count(ObjectDir) && ObjectDir != Root) {
      if (std::error_code EC = sys::fs::create_directories(ObjectDir))
        return die(fail("cannot create '" + ObjectDir + "': " + EC.message()));
    }
    if (Error E = runCommand(*B))
      return die(std::move(E));
    ErrorOr<std::unique_ptr<MemoryBuffer>> Obj =
        MemoryBuffer::getFile(Object, /*IsText=*/false,
                              /*RequiresNullTerminator=*/false);
    if (!Obj)
      return die(fail("the job wrote no object '" + B->Output + "': " +
                      Obj.getError().message()));
    if (Error E = dtlto::writeFile(
            Output, "object",
            [&](raw_ostream &OS) { OS << (*Obj)->getBuffer(); },
            dtlto::WriteMode::Atomic))
      return die(std::move(E));
    return 0;
  };
  int RC = Run();
  (void)sys::fs::set_current_path(OldCwd);
  // Whatever the job left there (a compiler's temporary files) goes too.
  (void)sys::fs::remove_directories(Root);
  return RC;
}

int main(int argc, const char **argv) {
  InitLLVM X(argc, argv);
  std::vector<std::string> Args;
  for (int I = 1; I < argc; ++I) {
    StringRef A = argv[I];
    if (A == "--help" || A == "-h") {
      outs() << Usage;
      return 0;
    }
    if (A == "--version") {
      outs() << "dtlto-backend " DTLTO_VERSION " (LLVM " LLVM_VERSION_STRING
                ")\n";
      return 0;
    }
    if (A == "--memory")
      return runMemoryWorker();
    if (A == "--llvm-options") {
      // LLVM prints its hidden help and exits.
      const char *Help[] = {"dtlto-backend", "--help-list-hidden"};
      return cl::ParseCommandLineOptions(2, Help) ? 0 : 1;
    }
    Args.push_back(A.str());
  }
  Invocation Inv = parseInvocation(Args);
  if (Inv.ConfigPath.empty() && !Inv.Batch)
    return runBundle(Args);
  return runInvocation(Inv, "");
}
