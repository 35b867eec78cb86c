#!/usr/bin/env python3
"""Where the CPU of a link goes, process by process, in-process against DTLTO.

  bench/cpu-split.py --program gen1000 [--rounds 2] [--link-dir /dev/shm/bench]

Replays the program's recorded link (bench/run.py prepares it in CACHE) in
the modes given, alternating round by round, each under `perf record -e
cpu-clock` (a software clock: this VM has no hardware counters), and sums
the samples by process name:

  inproc  LLVM 22's ld.lld, in-process ThinLTO, --thinlto-jobs=N
  native  our ld.lld, utils/dtlto/local.py --jobs=N, dtlto-backend batch
          workers (the harness's ours-native mode)
  plugin  our ld.lld, builtin:local --jobs=N, dtlto-backend --memory
          workers in dtlto-plugin-host (DTLTO_PLUGIN_IN_PROCESS=0; the
          harness's ours-plugin mode)
  inlinker  the same plugin on a thread of the linker
          (DTLTO_PLUGIN_IN_PROCESS=1, builtin:local's default): no host
          process, its CPU counts as the linker's
  prefed  (opt-in) our ld.lld one-shot (DTLTO_STREAM=0) with
          benchlib/prefeddist.py: N batch workers given every job up front,
          so that nothing wakes the distributor or the linker per job

--plugin PATH (repeatable) runs the plugin and inlinker modes once per
plugin given, in turn, instead of with builtin:local: two builds of a
plugin (build/lib/libdtlto-local-plugin.so, say) against each other. Their
rows say plugin#1, plugin#2, ... in the order given.

As bench/run.py does, our links run with no local slot and no local
fallback (DTLTO_LOCAL_JOBS=0, DTLTO_LOCAL_FALLBACK=0). Per link it prints
the CPU seconds of the backend (in-process: the linker's
llvm-worker threads; else the dtlto-backend processes), the distributor
(local.py's python3, or dtlto-plugin-host), the linker (its main thread and,
in DTLTO modes, its llvm-worker threads, which write the shards) and the
rest; and whether the output is in-process ThinLTO's. No wall times: perf
adds its own start and end to them (bench/run.py measures those).
"""

import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True

from benchlib import doc_parser  # noqa: E402
from benchlib.elfdiff import sha256 as sha  # noqa: E402
from benchlib.generate import add_replay_options  # noqa: E402
from benchlib.replay import MODES, find_program, mode_argv, mode_env  # noqa: E402

SRC_ROOT = os.path.dirname(HERE)
FREQ = 999  # samples a second per CPU


def group(mode, comm):
    if comm.startswith("llvm-worker"):
        return "backend" if mode == "inproc" else "linker"
    return {"dtlto-backend": "backend", "python3": "distributor",
            "dtlto-plugin-ho": "distributor", "ld.lld": "linker"}.get(comm, "other")


def cpu_by_group(mode, data):
    # --no-inline: with call graphs, perf would otherwise run addr2line over
    # every sampled address first (minutes); -g none --no-children keep the
    # columns those of data without them.
    report = subprocess.run(["perf", "report", "--no-inline", "--no-children", "-g", "none",
                             "-i", data, "-n", "--sort", "comm", "--stdio"],
                            capture_output=True, text=True, check=True).stdout
    seconds = dict.fromkeys(["backend", "distributor", "linker", "other"], 0.0)
    for line in report.splitlines():
        fields = line.split()
        if line.startswith("#") or len(fields) < 3 or not fields[1].isdigit():
            continue
        seconds[group(mode, " ".join(fields[2:]))] += int(fields[1]) / FREQ
    return seconds


