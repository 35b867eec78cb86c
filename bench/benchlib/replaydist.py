#!/usr/bin/env python3
"""A distributor that serves each job's object from a store (bench/engine-replay.py).

  replaydist.py --store DIR -- DISTRIBUTOR [ARGS...] MANIFEST

One-shot only (the link runs with DTLTO_STREAM=0). When the store holds
every job's object, each is copied to the job's output and reported done:
the link then costs what the engine and LLD cost, with no compiler running
beside them. Otherwise the real distributor after `--` runs the manifest
and every job's object is stored for the next link.

An object's key is its output's file name without the link's output name
in front and without the process id the engine puts in it
(`<stem>.<task>.<pid>.native.o`), so a relink of the same program and
output finds it.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "utils", "dtlto"))
sys.dont_write_bytecode = True

from dtltodist import manifest as manifest_mod  # noqa: E402
from dtltodist.events import Events  # noqa: E402
from dtltodist.runner import output_problem  # noqa: E402

PID = re.compile(r"\.\d+\.native\.o$")


def key(m, job):
    name = PID.sub("", os.path.basename(job.object))
    prefix = os.path.basename(m.linker_output) + "."
    return (name[len(prefix):] if name.startswith(prefix) else name) + ".o"


def store(obj, path):
    """Copy obj to path whole or not at all."""
    try:
        shutil.copyfile(obj, path + ".tmp")
        os.replace(path + ".tmp", path)
    finally:
        if os.path.exists(path + ".tmp"):
            os.remove(path + ".tmp")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n", 2)[2])
    p.add_argument("--store", required=True, help="the directory of stored objects")
    p.add_argument("rest", nargs=argparse.REMAINDER,
                   help="-- the real distributor and its arguments, then the manifest")
    args = p.parse_args()
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    if len(rest) < 2:
        p.error("needs the real distributor after --, and the manifest last")
    m = manifest_mod.load(rest[-1])
    stored = [os.path.join(args.store, key(m, j)) for j in m.jobs]
    if not all(os.path.exists(s) for s in stored):
        code = subprocess.run(rest).returncode
        if code:
            return code
        # A distributor that exits 0 with an object missing or empty is the
        # link's to report; the store takes nothing from it, or every later
        # relink would be served the bad object.
        bad = [(i, j.object, why) for i, j in enumerate(m.jobs) if (why := output_problem(j.object))]
        if bad:
            i, obj, why = bad[0]
            print(f"replaydist: the distributor exited 0 with no usable object for job {i} "
                  f"({obj} {why}) and {len(bad) - 1} more: nothing stored", file=sys.stderr)
            return 1
        os.makedirs(args.store, exist_ok=True)
        for job, path in zip(m.jobs, stored):
            store(job.object, path)
        print(f"replaydist: stored {len(m.jobs)} objects in {args.store}", file=sys.stderr)
        return 0
    events = Events()
    for i, (job, path) in enumerate(zip(m.jobs, stored)):
        shutil.copyfile(path, job.object)
        events.started(i)
        events.done(i)
    return 0


if __name__ == "__main__":
    sys.exit(main())
