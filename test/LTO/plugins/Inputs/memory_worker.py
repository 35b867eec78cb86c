"""Drives one `dtlto-backend --memory` worker by hand, as the local plugin
does (docs/plugins.md, "The local plugin"): the configuration once, then
jobs.

  memory_worker.py BACKEND CONFIG JOBS...

Each JOB is MODULE,SHARD[,IMPORTED...][;drop=NAME] where each input is
a file, sent with its bytes, @NAME, named as held, or NAME#SIZE, which
announces SIZE bytes and sends none (stdin is then closed, so a worker that
waits for them gets its end). Every name is a
pattern that must match exactly one file: * and ? are wildcards, anything
else (the brackets of archive member names) is literal. For each job it
prints the worker's answer ("ok, N bytes" or the error), and at the end how
the worker exited and what it printed on stderr. With --reader, after the
jobs it also prints which of the worker's threads waits on stdin for the
next one (the job thread runs the whole loop).
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "Inputs"))
import procfs  # noqa: E402


def one(pattern):
    # glob.escape makes [ literal, and * and ? too: give those two back.
    found = glob.glob(glob.escape(pattern).replace("[*]", "*").replace("[?]", "?"))
    if len(found) != 1:
        sys.exit(f"memory_worker.py: '{pattern}' matches {len(found)} files, not one")
    return found[0]


def read_line(out):
    line = out.readline()
    return json.loads(line) if line else None


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("backend")
    p.add_argument("config")
    p.add_argument("jobs", nargs="+")
    p.add_argument("--reader", action="store_true",
                   help="after the jobs, print which thread waits on stdin")
    args = p.parse_args()
    # Its stderr goes to a file, read at the end: a pipe nobody reads while
    # the jobs run would stop a worker that says much there.
    errors = tempfile.TemporaryFile()
    worker = subprocess.Popen([args.backend, "--memory"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=errors)
    config = open(one(args.config), "rb").read()
    worker.stdin.write(json.dumps({"config": len(config)}).encode() + b"\n" + config)
    for n, job in enumerate(args.jobs, 1):
        files, _, drop = job.partition(";drop=")
        inputs, data, claimed = [], b"", False
        for f in files.split(","):
            if f.startswith("@"):
                inputs.append({"name": one(f[1:]), "held": True})
            elif "#" in f:
                name, _, size = f.partition("#")
                inputs.append({"name": name, "size": int(size)})
                claimed = True
            else:
                f = one(f)
                bytes_ = open(f, "rb").read()
                inputs.append({"name": f, "size": len(bytes_)})
                data += bytes_
        msg = {"drop": [one(drop)] if drop else [], "inputs": inputs}
        try:
            worker.stdin.write(json.dumps(msg).encode() + b"\n" + data)
            worker.stdin.flush()
            if claimed:
                worker.stdin.close()
        except BrokenPipeError:
            print(f"job {n}: the worker is gone")
            break
        reply = read_line(worker.stdout)
        if reply is None:
            print(f"job {n}: no answer")
            break
        if reply.get("ok"):
            worker.stdout.read(reply["bytes"])
            print(f"job {n}: ok, {reply['bytes']} bytes")
        else:
            print(f"job {n}: failed: {reply['error']}")
    if args.reader:
        print(f"stdin read by: {procfs.reading_thread(worker.pid)}")
    try:
        if not worker.stdin.closed:
            worker.stdin.close()
    except BrokenPipeError:
        pass
    print(f"worker exit: {worker.wait()}")
    errors.seek(0)
    sys.stdout.write(errors.read().decode())


if __name__ == "__main__":
    main()
