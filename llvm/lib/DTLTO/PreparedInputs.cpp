//===- PreparedInputs.cpp - What input preparation tells the backend ------===//

#include "dtlto/PreparedInputs.h"
#include "dtlto/WorkerTrace.h"
#include "dtlto/WriteFile.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TimeProfiler.h"
#include <mutex>
#include <optional>

using namespace llvm;

namespace dtlto {

static std::mutex Mu;
static StringMap<PreparedInput> Prepared;

void recordPreparedInput(StringRef ModuleID, PreparedInput Input) {
  std::lock_guard<std::mutex> Lock(Mu);
  Prepared[ModuleID] = std::move(Input);
}

std::string originalName(StringRef ModuleID) {
  std::lock_guard<std::mutex> Lock(Mu);
  auto It = Prepared.find(ModuleID);
  return It == Prepared.end() ? std::string(ModuleID)
                              : It->second.OriginalName;
}

// A thin archive's member is a file already: a hard link gives the copy its
// name without writing its bytes. Where there can be none (another file
// system, a file of another user's under protected_hardlinks), the bytes are
// written as for any other copy. The copy is always a new file, never opened
// through an existing name: a stale copy a killed link left there may be a
// hard link to a member, whose file must not be truncated and written
// through it.
static std::error_code createCopy(StringRef Path, const PreparedInput &Input) {
  if (!Input.LinkFrom.empty()) {
    std::error_code EC = sys::fs::create_hard_link(Input.LinkFrom, Path);
    if (!EC || EC == std::errc::file_exists)
      return EC;
  }
  return writeFileOrError(
      Path, [&](raw_ostream &OS) { OS << Input.Copy.getBuffer(); },
      WriteMode::New);
}

// Normally the name is free, and creating is all it costs. A stale copy at
// the name goes, and the copy is created again (if another link of the same
// output made the name meanwhile, that fails: the file is not ours). A
// directory there is the user's: it stays, and the copy fails.
static std::error_code writeCopy(StringRef Path, const PreparedInput &Input) {
  std::error_code EC = createCopy(Path, Input);
  if (EC != std::errc::file_exists)
    return EC;
  sys::fs::file_status Old;
  if (!sys::fs::status(Path, Old, /*Follow=*/false) &&
      sys::fs::is_directory(Old))
    return std::make_error_code(std::errc::is_a_directory);
  if ((EC = sys::fs::remove(Path)))
    return EC;
  return createCopy(Path, Input);
}

// A hard link can only be made on the file system the member is on: where
// the copies go to another one (an output directory on tmpfs), trying each
// would be one failed system call a member.
static void dropImpossibleLinks(
    std::vector<std::pair<std::string, PreparedInput>> &ToWrite) {
  StringMap<std::optional<uint64_t>> DeviceOf;
  for (auto &[Path, Input] : ToWrite) {
    if (Input.LinkFrom.empty())
      continue;
    StringRef Dir = sys::path::parent_path(Path);
    auto [It, New] = DeviceOf.try_emplace(Dir.empty() ? "." : Dir);
    if (New) {
      sys::fs::file_status St;
      if (!sys::fs::status(It->first(), St))
        It->second = St.getUniqueID().getDevice();
    }
    if (It->second != Input.LinkFromDevice)
      Input.LinkFrom.clear();
  }
}

Error writeCopies(ArrayRef<std::string> ModuleIDs, TraceSettings Trace,
                  function_ref<void(StringRef)> Register,
                  function_ref<void(StringRef)> Forget) {
  std::vector<std::pair<std::string, PreparedInput>> ToWrite;
  {
    std::lock_guard<std::mutex> Lock(Mu);
    for (const std::string &ID : ModuleIDs) {
      auto It = Prepared.find(ID);
      if (It != Prepared.end() && It->second.Copy.getBufferStart())
        ToWrite.emplace_back(ID, It->second);
    }
  }
  dropImpossibleLinks(ToWrite);
  for (const auto &[Path, Input] : ToWrite)
    Register(Path);

  // One thread: the copies go into one directory, where the kernel creates
  // files one at a time (it locks the directory for each), and a second
  // thread only waited for the lock, spinning: on this machine's ext4 disk
  // two threads took twice the CPU of one for the same wall time, and on
  // tmpfs no less wall time (docs/performance.md, "Up to the distributor").
  // Every copy is tried; the error names the first that failed.
  Error First = Error::success();
  WorkerTrace Worker(Trace);
  for (const auto &[Path, Input] : ToWrite) {
    TimeTraceScope Scope("Serialize bitcode input for DTLTO", Path);
    std::error_code EC = writeCopy(Path, Input);
    if (!EC)
      continue;
    Forget(Path);
    if (!First)
      First = createStringError(EC, "DTLTO cannot write the " +
                                        Input.Description + " to '" + Path +
                                        "': " + EC.message());
  }
  return First;
}

std::optional<MemoryBufferRef> preparedCopy(StringRef ModuleID) {
  std::lock_guard<std::mutex> Lock(Mu);
  auto It = Prepared.find(ModuleID);
  if (It == Prepared.end() || !It->second.Copy.getBufferStart())
    return std::nullopt;
  return It->second.Copy;
}

void forgetPreparedInputs() {
  std::lock_guard<std::mutex> Lock(Mu);
  Prepared.clear();
}

} // namespace dtlto
