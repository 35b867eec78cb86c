#!/usr/bin/env python3
"""Play the linker's side of the streaming protocol for a distributor, step
by step, so that a test can cancel a job at a moment it knows (a job held
on its host), which a real link cannot promise.

  linker_feed.py --events=FILE [--common=ARG]... -- DISTRIBUTOR [ARG...] < STEPS

Writes feed.json (a streaming manifest without jobs, common.args from
--common) and its side file in the current directory, starts the
distributor on it with DTLTO_JOBS_FD and DTLTO_EVENTS_FD, then reads one
step a line from stdin:

  job ID {JSON}          send a job record: the JSON's keys and this id
  wait-event ID EVENT    until the distributor reports EVENT for job ID
  wait-file GLOB         until a file matches GLOB ($VARS expanded)
  cancel ID              send {"cancel": ID}
  end                    send the end record

Each event line the distributor writes goes to FILE. Once the steps are
done the channel is closed and the distributor waited for; prints
"exit N", its exit code. A distributor that exits while a step waits ends
the waiting: "gave up at: STEP", exit 1. So does a step still waiting
after WAIT_LIMIT seconds (a hang guard: the distributor is killed).
"""

import argparse
import glob
import json
import os
import select
import subprocess
import sys
import time

WAIT_LIMIT = 300


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", required=True, metavar="FILE",
                        help="where the distributor's event lines go")
    parser.add_argument("--common", action="append", default=[], metavar="ARG",
                        help="one word of common.args (the compiler first); repeatable")
    parser.add_argument("distributor", nargs=argparse.REMAINDER,
                        help="-- then the distributor and its arguments")
    args = parser.parse_args()
    command = args.distributor[1:] if args.distributor[:1] == ["--"] else args.distributor
    if not command or not args.common:
        parser.error("give --common and the distributor after --")

    with open("feed.json", "w") as f:
        json.dump({"common": {"linker_output": "feed", "args": args.common, "inputs": []},
                   "jobs": []}, f)
    with open("feed.dtlto.json", "w") as f:
        json.dump({"engine": "dtlto", "version": "test", "jobs": 0, "input_bytes": [],
                   "stream": 1}, f)
    jobs_r, jobs_w = os.pipe()
    events_r, events_w = os.pipe()
    env = dict(os.environ, DTLTO_JOBS_FD=str(jobs_r), DTLTO_EVENTS_FD=str(events_w))
    proc = subprocess.Popen(command + ["feed.json"], env=env, pass_fds=(jobs_r, events_w))
    os.close(jobs_r)
    os.close(events_w)
    seen = []
    pending = b""
    log = open(args.events, "ab")

    def read_events(timeout) -> bool:
        """Read what is there (waiting up to timeout); False at the end."""
        nonlocal pending
        if not select.select([events_r], [], [], timeout)[0]:
            return True
        chunk = os.read(events_r, 65536)
        if not chunk:
            return False
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            log.write(line + b"\n")
            log.flush()
            seen.append(json.loads(line))
        return True

    open_channel = True
    for step in sys.stdin:
        words = step.split(None, 2)
        if not words:
            continue
        if words[0] == "job":
            record = dict(json.loads(words[2]), id=int(words[1]))
            os.write(jobs_w, json.dumps(record).encode() + b"\n")
        elif words[0] == "cancel":
            os.write(jobs_w, json.dumps({"cancel": int(words[1])}).encode() + b"\n")
        elif words[0] == "end":
            os.write(jobs_w, b'{"end": true}\n')
        elif words[0] in ("wait-event", "wait-file"):
            def done() -> bool:
                if words[0] == "wait-file":
                    return bool(glob.glob(os.path.expandvars(words[1].strip())))
                return any(e.get("id") == int(words[1]) and e.get("event") == words[2].strip()
                           for e in seen)
            deadline = time.monotonic() + WAIT_LIMIT
            while not done():
                if time.monotonic() > deadline:
                    print(f"gave up at: {step.strip()} (still waiting after {WAIT_LIMIT} s)")
                    proc.kill()
                    proc.wait()
                    return 1
                # Events within 50 ms; a file is looked for as often.
                if not open_channel or not read_events(0.05):
                    open_channel = False
                    if proc.poll() is not None:
                        print(f"gave up at: {step.strip()}")
                        proc.wait()
                        return 1
                    time.sleep(0.05)
        else:
            parser.error(f"unknown step {step.strip()!r}")
    os.close(jobs_w)
    while open_channel and read_events(None):
        pass
    print(f"exit {proc.wait()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
