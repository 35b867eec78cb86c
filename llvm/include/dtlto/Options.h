//===- Options.h - Engine settings that are not LLD options ---------------===//
//
// LLD's own DTLTO options reach the engine through its interfaces. Settings
// of ours come from -mllvm options (so they work with the stock ld.lld-22 and
// the preload library too, e.g. -Wl,-mllvm,-dtlto-verbose) or from DTLTO_*
// environment variables (for build systems that cannot change link lines).
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_OPTIONS_H
#define DTLTO_OPTIONS_H

namespace dtlto {

/// Print a one-line summary of each DTLTO link on stderr
/// (-mllvm -dtlto-verbose, or DTLTO_VERBOSE=1).
bool verbose();

} // namespace dtlto

#endif
