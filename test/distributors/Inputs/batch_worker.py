"""A stand-in for dtlto-backend --batch, for batch.test and batch-cancel.test.

  batch_worker.py [common args...] --batch

Reads one job per stdin line (a JSON array: module, -fthinlto-index=S, -o,
OUT), writes one reply line per job. Like dtlto-backend, a reply says where
the job's output on stderr ends ("stderr_end"), unless the environment has
BATCH_WORKER_NO_OFFSETS=1; such a worker must get a job only once it has
replied to the last one, and notes in ./early each job that had another
line behind it on stdin. What a job does depends on its module:

  fail*   prints to stderr and replies an error
  crash*  prints to stderr and kills the worker
  mute*   prints to stderr, closes its stdout and lives on, never replying
  hold*   writes OUT half, records the worker's pid in ./held, never replies
  noout*  replies ok without writing OUT
  warn*   prints a warning to stderr as it starts, then as anything else
  ahead-fail*  as fail*, but first waits for its next job's line and starts
          that job (its warning, if it is a warn* job) before replying: the
          next job's output is on stderr before this reply is read
  gate*   waits for the next job's line, writes that job's module to
          ./queued, waits for ./open-gate, then as anything else
  deep*   waits until three jobs' lines are queued behind it, writes their
          modules to ./queued, then as anything else
  anything else writes OUT and replies ok.

Each worker records its pid in ./workers.
"""
import json
import os
import select
import signal
import sys
import time

OFFSETS = os.environ.get("BATCH_WORKER_NO_OFFSETS") != "1"
buffered = b""


def next_line():
    """The next job line, or None at the end of stdin."""
    global buffered
    while b"\n" not in buffered:
        data = os.read(0, 65536)
        if not data:
            return None
        buffered += data
    line, buffered = buffered.split(b"\n", 1)
    return json.loads(line)


def wait_for_lines(n):
    """The modules of the next n jobs, without taking their lines from the
    queue (fewer at the end of stdin)."""
    global buffered
    while buffered.count(b"\n") < n:
        data = os.read(0, 65536)
        if not data:
            break
        buffered += data
    return [json.loads(line)[0] for line in buffered.split(b"\n")[:n] if line]


def wait_for_next_line():
    """The next job's module without taking its line from the queue ("" at
    the end of stdin)."""
    return (wait_for_lines(1) or [""])[0]


def say(text: str) -> None:
    print(f"worker says: {text}", file=sys.stderr, flush=True)


def stderr_end() -> int:
    return os.lseek(2, 0, os.SEEK_CUR)


with open("workers", "a") as f:
    f.write(f"{os.getpid()}\n")
warned = set()  # jobs started early by an ahead-fail* job
while (args := next_line()) is not None:
    module, out = args[0], args[args.index("-o") + 1]
    if not OFFSETS and (buffered or select.select([0], [], [], 0)[0]):
        with open("early", "a") as f:
            f.write(f"another job came before {module} was answered\n")
    if module.startswith("warn") and module not in warned:
        say(f"warning for {module}")
    end = None
    if module.startswith("ahead-fail"):
        say(f"cannot compile {module}")
        end = stderr_end()
        upcoming = wait_for_next_line()
        if upcoming.startswith("warn"):
            say(f"warning for {upcoming}")
            warned.add(upcoming)
        reply = {"ok": False, "error": f"{module}: compile error"}
    elif module.startswith("fail"):
        say(f"cannot compile {module}")
        reply = {"ok": False, "error": f"{module}: compile error"}
    elif module.startswith("hold"):
        with open(out, "w") as f:
            f.write("half an obj")
        with open("held.tmp", "w") as f:
            f.write(f"{os.getpid()}\n")
        os.rename("held.tmp", "held")
        while True:
            signal.pause()
    elif module.startswith("noout"):
        reply = {"ok": True}
    elif module.startswith("mute"):
        say("closing my stdout")
        os.close(1)
        while True:
            signal.pause()
    elif module.startswith("crash"):
        say("about to crash")
        os.kill(os.getpid(), signal.SIGKILL)
    else:
        if module.startswith("deep"):
            with open("queued.tmp", "w") as f:
                f.write(" ".join(wait_for_lines(3)) + "\n")
            os.rename("queued.tmp", "queued")
        if module.startswith("gate"):
            with open("queued.tmp", "w") as f:
                f.write(wait_for_next_line() + "\n")
            os.rename("queued.tmp", "queued")
            while not os.path.exists("open-gate"):
                time.sleep(0.01)
        with open(out, "w") as f:
            f.write(f"object of {module}\n")
        reply = {"ok": True}
    if OFFSETS:
        reply["stderr_end"] = stderr_end() if end is None else end
    print(json.dumps(reply), flush=True)
