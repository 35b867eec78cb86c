/*===- dtlto-plugin.h - The C ABI of DTLTO distributor plugins ------------===*
 *
 * A distributor plugin is a shared object that runs a link's ThinLTO backend
 * jobs. `--thinlto-distributor=<plugin.so>` (or `builtin:<name>`) selects
 * one; docs/plugins.md says how to write one. This header is the whole
 * interface: plain C99, no other header of ours needed.
 *
 * The interface is the streaming protocol of docs/manifest.md in C: the
 * engine hands over each job as soon as it is ready, with its inputs in
 * memory; the plugin says, per job, accepted / started (on a worker) / done
 * (with the object in memory) / failed (with a reason) / cancelled; the
 * engine may cancel a job, and says when no more jobs come.
 *
 * Isolation. By default a plugin does not run in the linker's process: the
 * linker starts a plugin host (dtlto-plugin-host, a program shipped with
 * it) that loads the plugin and speaks the event protocol to the engine
 * over a socket and a pipe. So:
 *   - a plugin that crashes or exits is a distributor that failed: the link
 *     warns, and (local fallback on, the default) the linker compiles the
 *     jobs the plugin did not finish itself;
 *   - a plugin that hangs is stopped at the distributor deadline
 *     (-mllvm -dtlto-distributor-timeout / DTLTO_DISTRIBUTOR_TIMEOUT), like
 *     any distributor, and its jobs are compiled in the linker;
 *   - every object a plugin returns is checked before it reaches the link or
 *     the cache; a bad one is a failed job;
 *   - the host runs in the distributor's process group: whatever the plugin
 *     starts is stopped with it.
 * A plugin cannot write into the linker's memory, but it runs as the user in
 * the link's directory: it can write files there.
 *
 * With -mllvm -dtlto-plugin-in-process (DTLTO_PLUGIN_IN_PROCESS=1; the
 * default for builtin:local, not for a shared object) the same host runs
 * on a thread of the linker instead, and no process is started:
 * objects are still checked, a hang is still cut at the deadline (the
 * plugin's thread is left behind), but a crash or an exit ends the linker
 * and the link fails (docs/plugins.md). The ABI is the same either way.
 *
 * Threads. The host calls every function of `dtlto_plugin` from one thread,
 * never two at once, in this order: open, then submit and cancel in any
 * number, end_of_jobs once, then close once. The callbacks in
 * `dtlto_engine` may be called from any thread, at any time from open's
 * start until close returns, also from inside submit or cancel. They never
 * block for long and never call back into the plugin.
 *
 * Lifetimes. Everything the host passes (strings, buffers, the job) stays
 * valid until the plugin has reported the job final (done, failed without
 * retry, or cancelled); the link's description until close returns. A
 * buffer the plugin passes to `done` is copied before `done` returns.
 *
 *===----------------------------------------------------------------------===*/

#ifndef DTLTO_PLUGIN_H
#define DTLTO_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version this header describes. A host loads only plugins whose
 * `dtlto_plugin.abi_version` is this number. Any change to a struct below,
 * or to a rule above, changes it. */
#define DTLTO_PLUGIN_ABI_VERSION 1

/* The symbol every plugin exports: a function of type dtlto_plugin_entry_fn
 * that returns the plugin's description for the ABI version the host speaks
 * (or NULL when it cannot speak it). */
#define DTLTO_PLUGIN_ENTRY_SYMBOL "dtlto_plugin_entry"

/* Bytes in memory. */
typedef struct dtlto_buffer {
  const void *data;
  size_t size;
} dtlto_buffer;

/* One file a job reads. `name` is the file as the manifest would name it
 * (the module ID for bitcode, the shard's path for the index shard);
 * `contents` is what it holds. `path` is a file on disk with the same
 * contents: set when the plugin asked for files (DTLTO_PLUGIN_INPUT_FILES),
 * or when the file was on disk already, else NULL. */
typedef struct dtlto_input {
  const char *name;
  const char *path;
  dtlto_buffer contents;
} dtlto_input;

/* What every job of the link shares. */
typedef struct dtlto_link {
  /* The link's output file, to name it in logs. */
  const char *linker_output;
  /* The target triple, e.g. "x86_64-pc-linux-gnu". */
  const char *triple;
  /* The compiler and the options every job shares: the manifest's
   * common.args. args[0] is "" when the linker was given no remote compiler. */
  const char *const *args;
  size_t num_args;
  /* What dtlto-backend reads besides a job's own inputs, in memory: the
   * link's LTO configuration. A plugin that runs dtlto-backend gives it
   * this; one that runs args[0] ignores it. */
  dtlto_buffer backend_config;
  /* The dtlto-backend next to the linker (a path, or NULL if none). */
  const char *dtlto_backend;
} dtlto_link;

