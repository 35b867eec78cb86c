//===- Distributor.h - Running the distributor process --------------------===//
//
// The one place where the engine starts a process: the user's distributor,
// run as `<distributor> <distributor args...> <manifest>`; or runs a
// distributor in the linker (a plugin's host, -dtlto-plugin-in-process),
// whose channels are then in memory (HostMailbox).
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_DISTRIBUTOR_H
#define DTLTO_DISTRIBUTOR_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/FunctionExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dtlto {

class HostMailbox;

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

/// Whether the distributor speaks the streaming protocol (docs/manifest.md,
/// "Streaming"): the program, or the script an interpreter runs, has the
/// line "dtlto-stream-protocol: 1" in its first 4 KiB.
bool speaksStreamProtocol(llvm::StringRef Program,
                          llvm::ArrayRef<std::string> Args);

/// A running distributor: `<program> <args...> <manifest>` in a process
/// group of its own, with the event channel (DTLTO_EVENTS_FD) and, when
/// streaming, the job channel (DTLTO_JOBS_FD) open. Event lines are handed
/// to OnEvent on a thread of the process's own, in the order written; OnExit
/// is called on another when the distributor has exited. Sending never
/// blocks the caller. Destroying it stops what is left of the process group
/// and joins its threads.
///
/// The plugin host (Plugin.h) runs without a manifest (ManifestPath empty:
/// none is passed) and with Payloads: an event line with "bytes" is
/// followed by that many bytes, handed to OnEvent with the line.
class DistributorProcess {
public:
  using EventFn =
      std::function<void(llvm::StringRef Line, llvm::StringRef Payload)>;
  using ExitFn = std::function<void()>;

  static llvm::Expected<std::unique_ptr<DistributorProcess>>
  start(llvm::StringRef Program, llvm::ArrayRef<std::string> Args,
        llvm::StringRef ManifestPath, bool Streaming, bool Payloads,
        EventFn OnEvent, ExitFn OnExit);
  /// The distributor on a thread of the linker instead
  /// (-dtlto-plugin-in-process): Run gets the channels in memory
  /// (HostMailbox, PluginHost.h: the job channel's bytes, streaming with
  /// payloads; each event by a call to OnEvent, on the thread that reports
  /// it, one at a time) and returns its exit code; everything else is as
  /// for a process. stop() closes the mailbox and waits 3 s; a Run that has
  /// not returned by then is left behind (its exit status is then
  /// unknown), and reaches nothing of the engine's any more.
  using InProcessFn = std::function<int(HostMailbox &)>;
  static llvm::Expected<std::unique_ptr<DistributorProcess>>
  startInProcess(llvm::StringRef Name, InProcessFn Run, EventFn OnEvent,
                 ExitFn OnExit);
  ~DistributorProcess();

  /// Streaming: one line on the job channel (the newline is added). The
  /// channel stays open until the distributor exits: cancels may follow
  /// the end of the jobs.
  void send(std::string Line);
  /// A plugin host's job frame: its line, then Body, then a newline. The
  /// line is made from Body when the frame is written: a paced plugin host
  /// (DTLTO_PLUGIN_PACED) leaves most of a large link's frames waiting
  /// here, and their lines would take a kilobyte each meanwhile. Body is
  /// sent from where it is, not copied: its memory must stay while Keep is
  /// held (a host in the linker reads it in place, and may hold it longer
  /// than this object lives), unless it is in Owned, or is the linker's
  /// input buffers. Owned is memory that only this frame needs (the job's
  /// index shard): it is freed once the frame is written, or once the host
  /// in the linker lets go of the job. Body may point into it: moving a
  /// SmallString<0> that holds bytes keeps them where they are.
  using LineMaker = llvm::unique_function<std::string(
      llvm::ArrayRef<llvm::StringRef> Body)>;
  void sendFrame(LineMaker MakeLine, std::vector<llvm::StringRef> Body,
                 llvm::SmallString<0> Owned, std::shared_ptr<const void> Keep);

  bool exited() const;
  /// Once exited(): success for exit status 0, else what went wrong.
  llvm::Error exitStatus();
  /// Once exited(): the exit code, or std::nullopt after a signal.
  std::optional<int> exitCode();
  /// Once exited(): the signal that ended it, or std::nullopt.
  std::optional<int> exitSignal();
  /// Asks the process group to stop (SIGTERM), waits a few seconds for the
  /// distributor to exit, then kills what is left (SIGKILL).
  void stop();

  DistributorProcess(const DistributorProcess &) = delete;
  DistributorProcess &operator=(const DistributorProcess &) = delete;

private:
  struct Impl;
  explicit DistributorProcess(std::unique_ptr<Impl> I);
  std::unique_ptr<Impl> I;
};

} // namespace dtlto

#endif
