#!/usr/bin/env python3
"""A test distributor that reports its jobs as the event channel says
(docs/manifest.md, "The event channel"): it runs the jobs one after another,
on two made-up workers (job i on host<i % 2>/0), and writes accepted,
started, done and failed events, one JSON object per line, to the file
descriptor DTLTO_EVENTS_FD the engine gives it (exit 2 without one).

It writes the wire format itself, on purpose: it checks the engine against
the documented format, not against our Python side of it."""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)),
                                "..", "..", "..", "utils", "dtlto"))
from dtltodist import manifest  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--fail-first", metavar="TEXT", default="",
                   help="the first attempt of the jobs whose module contains "
                        "TEXT fails (reported, retried on the other worker)")
    p.add_argument("--lose", metavar="TEXT", default="",
                   help="the jobs whose module contains TEXT are not run: "
                        "reported failed, not retried, no object")
    p.add_argument("--garbage", action="store_true",
                   help="also write lines that are not events")
    p.add_argument("manifest")
    args = p.parse_args()
    m = manifest.load(args.manifest)

    fd = os.environ.get("DTLTO_EVENTS_FD")
    if not fd:
        p.error("DTLTO_EVENTS_FD is not set: run me from a DTLTO link")
    out = os.fdopen(int(fd), "w", buffering=1)

    def event(job, what, **keys):
        out.write(json.dumps(dict(id=job.index, event=what, t=time.time(), **keys)) + "\n")

    start = time.time()
    if args.garbage:
        out.write("this is not an event\n")
        out.write(json.dumps({"id": 10 ** 6, "event": "done"}) + "\n")
    for job in m.jobs:
        event(job, "accepted")
    failed = False
    for job in m.jobs:
        workers = [f"host{job.index % 2}/0", f"host{(job.index + 1) % 2}/0"]
        attempt = 1
        if args.fail_first and args.fail_first in job.module:
            event(job, "started", worker=workers[0], attempt=1,
                  queue_s=time.time() - start, upload_s=0.0)
            event(job, "failed", worker=workers[0], attempt=1,
                  reason="test: the first attempt fails on purpose", retry=True)
            workers.pop(0)
            attempt = 2
        if args.lose and args.lose in job.module:
            event(job, "failed", worker=workers[0], attempt=attempt,
                  reason="test: the job is lost", retry=False)
            failed = True
            continue
        event(job, "started", worker=workers[0], attempt=attempt,
              queue_s=time.time() - start, upload_s=0.0)
        began = time.time()
        r = subprocess.run(job.command)
        if r.returncode:
            event(job, "failed", worker=workers[0], attempt=attempt,
                  reason=f"the compiler exited {r.returncode}", retry=False)
            failed = True
            continue
        event(job, "done", worker=workers[0], attempt=attempt,
              compile_s=time.time() - began, download_s=0.0)
    out.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
