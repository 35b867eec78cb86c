/* A distributor plugin that misbehaves on purpose, as its first argument
 * (--thinlto-distributor-arg=) says:
 *   crash   dies of SIGSEGV on the first job
 *   hang    never returns from the first submit
 *   fail    fails every job, without retry
 *   bad     returns an object that is no object
 *   refuse  refuses the link in open
 *   exit    exits the process (status 0) on the first job, with _exit
 *   atexit  the same with exit(0), which runs the process's exit handlers
 *   hold    accepts every job and runs none; answers each cancel with
 *           cancelled, and says so on stderr
 *   whoami  says in open which process runs it (/proc/self/comm: the
 *           linker, or dtlto-plugin-host) and how many pipes and sockets
 *           it has open past stderr (the host's channels, if any), then
 *           fails every job
 *   where   holds every job until the end of the jobs, then says how many
 *           module names came in more than one job and how many of those
 *           came at one address every time (inputs read where the engine
 *           has them, not copies), then fails every job
 * Built with -DABI_VERSION=N it claims another ABI version; with -DNO_ENTRY
 * it exports no entry point. */

#include "dtlto/dtlto-plugin.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef ABI_VERSION
#define ABI_VERSION DTLTO_PLUGIN_ABI_VERSION
#endif

static const dtlto_engine *engine;

/* The process's descriptors past stderr that are pipes or sockets. */
static int count_channels(void) {
  int n = 0;
  for (int fd = 3; fd < 1024; ++fd) {
    char path[64], target[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    ssize_t len = readlink(path, target, sizeof(target) - 1);
    if (len <= 0)
      continue;
    target[len] = 0;
    if (!strncmp(target, "pipe:", 5) || !strncmp(target, "socket:", 7))
      ++n;
  }
  return n;
}
static const char *mode = "";

/* The jobs the where mode holds: valid until reported final. */
static const dtlto_job *held[64];
static size_t num_held;

static void say_where(void) {
  int shared = 0, same = 0;
  for (size_t a = 0; a < num_held; ++a)
    for (size_t i = 0; i < held[a]->num_inputs; ++i) {
      const dtlto_input *in = &held[a]->inputs[i];
      int seen_before = 0, others = 0, at_one_address = 1;
      for (size_t b = 0; b < num_held; ++b)
        for (size_t k = 0; k < held[b]->num_inputs; ++k) {
          const dtlto_input *o = &held[b]->inputs[k];
          if ((b == a && k == i) || strcmp(o->name, in->name))
            continue;
          if (b < a || (b == a && k < i))
            seen_before = 1;
          ++others;
          if (o->contents.data != in->contents.data)
            at_one_address = 0;
        }
      if (others && !seen_before) {
        ++shared;
        same += at_one_address;
      }
    }
  char msg[128];
  snprintf(msg, sizeof(msg),
           "%d modules in more than one job, %d of them at one address", shared,
           same);
  engine->log(engine->ctx, msg);
}

static void *fault_open(const dtlto_link *link, const dtlto_engine *e,
                        const char *const *args, size_t num_args, char *error,
                        size_t error_size) {
  (void)link;
  engine = e;
  mode = num_args ? args[0] : "";
  if (!strcmp(mode, "refuse")) {
    snprintf(error, error_size, "this plugin refuses every link");
    return NULL;
  }
  if (!strcmp(mode, "whoami")) {
    char comm[64] = "", msg[128];
    FILE *f = fopen("/proc/self/comm", "r");
    if (f) {
      if (!fgets(comm, sizeof(comm), f))
        comm[0] = 0;
      fclose(f);
    }
    comm[strcspn(comm, "\n")] = 0;
    snprintf(msg, sizeof(msg), "running in process '%s', %d pipes and sockets",
             comm, count_channels());
    engine->log(engine->ctx, msg);
  }
  return (void *)&engine;
}

static int fault_submit(void *s, const dtlto_job *job) {
  (void)s;
  if (!strcmp(mode, "crash"))
    raise(SIGSEGV);
  if (!strcmp(mode, "hang"))
    for (;;)
      pause();
  if (!strcmp(mode, "exit"))
    _exit(0);
  if (!strcmp(mode, "atexit"))
    exit(0);
  if (!strcmp(mode, "hold")) {
    engine->accepted(engine->ctx, job->id);
    return 0;
  }
  if (!strcmp(mode, "where") && num_held < sizeof(held) / sizeof(held[0])) {
    held[num_held++] = job;
    return 0;
  }
  if (!strcmp(mode, "bad")) {
    static const char junk[] = "\x7f" "ELF but not really an object";
    dtlto_buffer b = {junk, sizeof(junk)};
    engine->done(engine->ctx, job->id, b);
    return 0;
  }
  engine->failed(engine->ctx, job->id, "the fault plugin fails every job", 0);
  return 0;
}

static void fault_cancel(void *s, uint64_t id) {
  (void)s;
  char msg[64];
  snprintf(msg, sizeof(msg), "cancelled job %llu", (unsigned long long)id);
  engine->log(engine->ctx, msg);
  engine->cancelled(engine->ctx, id);
}
static void fault_end(void *s) {
  (void)s;
  if (strcmp(mode, "where"))
    return;
  say_where();
  for (size_t a = 0; a < num_held; ++a)
    engine->failed(engine->ctx, held[a]->id, "the where mode fails every job",
                   0);
  num_held = 0;
}
static void fault_close(void *s) { (void)s; }

static const dtlto_plugin plugin = {ABI_VERSION, 0, "fault", fault_open,
                                    fault_submit, fault_cancel, fault_end,
                                    fault_close};

#ifndef NO_ENTRY
const dtlto_plugin *dtlto_plugin_entry(uint32_t host_abi_version) {
  (void)host_abi_version;
  return &plugin;
}
#else
const dtlto_plugin *not_the_entry(void) { return &plugin; }
#endif
