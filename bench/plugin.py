#!/usr/bin/env python3
"""Distributor plugin against files, on one benchmark program (issue 16).

Replays the program's recorded link (bench/run.py prepares it in CACHE) with
our ld.lld in three modes, alternating run by run:

  files   --thinlto-distributor=<python> utils/dtlto/local.py, remote
          compiler dtlto-backend (batch workers reading the shards, modules
          and objects as files)
  plugin  --thinlto-distributor=builtin:local (dtlto-backend --memory
          workers, every input and object in memory), in dtlto-plugin-host
  plugin-in-linker
          the same plugin loaded into the linker (-dtlto-plugin-in-process):
          no host process

All run every job in dtlto-backend, --jobs=N workers. Per mode it reports
the wall time of the timed runs (median and range), the engine's own DTLTO
trace scopes (one separate --time-trace link; "engine_ms" sums those of
ENGINE), the files of ours a
--save-temps link leaves (what the engine and the distributor wrote), and
whether the output is byte-identical to an in-process ThinLTO link's.
"""

import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True

from benchlib import add_cache_option  # noqa: E402
from benchlib.elfdiff import sha256 as sha  # noqa: E402
from benchlib.trace import dtlto_scopes  # noqa: E402

SRC_ROOT = os.path.dirname(HERE)
# Files of ours a --save-temps link keeps: manifest and side file, shards,
# objects, dtlto-backend's configuration and index, archive-member copies.
OURS = re.compile(r"(\.dist-file(\.dtlto)?\.json|\.native\.o(\.thinlto\.bc)?"
                  r"|\.dtlto-config\.json|\.dtlto-index\.bc|\.[0-9a-f]{16}\.o)$")
# Scopes that are not the engine's own work.
NOT_ENGINE = {"Execute DTLTO distributor", "DTLTO compile in the linker"}
# The engine's own work, scopes that do not nest in one another (threads
# summed): shards and cache look-ups, handing each job over (its copies
# written, or its frame built), what jobs share, the manifest, checking the
# objects after the distributor, removing files. "DTLTO write index shards"
# is the main thread waiting for the first of these, and is left out.
ENGINE = ["DTLTO prepare job", "DTLTO hand job over", "DTLTO serialize plugin inputs",
          "DTLTO write dtlto-backend inputs", "Emit DTLTO JSON",
          "Add DTLTO files to the link", "Remove DTLTO temporary files"]


def find_build(cache, program):
    for path in sorted(glob.glob(os.path.join(cache, "*", "dtlto-bench-build.json"))):
        if os.path.basename(os.path.dirname(path)).split("_")[0].startswith(program):
            with open(path) as f:
                return json.load(f)
    sys.exit(f"bench/plugin.py: no prepared build of '{program}' in {cache}: "
             "run bench/run.py --programs " + program + " once")


def mode_args(mode, args):
    # Said either way: a built-in plugin runs in the linker by default.
    if mode in ("plugin", "plugin-in-linker"):
        where = "1" if mode == "plugin-in-linker" else "0"
        return ["-mllvm", f"-dtlto-plugin-in-process={where}",
                "--thinlto-distributor=builtin:local",
                f"--thinlto-distributor-arg=--jobs={args.jobs}",
                f"--thinlto-remote-compiler={args.dtlto_backend}"]
    return [f"--thinlto-distributor={args.python}",
            f"--thinlto-distributor-arg={os.path.join(SRC_ROOT, 'utils/dtlto/local.py')}",
            f"--thinlto-distributor-arg=--jobs={args.jobs}",
            f"--thinlto-remote-compiler={args.dtlto_backend}"]


def link(build, out, extra, env):
    argv = list(build["args"])
    argv[argv.index("-o") + 1] = out
    start = time.monotonic()
    proc = subprocess.run([LD] + argv + extra, cwd=build["cwd"], env=env,
                          capture_output=True, text=True)
    wall = time.monotonic() - start
    if proc.returncode:
        sys.exit(f"bench/plugin.py: link failed:\n{proc.stderr}")
    return wall, proc.stderr


def main():
    global LD
    p = argparse.ArgumentParser(prog="bench/plugin.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--program", default="redis")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--jobs", type=int, default=2)
    add_cache_option(p)
    p.add_argument("--ld-lld", default=os.path.join(SRC_ROOT, "build/bin/ld.lld"))
    p.add_argument("--dtlto-backend",
                   default=os.path.join(SRC_ROOT, "build/bin/dtlto-backend"))
    p.add_argument("--python", default=sys.executable)
    args = p.parse_args()
    LD = os.path.abspath(args.ld_lld)
    build = find_build(args.cache, args.program)
    env = dict(os.environ, DTLTO_LOCAL_FALLBACK="0", DTLTO_VERBOSE="1")
    tmp = tempfile.mkdtemp(prefix="dtlto-plugin-bench-")
    try:
        ref = os.path.join(tmp, "inproc")
        link(build, ref, [f"--thinlto-jobs={args.jobs}"], env)
        modes = ["files", "plugin", "plugin-in-linker"]
        walls = {m: [] for m in modes}
        summary = {}
        for _ in range(args.runs):
            for m in modes:
                out = os.path.join(tmp, m)
                wall, err = link(build, out, mode_args(m, args), env)
                walls[m].append(wall)
                summary[m] = [l for l in err.splitlines() if l.startswith("dtlto:")]
                summary[m].append("identical to in-process" if sha(out) == sha(ref)
                                  else "DIFFERS from in-process")
        report = {}
        for m in modes:
            d = os.path.join(tmp, m + "-trace")
            os.mkdir(d)
            link(build, os.path.join(d, "prog"),
                 mode_args(m, args) + [f"--time-trace={d}/trace.json",
                                       "--time-trace-granularity=0"], env)
            scopes = {k: v for k, v in dtlto_scopes(f"{d}/trace.json").items()
                      if k not in NOT_ENGINE}
            s = os.path.join(tmp, m + "-saved")
            os.mkdir(s)
            link(build, os.path.join(s, "prog"), mode_args(m, args) + ["--save-temps"], env)
            files = [f for f in os.listdir(s) if OURS.search(f)]
            report[m] = {
                "wall_median": statistics.median(walls[m]),
                "wall_range": [min(walls[m]), max(walls[m])],
                "engine_scopes_ms": {k: round(v["seconds"] * 1000, 1)
                                     for k, v in sorted(scopes.items())},
                "engine_ms": round(sum(scopes[k]["seconds"] for k in ENGINE
                                       if k in scopes) * 1000, 1),
                "files_of_ours": len(files),
                "bytes_of_ours": sum(os.path.getsize(os.path.join(s, f)) for f in files),
                "summary": summary[m],
            }
        json.dump({"program": args.program, "jobs": args.jobs, "runs": args.runs,
                   "modes": report}, sys.stdout, indent=1)
        print()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
