/* A broken farm host's compiler, for the icecream fault tests: put in
 * place of an installed environment's /usr/bin/gcc (dtlto-backend) by
 * `icecc_farm.py doctor`. It runs in iceccd's chroot, which has no shell,
 * so it is a static C program. Built with one of:
 *   -DMODE_GARBAGE  read the input, write a non-object to -o, exit 0
 *   -DMODE_EMPTY    read the input, write an empty -o, exit 0
 * Both append a line to /dtlto-calls.log (the doctor creates it) before
 * they exit, so the test counts the compiles that ran on the host.
 *   -DMODE_STALL    keep the input, leave the marker dtlto-stall.<pid> next
 *                   to -o and wait until dtlto-go appears there (the
 *                   harness writes it), then run /usr/bin/gcc.real, the
 *                   real compiler, on that input; a stop signal removes the
 *                   marker and the kept input first
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef MODE_STALL
static char marker[4096], kept[4096];

static void clean(void) {
  if (marker[0])
    unlink(marker);
  if (kept[0])
    unlink(kept);
}

static void stop(int sig) {
  clean();
  _exit(128 + sig);
}

static void fail(void) {
  perror("fake gcc");
  clean();
  _exit(1);
}
#endif

static const char *output(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!strcmp(argv[i], "-o"))
      return argv[i + 1];
  return NULL;
}

int main(int argc, char **argv) {
  const char *out = output(argc, argv);
  char buf[65536];
  if (!out) {
    fprintf(stderr, "fake gcc: no -o\n");
    return 1;
  }
#if defined(MODE_GARBAGE) || defined(MODE_EMPTY)
  /* iceccd streams the input on stdin: take all of it, as a compiler does. */
  while (read(0, buf, sizeof buf) > 0)
    ;
  int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return 1;
#ifdef MODE_GARBAGE
  const char text[] = "not an object\n";
  if (write(fd, text, sizeof text - 1) != (ssize_t)(sizeof text - 1))
    return 1;
#endif
  if (close(fd))
    return 1;
  /* One write with O_APPEND: calls from parallel jobs never mix. */
  int log = open("/dtlto-calls.log", O_WRONLY | O_APPEND);
  const char line[] = "call\n";
  if (log < 0 || write(log, line, sizeof line - 1) != (ssize_t)(sizeof line - 1)) {
    perror("fake gcc: /dtlto-calls.log");
    return 1;
  }
  return close(log) ? 1 : 0;
#elif defined(MODE_STALL)
  char dir[4096], go[4096];
  ssize_t n;
  const char *slash = strrchr(out, '/');
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - out) : 1, slash ? out : ".");
  snprintf(marker, sizeof marker, "%s/dtlto-stall.%ld", dir, (long)getpid());
  snprintf(go, sizeof go, "%s/dtlto-go", dir);
  snprintf(kept, sizeof kept, "%s/dtlto-input.%ld", dir, (long)getpid());
  signal(SIGTERM, stop);
  signal(SIGINT, stop);
  signal(SIGHUP, stop);
  int in = open(kept, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (in < 0) {
    kept[0] = 0;
    fail();
  }
  while ((n = read(0, buf, sizeof buf)) > 0)
    if (write(in, buf, n) != n)
      fail();
  int fd = open(marker, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) {
    marker[0] = 0;
    fail();
  }
  close(fd);
  /* No time limit: the harness kills this host, sends dtlto-go, or the
     client goes away (iceccd then sends SIGTERM). */
  struct timespec pause = {0, 50 * 1000 * 1000};
  while (access(go, F_OK) != 0)
    nanosleep(&pause, NULL);
  unlink(marker);
  marker[0] = 0;
  if (lseek(in, 0, SEEK_SET) != 0 || dup2(in, 0) != 0)
    fail();
  close(in);
  unlink(kept); /* open on stdin: the real compiler still reads it */
  kept[0] = 0;
  argv[0] = "/usr/bin/gcc.real";
  execv(argv[0], argv);
  perror("fake gcc: /usr/bin/gcc.real");
  return 1;
#else
#error "build with -DMODE_GARBAGE, -DMODE_EMPTY or -DMODE_STALL"
#endif
}
