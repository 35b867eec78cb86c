"""Drives one dtlto-backend --batch worker for backend.test's CACHE case: m1's
job (the worker opens m1.o), then m1.o moved away, then hub's job, which
imports from m1. A worker that kept m1.o needs no file; one that dropped it
cannot read it. Prints both replies; puts m1.o back. After m1's job it also
prints whether m1.o is mapped into the worker (kept files are mapped, not
read into the heap), the names of the worker's threads (the job ran on a
job thread of its own, named as the worker), and which of them waits for the
next job on stdin: the job thread, which runs the whole batch loop, so that
no job is handed from one thread to another.

  cache_drive.py BACKEND CONFIG DIR   (DIR: the kept shards)
"""
import glob
import os
import subprocess
import sys
import json

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "Inputs"))
import procfs  # noqa: E402

backend, config, out = sys.argv[1:4]


def job(module, object_name):
    shard = glob.glob(os.path.join(out, module + ".*.native.o.thinlto.bc"))[0]
    return [module + ".o", "-fthinlto-index=" + shard, "-o",
            os.path.join(out, object_name + ".o")]


w = subprocess.Popen([backend, f"--config={config}", "--batch"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def run(args):
    w.stdin.write((json.dumps(args) + "\n").encode())
    w.stdin.flush()
    print(w.stdout.readline().decode().strip())


def mapped(name):
    return any(path.endswith("/" + name) for path in procfs.mapped_paths(w.pid) or [])


def threads():
    return " ".join(sorted(procfs.thread_names(w.pid) or []))


run(job("m1", "m1.cache"))
# The worker now waits for its next line: what it holds stays put.
print(f"m1.o mapped: {'yes' if mapped('m1.o') else 'no'}")
print(f"threads: {threads()}")
print(f"stdin read by: {procfs.reading_thread(w.pid)}")
os.rename("m1.o", "m1.o.away")
try:
    run(job("hub", "hub.cache"))
finally:
    os.rename("m1.o.away", "m1.o")
w.stdin.close()
sys.exit(w.wait())