def link(build, mode, out, data, args, plugin="builtin:local"):
    argv = list(build["args"])
    argv[argv.index("-o") + 1] = out
    first, *rest = mode_argv(mode, args, plugin)
    env = mode_env(mode)
    graph = ["--call-graph", args.call_graph] if args.call_graph else []
    proc = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(FREQ),
                           *graph, "-o", data, "--", first] + argv + rest,
                          cwd=build["cwd"], env=env, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"bench/cpu-split.py: the {mode} link failed:\n{proc.stderr}")


def main():
    p = doc_parser(__doc__)
    p.add_argument("--program", required=True, help="a prepared program: lua, gen1000, ...")
    p.add_argument("--modes", default="inproc,native,plugin",
                   help="comma list of " + ", ".join(MODES) + " (default: %(default)s)")
    p.add_argument("--rounds", type=int, default=2, help="links per mode (default: 2)")
    p.add_argument("--jobs", type=int, default=2, help="threads or workers (default: 2)")
    p.add_argument("--link-dir", default="/dev/shm/cpu-split",
                   help="where the outputs and the engines' files go (default: %(default)s)")
    p.add_argument("--call-graph", metavar="HOW",
                   help="record call graphs too (perf record --call-graph HOW: dwarf, "
                        "since Debian's libraries keep no frame pointers), to read one "
                        "process's with perf report -i LINK_DIR/perf-MODE-ROUND.data "
                        "--comm NAME -G; the data grow to gigabytes")
    add_replay_options(p, SRC_ROOT)
    p.add_argument("--local-py", default=os.path.join(SRC_ROOT, "utils/dtlto/local.py"),
                   help="the distributor of the native mode (default: %(default)s)")
    p.add_argument("--python", default="/usr/bin/python3",
                   help="the interpreter that runs local.py (default: %(default)s)")
    p.add_argument("--plugin", action="append", metavar="PATH",
                   help="a distributor plugin for the plugin and inlinker modes, "
                        "instead of builtin:local; repeat to compare several")
    args = p.parse_args()
    # The links run in the program's directory: paths given relative to ours.
    for name in ("local_py", "link_dir", "ld_lld", "dtlto_backend", "stock_ld_lld"):
        setattr(args, name, os.path.abspath(getattr(args, name)))
    modes = args.modes.split(",")
    if bad := [m for m in modes if m not in MODES]:
        p.error(f"unknown mode(s): {', '.join(bad)}")
    plugins = [os.path.abspath(x) for x in args.plugin or []]
    for x in plugins:
        if not os.path.isfile(x):
            p.error(f"--plugin {x} is not a file")
    # (mode, its label, the plugin it runs)
    runs = []
    for mode in modes:
        if mode in ("plugin", "inlinker") and plugins:
            runs += [(mode, f"{mode}#{i}", x) for i, x in enumerate(plugins, 1)]
        else:
            runs.append((mode, mode, "builtin:local"))
    build = find_program(args, "bench/cpu-split.py")
    if not shutil.which("perf"):
        sys.exit("bench/cpu-split.py: needs perf: apt-get install linux-perf")
    os.makedirs(args.link_dir, exist_ok=True)
    reference = os.path.join(args.link_dir, "prog.reference")
    link(build, "inproc", reference, os.path.join(args.link_dir, "perf.data"), args)
    for i, x in enumerate(plugins, 1):
        print(f"plugin#{i}: {x}")
    print("mode round backend_s distributor_s linker_s other_s total_s output")
    for r in range(1, args.rounds + 1):
        for mode, label, plugin in runs:
            out = os.path.join(args.link_dir, f"prog.{label}")
            data = os.path.join(args.link_dir, f"perf-{label}-{r}.data")
            link(build, mode, out, data, args, plugin)
            s = cpu_by_group(mode, data)
            same = "identical" if sha(out) == sha(reference) else "DIFFERS"
            print(f"{label} {r} {s['backend']:.2f} {s['distributor']:.2f} "
                  f"{s['linker']:.2f} {s['other']:.2f} {sum(s.values()):.2f} {same}",
                  flush=True)


if __name__ == "__main__":
    main()
