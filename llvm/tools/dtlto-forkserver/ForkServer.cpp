//===- ForkServer.cpp - A compiler started once, forked once per job ------===//
//
// libdtlto-forkserver.so, preloaded (LD_PRELOAD) into a compiler such as
// clang by a distributor (utils/dtlto/dtltodist/forkserver.py, the one
// client). Started with DTLTO_FORKSERVER_FD naming a SOCK_SEQPACKET socket,
// the compiler does not run its main: once the dynamic loader has mapped and
// relocated its libraries and their static constructors have run, it waits
// on the socket, and for each job forks a child that runs main with the
// job's arguments. A clang job then skips the part of its start that is the
// same for every job, about half of a small job's CPU here
// (docs/performance.md, "Clang jobs forked from one clang").
//
// Without the variable the library does nothing: the compiler runs as usual.
//
// The protocol, one datagram a message (docs/local-distributor.md, "The
// fork server"):
//   server -> client  "ready"                        once, before any job,
//                     or "refused REASON" and it exits
//   client -> server  "run\0TAG\0CWD\0ARG0\0...ARGn\0" with SCM_RIGHTS of
//                     the job's stdin, stdout and stderr
//   server -> client  "started TAG PID" or "failed TAG REASON"
//   client -> server  "kill PID SIGNO": signal the job's process group,
//                     unless the job has been reaped already (so that a
//                     reused pid is never signalled)
//   server -> client  "exited PID STATUS" (STATUS as waitpid gives it)
// When the client closes its end, the server kills every job's group, reaps
// them and exits. Each job runs in a session of its own and dies with the
// server (PR_SET_PDEATHSIG). Until it says ready, the server's stderr is the
// client's to read (why a compiler failed to become one); from then on it
// is /dev/null, and each job has its own.
//
// Plain POSIX and no LLVM: it runs inside someone else's compiler.
//
//===----------------------------------------------------------------------===//

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using MainFn = int (*)(int, char **, char **);
using StartFn = int (*)(MainFn, int, char **, void (*)(), void (*)(),
                        void (*)(), void *);

MainFn RealMain;
int Sock = -1;
pid_t Server;          // this process, which each job must die with
int ChildSignals = -1; // a signalfd: SIGCHLD, blocked, read from the loop
sigset_t StartMask;    // the mask the compiler was started with, for each job

// A request can carry a long command line; larger ones the client runs
// without us.
constexpr size_t MaxRequest = 1 << 20;
char Request[MaxRequest + 1];
char *Fields[MaxRequest / 2 + 2]; // each at least one byte and its NUL

// The jobs running: more than a machine runs at once.
constexpr int MaxJobs = 4096;
pid_t Jobs[MaxJobs];
int NumJobs;

void forget(int I) { Jobs[I] = Jobs[--NumJobs]; }

void reply(const char *Fmt, ...) {
  char Msg[512];
  va_list Args;
  va_start(Args, Fmt);
  int N = vsnprintf(Msg, sizeof Msg, Fmt, Args);
  va_end(Args);
  if (N > 0)
    send(Sock, Msg, size_t(N) < sizeof Msg ? size_t(N) : sizeof Msg - 1,
         MSG_NOSIGNAL);
}

// The child: becomes the job, as if the compiler had been started for it.
[[noreturn]] void becomeJob(const int *Fds, const char *Cwd, int Argc,
                            char **Argv) {
  setsid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != Server) // it died before the line above
    _exit(127);
  for (int I = 0; I < 3; ++I)
    if (dup2(Fds[I], I) < 0)
      _exit(127);
  for (int I = 0; I < 3; ++I)
    if (Fds[I] > 2)
      close(Fds[I]);
  close(Sock);
  close(ChildSignals);
  signal(SIGCHLD, SIG_DFL);
  sigprocmask(SIG_SETMASK, &StartMask, nullptr);
  if (chdir(Cwd) != 0) {
    dprintf(2, "dtlto fork server: cannot enter %s: %s\n", Cwd,
            strerror(errno));
    _exit(127);
  }
  exit(RealMain(Argc, Argv, environ));
}

