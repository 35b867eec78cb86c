//===- LocalPluginEntry.cpp - The entry point of the local plugin's .so ---===//
//
// The same plugin the host has built in as builtin:local, as a shared object
// that any plugin host can load.
//
//===----------------------------------------------------------------------===//

#include "LocalPlugin.h"

extern "C" __attribute__((visibility("default"))) const dtlto_plugin *
dtlto_plugin_entry(uint32_t HostAbiVersion) {
  return dtlto::localPluginEntry(HostAbiVersion);
}
