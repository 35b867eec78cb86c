//===- Options.h - Engine settings that are not LLD options ---------------===//
//
// LLD's own DTLTO options reach the engine through its interfaces. Settings
// of ours come from -mllvm options (so they work with the stock ld.lld-22 and
// the preload library too, e.g. -Wl,-mllvm,-dtlto-verbose) or from DTLTO_*
// environment variables (for build systems that cannot change link lines).
// An -mllvm option given on the link line wins over the environment.
//
//===----------------------------------------------------------------------===//

#ifndef DTLTO_OPTIONS_H
#define DTLTO_OPTIONS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <optional>
#include <string>

namespace dtlto {

/// Print a one-line summary of each DTLTO link on stderr
/// (-mllvm -dtlto-verbose, or DTLTO_VERBOSE=1).
bool verbose();

/// Behave exactly as LLVM 22's own DTLTO where we deliberately differ
/// (-mllvm -dtlto-upstream-compat, or DTLTO_UPSTREAM_COMPAT=1; off by
/// default): for build tools and tests that pin upstream's behaviour. See
/// docs/usage.md, "Differences from LLVM's DTLTO".
llvm::Expected<bool> upstreamCompat();

/// Compile in the linker the jobs the distributor failed to deliver, instead
/// of failing the link (-mllvm -dtlto-local-fallback=<bool>, or
/// DTLTO_LOCAL_FALLBACK=0|1; on by default, off in upstream-compatible mode).
llvm::Expected<bool> localFallback();

/// Load a distributor plugin into the linker rather than into
/// dtlto-plugin-host (-mllvm -dtlto-plugin-in-process=<bool>, or
/// DTLTO_PLUGIN_IN_PROCESS=0|1). By default a built-in plugin (Builtin: it
/// is the linker's own code) runs in the linker and a shared object in the
/// host. docs/plugins.md says what each gives up.
llvm::Expected<bool> pluginInProcess(bool Builtin);

/// Seconds the distributor may run before it is stopped; 0 means no limit
/// (-mllvm -dtlto-distributor-timeout=<s>, or DTLTO_DISTRIBUTOR_TIMEOUT=<s>).
llvm::Expected<unsigned> distributorTimeout();

/// Where the link report goes (-mllvm -dtlto-report=FILE.html, or
/// DTLTO_REPORT=FILE.html): FILE.html, with FILE.json next to it; empty when
/// no report is asked for. A name that does not end in ".html" is an error
/// naming the option.
llvm::Expected<std::string> reportFile();

/// Show the live progress line (-mllvm -dtlto-progress=<bool>, or
/// DTLTO_PROGRESS=0|1; by default, when stderr is a terminal).
llvm::Expected<bool> progress();

/// Whether jobs are handed to the distributor one by one as they are ready
/// (-mllvm -dtlto-stream=auto|on|off, or DTLTO_STREAM; auto by default:
/// stream to distributors that declare the protocol).
enum class StreamMode { Auto, On, Off };
llvm::Expected<StreamMode> streamMode();

/// How many jobs the linker runs itself, with the in-process backend, while
/// the distributor runs the others (-mllvm -dtlto-local-jobs=N, or
/// DTLTO_LOCAL_JOBS=N); nullopt when neither says (the engine's default:
/// 1 with a streaming distributor, 0 with a one-shot one).
llvm::Expected<std::optional<unsigned>> localJobs();

/// A distributed job that has run this many times longer than its size
/// predicts is also run in the linker, when a local slot is free; the first
/// good object wins (-mllvm -dtlto-hedge=F, or DTLTO_HEDGE=F; 3 by default,
/// 0 never).
llvm::Expected<double> hedgeFactor();

/// Whether an -mllvm argument is one of ours (-dtlto-*, and the DTLTO
/// options of DistributionOptions.h). They change how jobs run, never what
/// they produce, so they stay out of ThinLTO cache keys and jobs' commands.
bool isEngineOption(llvm::StringRef MllvmArg);

} // namespace dtlto

#endif
