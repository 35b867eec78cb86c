//===- WriteFile.cpp - Writing a file, with one error for every failure ---===//

#include "dtlto/WriteFile.h"
#include "dtlto/Signals.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"

using namespace llvm;

namespace dtlto {

std::error_code writeFileOrError(StringRef Path,
                                 function_ref<void(raw_ostream &)> Write,
                                 WriteMode Mode) {
  bool Atomic = Mode == WriteMode::Atomic;
  std::string Target = Atomic ? (Path + ".tmp").str() : Path.str();
  // A process stopped by a signal must not leave the half-written file.
  if (Atomic)
    registerTempFile(Target, /*Keep=*/false);
  std::error_code EC;
  {
    raw_fd_ostream OS(Target, EC,
                      Mode == WriteMode::New ? sys::fs::CD_CreateNew
                                             : sys::fs::CD_CreateAlways,
                      sys::fs::FA_Write, sys::fs::OF_None);
    if (EC) {
      // Nothing was created: whatever is at Target is not ours to remove.
      if (Atomic)
        unregisterTempFile(Target);
      return EC;
    }
    Write(OS);
    OS.close();
    EC = OS.error();
    OS.clear_error();
  }
  if (!EC && Atomic)
    EC = sys::fs::rename(Target, Path);
  // A file we created but could not complete goes.
  if (EC)
    sys::fs::remove(Target);
  if (Atomic)
    unregisterTempFile(Target);
  return EC;
}

Error writeFile(StringRef Path, StringRef What,
                function_ref<void(raw_ostream &)> Write, WriteMode Mode) {
  if (std::error_code EC = writeFileOrError(Path, Write, Mode))
    return createStringError(EC, "cannot write the " + What + " '" + Path +
                                     "': " + EC.message());
  return Error::success();
}

} // namespace dtlto
