//===- WriteFile.h - Writing a file, with one error for every failure -----===//
//
// The one place that writes the engine's files (shards, manifest, the
// dtlto-backend inputs, archive member copies) and dtlto-backend's objects:
// open, write, close, and a failure at any step becomes one error naming the
// file.
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

/// Writes Path through Write. With Atomic the data goes to a file next to
/// Path that is then renamed over it: a reader never sees part of it. On
/// failure nothing written is left, and a file that was there before (when
/// the open failed) is not touched.
std::error_code writeFileOrError(llvm::StringRef Path,
                                 llvm::function_ref<void(llvm::raw_ostream &)> Write,
                                 bool Atomic = false);

/// The same, failing with "cannot write the <What> '<Path>': <reason>".
llvm::Error writeFile(llvm::StringRef Path, llvm::StringRef What,
                      llvm::function_ref<void(llvm::raw_ostream &)> Write,
                      bool Atomic = false);

} // namespace dtlto

#endif
