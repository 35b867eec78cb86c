"""A stand-in for dtlto-backend --batch, for batch.test.

  batch_worker.py [common args...] --batch

Reads one job per stdin line (a JSON array: module, -fthinlto-index=S, -o,
OUT), writes one reply line per job. What a job does depends on its module:
fail* replies an error after printing to stderr, crash* kills the worker,
anything else writes OUT. Each worker records its pid in ./workers.
"""
import json
import os
import signal
import sys

with open("workers", "a") as f:
    f.write(f"{os.getpid()}\n")
for line in sys.stdin:
    args = json.loads(line)
    module, out = args[0], args[args.index("-o") + 1]
    if module.startswith("fail"):
        print(f"worker says: cannot compile {module}", file=sys.stderr, flush=True)
        reply = {"ok": False, "error": f"{module}: compile error"}
    elif module.startswith("crash"):
        print("worker says: about to crash", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    else:
        with open(out, "w") as f:
            f.write(f"object of {module}\n")
        reply = {"ok": True}
    print(json.dumps(reply), flush=True)
