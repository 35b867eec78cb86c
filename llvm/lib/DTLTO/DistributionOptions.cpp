//===- DistributionOptions.cpp - DTLTO for linkers without DTLTO options --===//

#include "dtlto/DistributionOptions.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/StringSaver.h"
#include <mutex>
#include <optional>

using namespace llvm;

namespace dtlto {

// LLD's spellings, as LLVM options: -mllvm -thinlto-distributor=<path> for
// LLD, -plugin-opt=-thinlto-distributor=<path> for LLVMgold.so.
static cl::opt<std::string> DistributorOpt(
    "thinlto-distributor", cl::value_desc("path"),
    cl::desc("DTLTO: run ThinLTO backend jobs with this distributor (for "
             "linkers without their own DTLTO options)"));
static cl::list<std::string>
    DistributorArgOpt("thinlto-distributor-arg", cl::value_desc("arg"),
                      cl::desc("DTLTO: an argument for the distributor"));
static cl::opt<std::string>
    RemoteCompilerOpt("thinlto-remote-compiler", cl::value_desc("path"),
                      cl::desc("DTLTO: the compiler that runs the jobs"));
static cl::list<std::string> RemoteCompilerArgOpt(
    "thinlto-remote-compiler-arg", cl::value_desc("arg"),
    cl::desc("DTLTO: an argument appended to every job's command"));
static cl::list<std::string> RemoteCompilerPrependArgOpt(
    "thinlto-remote-compiler-prepend-arg", cl::value_desc("arg"),
    cl::desc("DTLTO: an argument inserted right after the compiler"));

static std::mutex Mu;
static std::optional<DistributionOptions> FromCommandLine; // guarded by Mu
static std::optional<DistributionOptions> FromLLVMOptions; // guarded by Mu

StringRef parseDistributionOption(StringRef Arg, StringRef &Value) {
  static const char *const Names[] = {
      "thinlto-distributor-arg", "thinlto-distributor",
      "thinlto-remote-compiler-prepend-arg", "thinlto-remote-compiler-arg",
      "thinlto-remote-compiler"};
  StringRef Bare = Arg;
  if (!Bare.consume_front("--") && !Bare.consume_front("-"))
    return "";
  for (StringRef Name : Names) {
    StringRef Rest = Bare;
    if (Rest.consume_front(Name) && Rest.consume_front("=")) {
      Value = Rest;
      return Name;
    }
  }
  return "";
}

static void setOption(DistributionOptions &D, StringRef Name,
                      StringRef Value) {
  if (Name == "thinlto-distributor")
    D.Distributor = Value.str();
  else if (Name == "thinlto-distributor-arg")
    D.DistributorArgs.push_back(Value.str());
  else if (Name == "thinlto-remote-compiler")
    D.RemoteCompiler = Value.str();
  else if (Name == "thinlto-remote-compiler-arg")
    D.RemoteCompilerArgs.push_back(Value.str());
  else if (Name == "thinlto-remote-compiler-prepend-arg")
    D.RemoteCompilerPrependArgs.push_back(Value.str());
}

std::string outputFromCommandLine(ArrayRef<std::string> Args) {
  std::string Output = "a.out";
  for (size_t I = 1; I < Args.size(); ++I) {
    StringRef A = Args[I];
    if ((A == "-o" || A == "--output" || A == "-output") &&
        I + 1 < Args.size())
      Output = Args[++I];
    else if (A.consume_front("--output="))
      Output = A.str();
    // No joined "-o<file>": ld64's -object_path_lto and -order_file look the
    // same, and compiler drivers pass "-o <file>".
  }
  return Output;
}

bool saveTempsFromCommandLine(ArrayRef<std::string> Args) {
  return any_of(Args, [](StringRef A) {
    return A == "--save-temps" || A == "-save-temps" ||
           A == "-plugin-opt=save-temps" || A == "--plugin-opt=save-temps";
  });
}

void takeFromCommandLine(std::vector<const char *> &Args) {
  DistributionOptions D;
  std::vector<const char *> Kept;
  std::vector<std::string> Words;
  for (const char *A : Args) {
    StringRef Value;
    StringRef Name = parseDistributionOption(A, Value);
    if (Name.empty()) {
      Kept.push_back(A);
      Words.push_back(A);
    } else {
      setOption(D, Name, Value);
    }
  }
  Args = std::move(Kept);
  if (D.Distributor.empty())
    return;
  D.LinkerOutput = outputFromCommandLine(Words);
  D.SaveTemps = saveTempsFromCommandLine(Words);
  std::lock_guard<std::mutex> Lock(Mu);
  FromCommandLine = std::move(D);
}

// This process's own command line, from /proc (the preload library has no
// other way to see it), with its response files expanded.
static std::vector<std::string> processCommandLine() {
  // Read to its end: /proc says its size is 0.
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buf =
      MemoryBuffer::getFileAsStream("/proc/self/cmdline");
  if (!Buf)
    return {};
  BumpPtrAllocator Alloc;
  StringSaver Saver(Alloc);
  SmallVector<const char *, 64> Argv;
  StringRef Rest = (*Buf)->getBuffer();
  while (!Rest.empty()) {
    auto [Arg, Tail] = Rest.split('\0');
    Argv.push_back(Saver.save(Arg).data());
    Rest = Tail;
  }
  cl::ExpandResponseFiles(Saver, cl::TokenizeGNUCommandLine, Argv);
  return std::vector<std::string>(Argv.begin(), Argv.end());
}

const DistributionOptions *distributionOptions() {
  std::lock_guard<std::mutex> Lock(Mu);
  if (FromCommandLine)
    return &*FromCommandLine;
  if (DistributorOpt.empty())
    return nullptr;
  if (!FromLLVMOptions) {
    DistributionOptions D;
    D.Distributor = DistributorOpt;
    D.DistributorArgs = DistributorArgOpt;
    D.RemoteCompiler = RemoteCompilerOpt;
    D.RemoteCompilerArgs = RemoteCompilerArgOpt;
    D.RemoteCompilerPrependArgs = RemoteCompilerPrependArgOpt;
    std::vector<std::string> Words = processCommandLine();
    D.LinkerOutput = outputFromCommandLine(Words);
    D.SaveTemps = saveTempsFromCommandLine(Words);
    FromLLVMOptions = std::move(D);
  }
  return &*FromLLVMOptions;
}

} // namespace dtlto
