//===- Installed.h - The files installed with the engine ------------------===//
//
// The engine is the linker executable (bin/lld) or the preload library
// (lib/libdtlto-preload.so); programs and libraries of ours are installed
// with it: bin/dtlto-backend, bin/dtlto-plugin-host,
// lib/libdtlto-forkserver.so. This is where the engine finds them.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_INSTALLED_H
#define DTLTO_INSTALLED_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <string>

namespace dtlto {

/// The real path of the engine's own file; an error names ToFind, what the
/// caller was looking for.
llvm::Expected<std::string> enginePath(llvm::StringRef ToFind);

/// A program of ours installed with the engine at EnginePath: Name beside
/// it, or in ../bin; "" when there is none.
std::string programBesideEngine(llvm::StringRef EnginePath,
                                llvm::StringRef Name);

/// A shared library of ours installed with the engine: Name beside it, or in
/// ../lib; "" when there is none (or the engine cannot tell where it is).
std::string libraryBesideEngine(llvm::StringRef Name);

} // namespace dtlto

#endif
