"""A distributor that hangs, for tests that interrupt the linker.

  hang_dist.py --marker PATH [--resume-when FILE [--keep-child]
               --then DIST [ARGS...]] MANIFEST

It writes every job's output (as if some jobs had finished), starts a child
that sleeps (as if a job were running), and then writes its own pid and the
child's to PATH (atomically, once all that is done). Then it sleeps until it
is stopped; with --resume-when, only until FILE exists (at most 60 s), and
then it stops its child (unless --keep-child: a job left running) and
replaces itself with `DIST ARGS... MANIFEST`.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time


def quit_quietly(signum, frame):
    # Stopped as a distributor should be: no traceback in the test's output.
    sys.exit(128 + signum)


def main():
    *options, manifest = sys.argv[1:]
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--marker", required=True)
    parser.add_argument("--resume-when", metavar="FILE")
    parser.add_argument("--keep-child", action="store_true")
    parser.add_argument("--then", nargs=argparse.REMAINDER, default=[])
    args = parser.parse_args(options)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) != signal.SIG_IGN:
            signal.signal(sig, quit_quietly)

    with open(manifest, encoding="utf-8") as f:
        jobs = json.load(f)["jobs"]
    for job in jobs:
        for out in job["outputs"]:
            with open(out, "w", encoding="utf-8") as f:
                f.write("half-done\n")
    # sleep(1) is fully started once exec'd; a Python child interrupted while
    # it initializes would print a fatal error.
    child = subprocess.Popen(["sleep", "120"])
    with open(args.marker + ".tmp", "w", encoding="utf-8") as f:
        f.write(f"{os.getpid()} {child.pid}\n")
    os.rename(args.marker + ".tmp", args.marker)

    deadline = time.monotonic() + (60 if args.resume_when else 120)
    while time.monotonic() < deadline:
        if args.resume_when and os.path.exists(args.resume_when):
            break
        time.sleep(0.01)
    if not args.keep_child:
        child.kill()
        child.wait()
    if args.then:
        os.execv(args.then[0], args.then + [manifest])
    sys.exit("hang_dist.py: never resumed")


if __name__ == "__main__":
    main()
