#!/usr/bin/env python3
"""The engine's own time per job, with no compiler beside it, from 1,000 to 30,000 modules.

  bench/engine-replay.py --programs gen1000,gen10000,gen30000 [--runs 3] \
      [--link-dir /dev/shm/engine-replay]

bench/scale.py times the engine inside real links, where two backends
share the machine's two cores with it (one-shot, the shards are written
before the jobs run and the objects read after, but the pages, the caches
and the file system are the jobs' too). This replays each program's
recorded link (bench/run.py prepares it in CACHE) with our ld.lld and
benchlib/replaydist.py as the distributor, one-shot (DTLTO_STREAM=0), no
local slot and no fallback, as the harness's links run:

  1. a first link per program runs utils/dtlto/local.py with dtlto-backend
     (the harness's ours-native mode) and stores every job's object;
  2. then --runs rounds, the programs alternating within each, link with
     --time-trace, every object copied from the store.

Per link it prints the phases of benchlib/trace.py (thin link, shards and
manifest, after the distributor, input preparation) and the engine's own
time (shards + after + input preparation) per job; at the end each
program's range and median, and the median's ratio to the first program's.
Each output is checked against the first link's (a real native link).
"""

import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True

from benchlib import BenchError, doc_parser, trace  # noqa: E402
from benchlib.elfdiff import sha256 as sha  # noqa: E402
from benchlib.generate import add_replay_options, require_generated  # noqa: E402

SRC_ROOT = os.path.dirname(HERE)


def link(build, out, store, args, trace_path=None):
    argv = list(build["args"])
    argv[argv.index("-o") + 1] = out
    real = [args.python, os.path.join(SRC_ROOT, "utils/dtlto/local.py"), f"--jobs={args.jobs}"]
    dist = [os.path.join(HERE, "benchlib/replaydist.py"), f"--store={store}", "--"] + real
    extra = ([f"--thinlto-jobs={args.jobs}", f"--thinlto-distributor={args.python}"]
             + [f"--thinlto-distributor-arg={a}" for a in dist]
             + [f"--thinlto-remote-compiler={args.dtlto_backend}"])
    if trace_path:
        extra.append(f"--time-trace={trace_path}")
    env = dict(os.environ, DTLTO_LOCAL_JOBS="0", DTLTO_LOCAL_FALLBACK="0", DTLTO_STREAM="0")
    start = time.monotonic()
    proc = subprocess.run([args.ld_lld] + argv + extra, cwd=build["cwd"], env=env,
                          capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"bench/engine-replay.py: the link of {out} failed:\n{proc.stderr}")
    return time.monotonic() - start


def main():
    p = doc_parser(__doc__)
    p.add_argument("--programs", default="gen1000,gen10000,gen30000",
                   help="comma list of prepared generated programs (default: %(default)s)")
    p.add_argument("--runs", type=int, default=3, help="traced links per program (default: 3)")
    p.add_argument("--jobs", type=int, default=2,
                   help="threads and workers of the storing link (default: 2)")
    p.add_argument("--link-dir", default="/dev/shm/engine-replay",
                   help="outputs, the engine's files and the object store (default: %(default)s)")
    add_replay_options(p, SRC_ROOT)
    p.add_argument("--python", default="/usr/bin/python3",
                   help="the interpreter of the distributors (default: %(default)s)")
    args = p.parse_args()
    if args.runs < 1:
        p.error("--runs must be at least 1")
    names = args.programs.split(",")
    try:
        builds = {n: require_generated(args.cache, n, args.gen_module_scale) for n in names}
    except BenchError as e:
        sys.exit(f"bench/engine-replay.py: {e}")
    reference = {}
    for n in names:
        d = os.path.join(args.link_dir, n)
        os.makedirs(d, exist_ok=True)
        store = os.path.join(d, "store")
        wall = link(builds[n], os.path.join(d, "prog"), store, args)
        reference[n] = sha(os.path.join(d, "prog"))
        print(f"# {n}: first link {wall:.1f} s", flush=True)
    print("program modules run wall_s thin_link_s shards_s after_s input_prep_s "
          "engine_s engine_ms_per_job output")
    per_job = {n: [] for n in names}
    for r in range(1, args.runs + 1):
        for n in names:
            d = os.path.join(args.link_dir, n)
            tt = os.path.join(d, f"trace-{r}.json")
            wall = link(builds[n], os.path.join(d, "prog"), os.path.join(d, "store"), args, tt)
            ph = trace.phases(tt)
            # Per module, as bench/scale.py's table divides (the jobs are
            # one more: main.o).
            modules = builds[n]["modules"]
            ms = 1000 * ph["engine"] / modules
            per_job[n].append(ms)
            same = "same" if sha(os.path.join(d, "prog")) == reference[n] else "DIFFERS"
            print(f"{n} {modules} {r} {wall:.2f} {ph['thin_link']:.3f} {ph['shards']:.3f} "
                  f"{ph['after']:.3f} {ph['input_prep']:.3f} {ph['engine']:.3f} {ms:.4f} {same}",
                  flush=True)
    first = statistics.median(per_job[names[0]])
    print("program engine_ms_per_job_min engine_ms_per_job_median engine_ms_per_job_max "
          f"median_ratio_to_{names[0]}")
    for n in names:
        v = per_job[n]
        med = statistics.median(v)
        print(f"{n} {min(v):.4f} {med:.4f} {max(v):.4f} {med / first:.2f}")


if __name__ == "__main__":
    main()
