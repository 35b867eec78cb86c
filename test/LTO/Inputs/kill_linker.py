"""kill_linker.py DIR -- LINK COMMAND...: start the link, wait until its
distributor runs (its manifest is in DIR and a child of the linker runs),
then SIGKILL the linker, as the OOM killer would. The distributor, which
nothing stops then, is killed too (with its process group), so that the
test leaves no process behind; prints what the link left in DIR."""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "Inputs"))
import procfs  # noqa: E402


def children(pid):
    """(pid, process group) of each child of pid."""
    return [(child, row.pgrp) for child, row in procfs.snapshot().items()
            if row.ppid == pid]


def main():
    d, cmd = sys.argv[1], sys.argv[3:]
    linker = subprocess.Popen(cmd, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300  # a hang guard only
    while time.monotonic() < deadline and linker.poll() is None:
        kids = children(linker.pid)
        if kids and any(n.endswith(".dist-file.json") for n in os.listdir(d)):
            break
        time.sleep(0.05)
    kids = children(linker.pid)
    os.kill(linker.pid, signal.SIGKILL)
    linker.wait()
    own = os.getpgid(0)
    for pid, group in kids:
        # A child seen before it left our group (posix_spawn's child sets
        # its own just before exec) is killed alone: its group is still ours,
        # and lit's with it.
        if group == own:
            os.kill(pid, signal.SIGKILL)
        else:
            os.killpg(group, signal.SIGKILL)
    print(f"killed the linker: {'yes' if linker.returncode == -signal.SIGKILL else 'NO'}")
    for name in sorted(os.listdir(d)):
        print(f"left: {name}")


if __name__ == "__main__":
    main()
