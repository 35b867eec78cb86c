"""Processes a test left behind: are they gone?

  procs.py PIDFILE

PIDFILE holds pids, space-separated (hang_dist.py writes its own and its
child's). Prints "pid <i>: gone|alive" for each, after giving it up to 10 s
to go. interrupt.py uses the same functions.
"""
import sys
import time


def wait_for(predicate, timeout):
    """Polls predicate until it holds (True) or timeout seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def gone(pid):
    # A killed process whose parent has gone stays a zombie until the
    # container's init reaps it, if ever: a zombie counts as gone.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return True


def report(pidfile):
    with open(pidfile, encoding="ascii") as f:
        pids = [int(p) for p in f.read().split()]
    for i, pid in enumerate(pids):
        state = "gone" if wait_for(lambda: gone(pid), 10) else "alive"
        print(f"pid {i}: {state}")


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    report(sys.argv[1])
