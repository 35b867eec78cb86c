//===- Cache.h - ThinLTO cache keys for DTLTO jobs ------------------------===//
//
// In-process ThinLTO keys an object by what the summary says about its module.
// A DTLTO object also depends on who compiles it and how: the remote
// compiler (path and identity) and its command line. Those go into the key,
// so in-process entries, stock LLVM DTLTO entries and ours never mix, and a
// compiler upgrade never serves stale objects.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_CACHE_H
#define DTLTO_CACHE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <string>

namespace dtlto {

/// A string that identifies the remote compilation of every job of a link:
/// the compiler's identity on this machine and the common arguments.
std::string remoteCompileID(llvm::ArrayRef<std::string> CommonArgs,
                            llvm::ArrayRef<std::string> CommonInputs);

} // namespace dtlto

#endif
