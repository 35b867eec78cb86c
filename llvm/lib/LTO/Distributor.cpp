//===- Distributor.cpp - Running the distributor process ------------------===//
//
// The distributor runs in a process group of its own, so that the engine can
// stop it and everything it started in one go. LLVM's sys::ExecuteAndWait
// cannot create process groups, hence posix_spawn here.
//
// Why stop it at all: when the linker is interrupted (Ctrl-C, SIGTERM,
// SIGHUP), LLVM's signal handler removes the temporary files. A distributor
// still running would write objects after that and leave them behind. So,
// while a distributor runs, our handler first stops its process group and
// waits for it, then hands the signal on to the handler it replaced (LLVM's,
// which removes the files and re-raises the signal).
//
//===----------------------------------------------------------------------===//

#include "dtlto/Distributor.h"
#include "dtlto/Signals.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include <algorithm>
#include "llvm/Support/Signals.h"
#include <atomic>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <optional>
#include <dlfcn.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <vector>

extern char **environ;

using namespace llvm;

namespace dtlto {

static const char *const OptionHint =
    " (set by --thinlto-distributor=, /thinlto-distributor: for lld-link, or "
    "clang's -fthinlto-distributor=)";

Expected<std::string> findDistributor(StringRef Distributor) {
  if (Distributor.empty())
    return createStringError(inconvertibleErrorCode(),
                             Twine("the DTLTO distributor is empty") +
                                 OptionHint);
  std::string Path(Distributor);
  if (!sys::path::has_parent_path(Distributor)) {
    ErrorOr<std::string> Found = sys::findProgramByName(Distributor);
    if (!Found)
      return createStringError(Found.getError(),
                               "cannot find the DTLTO distributor '" +
                                   Distributor + "' in PATH" + OptionHint);
    Path = *Found;
  }
  if (!sys::fs::exists(Path))
    return createStringError(
        std::make_error_code(std::errc::no_such_file_or_directory),
        "the DTLTO distributor '" + Path + "' does not exist" + OptionHint);
  if (sys::fs::is_directory(Path) || !sys::fs::can_execute(Path))
    return createStringError(
        std::make_error_code(std::errc::permission_denied),
        "the DTLTO distributor '" + Path +
            "' is not an executable file; check its permissions (chmod +x)" +
            OptionHint);
  return Path;
}

//===----------------------------------------------------------------------===//
// Stopping the distributor when the linker is interrupted.
//===----------------------------------------------------------------------===//

static const int StopSignals[] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction SavedActions[std::size(StopSignals)];
// The process group of the running distributor (its pid), 0 when none runs.
static std::atomic<pid_t> RunningGroup{0};

static void sleepMilliseconds(long Ms) {
  struct timespec T = {Ms / 1000, (Ms % 1000) * 1000000};
  while (nanosleep(&T, &T) != 0 && errno == EINTR) {
  }
}

// Asks the group to stop with Sig, gives it a few seconds to clean up, then
// kills what is left. Async-signal-safe.
static void stopGroup(pid_t Group, int Sig) {
  kill(-Group, Sig);
  for (int I = 0; I < 300; ++I) {
    pid_t R = waitpid(Group, nullptr, WNOHANG);
    if (R == Group || (R < 0 && errno == ECHILD))
      break;
    sleepMilliseconds(10);
  }
  kill(-Group, SIGKILL);
  waitpid(Group, nullptr, WNOHANG);
}

static void onStopSignal(int Sig, siginfo_t *Info, void *Context) {
  int SavedErrno = errno;
  pid_t Group = RunningGroup.exchange(0);
  if (Group > 0)
    stopGroup(Group, Sig == SIGHUP ? SIGTERM : Sig);
  errno = SavedErrno;

  size_t I = 0;
  while (StopSignals[I] != Sig)
    ++I;
  passSignalOn(SavedActions[I], Sig, Info, Context);
}

SignalGuard::SignalGuard() {
  // The handlers that remove the temporary files (LLVM's, and ours over
  // them) go in first: ours here go on top and hand signals on to them
  // once the distributor is stopped, and they cannot later be installed
  // over ours.
  installTempFileHandlers();

  struct sigaction Stop, Ignore;
  std::memset(&Stop, 0, sizeof(Stop));
  Stop.sa_sigaction = onStopSignal;
  Stop.sa_flags = SA_SIGINFO;
  sigemptyset(&Stop.sa_mask);
  std::memset(&Ignore, 0, sizeof(Ignore));
  Ignore.sa_handler = SIG_IGN;
  sigemptyset(&Ignore.sa_mask);
  // A signal the user had ignored stays ignored: LLVM's handler would
  // otherwise remove the temporary files and let the link go on without them.
  for (size_t I = 0; I < std::size(StopSignals); ++I)
    sigaction(StopSignals[I], startedIgnored(StopSignals[I]) ? &Ignore : &Stop,
              &SavedActions[I]);
}

SignalGuard::~SignalGuard() {
  RunningGroup.store(0);
  for (size_t I = 0; I < std::size(StopSignals); ++I)
    sigaction(StopSignals[I], &SavedActions[I], nullptr);
}

//===----------------------------------------------------------------------===//
// Running it.
//===----------------------------------------------------------------------===//

// Waits for the distributor; returns its pid once it has exited, 0 when the
// deadline passed first (TimeoutSeconds == 0: no deadline), -1 on error.
static pid_t waitForExit(pid_t Pid, int &Status, unsigned TimeoutSeconds) {
  if (TimeoutSeconds == 0) {
    pid_t R;
    do
      R = waitpid(Pid, &Status, 0);
    while (R < 0 && errno == EINTR);
    return R;
  }
  auto Deadline = std::chrono::steady_clock::now() +
                  std::chrono::seconds(TimeoutSeconds);
  long PollMs = 1;
  for (;;) {
    pid_t R = waitpid(Pid, &Status, WNOHANG);
    if (R != 0 && !(R < 0 && errno == EINTR))
      return R;
    if (std::chrono::steady_clock::now() >= Deadline)
      return 0;
    sleepMilliseconds(PollMs);
    PollMs = std::min(PollMs * 2, 50L);
  }
}

// The linker's environment, without our preload library in LD_PRELOAD: it
// is for the linker, and would load libLLVM into the distributor and into
// every job it starts.
static std::vector<std::string> distributorEnvironment() {
  Dl_info Self;
  SmallString<256> Ours;
  if (dladdr(reinterpret_cast<void *>(&runDistributor), &Self) &&
      Self.dli_fname)
    sys::fs::real_path(Self.dli_fname, Ours);
  std::vector<std::string> Env;
  for (char **E = environ; *E; ++E) {
    StringRef Var(*E);
    if (!Var.consume_front("LD_PRELOAD=") || Ours.empty()) {
      Env.push_back(*E);
      continue;
    }
    SmallVector<StringRef, 4> Libs;
    Var.split(Libs, ':', -1, /*KeepEmpty=*/false);
    std::string Kept;
    for (StringRef Lib : Libs) {
      SmallString<256> Real;
      if (!sys::fs::real_path(Lib, Real) && Real == Ours)
        continue;
      Kept += (Kept.empty() ? "" : ":") + Lib.str();
    }
    if (!Kept.empty())
      Env.push_back("LD_PRELOAD=" + Kept);
  }
  return Env;
}

// An interpreter named as the distributor runs the script that is its first
// argument: the script is what users know it by.
static std::optional<StringRef> script(ArrayRef<std::string> Args) {
  if (Args.empty() || StringRef(Args[0]).starts_with("-") ||
      !sys::fs::is_regular_file(Args[0]))
    return std::nullopt;
  return StringRef(Args[0]);
}

std::string distributorName(StringRef Program, ArrayRef<std::string> Args) {
  if (std::optional<StringRef> Script = script(Args))
    return (Program + " " + *Script).str();
  return Program.str();
}

std::string distributorShortName(StringRef Program,
                                 ArrayRef<std::string> Args) {
  std::string Name = sys::path::filename(Program).str();
  if (std::optional<StringRef> Script = script(Args))
    Name += " " + sys::path::filename(*Script).str();
  return Name;
}

Error runDistributor(StringRef Program, ArrayRef<std::string> Args,
                     StringRef ManifestPath, unsigned TimeoutSeconds) {
  std::string ProgramStr(Program);
  std::vector<std::string> Argv;
  Argv.push_back(ProgramStr);
  Argv.insert(Argv.end(), Args.begin(), Args.end());
  Argv.push_back(std::string(ManifestPath));
  std::vector<char *> CArgv;
  for (std::string &A : Argv)
    CArgv.push_back(A.data());
  CArgv.push_back(nullptr);
  std::vector<std::string> Env = distributorEnvironment();
  std::vector<char *> CEnv;
  for (std::string &E : Env)
    CEnv.push_back(E.data());
  CEnv.push_back(nullptr);

  // Stop signals wait until RunningGroup names the new process group; the
  // distributor itself starts with none blocked.
  sigset_t StopSet, OldMask, NoSignals;
  sigemptyset(&StopSet);
  sigemptyset(&NoSignals);
  for (int Sig : StopSignals)
    sigaddset(&StopSet, Sig);
  posix_spawnattr_t Attr;
  posix_spawnattr_init(&Attr);
  posix_spawnattr_setflags(&Attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&Attr, 0);
  posix_spawnattr_setsigmask(&Attr, &NoSignals);

  pthread_sigmask(SIG_BLOCK, &StopSet, &OldMask);
  pid_t Pid = 0;
  int SpawnErr = posix_spawn(&Pid, ProgramStr.c_str(), nullptr, &Attr,
                             CArgv.data(), CEnv.data());
  posix_spawnattr_destroy(&Attr);
  if (!SpawnErr)
    RunningGroup.store(Pid);
  pthread_sigmask(SIG_SETMASK, &OldMask, nullptr);
  if (SpawnErr)
    return createStringError(std::error_code(SpawnErr, std::generic_category()),
                             "cannot run the DTLTO distributor '" + Program +
                                 "': " + std::strerror(SpawnErr));

  int Status = 0;
  pid_t R = waitForExit(Pid, Status, TimeoutSeconds);
  RunningGroup.store(0);
  if (R == 0) {
    stopGroup(Pid, SIGTERM);
    return createStringError(
        std::make_error_code(std::errc::timed_out),
        "the DTLTO distributor '" + distributorName(Program, Args) +
            "' did not finish within " +
            Twine(TimeoutSeconds) +
            " s (-mllvm -dtlto-distributor-timeout / "
            "DTLTO_DISTRIBUTOR_TIMEOUT) and was stopped");
  }
  // The distributor must not leave jobs behind that could still write into
  // the output directory once we have cleaned it.
  kill(-Pid, SIGKILL);
  if (R < 0)
    return createStringError(std::error_code(errno, std::generic_category()),
                             "lost track of the DTLTO distributor '" +
                                 Program + "'");

  if (WIFEXITED(Status) && WEXITSTATUS(Status) == 0)
    return Error::success();
  std::string Name = distributorName(Program, Args);
  if (WIFEXITED(Status))
    return createStringError(
        inconvertibleErrorCode(),
        "the DTLTO distributor '" + Name + "' failed with exit code " +
            Twine(WEXITSTATUS(Status)) + " running the jobs of '" +
            ManifestPath + "'; its own messages above say why");
  // A process killed by a signal had no chance to say anything.
  return createStringError(
      inconvertibleErrorCode(),
      "the DTLTO distributor '" + Name + "' was killed by signal " +
          Twine(WTERMSIG(Status)) + " (" + strsignal(WTERMSIG(Status)) +
          ") running the jobs of '" + ManifestPath +
          "' (out of memory, or stopped from outside?)");
}

} // namespace dtlto
