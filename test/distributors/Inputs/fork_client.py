"""Drives dtltodist.forkserver directly, for what local.py cannot reach in a
test: a short wait for "ready", and a request longer than the server's
buffer (the client never sends one: its own check and the socket's size
stop it first).

  fork_client.py start --timeout S COMPILER LIBRARY
      prints "started" or "not started: WHY"
  fork_client.py truncated COMPILER LIBRARY DIR
      sends a request of 1.5 MiB through a socket made big enough for it,
      prints the server's answer, then runs one job (COMPILER's arguments
      MODULE -fthinlto-index=SHARD -o OUT, in DIR) and prints its status
"""
import argparse
import array
import os
import socket
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                "utils", "dtlto"))
from dtltodist import forkserver  # noqa: E402


def start(compiler, library):
    server, why = forkserver.ForkServer.start(compiler, library)
    if server is None:
        sys.exit(f"not started: {why}")
    return server


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("start", help="start a server with a short wait")
    p.add_argument("--timeout", type=float, required=True)
    p.add_argument("compiler")
    p.add_argument("library")
    p = sub.add_parser("truncated", help="a request longer than the server takes")
    p.add_argument("compiler")
    p.add_argument("library")
    p.add_argument("dir")
    args = parser.parse_args()

    if args.what == "start":
        forkserver.READY_TIMEOUT = args.timeout
        start(args.compiler, args.library).close()
        print("started")
        return

    server = start(args.compiler, args.library)
    # Root may raise a socket's buffer past the system's limit.
    so_sndbufforce = 32  # Linux; the socket module does not name it
    server.sock.setsockopt(socket.SOL_SOCKET, so_sndbufforce, 8 << 20)
    request = forkserver.run_request(999, "/", ["cc", "x" * (3 << 19)])
    with open(os.devnull, "rb") as null:
        fds = array.array("i", [null.fileno()] * 3)
        server.sock.sendmsg([request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
    print("answer:", server.sock.recv(512).decode())
    out = os.path.join(args.dir, "after.obj")
    with open(os.devnull, "rb") as null:
        child = server.spawn([args.compiler, "after", "-fthinlto-index=x", "-o", out],
                             args.dir, null, sys.stdout, sys.stderr)
        print("next job:", child.wait())
    server.close()


if __name__ == "__main__":
    main()