void run(size_t Size, const int *Fds) {
  // "run", TAG, CWD, then the arguments, each ending in a NUL.
  int N = 0;
  for (char *P = Request; P < Request + Size; P += strlen(P) + 1)
    Fields[N++] = P;
  Fields[N] = nullptr;
  long Tag = N > 1 ? strtol(Fields[1], nullptr, 10) : -1;
  if (N < 4 || Fds[0] < 0 || Fds[1] < 0 || Fds[2] < 0) {
    reply("failed %ld a request without its command or files", Tag);
    return;
  }
  if (NumJobs == MaxJobs) {
    reply("failed %ld %d jobs running already", Tag, MaxJobs);
    return;
  }
  pid_t Pid = fork();
  if (Pid == 0)
    becomeJob(Fds, Fields[2], N - 3, Fields + 3);
  if (Pid < 0) {
    reply("failed %ld cannot fork: %s", Tag, strerror(errno));
    return;
  }
  Jobs[NumJobs++] = Pid;
  reply("started %ld %d", Tag, int(Pid));
}

void signalJob(const char *Text) {
  long Pid = 0, Signo = 0;
  if (sscanf(Text, "kill %ld %ld", &Pid, &Signo) != 2)
    return;
  for (int I = 0; I < NumJobs; ++I)
    if (Jobs[I] == Pid)
      killpg(Jobs[I], int(Signo));
}

void reap() {
  int Status;
  pid_t Pid;
  while ((Pid = waitpid(-1, &Status, WNOHANG)) > 0) {
    for (int I = 0; I < NumJobs; ++I)
      if (Jobs[I] == Pid) {
        forget(I);
        reply("exited %d %d", int(Pid), Status);
        break;
      }
  }
}

// The client has gone: no job outlives it.
[[noreturn]] void endAll() {
  for (int I = 0; I < NumJobs; ++I)
    killpg(Jobs[I], SIGKILL);
  while (NumJobs > 0) {
    pid_t Pid = waitpid(-1, nullptr, 0);
    if (Pid < 0)
      break;
    for (int I = 0; I < NumJobs; ++I)
      if (Jobs[I] == Pid)
        forget(I);
  }
  _exit(0);
}

// The threads of this process (0 when /proc cannot say).
int countThreads() {
  DIR *Tasks = opendir("/proc/self/task");
  if (!Tasks)
    return 0;
  int N = 0;
  while (dirent *E = readdir(Tasks))
    N += E->d_name[0] != '.';
  closedir(Tasks);
  return N;
}

