//===- PluginHost.h - Runs a distributor plugin on the engine's channels --===//
//
// What stands between the engine and a distributor plugin (docs/plugins.md):
// it loads the plugin (a shared object, or one built in), reads the link and
// its jobs from the job channel with their inputs in memory, calls the
// plugin (dtlto-plugin.h), and writes what the plugin reports to the event
// channel, a done with the object's bytes after its line ("The host
// protocol"). It runs in dtlto-plugin-host, a process of its own, on a
// socket and a pipe; or, with -dtlto-plugin-in-process, on a thread of the
// linker, where the same messages go through a HostMailbox in memory.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_PLUGIN_HOST_H
#define DTLTO_PLUGIN_HOST_H

#include "llvm/ADT/StringRef.h"
#include <memory>
#include <string>
#include <vector>

namespace dtlto {

/// The channels of a host on a thread of the linker, in memory. The engine
/// queues its messages (the job channel's lines and frames) where the
/// host's thread takes them, and each event goes to the engine by a call
/// from the thread that reports it. Between the two threads there is no
/// socket, no pipe and no thread of the engine's: on this project's 2-core
/// VM each wake-up of a waiting thread costs a reschedule and two task
/// switches, and the engine's writer and reader threads woke four times a
/// job (docs/performance.md, "The plugin in the linker, called directly").
/// A frame's inputs are not copied: the host reads them where the engine
/// has them, so that a paced host's queue (up to DTLTO_PLUGIN_QUEUE_MIB of
/// inputs) costs the linker no memory of its own. The engine implements
/// it (Distributor.cpp).
class HostMailbox {
public:
  virtual ~HostMailbox() = default;
  enum class Got { Bytes, Woken, Closed };
  /// A frame's inputs in the engine's memory, in the order of its line's
  /// "sizes". They stay valid while Keep is held, also after the mailbox
  /// is closed: Keep owns what only the frame needs (the job's shard) and
  /// keeps the engine's mapped module files; the rest (archive members)
  /// is the linker's input buffers, which live until the link ends.
  struct InPlace {
    std::vector<llvm::StringRef> Parts;
    std::shared_ptr<const void> Keep;
  };
  /// Appends the next message's line to Out, with its newline, exactly as
  /// the job channel would carry it, and says Bytes: a frame's inputs go
  /// to Frame instead of after the line (no newline after them), anything
  /// else leaves Frame empty. With none queued, waits. Out null: takes
  /// nothing and waits for a wake() (a paced host with a full queue).
  /// WakeOnFinal: a wake() ends the wait (Woken); else wake()s are
  /// remembered for the next wait that asks for them. Closed once the
  /// engine is done with the host, at once, with nothing appended.
  virtual Got wait(std::string *Out, InPlace *Frame, bool WakeOnFinal) = 0;
  /// A job became final (any thread).
  virtual void wake() = 0;
  /// An event line and the bytes after it (any thread). Dropped once the
  /// engine has closed the mailbox; never two at once.
  virtual void event(llvm::StringRef Line, llvm::StringRef Payload) = 0;
};

struct PluginHostSetup {
  /// The plugin: a shared object's path, or builtin:<name>.
  std::string Plugin;
  /// The distributor arguments, for the plugin's open.
  std::vector<std::string> Args;
  /// dtlto-backend, for the plugins that run it; empty when there is none.
  std::string Backend;
  /// Names the host in its messages ("dtlto-plugin-host: error: ...").
  std::string Prefix;
  /// The channels: two descriptors (a process), or, in the linker, a
  /// mailbox.
  int JobsFd = -1, EventsFd = -1;
  HostMailbox *Mailbox = nullptr;
};

/// Runs the plugin until every job is final after the end of the jobs (0),
/// the plugin could not be loaded or refused the link
/// (PluginLoadFailedExitCode, Plugin.h), or anything else went wrong (1;
/// an engine that closes the job channel early, say). Messages go to
/// stderr. Closes neither channel. SIGPIPE must be ignored or blocked: a
/// write to an engine that has gone must fail, not kill.
int runPluginHost(const PluginHostSetup &Setup);

} // namespace dtlto

#endif
