//===- BackendCache.h - How much bitcode a dtlto-backend worker keeps -----===//
//
// A worker (dtlto-backend --batch, or --memory behind the local plugin)
// keeps the module files it has read between jobs, up to a budget the user
// sets with DTLTO_BACKEND_CACHE_MIB. A batch worker applies it itself; for
// a --memory worker the local plugin does, since the plugin must know what
// each worker holds.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_BACKENDCACHE_H
#define DTLTO_BACKENDCACHE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <cstdlib>

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

} // namespace dtlto

#endif
