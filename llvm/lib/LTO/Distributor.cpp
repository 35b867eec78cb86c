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
#include "dtlto/Events.h"
#include "dtlto/PluginHost.h"
#include "dtlto/Signals.h"
#include "dtlto/WriteAll.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <dlfcn.h>
#include <fcntl.h>
#include <mutex>
#include <optional>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <thread>
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
// The process group of the running distributor (its pid), 0 when none runs,
// Spawning while one is being started. The thread starting it has the stop
// signals blocked meanwhile; a handler on another thread waits until the
// start is over and the group is known (posix_spawn returns once the child
// has exec'd or failed), so no signal is lost and none stops a group half
// recorded.
static constexpr pid_t Spawning = -1;
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
  while (RunningGroup.load() == Spawning)
    sleepMilliseconds(1);
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

// The linker's environment, without our preload library in LD_PRELOAD: it
// is for the linker, and would load libLLVM into the distributor and into
// every job it starts.
static std::vector<std::string> distributorEnvironment() {
  Dl_info Self;
  SmallString<256> Ours;
  if (dladdr(reinterpret_cast<void *>(&findDistributor), &Self) &&
      Self.dli_fname)
    sys::fs::real_path(Self.dli_fname, Ours);
  std::vector<std::string> Env;
  for (char **E = environ; *E; ++E) {
    StringRef Var(*E);
    // Channels of a link further up (this link runs inside a job) are not
    // this distributor's.
    if (Var.starts_with("DTLTO_EVENTS_FD=") ||
        Var.starts_with("DTLTO_JOBS_FD="))
      continue;
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

bool speaksStreamProtocol(StringRef Program, ArrayRef<std::string> Args) {
  auto HasMarker = [](StringRef Path) {
    ErrorOr<std::unique_ptr<MemoryBuffer>> Head =
        MemoryBuffer::getFileSlice(Path, 4096, 0, /*IsVolatile=*/false);
    if (!Head) // shorter than 4 KiB
      Head = MemoryBuffer::getFile(Path, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
    return Head && (*Head)->getBuffer().contains("dtlto-stream-protocol: 1");
  };
  if (std::optional<StringRef> Script = script(Args))
    if (HasMarker(*Script))
      return true;
  return HasMarker(Program);
}

// A pipe (or socket pair) end the child gets without FD_CLOEXEC: in the
// child, dup2 puts a copy over Slot, a descriptor number of our own that is
// open (so no other file can have it) and close-on-exec (so that, in the
// engine, it goes with the next exec of anything else). The variable tells
// the child the number.
struct ChildEnd {
  int Slot = -1;
  std::string EnvVar;
};

static Expected<ChildEnd> childEnd(int Fd, StringRef Var) {
  ChildEnd C;
  C.Slot = fcntl(Fd, F_DUPFD_CLOEXEC, 3);
  if (C.Slot < 0)
    return createStringError(std::error_code(errno, std::generic_category()),
                             "cannot open the DTLTO distributor's channels");
  C.EnvVar = (Var + "=" + Twine(C.Slot)).str();
  return C;
}

/// A line of the job channel not written yet (or what makes it), the bytes
/// after it, and those of them that go with it once written.
struct Outgoing {
  std::string Line;
  std::vector<StringRef> Body;
  SmallString<0> Owned;
  DistributorProcess::LineMaker MakeLine;
  std::shared_ptr<const void> Keep; // keeps Body's memory
};

/// A message's line, made now for a frame (from the engine's job).
static void makeLine(Outgoing &Msg) {
  if (Msg.MakeLine)
    Msg.Line = Msg.MakeLine(Msg.Body) + '\n';
}

/// What a host in the linker holds of a frame it reads in place: the
/// frame's own memory and what keeps the engine's.
struct HeldFrame {
  SmallString<0> Owned;
  std::shared_ptr<const void> Keep;
};

namespace {
/// The channels of a plugin host on a thread of the linker (PluginHost.h).
/// A message's line is made from the engine's job: the host's thread makes
/// it while it is counted in InUse, and close() waits for that, as it does
/// for an event being handed over. A frame's inputs go to the host in
/// place, with what keeps them (HostMailbox::InPlace). After close() the
/// host reaches nothing of the engine's but those, so a host left behind
/// in a plugin's call cannot reach an engine that has gone.
class InLinkerMailbox final : public HostMailbox {
public:
  explicit InLinkerMailbox(DistributorProcess::EventFn OnEvent)
      : OnEvent(std::move(OnEvent)) {}

  void post(Outgoing Msg) {
    std::lock_guard<std::mutex> Lock(Mu);
    if (Closed)
      return;
    Queue.push_back(std::move(Msg));
    if (HostWantsBytes)
      HostWait.notify_one();
  }

  void close() {
    std::unique_lock<std::mutex> Lock(Mu);
    Closed = true;
    Queue.clear();
    HostWait.notify_one();
    Drained.wait(Lock, [&] { return InUse == 0; });
  }

  Got wait(std::string *Out, InPlace *Frame, bool WakeOnFinal) override {
    Outgoing Msg;
    {
      std::unique_lock<std::mutex> Lock(Mu);
      // Only what the host waits for wakes it: a job that becomes final
      // while it waits for the next message is freed with that message.
      HostWantsBytes = Out;
      HostWantsWakes = WakeOnFinal;
      HostWait.wait(Lock, [&] {
        return Closed || (Out && !Queue.empty()) ||
               (WakeOnFinal && Wakes != SeenWakes);
      });
      HostWantsBytes = HostWantsWakes = false;
      if (Closed)
        return Got::Closed;
      // The host frees every final job after this returns.
      SeenWakes = Wakes;
      if (!Out || Queue.empty())
        return Got::Woken;
      // One message at a time: the host's buffer then holds one frame, not
      // every frame queued while it was busy.
      Msg = std::move(Queue.front());
      Queue.pop_front();
      ++InUse;
    }
    makeLine(Msg);
    release();
    Out->append(Msg.Line);
    *Frame = InPlace();
    if (!Msg.Body.empty()) {
      Frame->Parts = std::move(Msg.Body);
      Frame->Keep = std::make_shared<HeldFrame>(
          HeldFrame{std::move(Msg.Owned), std::move(Msg.Keep)});
    }
    return Got::Bytes;
  }

  void wake() override {
    std::lock_guard<std::mutex> Lock(Mu);
    ++Wakes;
    if (HostWantsWakes)
      HostWait.notify_one();
  }

  void event(StringRef Line, StringRef Payload) override {
    {
      std::lock_guard<std::mutex> Lock(Mu);
      if (Closed)
        return;
      ++InUse;
    }
    {
      std::lock_guard<std::mutex> One(EventMu);
      OnEvent(Line.rtrim('\n'), Payload);
    }
    release();
  }

private:
  void release() {
    std::lock_guard<std::mutex> Lock(Mu);
    if (--InUse == 0 && Closed)
      Drained.notify_all();
  }

  DistributorProcess::EventFn OnEvent;
  std::mutex Mu;
  std::condition_variable HostWait, Drained;
  std::deque<Outgoing> Queue;
  bool Closed = false;
  bool HostWantsBytes = false, HostWantsWakes = false; // what it waits for
  unsigned InUse = 0; // lines being made, events being handed over
  uint64_t Wakes = 0, SeenWakes = 0;
  std::mutex EventMu; // one event at a time, as from a reader thread
};
} // namespace

struct DistributorProcess::Impl {
  std::string Program, Name, ManifestPath;
  bool Payloads = false;
  pid_t Pid = 0;
  EventFn OnEvent;
  ExitFn OnExit;

  int EventRead = -1;     // the engine's end of the event pipe
  int JobWrite = -1;      // the engine's end of the job socket pair
  int Wake[2] = {-1, -1}; // tells the event reader to stop

  mutable std::mutex Mu;
  std::condition_variable Changed;
  void queue(Outgoing Msg);
  std::deque<Outgoing> Outbox;
  bool OutboxClosed = false;
  bool Stopping = false;
  bool Exited = false;
  bool ReaderDone = false; // the event reader has returned
  int Status = 0;
  bool StatusKnown = false;

  std::thread Reader, Writer, Waiter;

  /// In the linker (startInProcess): the thread that runs the distributor
  /// is detached and shares this with us, so that one stuck in a plugin's
  /// call can be left behind.
  struct Runner {
    std::mutex Mu;
    std::condition_variable Changed;
    bool Finished = false, Abandoned = false;
    int Code = 0;
  };
  std::shared_ptr<Runner> InProcess;
  /// Its channels (the runner holds them too).
  std::shared_ptr<InLinkerMailbox> Mailbox;

  void readEvents();
  void readEventLines();
  void writeJobs();
  void waitForExit();
  void exited(bool Known, int Status);
  void tellExit(bool Drain);
  void startThreads(bool Streaming);
};

// Lines of the event channel, as they come; a line longer than the limit
// is cut (the parser then says it is no JSON). With Payloads, the bytes a
// line announces are read with it.
void DistributorProcess::Impl::readEvents() {
  readEventLines();
  {
    std::lock_guard<std::mutex> Lock(Mu);
    ReaderDone = true;
  }
  Changed.notify_all();
}

void DistributorProcess::Impl::readEventLines() {
  std::string Pending;
  size_t Start = 0; // where the next line begins in Pending
  char Buf[65536];
  auto TakeLines = [&] {
    for (;;) {
      size_t NL = Pending.find('\n', Start);
      if (NL == std::string::npos)
        break;
      StringRef Line = StringRef(Pending).slice(Start, NL);
      uint64_t Bytes = Payloads ? payloadBytes(Line) : 0;
      if (Pending.size() - (NL + 1) < Bytes)
        break; // the rest of its bytes are still on the way
      OnEvent(Line, StringRef(Pending).substr(NL + 1, Bytes));
      Start = NL + 1 + Bytes;
    }
    Pending.erase(0, Start);
    Start = 0;
  };
  for (;;) {
    struct pollfd P[2] = {{EventRead, POLLIN, 0}, {Wake[0], POLLIN, 0}};
    if (poll(P, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      return;
    }
    if (P[1].revents)
      return;
    ssize_t N = read(EventRead, Buf, sizeof(Buf));
    if (N < 0 && errno == EINTR)
      continue;
    if (N <= 0)
      break;
    Pending.append(Buf, N);
    TakeLines();
    // No newline in a megabyte: not ours (payloads are not lines).
    if (!Payloads && Pending.size() > (1 << 20))
      Pending.clear();
  }
  // A last line without its newline; a payload cut short is dropped.
  if (!Pending.empty() && Pending.find('\n') == std::string::npos)
    OnEvent(Pending, "");
}

// The job channel is a socket pair, not a pipe: a write after the
// distributor is gone is an error (MSG_NOSIGNAL), not a SIGPIPE that would
// kill the linker. A job's bitcode goes from the engine's buffers to the
// socket: a plugin's frames are not copied on the way (a CPython link hands
// over hundreds of MB).
void DistributorProcess::Impl::writeJobs() {
  for (;;) {
    Outgoing Msg;
    {
      std::unique_lock<std::mutex> Lock(Mu);
      Changed.wait(Lock, [&] { return !Outbox.empty() || OutboxClosed; });
      if (Outbox.empty())
        break;
      Msg = std::move(Outbox.front());
      Outbox.pop_front();
    }
    makeLine(Msg);
    std::vector<iovec> Iov;
    auto Part = [&](StringRef Bytes) {
      if (!Bytes.empty())
        Iov.push_back({const_cast<char *>(Bytes.data()), Bytes.size()});
    };
    Part(Msg.Line);
    for (StringRef Bytes : Msg.Body)
      Part(Bytes);
    if (!Msg.Body.empty())
      Part("\n"); // a frame ends with a newline after its bytes
    if (!writeAll(JobWrite, Iov, /*Socket=*/true)) {
      // The distributor closed its end: it takes no more jobs.
      std::lock_guard<std::mutex> Lock(Mu);
      Outbox.clear();
      OutboxClosed = true;
    }
  }
  ::shutdown(JobWrite, SHUT_WR);
}

void DistributorProcess::Impl::exited(bool Known, int St) {
  {
    std::lock_guard<std::mutex> Lock(Mu);
    Exited = true;
    StatusKnown = Known;
    Status = St;
  }
  Changed.notify_all();
}

// With payloads an object exists only on the channel: what the distributor
// wrote before it ended is read before OnExit is told. Its writers are gone
// by then, so the channel ends soon; the limit is for a writer that
// outlives it (a process that left the group with the pipe open).
void DistributorProcess::Impl::tellExit(bool Drain) {
  if (Drain) {
    std::unique_lock<std::mutex> Lock(Mu);
    Changed.wait_for(Lock, std::chrono::seconds(10),
                     [&] { return ReaderDone; });
  }
  OnExit();
}

void DistributorProcess::Impl::waitForExit() {
  if (InProcess) {
    std::unique_lock<std::mutex> Lock(InProcess->Mu);
    InProcess->Changed.wait(
        Lock, [&] { return InProcess->Finished || InProcess->Abandoned; });
    bool Finished = InProcess->Finished;
    int Code = InProcess->Code;
    Lock.unlock();
    // Every event was handed over by a call before the runner finished:
    // there is nothing to drain.
    exited(Finished, (Code & 0xff) << 8 /* as waitpid tells an exit code */);
    tellExit(/*Drain=*/false);
    return;
  }
  int St = 0;
  pid_t R;
  do
    R = waitpid(Pid, &St, 0);
  while (R < 0 && errno == EINTR);
  RunningGroup.store(0);
  exited(R == Pid, St);
  // The distributor must not leave jobs behind that could still write into
  // the output directory once we have cleaned it.
  kill(-Pid, SIGKILL);
  tellExit(Payloads);
}

void DistributorProcess::Impl::startThreads(bool Streaming) {
  if (Mailbox) {
    Waiter = std::thread([this] { waitForExit(); });
    return;
  }
  Reader = std::thread([this] { readEvents(); });
  if (Streaming)
    Writer = std::thread([this] { writeJobs(); });
  Waiter = std::thread([this] { waitForExit(); });
}

DistributorProcess::DistributorProcess(std::unique_ptr<Impl> I)
    : I(std::move(I)) {}

Expected<std::unique_ptr<DistributorProcess>>
DistributorProcess::start(StringRef Program, ArrayRef<std::string> Args,
                          StringRef ManifestPath, bool Streaming, bool Payloads,
                          EventFn OnEvent, ExitFn OnExit) {
  auto I = std::make_unique<Impl>();
  I->Payloads = Payloads;
  I->Program = Program.str();
  I->Name = distributorName(Program, Args);
  I->ManifestPath = ManifestPath.str();
  I->OnEvent = std::move(OnEvent);
  I->OnExit = std::move(OnExit);
  auto Fail = [&](const Twine &What) {
    return createStringError(std::error_code(errno, std::generic_category()),
                             "cannot start the DTLTO distributor '" + Program +
                                 "': " + What + ": " + std::strerror(errno));
  };

  // Descriptors the child keeps, closed in the engine once it runs.
  std::vector<int> ChildOnly;
  auto CloseChildOnly = [&] {
    for (int Fd : ChildOnly)
      close(Fd);
    ChildOnly.clear();
  };
  std::vector<ChildEnd> Ends;
  int EventPipe[2];
  if (pipe2(EventPipe, O_CLOEXEC))
    return Fail("cannot make the event channel");
  I->EventRead = EventPipe[0];
  ChildOnly.push_back(EventPipe[1]);
  Expected<ChildEnd> EventEnd = childEnd(EventPipe[1], "DTLTO_EVENTS_FD");
  if (!EventEnd) {
    CloseChildOnly();
    return EventEnd.takeError();
  }
  Ends.push_back(*EventEnd);
  if (Streaming) {
    int Pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, Pair)) {
      CloseChildOnly();
      for (const ChildEnd &E : Ends)
        close(E.Slot);
      return Fail("cannot make the job channel");
    }
    I->JobWrite = Pair[0];
    ChildOnly.push_back(Pair[1]);
    Expected<ChildEnd> JobEnd = childEnd(Pair[1], "DTLTO_JOBS_FD");
    if (!JobEnd) {
      CloseChildOnly();
      return JobEnd.takeError();
    }
    Ends.push_back(*JobEnd);
  }
  if (pipe2(I->Wake, O_CLOEXEC))
    return Fail("cannot make a pipe");

  std::string ProgramStr(Program);
  std::vector<std::string> Argv;
  Argv.push_back(ProgramStr);
  Argv.insert(Argv.end(), Args.begin(), Args.end());
  if (!ManifestPath.empty())
    Argv.push_back(std::string(ManifestPath));
  std::vector<char *> CArgv;
  for (std::string &A : Argv)
    CArgv.push_back(A.data());
  CArgv.push_back(nullptr);
  std::vector<std::string> Env = distributorEnvironment();
  for (const ChildEnd &E : Ends)
    Env.push_back(E.EnvVar);
  std::vector<char *> CEnv;
  for (std::string &E : Env)
    CEnv.push_back(E.data());
  CEnv.push_back(nullptr);

  posix_spawn_file_actions_t Actions;
  posix_spawn_file_actions_init(&Actions);
  for (size_t K = 0; K < Ends.size(); ++K)
    posix_spawn_file_actions_adddup2(&Actions, ChildOnly[K], Ends[K].Slot);

  // Stop signals wait until RunningGroup names the new process group; the
  // distributor itself starts with none blocked.
  sigset_t StopSet, OldMask, NoSignals;
  sigemptyset(&StopSet);
  sigemptyset(&NoSignals);
  for (int Sig : StopSignals)
    sigaddset(&StopSet, Sig);
  posix_spawnattr_t Attr;
  posix_spawnattr_init(&Attr);
  posix_spawnattr_setflags(&Attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&Attr, 0);
  posix_spawnattr_setsigmask(&Attr, &NoSignals);

  pthread_sigmask(SIG_BLOCK, &StopSet, &OldMask);
  RunningGroup.store(Spawning);
  int SpawnErr = posix_spawn(&I->Pid, ProgramStr.c_str(), &Actions, &Attr,
                             CArgv.data(), CEnv.data());
  // At once: a handler waiting meanwhile may have interrupted a thread that
  // holds a lock the calls below need (free() takes malloc's).
  RunningGroup.store(SpawnErr ? 0 : I->Pid);
  posix_spawnattr_destroy(&Attr);
  posix_spawn_file_actions_destroy(&Actions);
  pthread_sigmask(SIG_SETMASK, &OldMask, nullptr);
  CloseChildOnly();
  for (const ChildEnd &E : Ends)
    close(E.Slot);
  if (SpawnErr) {
    for (int Fd : {I->EventRead, I->JobWrite, I->Wake[0], I->Wake[1]})
      if (Fd >= 0)
        close(Fd);
    return createStringError(std::error_code(SpawnErr, std::generic_category()),
                             "cannot run the DTLTO distributor '" + Program +
                                 "': " + std::strerror(SpawnErr));
  }
  I->startThreads(Streaming);
  return std::unique_ptr<DistributorProcess>(
      new DistributorProcess(std::move(I)));
}

// While a distributor runs in the linker, a crash is most likely its: LLVM's
// crash handler prints its stack trace, then this line says whose it is.
// Async-signal-safe: the note is written once, before any run.
static char InProcessNote[1024];
static std::atomic<int> InProcessRuns{0};

static void noteInProcessCrash(void *) {
  if (InProcessRuns.load() > 0)
    (void)!write(2, InProcessNote, strlen(InProcessNote));
}

// A plugin in the linker that calls exit() would end the link with its
// status, 0 included, and no output: a build that goes on as if it had
// linked. While the engine waits on a plugin in the linker, an exit is
// that, so it becomes a failure. (_exit, which runs no handler, cannot be
// caught: docs/plugins.md says so.)
static char InPluginExitNote[1024];
static std::atomic<int> LinksWaitingOnPlugin{0};

static void exitWhileInPlugin() {
  if (LinksWaitingOnPlugin.load() > 0) {
    (void)!write(2, InPluginExitNote, strlen(InPluginExitNote));
    _exit(1);
  }
}

// The crash note and the exit guard of a plugin in the linker, set up once.
static void registerInProcessNotes(StringRef Name) {
  static std::once_flag Once;
  std::call_once(Once, [&] {
    snprintf(InProcessNote, sizeof(InProcessNote),
             "dtlto: the linker crashed while %.*s ran inside it "
             "(-dtlto-plugin-in-process); with -dtlto-plugin-in-process=0 "
             "it runs in dtlto-plugin-host, and a crash there costs time, "
             "not the link\n",
             int(std::min<size_t>(Name.size(), 800)), Name.data());
    snprintf(InPluginExitNote, sizeof(InPluginExitNote),
             "dtlto: error: %.*s called exit() inside the linker "
             "(-dtlto-plugin-in-process) before the link was done; the link "
             "failed and wrote no output (with -dtlto-plugin-in-process=0 "
             "the plugin runs in dtlto-plugin-host, whose exit costs time, "
             "not the link)\n",
             int(std::min<size_t>(Name.size(), 800)), Name.data());
    sys::AddSignalHandler(noteInProcessCrash, nullptr);
    std::atexit(exitWhileInPlugin);
  });
}

Expected<std::unique_ptr<DistributorProcess>>
DistributorProcess::startInProcess(StringRef Name, InProcessFn Run,
                                   EventFn OnEvent, ExitFn OnExit) {
  auto I = std::make_unique<Impl>();
  I->Program = I->Name = Name.str();
  I->OnExit = std::move(OnExit);
  I->InProcess = std::make_shared<Impl::Runner>();
  I->Mailbox = std::make_shared<InLinkerMailbox>(std::move(OnEvent));
  registerInProcessNotes(Name);
  ++InProcessRuns;
  ++LinksWaitingOnPlugin;
  // SIGPIPE is blocked on the runner and on the threads the plugin starts
  // from it: a write to a worker that has gone fails there, and does not
  // kill the linker.
  std::thread([R = I->InProcess, Run = std::move(Run), M = I->Mailbox] {
    sigset_t Pipe;
    sigemptyset(&Pipe);
    sigaddset(&Pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &Pipe, nullptr);
    int Code = Run(*M);
    --InProcessRuns;
    {
      std::lock_guard<std::mutex> Lock(R->Mu);
      R->Finished = true;
      R->Code = Code;
    }
    R->Changed.notify_all();
  }).detach();
  I->startThreads(/*Streaming=*/true);
  return std::unique_ptr<DistributorProcess>(
      new DistributorProcess(std::move(I)));
}

void DistributorProcess::Impl::queue(Outgoing Msg) {
  if (Mailbox)
    return Mailbox->post(std::move(Msg));
  {
    std::lock_guard<std::mutex> Lock(Mu);
    if (OutboxClosed)
      return;
    Outbox.push_back(std::move(Msg));
  }
  Changed.notify_all();
}

void DistributorProcess::send(std::string Line) {
  I->queue({std::move(Line) + '\n', {}, {}, {}, {}});
}

void DistributorProcess::sendFrame(LineMaker MakeLine,
                                   std::vector<StringRef> Body,
                                   SmallString<0> Owned,
                                   std::shared_ptr<const void> Keep) {
  I->queue({{}, std::move(Body), std::move(Owned), std::move(MakeLine),
            std::move(Keep)});
}

bool DistributorProcess::exited() const {
  std::lock_guard<std::mutex> Lock(I->Mu);
  return I->Exited;
}

void DistributorProcess::stop() {
  std::unique_lock<std::mutex> Lock(I->Mu);
  if (I->Exited)
    return;
  I->Stopping = true;
  if (I->InProcess) {
    // No process to signal: the closed mailbox asks the runner to stop
    // (the plugin host closes the plugin then). One that does not, stuck in
    // the plugin, is left behind.
    Lock.unlock();
    I->Mailbox->close();
    Lock.lock();
    if (!I->Changed.wait_for(Lock, std::chrono::seconds(3),
                             [&] { return I->Exited; })) {
      {
        std::lock_guard<std::mutex> RLock(I->InProcess->Mu);
        I->InProcess->Abandoned = true;
      }
      I->InProcess->Changed.notify_all();
    }
    I->Changed.wait(Lock, [&] { return I->Exited; });
    return;
  }
  kill(-I->Pid, SIGTERM);
  if (!I->Changed.wait_for(Lock, std::chrono::seconds(3),
                           [&] { return I->Exited; }))
    kill(-I->Pid, SIGKILL);
  I->Changed.wait(Lock, [&] { return I->Exited; });
}

Error DistributorProcess::exitStatus() {
  std::lock_guard<std::mutex> Lock(I->Mu);
  if (!I->StatusKnown)
    return createStringError(inconvertibleErrorCode(),
                             "lost track of the DTLTO distributor '" +
                                 I->Program + "'");
  int Status = I->Status;
  if (WIFEXITED(Status) && WEXITSTATUS(Status) == 0)
    return Error::success();
  std::string OfWhat = I->ManifestPath.empty()
                           ? std::string("running its jobs")
                           : "running the jobs of '" + I->ManifestPath + "'";
  if (WIFEXITED(Status))
    return createStringError(inconvertibleErrorCode(),
                             "the DTLTO distributor '" + I->Name +
                                 "' failed with exit code " +
                                 Twine(WEXITSTATUS(Status)) + " " + OfWhat +
                                 "; its own messages above say why");
  // A process killed by a signal had no chance to say anything.
  return createStringError(
      inconvertibleErrorCode(),
      "the DTLTO distributor '" + I->Name + "' was killed by signal " +
          Twine(WTERMSIG(Status)) + " (" + strsignal(WTERMSIG(Status)) + ") " +
          OfWhat + " (out of memory, or stopped from outside?)");
}

std::optional<int> DistributorProcess::exitCode() {
  std::lock_guard<std::mutex> Lock(I->Mu);
  if (!I->StatusKnown || !WIFEXITED(I->Status))
    return std::nullopt;
  return WEXITSTATUS(I->Status);
}

std::optional<int> DistributorProcess::exitSignal() {
  std::lock_guard<std::mutex> Lock(I->Mu);
  if (!I->StatusKnown || !WIFSIGNALED(I->Status))
    return std::nullopt;
  return WTERMSIG(I->Status);
}

DistributorProcess::~DistributorProcess() {
  stop();
  I->Waiter.join();
  if (I->InProcess) {
    --LinksWaitingOnPlugin; // what it does from now on is not the link's
    I->Mailbox->close();    // and it reaches nothing of the engine's
    return;
  }
  if (I->Writer.joinable()) {
    {
      std::lock_guard<std::mutex> Lock(I->Mu);
      I->OutboxClosed = true;
    }
    I->Changed.notify_all();
    ::shutdown(I->JobWrite, SHUT_RDWR); // a writer blocked in send() returns
    I->Writer.join();
  }
  // The event pipe's other ends may live on in processes that left the
  // group; the reader stops when told.
  char C = 0;
  (void)!write(I->Wake[1], &C, 1);
  I->Reader.join();
  for (int Fd : {I->EventRead, I->JobWrite, I->Wake[0], I->Wake[1]})
    if (Fd >= 0)
      close(Fd);
}

} // namespace dtlto
