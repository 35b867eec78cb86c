//===- PluginHost.h - Runs a distributor plugin on the engine's channels --===//
//
// What stands between the engine and a distributor plugin (docs/plugins.md):
// it loads the plugin (a shared object, or one built in), reads the link and
// its jobs from the job channel with their inputs in memory, calls the
// plugin (dtlto-plugin.h), and writes what the plugin reports to the event
// channel, a done with the object's bytes after its line ("The host
// protocol"). It runs in dtlto-plugin-host, a process of its own, or, with
// -dtlto-plugin-in-process, on a thread of the linker: the same code on the
// same channels either way.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_PLUGIN_HOST_H
#define DTLTO_PLUGIN_HOST_H

#include <string>
#include <vector>

namespace dtlto {

struct PluginHostSetup {
  /// The plugin: a shared object's path, or builtin:<name>.
  std::string Plugin;
  /// The distributor arguments, for the plugin's open.
  std::vector<std::string> Args;
  /// dtlto-backend, for the plugins that run it; empty when there is none.
  std::string Backend;
  /// Names the host in its messages ("dtlto-plugin-host: error: ...").
  std::string Prefix;
  int JobsFd = -1, EventsFd = -1;
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
