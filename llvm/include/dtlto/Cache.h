//===- Cache.h - ThinLTO cache keys and entries for DTLTO jobs ------------===//
//
// In-process ThinLTO keys an object by what the summary says about its module.
// A DTLTO object also depends on who compiles it and how: the remote
// compiler (path and identity) and its command line. Those go into the key,
// so in-process entries, stock LLVM DTLTO entries and ours never mix, and a
// compiler upgrade never serves stale objects.
//
// An entry is written only for an object that passed the checks, where
// LLVM's cache would put it (llvmcache-<key> in the cache directory), through
// a temporary file of its own renamed over it: atomic, and concurrent links
// never write into one file. It holds the object followed by a trailer with
// the object's BLAKE3 digest; a hit is verified against it (and checked like
// a fresh object), and only the object goes to the link, so a damaged entry
// is discarded and rebuilt, never linked. LLVM's cache pruning
// (--thinlto-cache-policy) sees our entries like its own.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_CACHE_H
#define DTLTO_CACHE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include <string>

namespace dtlto {

/// A string that identifies the remote compilation of every job of a link:
/// the compiler's identity on this machine and the common arguments.
std::string remoteCompileID(llvm::ArrayRef<std::string> CommonArgs,
                            llvm::ArrayRef<std::string> CommonInputs);

/// Where LLVM's cache (llvm::localCache) keeps the entry for Key.
std::string cacheEntryPath(llvm::StringRef CacheDir, llvm::StringRef Key);

/// Writes the cache entry at Entry: the object, then its digest trailer.
/// On failure ("cannot write the ThinLTO cache entry '<e>' in the cache
/// directory '<d>': <reason>") nothing is left in the cache.
llvm::Error writeCacheEntryFile(llvm::StringRef Entry, llvm::StringRef Object);

/// Marks the entry as just used (both its times), so that pruning by age
/// keeps the entries links use. Best effort.
void touchCacheEntry(llvm::StringRef Entry);

/// Returns the object held by a cache entry, or why the entry is damaged.
llvm::Expected<llvm::StringRef> readCacheEntry(llvm::StringRef Entry);

} // namespace dtlto

#endif
