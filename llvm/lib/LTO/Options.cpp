//===- Options.cpp - Engine settings that are not LLD options -------------===//

#include "dtlto/Options.h"
#include "dtlto/DistributionOptions.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Process.h"
#include <cstdlib>
#include <optional>

using namespace llvm;

static cl::opt<bool>
    VerboseOpt("dtlto-verbose",
               cl::desc("Print a summary of each DTLTO link on stderr"));

static cl::opt<bool> LocalFallbackOpt(
    "dtlto-local-fallback", cl::init(true),
    cl::desc("Compile in the linker the DTLTO jobs whose distributor failed "
             "or whose object is missing or bad (default: true)"));

static cl::opt<bool> UpstreamCompatOpt(
    "dtlto-upstream-compat",
    cl::desc("Behave as LLVM 22's own DTLTO where dtlto deliberately differs: "
             "no local fallback, no object checks, no side file, member "
             "copies named by pid, LLVM's error wording and time-trace scopes "
             "(default: false)"));

static cl::opt<unsigned> TimeoutOpt(
    "dtlto-distributor-timeout", cl::init(0), cl::value_desc("seconds"),
    cl::desc("Stop the DTLTO distributor after this many seconds (default: "
             "0, no limit)"));

static cl::opt<std::string> ReportOpt(
    "dtlto-report", cl::value_desc("file.html"),
    cl::desc("Write a report of the DTLTO link: a page (<file>.html) and a "
             "Chrome trace (<file>.json)"));

static cl::opt<bool> ProgressOpt(
    "dtlto-progress",
    cl::desc("Show the DTLTO jobs' progress on stderr (default: when stderr "
             "is a terminal)"));

static cl::opt<std::string> StreamOpt(
    "dtlto-stream", cl::value_desc("auto|on|off"),
    cl::desc("Hand DTLTO jobs to the distributor one by one as they are "
             "ready (docs/manifest.md, \"Streaming\"); auto, the default, "
             "streams to distributors that declare the protocol"));

static cl::opt<unsigned> LocalJobsOpt(
    "dtlto-local-jobs", cl::value_desc("N"),
    cl::desc("Run up to N DTLTO jobs in the linker while the distributor "
             "runs the others (default: 1 with a streaming distributor, "
             "0 with a one-shot one)"));

static cl::opt<std::string> HedgeOpt(
    "dtlto-hedge", cl::value_desc("factor"),
    cl::desc("Also run in the linker a distributed job that has taken this "
             "many times longer than its size predicts; 0 never does "
             "(default: 3; needs -dtlto-local-jobs)"));

static cl::opt<bool> PluginInProcessOpt(
    "dtlto-plugin-in-process",
    cl::desc("Load a DTLTO distributor plugin into the linker instead of "
             "running it in dtlto-plugin-host: no process is started, but a "
             "plugin that crashes takes the link with it (default: true for "
             "builtin:local, false for a shared object; docs/plugins.md)"));

static std::optional<StringRef> env(const char *Name) {
  const char *V = std::getenv(Name);
  if (!V || !*V)
    return std::nullopt;
  return StringRef(V);
}

static Error badEnv(const char *Name, StringRef Value, const char *Expected) {
  return createStringError(inconvertibleErrorCode(),
                           Twine("the environment variable ") + Name + "='" +
                               Value + "' is not " + Expected);
}

static Expected<bool> boolSetting(const cl::opt<bool> &Opt, const char *Env,
                                  bool Default) {
  if (Opt.getNumOccurrences())
    return Opt;
  std::optional<StringRef> V = env(Env);
  if (!V)
    return Default;
  std::string L = V->lower();
  if (L == "1" || L == "on" || L == "true" || L == "yes")
    return true;
  if (L == "0" || L == "off" || L == "false" || L == "no")
    return false;
  return badEnv(Env, *V, "0 or 1 (or on/off)");
}

bool dtlto::verbose() {
  if (VerboseOpt.getNumOccurrences())
    return VerboseOpt;
  std::optional<StringRef> V = env("DTLTO_VERBOSE");
  return V && *V != "0";
}

Expected<bool> dtlto::upstreamCompat() {
  return boolSetting(UpstreamCompatOpt, "DTLTO_UPSTREAM_COMPAT", false);
}

