//===- Cache.cpp - ThinLTO cache keys and entries for DTLTO jobs ----------===//

#include "dtlto/Cache.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

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
  OS << "dtlto-remote-compile-v2" << '\0';
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

void writeCacheEntry(raw_ostream &OS, StringRef Object) {
  std::array<uint8_t, 32> D = digest(Object);
  OS << Object << TrailerMagic
     << StringRef(reinterpret_cast<const char *>(D.data()), D.size());
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
