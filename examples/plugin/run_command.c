/* run_command.c - a minimal DTLTO distributor plugin, in C.
 *
 * It runs each job's command line (the remote compiler with the job's
 * arguments) on this machine, one job at a time, and lets the plugin host
 * read the object from the job's output file. It asks for files: the host
 * writes the index shard (and any archive member) before each job and
 * removes them after. A real plugin would hand the job's buffers to a farm
 * instead; see docs/plugins.md and builtin:local (memory to memory).
 *
 * Build:  clang -shared -fPIC -I<dtlto>/llvm/include \
 *               -o librun-command-plugin.so run_command.c
 * Use:    ld.lld ... --thinlto-distributor=./librun-command-plugin.so \
 *                    --thinlto-remote-compiler=clang
 */

#include "dtlto/dtlto-plugin.h"

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

struct session {
  const dtlto_link *link;
  const dtlto_engine *engine;
};

static void *run_open(const dtlto_link *link, const dtlto_engine *engine,
                      const char *const *args, size_t num_args, char *error,
                      size_t error_size) {
  (void)args;
  (void)num_args;
  if (link->num_args == 0 || link->args[0][0] == '\0') {
    snprintf(error, error_size, "it runs the remote compiler, and the link "
                                "names none (--thinlto-remote-compiler=)");
    return NULL;
  }
  struct session *s = calloc(1, sizeof(*s));
  if (!s) {
    snprintf(error, error_size, "out of memory");
    return NULL;
  }
  s->link = link;
  s->engine = engine;
  return s;
}

/* Runs the job before returning: the host allows callbacks from submit. */
static int run_submit(void *p, const dtlto_job *job) {
  struct session *s = p;
  const dtlto_engine *e = s->engine;
  size_t n = s->link->num_args + job->num_args;
  char **argv = calloc(n + 1, sizeof(char *));
  if (!argv) {
    e->failed(e->ctx, job->id, "out of memory", 0);
    return 0;
  }
  for (size_t i = 0; i < s->link->num_args; ++i)
    argv[i] = (char *)s->link->args[i];
  for (size_t i = 0; i < job->num_args; ++i)
    argv[s->link->num_args + i] = (char *)job->args[i];

  e->started(e->ctx, job->id, "this machine");
  pid_t pid;
  int status = 0;
  int err = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
  free(argv);
  if (err) {
    e->failed(e->ctx, job->id, strerror(err), 0);
    return 0;
  }
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    dtlto_buffer none = {NULL, 0}; /* the object is at job->output_path */
    e->done(e->ctx, job->id, none);
  } else {
    e->failed(e->ctx, job->id, "the compiler failed", 0);
  }
  return 0;
}

/* Every job is finished inside submit: a cancel always comes too late. */
static void run_cancel(void *p, uint64_t id) {
  (void)p;
  (void)id;
}

static void run_end_of_jobs(void *p) { (void)p; }

static void run_close(void *p) { free(p); }

static const dtlto_plugin plugin = {
    DTLTO_PLUGIN_ABI_VERSION,
    DTLTO_PLUGIN_INPUT_FILES | DTLTO_PLUGIN_OUTPUT_FILES,
    "run-command",
    run_open,
    run_submit,
    run_cancel,
    run_end_of_jobs,
    run_close,
};

const dtlto_plugin *dtlto_plugin_entry(uint32_t host_abi_version) {
  return host_abi_version == DTLTO_PLUGIN_ABI_VERSION ? &plugin : NULL;
}
