"""A stand-in for dtlto-backend --batch, for batch.test.

  batch_worker.py [common args...] --batch

Reads one job per stdin line (a JSON array: module, -fthinlto-index=S, -o,
OUT), writes one reply line per job. What a job does depends on its module:
fail* replies an error after printing to stderr, crash* kills the worker,
hold* writes OUT half, records the worker's pid in ./held and never
replies, noout* replies ok without writing OUT, anything else writes OUT.
Each worker records its pid in ./workers.
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
    elif module.startswith("crash"):
        print("worker says: about to crash", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    else:
        with open(out, "w") as f:
            f.write(f"object of {module}\n")
        reply = {"ok": True}
    print(json.dumps(reply), flush=True)
