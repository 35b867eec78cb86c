//===- Cache.cpp - ThinLTO cache keys for DTLTO jobs ----------------------===//

#include "dtlto/Cache.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace dtlto {

// The file behind a path, its size and modification time: cheap, and changes
// whenever the compiler is replaced. A compiler that exists only on the farm
// is known by its path alone.
static void appendFileIdentity(raw_ostream &OS, StringRef Path) {
  std::string Resolved(Path);
  if (!Path.contains('/'))
    if (ErrorOr<std::string> Found = sys::findProgramByName(Path))
      Resolved = *Found;
  SmallString<256> Real;
  sys::fs::file_status Status;
  if (sys::fs::real_path(Resolved, Real) || sys::fs::status(Real, Status)) {
    OS << "missing:" << Path << '\0';
    return;
  }
  OS << "file:" << Real << ':' << Status.getSize() << ':'
     << Status.getLastModificationTime().time_since_epoch().count() << '\0';
}

std::string remoteCompileID(ArrayRef<std::string> CommonArgs,
                            ArrayRef<std::string> CommonInputs) {
  std::string ID;
  raw_string_ostream OS(ID);
  OS << "dtlto-remote-compile-v1" << '\0';
  if (!CommonArgs.empty())
    appendFileIdentity(OS, CommonArgs[0]);
  for (const std::string &Arg : CommonArgs)
    OS << Arg << '\0';
  for (const std::string &Input : CommonInputs)
    appendFileIdentity(OS, Input);
  return ID;
}

} // namespace dtlto
