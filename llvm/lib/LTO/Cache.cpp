//===- Cache.cpp - ThinLTO cache keys and entries for DTLTO jobs ----------===//

#include "dtlto/Cache.h"
#include "dtlto/Signals.h"
#include "dtlto/WriteFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Chrono.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"
#include <ctime>

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
  // v2: clang shards file declaration summaries under the job's own module,
  // which changes some objects; entries made from v1 shards are not reused.
  // v3: COFF clang shards also carry the local functions called (dllimport
  // is dropped as in-process); v2 COFF entries kept it.
  OS << "dtlto-remote-compile-v3" << '\0';
  if (!CommonArgs.empty())
    appendFileIdentity(OS, CommonArgs[0]);
  for (const std::string &Arg : CommonArgs)
    OS << Arg << '\0';
  for (const std::string &Input : CommonInputs)
    appendFileIdentity(OS, Input);
  return ID;
}

std::string cacheEntryPath(StringRef CacheDir, StringRef Key) {
  SmallString<256> Path(CacheDir);
  sys::path::append(Path, "llvmcache-" + Key);
  return std::string(Path);
}

// Trailer: magic, then the 32-byte BLAKE3 digest of everything before it.
static constexpr StringLiteral TrailerMagic = "\n<dtlto-blake3>\n";
static constexpr size_t TrailerSize = TrailerMagic.size() + 32;

static std::array<uint8_t, 32> digest(StringRef Data) {
  return BLAKE3::hash<32>(arrayRefFromStringRef(Data));
}

Error writeCacheEntryFile(StringRef Entry, StringRef Object) {
  StringRef Dir = sys::path::parent_path(Entry);
  auto Fail = [&](std::error_code EC) {
    return createStringError(EC, "cannot write the ThinLTO cache entry '" +
                                     Entry + "' in the cache directory '" +
                                     Dir + "': " + EC.message());
  };
  // The directory is made when first needed, as LLVM's cache does.
  if (std::error_code EC = sys::fs::create_directories(Dir))
    return Fail(EC);
  // A name of its own: links that write the same entry at once each rename
  // a whole file. Not "llvmcache-*": pruning never takes it for an entry.
  // With our pid, so that utils/dtlto/clean.py can tell the file of a link
  // killed by SIGKILL.
  int FD;
  SmallString<256> Temp;
  if (std::error_code EC = sys::fs::createUniqueFile(
          Dir + "/dtlto-entry-" + Twine(sys::Process::getProcessId()) +
              "-%%%%%%%%.tmp",
          FD, Temp))
    return Fail(EC);
  registerTempFile(Temp, /*Keep=*/false);
  std::error_code EC = writeOpenFile(FD, [&](raw_ostream &OS) {
    std::array<uint8_t, 32> D = digest(Object);
    OS << Object << TrailerMagic
       << StringRef(reinterpret_cast<const char *>(D.data()), D.size());
  });
  if (!EC)
    EC = sys::fs::rename(Temp, Entry);
  if (EC)
    sys::fs::remove(Temp);
  unregisterTempFile(Temp);
  return EC ? Fail(EC) : Error::success();
}

void touchCacheEntry(StringRef Entry) {
  int FD;
  if (sys::fs::openFileForWrite(Entry, FD, sys::fs::CD_OpenExisting,
                                sys::fs::OF_Append))
    return;
  (void)sys::fs::setLastAccessAndModificationTime(
      FD, sys::toTimePoint(std::time(nullptr)));
  sys::Process::SafelyCloseFileDescriptor(FD);
}

Expected<StringRef> readCacheEntry(StringRef Entry) {
  auto Damaged = [](const Twine &Why) {
    return createStringError(inconvertibleErrorCode(), Why);
  };
  if (Entry.size() < TrailerSize ||
      Entry.substr(Entry.size() - TrailerSize, TrailerMagic.size()) !=
          TrailerMagic)
    return Damaged("it has no digest trailer (truncated, or not written by "
                   "dtlto)");
  StringRef Object = Entry.drop_back(TrailerSize);
  std::array<uint8_t, 32> D = digest(Object);
  if (Entry.take_back(32) !=
      StringRef(reinterpret_cast<const char *>(D.data()), D.size()))
    return Damaged("its contents do not match its digest");
  return Object;
}

} // namespace dtlto
