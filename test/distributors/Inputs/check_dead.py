"""check_dead.py PIDFILE...: succeed when every recorded process is gone.

A process counts as gone when /proc has no entry for it or it is a zombie
(killed, waiting for a reaper we do not control). Waits a bounded time for
processes that were sent SIGKILL but have not finished dying yet.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "Inputs"))
import procfs  # noqa: E402


def main():
    pids = {path: int(open(path).read()) for path in sys.argv[1:]}
    # A hang guard: returns once all are gone.
    procfs.wait_until(lambda: not any(procfs.alive(pid) for pid in pids.values()), 120,
                      step=0.02)
    living = [f"{path} ({pid})" for path, pid in pids.items() if procfs.alive(pid)]
    for entry in living:
        print(f"still running: {entry}")
    print(f"dead: {len(pids) - len(living)} of {len(pids)}")
    return 1 if living else 0


if __name__ == "__main__":
    sys.exit(main())