/* One ThinLTO backend job. */
typedef struct dtlto_job {
  /* The engine's name for the job in every callback. */
  uint64_t id;
  /* The module the job compiles. */
  const char *module_id;
  /* The job's own arguments: common args + these is the command line the
   * engine would have run (module, -fthinlto-index=<shard>, -o, object). */
  const char *const *args;
  size_t num_args;
  /* inputs[0] is the module's bitcode, inputs[1] its index shard, then every
   * module it imports from. */
  const dtlto_input *inputs;
  size_t num_inputs;
  /* Where the command line writes the object. A plugin that asked for files
   * (DTLTO_PLUGIN_OUTPUT_FILES) may leave the object there and call done
   * with an empty buffer; the host reads it and removes it. */
  const char *output_path;
  /* The bytes of bitcode the job reads: a size estimate for scheduling. */
  uint64_t input_bytes;
} dtlto_job;

/* The host's side: what a plugin reports. `ctx` is the pointer the host
 * passed to open. A job's reports end with exactly one final one: done,
 * failed with retry 0, or cancelled; anything reported after that is
 * ignored. */
typedef struct dtlto_engine {
  void *ctx;
  /* Queued: the plugin has the job. Optional. */
  void (*accepted)(void *ctx, uint64_t id);
  /* Running on `worker` (a host, slot or farm worker name). Optional, but
   * hedging and the link report use it. */
  void (*started)(void *ctx, uint64_t id, const char *worker);
  /* The object. Final. */
  void (*done)(void *ctx, uint64_t id, dtlto_buffer object);
  /* This attempt failed; with retry != 0 the plugin tries again and reports
   * again, else the job is final and the linker compiles it itself. */
  void (*failed)(void *ctx, uint64_t id, const char *reason, int retry);
  /* Stopped at the engine's request. Final. */
  void (*cancelled)(void *ctx, uint64_t id);
  /* A message for the user (one line); the host prints it on stderr with
   * the plugin's name. */
  void (*log)(void *ctx, const char *message);
} dtlto_engine;

/* Flags a plugin sets in dtlto_plugin.flags. */
enum {
  /* Every input of every job is also on disk (dtlto_input.path): the host
   * writes the ones that are not (the shard, archive members) before submit
   * and removes them when the job is final. */
  DTLTO_PLUGIN_INPUT_FILES = 1u << 0,
  /* The plugin may leave objects at dtlto_job.output_path. */
  DTLTO_PLUGIN_OUTPUT_FILES = 1u << 1,
  /* The plugin runs jobs as they come, without waiting for end_of_jobs. The
   * host may then hold jobs back in the linker while the jobs it has
   * submitted and that are not yet final hold more than
   * DTLTO_PLUGIN_QUEUE_MIB of inputs (default 64), so that the host's
   * memory follows the plugin's pace, not the link's size. Without it, every
   * job is submitted as soon as the engine hands it over. */
  DTLTO_PLUGIN_PACED = 1u << 2
};

/* What a plugin is. Every function pointer is required. */
typedef struct dtlto_plugin {
  uint32_t abi_version; /* DTLTO_PLUGIN_ABI_VERSION */
  uint32_t flags;       /* DTLTO_PLUGIN_* */
  const char *name;     /* for messages, e.g. "local" */
  /* Starts a session for one link. `args` are the distributor arguments
   * the linker was given (--thinlto-distributor-arg=). Returns the
   * session, or NULL after writing a one-line reason into error[0..error_size).
   */
  void *(*open)(const dtlto_link *link, const dtlto_engine *engine,
                const char *const *args, size_t num_args, char *error,
                size_t error_size);
  /* A job to run. The plugin may run it at once or queue it. Returns 0, or
   * non-zero to refuse it (the same as reporting failed without retry). */
  int (*submit)(void *session, const dtlto_job *job);
  /* The engine has the job's object from elsewhere: stop or drop it and
   * report cancelled, or done if it is too late. */
  void (*cancel)(void *session, uint64_t id);
  /* No more jobs come. The plugin finishes the jobs it has and reports them. */
  void (*end_of_jobs)(void *session);
  /* Ends the session: called once every job is final, or when the engine
   * closes the job channel early. Stops whatever still runs; after it
   * returns the plugin calls no callback. A host stopped by a signal (the
   * deadline, Ctrl-C) ends without calling it: whatever the plugin started
   * in the host's process group is stopped with the host. */
  void (*close)(void *session);
} dtlto_plugin;

typedef const dtlto_plugin *(*dtlto_plugin_entry_fn)(uint32_t host_abi_version);

/* Declared for plugins to define. */
const dtlto_plugin *dtlto_plugin_entry(uint32_t host_abi_version);

#ifdef __cplusplus
}
#endif

#endif /* DTLTO_PLUGIN_H */
