"""First process of a test worker, inside its own namespaces.

fixture.py starts it as
  unshare --net --mount --uts --pid --fork --kill-child --mount-proc \
          --propagation private python3 worker_boot.py ... -- java ...
so it is pid 1 of a fresh pid namespace, with its own network (configured
from outside while we wait on --ready-fd), hostname and mount table. Here
it hides the build directory under an empty tmpfs, so the worker can only
know the files it was sent, and then becomes the worker itself.
"""

import argparse
import ctypes
import os
import signal
import socket
import subprocess
import sys

PR_SET_PDEATHSIG = 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--ready-fd", type=int, required=True,
                   help="read until EOF: the fixture closes it once the network is up")
    p.add_argument("--hostname", required=True)
    p.add_argument("--hide", action="append", default=[],
                   help="directory to cover with an empty tmpfs (repeatable)")
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command

    while os.read(args.ready_fd, 64):
        pass
    os.close(args.ready_fd)

    socket.sethostname(args.hostname)
    for path in args.hide:
        if not os.path.isdir(path):
            continue
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", path],
                       check=True)
        if os.listdir(path):
            print(f"worker {args.hostname}: {path} is not empty after mounting", flush=True)
            return 1
        print(f"worker {args.hostname}: {path} hidden (empty tmpfs)", flush=True)
    # If unshare, our parent, dies, so do we (and with us, pid 1, the whole
    # namespace).
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    sys.stdout.flush()
    os.execvp(command[0], command)


if __name__ == "__main__":
    sys.exit(main())
