//===- BackendCache.h - How much bitcode a dtlto-backend worker keeps -----===//
//
// A worker (dtlto-backend --batch, or --memory behind the local plugin)
// keeps the module files it has read between jobs, up to a budget the user
// sets with DTLTO_BACKEND_CACHE_MIB, trimmed by one rule (filesToDrop). A
// batch worker applies it itself; for a --memory worker the local plugin
// does, since the plugin must know what each worker holds.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_BACKENDCACHE_H
#define DTLTO_BACKENDCACHE_H

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

namespace dtlto {

/// The budget in bytes: DTLTO_BACKEND_CACHE_MIB (default 64 MiB; 0 keeps
/// no module file past its job).
inline llvm::Expected<uint64_t> backendCacheBytes() {
  const char *Text = ::getenv("DTLTO_BACKEND_CACHE_MIB");
  if (!Text)
    return uint64_t(64) << 20;
  uint64_t MiB;
  if (llvm::StringRef(Text).getAsInteger(10, MiB) || MiB >= (uint64_t(1) << 40))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "DTLTO_BACKEND_CACHE_MIB='" + llvm::Twine(Text) +
            "' is not a size in MiB (a whole number, 0 to keep no module "
            "files between jobs)");
  return MiB << 20;
}

/// A module file a worker holds, as trimming sees it.
struct HeldFile {
  uint64_t LastUse; ///< the last job that used it (a count: later is larger)
  uint64_t Size;
  llvm::StringRef Name;
};

/// What goes when the Held bytes are over Budget: the files used longest
/// ago first, until what is held is down to half the budget, so that a full
/// cache is trimmed now and then, not after every job. Candidates are the
/// files that may go; their sizes come off Held.
inline std::vector<std::string> filesToDrop(std::vector<HeldFile> Candidates,
                                            uint64_t &Held, uint64_t Budget) {
  std::vector<std::string> Gone;
  if (Held <= Budget)
    return Gone;
  llvm::sort(Candidates, [](const HeldFile &A, const HeldFile &B) {
    return std::tie(A.LastUse, A.Size, A.Name) <
           std::tie(B.LastUse, B.Size, B.Name);
  });
  for (const HeldFile &F : Candidates) {
    if (Held <= Budget / 2)
      break;
    Held -= F.Size;
    Gone.push_back(F.Name.str());
  }
  return Gone;
}

} // namespace dtlto

#endif
