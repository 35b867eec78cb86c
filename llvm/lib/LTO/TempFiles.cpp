//===- TempFiles.cpp - Names and lifetime of DTLTO temporary files --------===//

#include "dtlto/TempFiles.h"
#include "dtlto/Signals.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Signals.h"
#include <algorithm>
#include <chrono>
#include <thread>
#include <unistd.h>

using namespace llvm;

namespace dtlto {

// Asked for every job's object; the linker does not fork.
static std::string pidString() {
  static const std::string Pid = std::to_string(sys::Process::getProcessId());
  return Pid;
}

// Every path we create ends up on a compiler command line: one starting with
// '-' would be taken for an option.
static std::string notAnOption(SmallString<256> Path) {
  if (Path.starts_with("-"))
    Path.insert(Path.begin(), {'.', '/'});
  return std::string(Path);
}

static std::string inTempDir(StringRef LinkerOutputFile, const Twine &Name) {
  SmallString<256> Path(tempDir(LinkerOutputFile));
  sys::path::append(Path, Name);
  return notAnOption(Path);
}

std::string tempDir(StringRef LinkerOutputFile) {
  return std::string(sys::path::parent_path(LinkerOutputFile));
}

std::string manifestPath(StringRef LinkerOutputFile) {
  return inTempDir(LinkerOutputFile, sys::path::stem(LinkerOutputFile) + "." +
                                         pidString() + ".dist-file.json");
}

std::string engineInfoPath(StringRef ManifestPath) {
  StringRef Base = ManifestPath;
  Base.consume_back(".json");
  return (Base + ".dtlto.json").str();
}

std::string backendConfigPath(StringRef LinkerOutputFile) {
  return inTempDir(LinkerOutputFile, sys::path::stem(LinkerOutputFile) + "." +
                                         pidString() + ".dtlto-config.json");
}

std::string objectPath(StringRef LinkerOutputFile, StringRef ModuleID,
                       unsigned Task) {
  return inTempDir(LinkerOutputFile, sys::path::stem(ModuleID) + "." +
                                         Twine(Task) + "." + pidString() +
                                         ".native.o");
}

std::string shardPath(StringRef ObjectPath) {
  return (ObjectPath + ".thinlto.bc").str();
}

bool isSafeModulePath(StringRef Path) {
  return llvm::all_of(Path, [](char C) { return isASCII(C); });
}

std::string copyName(StringRef ModuleID) {
  // LLD's "lib.a(m.o at 88)" (ELF, wasm), "lib.a(m.o)120" (Mach-O) and
  // LLVMgold.so's "lib.a.llvm.88.m.o" become "lib.a(m.o)": the offset would
  // change the copy's path, and so the shards of every job importing from
  // it, whenever a member before it changes.
  StringRef Name = sys::path::filename(ModuleID);
  size_t Open = Name.find('(');
  size_t Close = Name.rfind(')');
  if (Open == StringRef::npos || Close == StringRef::npos || Close < Open) {
    size_t LLVM = Name.find(".llvm.");
    if (LLVM == StringRef::npos)
      return Name.str();
    auto [Offset, Member] = Name.substr(LLVM + strlen(".llvm.")).split('.');
    if (Offset.empty() || !all_of(Offset, isDigit) || Member.empty())
      return Name.str();
    return (Name.take_front(LLVM) + "(" + Member + ")").str();
  }
  StringRef Member = Name.slice(Open + 1, Close);
  size_t At = Member.rfind(" at ");
  if (At != StringRef::npos && !Member.substr(At + 4).empty() &&
      all_of(Member.substr(At + 4), isDigit))
    Member = Member.take_front(At);
  return (Name.take_front(Open + 1) + Member + ")").str();
}

std::string serializedInputPath(StringRef LinkerOutputFile,
                                StringRef ModuleName, StringRef Bitcode) {
  std::array<uint8_t, 8> Hash =
      BLAKE3::hash<8>(arrayRefFromStringRef(Bitcode));
  // The name starts with the module's in-process name, so that the copies
  // sort among themselves as their in-process module IDs do: a job takes
  // the modules it imports from in the sorted order of their IDs, and that
  // order decides where the variables it imports go. A name that sorted
  // otherwise would give another layout than in-process ThinLTO's.
  std::string Name = (ModuleName + "." +
                      sys::path::stem(LinkerOutputFile) + "." +
                      toHex(Hash, /*LowerCase=*/true) + ".o")
                         .str();
  // The copy's path goes into index shards: ASCII only. The output
  // directory, unless its own path is not ASCII: then the linker's working
  // directory, named by a relative path.
  for (char &C : Name)
    if (!isASCII(C))
      C = '_';
  std::string Dir = tempDir(LinkerOutputFile);
  if (!isSafeModulePath(Dir))
    Dir.clear();
  SmallString<256> Path(Dir);
  sys::path::append(Path, Name);
  return notAnOption(Path);
}

std::string upstreamSerializedInputPath(StringRef LinkerOutputFile,
                                        StringRef ModuleID,
                                        unsigned InputNumber) {
  return inTempDir(LinkerOutputFile,
                   sys::path::filename(ModuleID) + "." + Twine(InputNumber) +
                       "." + utohexstr(sys::Process::getProcessId()) + ".o");
}

std::string thinArchiveMemberPath(StringRef ArchivePath, StringRef MemberName) {
  SmallString<256> Path;
  if (!sys::path::is_absolute(MemberName))
    Path = sys::path::parent_path(ArchivePath);
  sys::path::append(Path, MemberName);
  sys::path::remove_dots(Path, /*remove_dot_dot=*/true);
  return notAnOption(Path);
}

std::vector<std::string> strayCompilerFiles(ArrayRef<std::string> ObjectPaths) {
  // The objects by directory: the prefix clang's temporaries start with,
  // and the one name dtlto-backend's has.
  struct Names {
    std::vector<std::string> Stems;
    StringSet<> Temps;
  };
  StringMap<Names> ByDir;
  for (StringRef Object : ObjectPaths) {
    StringRef Dir = sys::path::parent_path(Object);
    Names &N = ByDir[Dir.empty() ? "." : Dir];
    N.Stems.push_back((sys::path::stem(Object) + "-").str());
    N.Temps.insert((sys::path::filename(Object) + ".tmp").str());
  }
  std::vector<std::string> Found;
  for (const auto &[Dir, N] : ByDir) {
    std::error_code EC;
    for (sys::fs::directory_iterator I(Dir, EC), E; I != E && !EC;
         I.increment(EC)) {
      StringRef Name = sys::path::filename(I->path());
      if (Name.ends_with(".o.tmp") &&
          (N.Temps.contains(Name) ||
           any_of(N.Stems, [&](StringRef S) { return Name.starts_with(S); })))
        Found.push_back(I->path());
    }
  }
  return Found;
}

// Removing a file from a disk that discards freed blocks waits on the device
// (~1.5 ms a file here, most of the engine's own time in a link of a hundred
// modules), and requests from several threads overlap those waits. On a file
// system in memory (tmpfs) a removal is a few microseconds of CPU, and
// threads only contend for the directory's lock: eight of them took twice
// the CPU of one for 1,900 files, in no less time. So the first files go on
// this thread alone, and helpers join only when those had to wait.
// unlink() directly: sys::fs::remove() looks at each file first, a second
// system call for files that are ours and regular.
static constexpr size_t AloneFirst = 16;
static constexpr std::chrono::microseconds WaitedFor{100};

static void removeTempFile(const std::string &Path) {
  ::unlink(Path.c_str());
  unregisterTempFile(Path);
}

void removeTempFiles(ArrayRef<std::string> Paths, bool Keep) {
  if (Keep || Paths.empty())
    return;
  size_t Alone = std::min(AloneFirst, Paths.size());
  auto Start = std::chrono::steady_clock::now();
  for (size_t I = 0; I < Alone; ++I)
    removeTempFile(Paths[I]);
  ArrayRef<std::string> Rest = Paths.drop_front(Alone);
  bool Waited = std::chrono::steady_clock::now() - Start > WaitedFor * Alone;
  size_t Threads =
      Waited ? std::clamp<size_t>((Rest.size() + 15) / 16, 1, 8) : 1;
  auto RemoveFrom = [&](size_t Begin, size_t Step) {
    for (size_t I = Begin; I < Rest.size(); I += Step)
      removeTempFile(Rest[I]);
  };
  std::vector<std::thread> Helpers;
  for (size_t T = 1; T < Threads; ++T)
    Helpers.emplace_back(RemoveFrom, T, Threads);
  RemoveFrom(0, Threads);
  for (std::thread &H : Helpers)
    H.join();
}

void TempFileSet::add(StringRef Path) {
  registerTempFile(Path, Keep);
  std::lock_guard<std::mutex> Lock(Mu);
  Paths.emplace_back(Path);
}

void TempFileSet::forget(StringRef Path) {
  std::lock_guard<std::mutex> Lock(Mu);
  auto It = llvm::find(Paths, Path);
  if (It == Paths.end())
    return;
  Paths.erase(It);
  if (!Keep)
    unregisterTempFile(Path);
}

void TempFileSet::removeAll() {
  std::lock_guard<std::mutex> Lock(Mu);
  removeTempFiles(Paths, Keep);
  Paths.clear();
}

} // namespace dtlto
