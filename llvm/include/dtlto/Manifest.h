//===- Manifest.h - The JSON job manifest handed to a distributor ---------===//
//
// The one place in the engine that knows the distributor contract: the shape
// of the JSON manifest (exactly LLVM 22's schema), the side file that tells
// our own distributors more (docs/manifest.md), and the command line each
// job runs.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_MANIFEST_H
#define DTLTO_MANIFEST_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/TargetParser/Triple.h"
#include <string>
#include <vector>

namespace llvm::lto {
struct Config;
}

namespace dtlto {

/// One ThinLTO backend compilation.
struct Job {
  unsigned Task = 0;
  std::string ModuleID;   // the module's bitcode file; inputs[0]
  std::string ShardPath;  // its summary-index shard; inputs[1]
  std::string ObjectPath; // the native object it produces; outputs[0]
  std::vector<std::string> ImportedFrom; // modules it imports from
  uint64_t InputBytes = 0; // bitcode the job must read (side file)
};

/// What every job shares.
struct CommonPart {
  std::string LinkerOutput;
  std::vector<std::string> Args;   // compiler, then its options
  std::vector<std::string> Inputs; // files every job needs
  /// Side file: `Args + [BatchArg]` starts a worker that runs many jobs
  /// (dtlto-backend --batch); empty when the compiler cannot.
  std::string BatchArg;
  /// Side file: the fork server library installed with the engine
  /// (Installed.h), which a local distributor may preload into the compiler
  /// to fork it for each job; empty when there is none.
  std::string ForkServer;
};

/// Whether the remote compiler is our dtlto-backend (by its file name), which
/// runs jobs from the linker's own configuration and each job's shard instead
/// of clang flags.
bool isNativeBackend(llvm::StringRef RemoteCompiler);

/// The per-link file dtlto-backend reads besides each job's own: the link's
/// LTO configuration. No job needs the whole link's index: each reads its
/// summaries from its shard, as clang does, so that what a job needs grows
/// with its module and imports, not with the program.
struct NativeBackendFiles {
  std::string Config;
};

/// The remote compiler's command line shared by all jobs: the compiler, its
/// prepend arguments, then what makes it compile a ThinLTO backend job as the
/// linker's LTO configuration says (clang flags; for dtlto-backend, Native's
/// files), then the user's remote compiler arguments (last, so that they can
/// override ours).
CommonPart makeCommonPart(const llvm::lto::Config &Conf, const llvm::Triple &TT,
                          llvm::StringRef LinkerOutput,
                          llvm::StringRef RemoteCompiler,
                          llvm::ArrayRef<std::string> PrependArgs,
                          llvm::ArrayRef<std::string> CompilerArgs,
                          const NativeBackendFiles *Native);

/// Writes the manifest; jobs appear in the order given.
llvm::Error writeManifest(llvm::StringRef Path, const CommonPart &Common,
                          llvm::ArrayRef<const Job *> Jobs);

/// Writes the side file next to the manifest (engineInfoPath): which engine
/// wrote it, the batch argument, and each job's input bytes in manifest
/// order, for our distributors to schedule largest first. The manifest does
/// not name it, so distributors written for LLVM never see it.
/// Streaming: the manifest has no jobs, and the side file says the jobs come
/// on the job channel.
llvm::Error writeEngineInfo(llvm::StringRef Path, const CommonPart &Common,
                            llvm::ArrayRef<const Job *> Jobs,
                            bool Streaming = false);

/// A job's keys as the manifest has them ("args", "inputs", "outputs"):
/// for the manifest, and for the job records of the streaming protocol.
void writeJobFields(llvm::json::OStream &J, const Job &Jb);

} // namespace dtlto

#endif
