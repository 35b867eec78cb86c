//===- Plugin.h - Distributor plugins, as the engine sees them ------------===//
//
// --thinlto-distributor= may name a distributor plugin (docs/plugins.md): a
// shared object that exports dtlto_plugin_entry, or builtin:<name>. The
// plugin host (PluginHost.h) loads it and speaks the streaming protocol to
// the engine, the jobs' inputs and objects in memory: in dtlto-plugin-host,
// a process of its own, or with -dtlto-plugin-in-process on a thread of the
// linker (the default for a built-in plugin). This file decides whether the
// setting is a plugin, checks it before any work is done, and finds what
// runs it.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_PLUGIN_ENGINE_H
#define DTLTO_PLUGIN_ENGINE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <optional>
#include <string>

namespace dtlto {

struct PluginChoice {
  /// The plugin as the host takes it: an absolute path, or builtin:<name>.
  std::string Plugin;
  /// The plugin host program that runs it (unless InProcess).
  std::string Host;
  /// Runs it on a thread of the linker (-dtlto-plugin-in-process; the
  /// default for a built-in plugin).
  bool InProcess = false;
  /// InProcess: dtlto-backend next to the linker, for the plugins that run
  /// it ("" when there is none; the host finds its own).
  std::string Backend;
};

/// std::nullopt when Distributor names a program. A plugin that cannot be
/// used (no such built-in, not a shared object, no entry point, no host) is
/// an error naming the file and what to do.
llvm::Expected<std::optional<PluginChoice>>
findPlugin(llvm::StringRef Distributor);

/// The plugins built into the plugin host, by the names builtin: takes.
llvm::StringRef builtinPluginNames();

/// The exit code with which the host says the plugin could not be loaded
/// or opened (its message on stderr says why).
constexpr int PluginLoadFailedExitCode = 3;

} // namespace dtlto

#endif
