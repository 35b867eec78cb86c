"""A distributor that speaks the channels of docs/manifest.md by hand, for
the engine's tests (dtltodist has its own implementation; this one is kept
independent of it, and small).

  streamdist.py [--log FILE] [--hold TEXT]... [--fail TEXT]... [--bad-line]
                [--exit-after N] [--ignore-cancels] [--silent]
                [--t-offset SECONDS] MANIFEST

dtlto-stream-protocol: 1   (this line makes the engine stream to it)

Streams when DTLTO_JOBS_FD is set, else runs the manifest's jobs. Reports
started and done (or failed) for every job on DTLTO_EVENTS_FD, runs two jobs
at once, and logs what it got to --log, one line each: "mode stream" or
"mode manifest", "job <id> <module>", "cancel <id>", "end", "exit <code>".
Jobs whose module path contains a --hold text are reported started and then
never run: they finish only when cancelled. Jobs matching --fail are
reported failed (retry false) and write nothing. --bad-line writes a line
that is no event first; --exit-after N exits 3 after N jobs have finished;
--ignore-cancels logs cancels and does nothing else (held jobs stay held).
--silent writes no event at all (a farm slow to answer: held jobs then
end only by their cancels, and it exits once all are cancelled).
--t-offset shifts every event's "t" by SECONDS from when it is written:
negative, it says the event happened before the engine handed the job
over; positive, that it happens in the future.
"""
import argparse
import json
import os
import select
import subprocess
import sys
import time

p = argparse.ArgumentParser(description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--log")
p.add_argument("--hold", action="append", default=[])
p.add_argument("--fail", action="append", default=[])
p.add_argument("--bad-line", action="store_true")
p.add_argument("--ignore-cancels", action="store_true")
p.add_argument("--exit-after", type=int)
p.add_argument("--silent", action="store_true")
p.add_argument("--t-offset", type=float, default=0.0)
p.add_argument("manifest")
a = p.parse_args()

log = open(a.log, "a", buffering=1) if a.log else None


def note(text):
    if log:
        log.write(text + "\n")


with open(a.manifest) as f:
    manifest = json.load(f)
common = manifest["common"]["args"]
events = os.fdopen(int(os.environ["DTLTO_EVENTS_FD"]), "w", buffering=1)
jobs_fd = os.environ.get("DTLTO_JOBS_FD")


def event(job_id, what, **more):
    if a.silent:
        return
    t = time.time() + a.t_offset
    events.write(json.dumps(dict(id=job_id, event=what, t=t, **more)) + "\n")


if a.bad_line:
    events.write("this is no event\n")

queue = []       # (id, job) to run
held = {}        # id -> job, waiting for a cancel
running = {}     # Popen -> id
finished = 0
ended = jobs_fd is None   # no more jobs
closed = jobs_fd is None  # the job channel at its end: cancels come until then


def take(job_id, job):
    module = job["inputs"][0]
    note(f"job {job_id} {os.path.basename(module)}")
    event(job_id, "accepted")
    if any(t in module for t in a.fail):
        event(job_id, "failed", worker="streamdist/0", reason="told to fail", retry=False)
        return
    event(job_id, "started", worker="streamdist/0")
    if any(t in module for t in a.hold):
        held[job_id] = job
    else:
        queue.append((job_id, job))


if jobs_fd is None:
    note("mode manifest")
    for i, job in enumerate(manifest["jobs"]):
        take(i, job)
    feed = None
else:
    note("mode stream")
    feed = os.fdopen(int(jobs_fd), "rb", buffering=0)
pending = b""


def code():
    global finished
    while True:
        while queue and len(running) < 2:
            job_id, job = queue.pop(0)
            running[subprocess.Popen(common + job["args"])] = job_id
        if ended and not queue and not running and not held:
            return 0
        if a.exit_after is not None and finished >= a.exit_after:
            return 3
        readable = []
        if feed is not None and not closed:
            readable, _, _ = select.select([feed], [], [], 0.05)
        else:
            time.sleep(0.05)
        if readable:
            chunk = feed.read(65536)
            yield_lines(chunk)
        for proc in [p for p in running if p.poll() is not None]:
            job_id = running.pop(proc)
            finished += 1
            if proc.returncode == 0:
                event(job_id, "done", worker="streamdist/0", compile_s=0.1)
            else:
                event(job_id, "failed", worker="streamdist/0", reason="exit code "
                      + str(proc.returncode), retry=False)


def yield_lines(chunk):
    global pending, ended, closed
    if not chunk:
        ended = closed = True  # the engine closed the channel
        return
    pending += chunk
    while b"\n" in pending:
        line, pending = pending.split(b"\n", 1)
        record = json.loads(line)
        if "end" in record:
            note("end")
            ended = True
        elif "cancel" in record and a.ignore_cancels:
            note(f"ignored cancel {record['cancel']}")
        elif "cancel" in record:
            job_id = record["cancel"]
            note(f"cancel {job_id}")
            if job_id in held:
                del held[job_id]
                event(job_id, "cancelled")
            for i, (qid, _) in enumerate(queue):
                if qid == job_id:
                    del queue[i]
                    event(job_id, "cancelled")
                    break
        else:
            take(record["id"], record)


status = code()
note(f"exit {status}")
sys.exit(status)
