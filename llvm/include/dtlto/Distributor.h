//===- Distributor.h - Running the distributor process --------------------===//
//
// The one place where the engine starts a process: the user's distributor,
// run as `<distributor> <distributor args...> <manifest>`.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_DISTRIBUTOR_H
#define DTLTO_DISTRIBUTOR_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <string>

namespace dtlto {

/// Resolves the distributor to an executable file (searching PATH for a bare
/// name), so that a typo is reported before any work is done.
llvm::Expected<std::string> findDistributor(llvm::StringRef Distributor);

/// While alive (from the backend's first job to the end of its work), the
/// linker's SIGINT, SIGTERM and SIGHUP first stop a running distributor's
/// process group, then go on to the handlers that remove the temporary files
/// (ours, Signals.h, then LLVM's, which re-raises the signal). Signals the
/// linker was started with ignored stay ignored. One guard at a time.
class SignalGuard {
public:
  SignalGuard();
  ~SignalGuard();
  SignalGuard(const SignalGuard &) = delete;
  SignalGuard &operator=(const SignalGuard &) = delete;
};

/// The distributor as messages name it: the program, and the script it runs
/// when its first argument is one ("/usr/bin/python3 /path/local.py";
/// the short name is "python3 local.py").
std::string distributorName(llvm::StringRef Program,
                            llvm::ArrayRef<std::string> Args);
std::string distributorShortName(llvm::StringRef Program,
                                 llvm::ArrayRef<std::string> Args);

/// Runs the distributor in a process group of its own and waits for it, at
/// most TimeoutSeconds (0: no limit), after which the whole group is stopped.
/// An error says how it failed.
llvm::Error runDistributor(llvm::StringRef Program,
                           llvm::ArrayRef<std::string> Args,
                           llvm::StringRef ManifestPath,
                           unsigned TimeoutSeconds);

} // namespace dtlto

#endif
