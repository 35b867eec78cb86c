#!/usr/bin/env python3
"""An experiment's distributor: the least orchestration a one-shot DTLTO link
with dtlto-backend can have (bench/cpu-split.py's question, docs/performance.md
"Where native DTLTO's extra CPU goes").

  prefeddist.py [--jobs N] MANIFEST

Starts N `dtlto-backend --batch` workers and writes every job's line to one
of them up front (round robin in manifest order), then waits for them to
exit. Nothing wakes it, or the linker, per job: the link runs one-shot
(DTLTO_STREAM=0) and the linker checks every object at the end. Not a
distributor for users: no events, no retries, no fallback, no jobserver;
a failed job fails the run (exit 1).
"""

import argparse
import json
import os
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "utils", "dtlto"))
sys.dont_write_bytecode = True

from dtltodist import manifest as manifest_mod  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n", 2)[2])
    p.add_argument("--jobs", type=int, default=2, help="workers (default: %(default)s)")
    p.add_argument("manifest")
    args = p.parse_args()
    m = manifest_mod.load(args.manifest)
    if not m.batch_arg:
        sys.exit("prefeddist.py: the remote compiler has no batch mode "
                 "(link with --thinlto-remote-compiler=dtlto-backend)")
    workers = [subprocess.Popen(m.common_args + [m.batch_arg], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE) for _ in range(args.jobs)]

    replies = [[] for _ in workers]

    def feed(worker, jobs):
        # A thread per worker: its stdin may fill while it works.
        try:
            for job in jobs:
                worker.stdin.write(json.dumps(job.args).encode() + b"\n")
            worker.stdin.close()
        except BrokenPipeError:
            pass

    def collect(worker, out):
        # And one reading its replies as they come: a worker whose stdout
        # filled would stop until the one before it had finished.
        out.extend(json.loads(line) for line in worker.stdout)

    threads = [threading.Thread(target=f, args=(w, a))
               for k, w in enumerate(workers)
               for f, a in ((feed, m.jobs[k::args.jobs]), (collect, replies[k]))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    replies = [r for rs in replies for r in rs]
    codes = [w.wait() for w in workers]
    failed = [r.get("error", "failed") for r in replies if not r.get("ok")]
    for why in failed:
        print(f"prefeddist.py: {why}", file=sys.stderr)
    return 1 if failed or any(codes) or len(replies) != len(m.jobs) else 0


if __name__ == "__main__":
    sys.exit(main())
