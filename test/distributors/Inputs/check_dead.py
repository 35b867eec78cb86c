"""check_dead.py PIDFILE...: succeed when every recorded process is gone.

A process counts as gone when /proc has no entry for it or it is a zombie
(killed, waiting for a reaper we do not control). Waits a bounded time for
processes that were sent SIGKILL but have not finished dying yet.
"""

import sys
import time


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def main():
    pids = {path: int(open(path).read()) for path in sys.argv[1:]}
    deadline = time.monotonic() + 120  # a hang guard: returns once all are gone
    while any(alive(pid) for pid in pids.values()) and time.monotonic() < deadline:
        time.sleep(0.02)
    living = [f"{path} ({pid})" for path, pid in pids.items() if alive(pid)]
    for entry in living:
        print(f"still running: {entry}")
    print(f"dead: {len(pids) - len(living)} of {len(pids)}")
    return 1 if living else 0


if __name__ == "__main__":
    sys.exit(main())