Expected<bool> dtlto::localFallback() {
  Expected<bool> Compat = upstreamCompat();
  if (!Compat)
    return Compat.takeError();
  return boolSetting(LocalFallbackOpt, "DTLTO_LOCAL_FALLBACK", !*Compat);
}

Expected<bool> dtlto::pluginInProcess(bool Builtin) {
  return boolSetting(PluginInProcessOpt, "DTLTO_PLUGIN_IN_PROCESS", Builtin);
}

Expected<unsigned> dtlto::distributorTimeout() {
  if (TimeoutOpt.getNumOccurrences())
    return TimeoutOpt;
  std::optional<StringRef> V = env("DTLTO_DISTRIBUTOR_TIMEOUT");
  if (!V)
    return 0;
  unsigned Seconds;
  if (V->trim().getAsInteger(10, Seconds))
    return badEnv("DTLTO_DISTRIBUTOR_TIMEOUT", *V, "a number of seconds");
  return Seconds;
}

static bool isReportName(StringRef Path) {
  return Path.size() > 5 && Path.ends_with_insensitive(".html");
}

Expected<std::string> dtlto::reportFile() {
  if (ReportOpt.getNumOccurrences()) {
    if (!isReportName(ReportOpt))
      return createStringError(
          inconvertibleErrorCode(),
          "-dtlto-report='" + ReportOpt +
              "': the report must be named <file>.html (its trace goes "
              "next to it, as <file>.json)");
    return ReportOpt;
  }
  std::optional<StringRef> V = env("DTLTO_REPORT");
  if (!V)
    return "";
  if (!isReportName(*V))
    return badEnv("DTLTO_REPORT", *V,
                  "a file name ending in .html (the trace goes next to it, "
                  "as <file>.json)");
  return V->str();
}

Expected<bool> dtlto::progress() {
  return boolSetting(ProgressOpt, "DTLTO_PROGRESS",
                     sys::Process::StandardErrIsDisplayed());
}

Expected<dtlto::StreamMode> dtlto::streamMode() {
  StringRef V;
  std::string What;
  if (StreamOpt.getNumOccurrences()) {
    V = StreamOpt;
    What = "-mllvm -dtlto-stream";
  } else if (std::optional<StringRef> E = env("DTLTO_STREAM")) {
    V = *E;
    What = "the environment variable DTLTO_STREAM";
  } else {
    return StreamMode::Auto;
  }
  std::string L = V.trim().lower();
  if (L == "auto")
    return StreamMode::Auto;
  if (L == "1" || L == "on" || L == "true" || L == "yes")
    return StreamMode::On;
  if (L == "0" || L == "off" || L == "false" || L == "no")
    return StreamMode::Off;
  return createStringError(inconvertibleErrorCode(),
                           What + "='" + V +
                               "' is not auto, on (1) or off (0)");
}

Expected<std::optional<unsigned>> dtlto::localJobs() {
  if (LocalJobsOpt.getNumOccurrences())
    return std::optional<unsigned>(LocalJobsOpt);
  std::optional<StringRef> V = env("DTLTO_LOCAL_JOBS");
  if (!V)
    return std::nullopt;
  unsigned N;
  if (V->trim().getAsInteger(10, N) || N > 1024)
    return badEnv("DTLTO_LOCAL_JOBS", *V, "a number of jobs (0 to 1024)");
  return std::optional<unsigned>(N);
}

Expected<double> dtlto::hedgeFactor() {
  StringRef V;
  std::string What;
  if (HedgeOpt.getNumOccurrences()) {
    V = HedgeOpt;
    What = "-mllvm -dtlto-hedge";
  } else if (std::optional<StringRef> E = env("DTLTO_HEDGE")) {
    V = *E;
    What = "the environment variable DTLTO_HEDGE";
  } else {
    return 3.0;
  }
  double F;
  if (V.trim().getAsDouble(F) || !(F == 0 || (F >= 1 && F <= 1000)))
    return createStringError(inconvertibleErrorCode(),
                             What + "='" + V +
                                 "' is not 0 (never) or a factor from 1 to "
                                 "1000");
  return F;
}

bool dtlto::isEngineOption(StringRef MllvmArg) {
  StringRef Value;
  return MllvmArg.ltrim('-').starts_with("dtlto-") ||
         !parseDistributionOption(MllvmArg, Value).empty();
}
