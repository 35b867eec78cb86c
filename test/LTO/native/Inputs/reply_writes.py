"""What a batch worker's replies looked like on the wire, for backend.test.

  reply_writes.py STRACE_LOG REPLIES T0 T1

STRACE_LOG is `strace -s 4096 -e trace=write` of the worker; REPLIES its
stdout; T0 and T1 files holding time.time() before and after it ran.
Prints how many reply lines each write to stdout carried, then whether
every reply's "t" (when its job ended) lies between T0 and T1, in job
order.
"""
import json
import re
import sys

log, replies, t0, t1 = sys.argv[1:5]
writes = re.findall(r'^(?:\d+ +)?write\(1, "(.*)", \d+\) = \d+$', open(log).read(), re.M)
print("replies per write:", " ".join(str(w.count("\\n")) for w in writes))
times = [json.loads(line)["t"] for line in open(replies)]
lo, hi = float(open(t0).read()), float(open(t1).read())
ok = all(lo <= t <= hi for t in times) and times == sorted(times)
print(f"{len(times)} reply times", "in order, within the run" if ok else f"WRONG: {times}")
