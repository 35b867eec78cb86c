"""Processes a test left behind: are they gone?

  procs.py PIDFILE

PIDFILE holds pids, space-separated (hang_dist.py writes its own and its
child's). Prints "pid <i>: gone|alive" for each, after giving it up to 10 s
to go. interrupt.py uses report() too.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "Inputs"))
import procfs  # noqa: E402


def report(pidfile):
    with open(pidfile, encoding="ascii") as f:
        pids = [int(p) for p in f.read().split()]
    for i, pid in enumerate(pids):
        # A killed process whose parent has gone stays a zombie until the
        # container's init reaps it, if ever: a zombie counts as gone.
        gone = procfs.wait_until(lambda: not procfs.alive(pid), 10)
        print(f"pid {i}: {'gone' if gone else 'alive'}")


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    report(sys.argv[1])