[[noreturn]] void serve() {
  sigset_t Child;
  sigemptyset(&Child);
  sigaddset(&Child, SIGCHLD);
  sigprocmask(SIG_BLOCK, &Child, &StartMask);
  ChildSignals = signalfd(-1, &Child, SFD_CLOEXEC | SFD_NONBLOCK);
  if (ChildSignals < 0)
    _exit(1);
  // The client asked for this process, and waits for the word; a server
  // that cannot be one never says it (or says why not), and the client runs
  // its jobs without it.
  Server = getpid();
  // A fork copies the calling thread only: threads the compiler started
  // before main (a preloaded library's, say) would be missing from every
  // job, with whatever locks they held held forever.
  int Threads = countThreads();
  if (Threads == 0)
    reply("refused it cannot count its threads (/proc/self/task)");
  else if (Threads > 1)
    reply("refused it runs %d threads before its main, and a fork would "
          "copy one",
          Threads);
  if (Threads != 1)
    _exit(1);
  int Null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (Null < 0)
    _exit(1);
  for (int Fd = 0; Fd < 3; ++Fd)
    dup2(Null, Fd);
  close(Null);
  if (send(Sock, "ready", 5, MSG_NOSIGNAL) != 5)
    _exit(1);
  for (;;) {
    pollfd P[2] = {{Sock, POLLIN, 0}, {ChildSignals, POLLIN, 0}};
    if (poll(P, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      endAll();
    }
    if (P[1].revents) {
      signalfd_siginfo Info;
      while (read(ChildSignals, &Info, sizeof Info) > 0) {
      }
      reap();
    }
    if (!P[0].revents)
      continue;
    char Ctl[CMSG_SPACE(3 * sizeof(int))];
    iovec Io = {Request, MaxRequest};
    msghdr M = {};
    M.msg_iov = &Io;
    M.msg_iovlen = 1;
    M.msg_control = Ctl;
    M.msg_controllen = sizeof Ctl;
    ssize_t N = recvmsg(Sock, &M, MSG_CMSG_CLOEXEC);
    if (N < 0 && errno == EINTR)
      continue;
    if (N <= 0)
      endAll();
    Request[N] = 0;
    int Fds[3] = {-1, -1, -1};
    for (cmsghdr *C = CMSG_FIRSTHDR(&M); C; C = CMSG_NXTHDR(&M, C))
      if (C->cmsg_level == SOL_SOCKET && C->cmsg_type == SCM_RIGHTS &&
          C->cmsg_len == CMSG_LEN(sizeof Fds))
        memcpy(Fds, CMSG_DATA(C), sizeof Fds);
    if (strncmp(Request, "run", 4) == 0 && (M.msg_flags & MSG_TRUNC))
      reply("failed %ld the command line is longer than %zu bytes",
            strtol(Request + 4, nullptr, 10), MaxRequest);
    else if (strncmp(Request, "run", 4) == 0)
      run(size_t(N), Fds);
    else if (strncmp(Request, "kill ", 5) == 0)
      signalJob(Request);
    for (int Fd : Fds)
      if (Fd >= 0)
        close(Fd);
  }
}

int wrappedMain(int Argc, char **Argv, char **Env) {
  if (Sock >= 0)
    serve();
  return RealMain(Argc, Argv, Env);
}

// LD_PRELOAD as the compiler had it, without this library: what the jobs
// start must not get it.
void dropSelfFromPreload() {
  Dl_info Self;
  const char *Preload = getenv("LD_PRELOAD");
  if (!Preload ||
      !dladdr(reinterpret_cast<void *>(&dropSelfFromPreload), &Self) ||
      !Self.dli_fname)
    return;
  const char *Base = strrchr(Self.dli_fname, '/');
  Base = Base ? Base + 1 : Self.dli_fname;
  size_t BaseLen = strlen(Base);
  static char Kept[8192];
  size_t Used = 0;
  for (const char *P = Preload + strspn(Preload, ": "); *P;) {
    size_t Len = strcspn(P, ": ");
    const char *Name = static_cast<const char *>(memrchr(P, '/', Len));
    Name = Name ? Name + 1 : P;
    bool Ours =
        size_t(P + Len - Name) == BaseLen && !memcmp(Name, Base, BaseLen);
    if (!Ours) {
      if (Used + Len + 2 > sizeof Kept)
        return; // too long to rewrite: leave it as it is
      if (Used)
        Kept[Used++] = ':';
      memcpy(Kept + Used, P, Len);
      Used += Len;
    }
    P += Len;
    P += strspn(P, ": ");
  }
  Kept[Used] = 0;
  if (Used)
    setenv("LD_PRELOAD", Kept, 1);
  else
    unsetenv("LD_PRELOAD");
}

} // namespace

// The C library's entry, which calls main: ours runs first and puts
// wrappedMain in main's place.
extern "C" __attribute__((visibility("default"))) int
__libc_start_main(MainFn Main, int Argc, char **Argv, void (*Init)(),
                  void (*Fini)(), void (*RtldFini)(), void *StackEnd) {
  auto Real = reinterpret_cast<StartFn>(dlsym(RTLD_NEXT, "__libc_start_main"));
  if (!Real)
    _exit(127);
  RealMain = Main;
  if (const char *Fd = getenv("DTLTO_FORKSERVER_FD")) {
    char *End;
    long N = strtol(Fd, &End, 10);
    int Type = 0;
    socklen_t Len = sizeof Type;
    if (*Fd && !*End && N > 2 && N < 1 << 20 &&
        getsockopt(int(N), SOL_SOCKET, SO_TYPE, &Type, &Len) == 0 &&
        Type == SOCK_SEQPACKET) {
      Sock = int(N);
      fcntl(Sock, F_SETFD, FD_CLOEXEC);
    }
    unsetenv("DTLTO_FORKSERVER_FD");
    dropSelfFromPreload();
  }
  return Real(wrappedMain, Argc, Argv, Init, Fini, RtldFini, StackEnd);
}
