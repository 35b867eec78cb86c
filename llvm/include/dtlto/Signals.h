//===- Signals.h - What the engine does when a signal stops the process ---===//
//
// A linker (or dtlto-backend) stopped by a signal must leave none of its
// temporary files behind, and must keep ignoring the signals it was started
// with ignored. Distributor.h stops a running distributor first
// (SignalGuard); this is the rest, shared by the engine and dtlto-backend.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_SIGNALS_H
#define DTLTO_SIGNALS_H

#include "llvm/ADT/StringRef.h"
#include <csignal>

namespace dtlto {

/// Whether the process was started with Sig ignored (SIGINT, SIGTERM, SIGHUP
/// or SIGUSR2; false for others): it must stay ignored.
bool startedIgnored(int Sig);

/// Hands a signal that a handler of ours has seen on to the handler it
/// replaced (Old): calls it, or for the default action re-raises Sig with the
/// default restored. Async-signal-safe.
void passSignalOn(const struct sigaction &Old, int Sig, siginfo_t *Info,
                  void *Context);

/// Registers Path for removal if a signal stops the process (SIGINT,
/// SIGTERM, SIGHUP, SIGUSR2, or a crash), as sys::RemoveFileOnSignal does,
/// in constant time (LLVM's costs grow with the files registered so far); a
/// no-op for Keep. unregisterTempFile drops every registration of Path.
void registerTempFile(llvm::StringRef Path, bool Keep);
void unregisterTempFile(llvm::StringRef Path);

/// Installs the handlers that remove registered files (once per process,
/// over LLVM's, which they hand the signal on to). Registering a file does
/// it; SignalGuard does it first, so that it stops the distributor before
/// anything is removed.
void installTempFileHandlers();

} // namespace dtlto

#endif
