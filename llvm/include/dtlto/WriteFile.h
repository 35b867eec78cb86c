//===- WriteFile.h - Writing a file, with one error for every failure -----===//
//
// The one place that writes the engine's files (shards, manifest, the
// dtlto-backend inputs, archive member copies, ThinLTO cache entries) and
// dtlto-backend's objects: open, write, close, and a failure at any step
// becomes one error naming the file.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_WRITEFILE_H
#define DTLTO_WRITEFILE_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include <system_error>

namespace dtlto {

/// How a file gets written.
enum class WriteMode {
  /// Opened at Path, truncated if it was there.
  Replace,
  /// Written to a file next to Path, then renamed over it: a reader never
  /// sees part of it.
  Atomic,
  /// Created at Path, which must not exist: never written through a name
  /// someone else made (a hard link to a file that is not ours).
  New,
};

/// Writes Path through Write. On failure nothing written is left, and a
/// file that was there before (when the open failed) is not touched.
std::error_code writeFileOrError(llvm::StringRef Path,
                                 llvm::function_ref<void(llvm::raw_ostream &)> Write,
                                 WriteMode Mode = WriteMode::Replace);

/// Writes the file open at FD through Write, and closes it: the first error
/// of the writes and the close. For a file opened elsewhere (the unique
/// temporary of a cache entry).
std::error_code
writeOpenFile(int FD, llvm::function_ref<void(llvm::raw_ostream &)> Write);

/// The same as writeFileOrError, failing with "cannot write the <What>
/// '<Path>': <reason>".
llvm::Error writeFile(llvm::StringRef Path, llvm::StringRef What,
                      llvm::function_ref<void(llvm::raw_ostream &)> Write,
                      WriteMode Mode = WriteMode::Replace);

} // namespace dtlto

#endif
