//===- dtlto-plugin-host.cpp - Runs a distributor plugin for the engine ---===//
//
// By default the engine does not load a distributor plugin into the linker:
// it starts this program, as it starts any distributor (its own process
// group, the deadline, the stop signals), as
// `dtlto-plugin-host <plugin> <args...>` with DTLTO_JOBS_FD and
// DTLTO_EVENTS_FD, and this program runs the plugin on them (PluginHost.h).
// A plugin that crashes takes this process down, not the link.
//
// Exit codes: 0 when every job was reported final after the end of the jobs;
// 3 (PluginLoadFailedExitCode) when the plugin could not be loaded or
// refused the link; 1 for anything else.
//
//===----------------------------------------------------------------------===//

#include "dtlto/PluginHost.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <csignal>
#include <cstdlib>
#include <fcntl.h>

using namespace llvm;

static int fdFromEnv(const char *Var) {
  const char *V = getenv(Var);
  int Fd;
  if (!V || StringRef(V).getAsInteger(10, Fd) || Fd < 0) {
    errs() << "dtlto-plugin-host: error: " << Var
           << " is not set: dtlto-plugin-host is started by the linker, for "
              "--thinlto-distributor=<plugin>\n";
    return -1;
  }
  return Fd;
}

int main(int argc, char **argv) {
  if (argc < 2 || StringRef(argv[1]) == "--help") {
    outs() << "usage: dtlto-plugin-host <plugin.so|builtin:NAME> [args...]\n"
              "Runs a DTLTO distributor plugin for the linker, which starts "
              "it for\n--thinlto-distributor=<plugin> (docs/plugins.md).\n";
    return argc < 2;
  }
  // A write to an engine that has gone fails; it must not kill us first.
  signal(SIGPIPE, SIG_IGN);
  dtlto::PluginHostSetup Setup;
  Setup.Prefix = "dtlto-plugin-host";
  Setup.Plugin = argv[1];
  Setup.Args.assign(argv + 2, argv + argc);
  Setup.EventsFd = fdFromEnv("DTLTO_EVENTS_FD");
  Setup.JobsFd = fdFromEnv("DTLTO_JOBS_FD");
  if (Setup.EventsFd < 0 || Setup.JobsFd < 0)
    return 1;
  // The channels are ours: what the plugin starts must not hold them open
  // (the engine reads events until the last writer has gone).
  fcntl(Setup.EventsFd, F_SETFD, FD_CLOEXEC);
  fcntl(Setup.JobsFd, F_SETFD, FD_CLOEXEC);
  SmallString<256> Self;
  if (!sys::fs::real_path("/proc/self/exe", Self)) {
    SmallString<256> Backend = sys::path::parent_path(Self);
    sys::path::append(Backend, "dtlto-backend");
    if (sys::fs::can_execute(Backend))
      Setup.Backend = std::string(Backend);
  }
  // The process ends here: what the plugin still runs on threads of its own
  // goes with it.
  int Code = dtlto::runPluginHost(Setup);
  outs().flush();
  errs().flush();
  _exit(Code);
}
