//===- LocalPlugin.h - The local distributor plugin -------------*- C++ -*-===//
//
// builtin:local, also built as lib/libdtlto-local-plugin.so: runs the link's
// jobs on this machine in persistent `dtlto-backend --memory` workers, fed
// over pipes, memory to memory (docs/plugins.md).
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_LOCAL_PLUGIN_H
#define DTLTO_LOCAL_PLUGIN_H

#include "dtlto/dtlto-plugin.h"

namespace dtlto {

/// The plugin's dtlto_plugin_entry.
const dtlto_plugin *localPluginEntry(uint32_t HostAbiVersion);

} // namespace dtlto

#endif
