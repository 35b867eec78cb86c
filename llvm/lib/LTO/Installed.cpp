//===- Installed.cpp - The files installed with the engine ----------------===//

#include "dtlto/Installed.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include <dlfcn.h>

using namespace llvm;

namespace dtlto {

Expected<std::string> enginePath(StringRef ToFind) {
  Dl_info Self;
  if (!dladdr(reinterpret_cast<void *>(&enginePath), &Self) || !Self.dli_fname)
    return createStringError(inconvertibleErrorCode(),
                             "cannot tell where this linker is installed, so "
                             "cannot find " +
                                 ToFind);
  SmallString<256> Real;
  if (sys::fs::real_path(Self.dli_fname, Real))
    Real = Self.dli_fname;
  return std::string(Real);
}

// Name in the engine's directory or in ../Sibling, if Usable says so.
template <typename Check>
static std::string beside(StringRef EnginePath, StringRef Sibling,
                          StringRef Name, Check Usable) {
  StringRef Dir = sys::path::parent_path(EnginePath);
  for (StringRef Rel : {StringRef(""), Sibling}) {
    SmallString<256> Path(Dir);
    sys::path::append(Path, Rel, Name);
    if (Usable(Path))
      return std::string(Path);
  }
  return "";
}

std::string programBesideEngine(StringRef EnginePath, StringRef Name) {
  return beside(EnginePath, "../bin", Name,
                [](const Twine &P) { return sys::fs::can_execute(P); });
}

std::string libraryBesideEngine(StringRef Name) {
  Expected<std::string> Self = enginePath(Name);
  if (!Self) {
    consumeError(Self.takeError());
    return "";
  }
  return beside(*Self, "../lib", Name,
                [](const Twine &P) { return sys::fs::is_regular_file(P); });
}

} // namespace dtlto
