//===- Cache.h - ThinLTO cache keys and entries for DTLTO jobs ------------===//
//
// In-process ThinLTO keys an object by what the summary says about its module.
// A DTLTO object also depends on who compiles it and how: the remote
// compiler (path and identity) and its command line. Those go into the key,
// so in-process entries, stock LLVM DTLTO entries and ours never mix, and a
// compiler upgrade never serves stale objects.
//
// An entry is written only for an object that passed the checks, through
// LLVM's cache (temporary file, then rename: atomic). It holds the object
// followed by a trailer with the object's BLAKE3 digest; a hit is verified
// against it (and checked like a fresh object) before the cache may hand it
// to the link, so a damaged entry is discarded and rebuilt, never linked.
// Linkers ignore bytes after the end of an ELF or COFF object.
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

/// Writes a cache entry: the object, then its digest trailer.
void writeCacheEntry(llvm::raw_ostream &OS, llvm::StringRef Object);

/// Returns the object held by a cache entry, or why the entry is damaged.
llvm::Expected<llvm::StringRef> readCacheEntry(llvm::StringRef Entry);

} // namespace dtlto

#endif
