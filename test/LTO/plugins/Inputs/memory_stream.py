"""Streams jobs to one `dtlto-backend --memory` worker the way the local
plugin does: every job written while the worker still reads the ones
before it, so that its standard input always has the next job waiting.
Each job sends a module of SIZE bytes that is not bitcode, so it fails at
once, naming the module, and the worker keeps none of it.

  memory_stream.py BACKEND CONFIG JOBS SIZE

Prints how many jobs failed as expected, and how much the worker's peak
resident memory (VmHWM) grew from its first answer to its last, in MiB.
A worker that keeps what it reads grows by about JOBS x SIZE.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "Inputs"))
import procfs  # noqa: E402


def peak_mib(pid):
    kib = procfs.peak_rss_kib(pid)
    if kib is None:
        sys.exit("memory_stream.py: no VmHWM in /proc/PID/status")
    return kib / 1024


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("backend")
    p.add_argument("config", help="a dtlto-backend configuration file")
    p.add_argument("jobs", type=int)
    p.add_argument("size", type=int, help="bytes of each job's module")
    args = p.parse_args()
    errors = tempfile.TemporaryFile()
    worker = subprocess.Popen([args.backend, "--memory"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=errors)
    config = open(args.config, "rb").read()
    junk = b"x" * args.size

    def send():
        worker.stdin.write(json.dumps({"config": len(config)}).encode() + b"\n" + config)
        for n in range(args.jobs):
            inputs = [{"name": f"junk{n}.o", "size": len(junk)},
                      {"name": f"junk{n}.thinlto.bc", "size": 0}]
            worker.stdin.write(json.dumps({"inputs": inputs}).encode() + b"\n" + junk)
        worker.stdin.flush()

    writer = threading.Thread(target=send)
    writer.start()
    failed, first = 0, None
    for n in range(args.jobs):
        line = worker.stdout.readline()
        if not line:
            break
        reply = json.loads(line)
        if not reply.get("ok") and f"'junk{n}.o' holds no ThinLTO module" in reply["error"]:
            failed += 1
        if first is None:
            first = peak_mib(worker.pid)
    # Before its input ends: the worker is still there to be read.
    last = peak_mib(worker.pid)
    writer.join()
    worker.stdin.close()
    worker.wait()
    print(f"{failed} of {args.jobs} jobs failed naming their module")
    print(f"worker exit: {worker.returncode}")
    grew = last - (first or last)
    limit = 2 * args.size / 2**20 + 2
    print("peak memory grew by at most 2 modules and 2 MiB" if grew <= limit
          else f"peak memory grew by {grew:.1f} MiB")
    errors.seek(0)
    sys.stdout.write(errors.read().decode())


if __name__ == "__main__":
    main()
