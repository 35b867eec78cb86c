/* A fake compiler for fork-server.test, in C so that the fork server can be
 * preloaded into it: forkcc MODULE -fthinlto-index=SHARD -o OUT [IGNORED...].
 * OUT says whether this job was forked from a process started earlier (the
 * fork server) or started afresh, what its environment and directory are,
 * and whether stdin was empty. Modules named fail*, crash* and hang* fail,
 * die of SIGSEGV, or write marks/pid.MODULE and marks/ppid.MODULE and wait
 * forever. Built with -DSTART_THREAD it starts a thread before main; with
 * -DHANG_AT_START it never gets to main; with -DNOISY_START it writes 256 KiB
 * on stderr before main (more than a pipe holds). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pid_t LoadedIn;
static void *idle(void *Unused) {
  (void)Unused;
  for (;;)
    pause();
}
__attribute__((constructor)) static void loaded(void) {
  LoadedIn = getpid();
#ifdef START_THREAD
  pthread_t Thread;
  pthread_create(&Thread, 0, idle, 0);
#endif
#ifdef HANG_AT_START
  idle(0);
#endif
#ifdef NOISY_START
  for (int I = 0; I < 4096; ++I)
    fprintf(stderr, "forkcc: starting, line %4d of 4096 %40s\n", I, "");
#endif
}

static void mark(const char *What, const char *Module, long Value) {
  char Path[4096];
  snprintf(Path, sizeof Path, "marks/%s.%s", What, Module);
  FILE *F = fopen(Path, "w");
  if (F) {
    fprintf(F, "%ld\n", Value);
    fclose(F);
  }
}

int main(int Argc, char **Argv) {
  if (Argc < 5 || strcmp(Argv[3], "-o")) {
    fprintf(stderr, "usage: forkcc MODULE -fthinlto-index=SHARD -o OUT\n");
    return 2;
  }
  const char *Module = Argv[1];
  if (!strncmp(Module, "fail", 4)) {
    fprintf(stderr, "forkcc: cannot compile %s\n", Module);
    return 1;
  }
  if (!strncmp(Module, "crash", 5)) {
    fprintf(stderr, "forkcc: about to crash\n");
    fflush(stderr);
    raise(SIGSEGV);
  }
  if (!strncmp(Module, "hang", 4)) {
    mark("ppid", Module, getppid());
    mark("pid", Module, getpid());
    for (;;)
      pause();
  }
  char Cwd[4096];
  const char *Preload = getenv("LD_PRELOAD");
  const char *Fd = getenv("DTLTO_FORKSERVER_FD");
  FILE *Out = fopen(Argv[4], "w");
  if (!Out || !getcwd(Cwd, sizeof Cwd))
    return 3;
  fprintf(Out,
          "object of %s\nforked %s\nLD_PRELOAD %s\nDTLTO_FORKSERVER_FD %s\n",
          Module, getpid() != LoadedIn ? "yes" : "no",
          Preload ? Preload : "unset", Fd ? Fd : "unset");
  fprintf(Out, "stdin %s\ncwd %s\n", getchar() == EOF ? "empty" : "not empty",
          Cwd);
  return fclose(Out) ? 3 : 0;
}
