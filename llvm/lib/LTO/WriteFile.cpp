//===- WriteFile.cpp - Writing a file, with one error for every failure ---===//

#include "dtlto/WriteFile.h"
#include "dtlto/Signals.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include <algorithm>
#include <cerrno>
#include <unistd.h>

using namespace llvm;

namespace dtlto {

namespace {
// raw_fd_ostream asks a file for its position and its type when it is made
// (lseek, fstat): two system calls a file, which a link of 1,000 modules
// makes some 3,000 times (shards, copies, the manifest). The engine's files
// are written once from their start; this stream only writes.
class NewFileStream : public raw_ostream {
  int FD;
  uint64_t Pos = 0;
  std::error_code EC;

  void write_impl(const char *Ptr, size_t Size) override {
    Pos += Size;
    while (Size && !EC) {
      ssize_t N = ::write(FD, Ptr, std::min<size_t>(Size, 1u << 30));
      if (N < 0 && errno == EINTR)
        continue;
      if (N < 0)
        EC = std::error_code(errno, std::generic_category());
      else {
        Ptr += N;
        Size -= N;
      }
    }
  }
  uint64_t current_pos() const override { return Pos; }
  size_t preferred_buffer_size() const override { return 64 * 1024; }

public:
  explicit NewFileStream(int FD) : FD(FD) {}
  ~NewFileStream() override { closeFile(); }

  /// Writes what is buffered and closes the file: the first error of all.
  std::error_code closeFile() {
    if (FD < 0)
      return EC;
    flush();
    if (::close(FD) && !EC)
      EC = std::error_code(errno, std::generic_category());
    FD = -1;
    return EC;
  }
};
} // namespace

std::error_code writeOpenFile(int FD, function_ref<void(raw_ostream &)> Write) {
  NewFileStream OS(FD);
  Write(OS);
  return OS.closeFile();
}

std::error_code writeFileOrError(StringRef Path,
                                 function_ref<void(raw_ostream &)> Write,
                                 WriteMode Mode) {
  bool Atomic = Mode == WriteMode::Atomic;
  std::string Target = Atomic ? (Path + ".tmp").str() : Path.str();
  // A process stopped by a signal must not leave the half-written file.
  if (Atomic)
    registerTempFile(Target, /*Keep=*/false);
  int FD;
  std::error_code EC = sys::fs::openFileForWrite(
      Target, FD,
      Mode == WriteMode::New ? sys::fs::CD_CreateNew : sys::fs::CD_CreateAlways,
      sys::fs::OF_None);
  if (EC) {
    // Nothing was created: whatever is at Target is not ours to remove.
    if (Atomic)
      unregisterTempFile(Target);
    return EC;
  }
  EC = writeOpenFile(FD, Write);
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
