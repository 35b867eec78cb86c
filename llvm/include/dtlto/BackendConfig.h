//===- BackendConfig.h - The LTO configuration sent to dtlto-backend ------===//
//
// A ThinLTO backend job gives in-process ThinLTO's object only if it runs with
// the linker's LTO configuration. clang rebuilds one from a handful of flags;
// dtlto-backend gets the linker's own, written once per link into a JSON
// file: the fields of lto::Config, TargetOptions, MCTargetOptions and
// PipelineTuningOptions that decide what an object holds, and the -mllvm
// options of the link. This is the one place that knows the file's format.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_BACKENDCONFIG_H
#define DTLTO_BACKENDCONFIG_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <string>
#include <vector>

namespace llvm::lto {
struct Config;
}

namespace dtlto {

/// Writes Conf (with the given -mllvm options) to Path.
llvm::Error writeBackendConfig(llvm::StringRef Path, const llvm::lto::Config &Conf,
                               llvm::ArrayRef<std::string> MllvmArgs);

/// The same configuration as text, for a plugin host that gets it in memory.
llvm::Expected<std::string>
backendConfigText(const llvm::lto::Config &Conf,
                  llvm::ArrayRef<std::string> MllvmArgs);

/// What a configuration file holds besides the fields themselves.
struct BackendConfigHeader {
  std::string LLVMVersion;
  std::vector<std::string> MllvmArgs;
};

/// Reads a configuration (Text, named Name in errors: its file, or the
/// plugin host's copy in memory) into Conf. Fails, naming it, when it is not
/// one of ours, is damaged, or was written by another LLVM version (whose
/// configuration this LLVM cannot be trusted to honour).
llvm::Expected<BackendConfigHeader> parseBackendConfig(llvm::StringRef Name,
                                                       llvm::StringRef Text,
                                                       llvm::lto::Config &Conf);

} // namespace dtlto

#endif
