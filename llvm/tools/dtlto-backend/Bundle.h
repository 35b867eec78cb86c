//===- Bundle.h - One DTLTO job as one file ---------------------*- C++ -*-===//
//
// A bundle carries a whole job to a farm whose daemon sends one input file
// per compile (distcc, icecream): the job's command, its module, its index
// shard, the modules it imports and the files every job needs. The format is
// documented in docs/bundle.md; utils/dtlto/dtltodist/bundle.py writes it.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_BACKEND_BUNDLE_H
#define DTLTO_BACKEND_BUNDLE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include <memory>
#include <string>
#include <vector>

namespace dtlto {

/// The format version this reader understands.
constexpr unsigned BundleVersion = 1;

struct BundleFile {
  std::string Name; ///< relative to the bundle's root, '/'-separated
  llvm::StringRef Data;
};

struct Bundle {
  std::unique_ptr<llvm::MemoryBuffer> Buffer; ///< holds every file's data
  /// "backend": Args are dtlto-backend's own (Args[0] is ignored: the program
  /// reading the bundle runs the job itself). "command": Args[0] is the
  /// compiler to run.
  std::string Kind;
  std::vector<std::string> Args;
  std::string Cwd;    ///< where the command runs, relative to the root
  std::string Output; ///< the object the command writes, relative to root
  std::vector<BundleFile> Files;
};

/// Reads and checks the bundle at Path ("-": standard input). Every error
/// names the file and says what is wrong with it.
llvm::Expected<Bundle> readBundle(llvm::StringRef Path);

} // namespace dtlto

#endif
