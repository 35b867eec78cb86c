#!/usr/bin/env python3
"""Network delay for an ssh connection, as an ssh ProxyCommand.

  delayrelay.py HOST PORT DELAY_MS

Connects to HOST:PORT and relays stdin to it and it to stdout, holding every
chunk DELAY_MS milliseconds in each direction before passing it on, as a
link with that one-way latency would. bench/farm.py uses it because this
machine's kernel has no netem queueing discipline (`tc qdisc ... netem`:
"Specified qdisc kind is unknown"); bandwidth is limited in the kernel
(tbf), where it is shared by every connection as a network card's is.
"""

import collections
import os
import socket
import sys
import threading
import time


def pump(read, write, delay):
    """Copy chunks from read() to write(), each delay seconds after it was
    read; b"" ends it."""
    queue = collections.deque()
    ready = threading.Condition()

    def writer():
        while True:
            with ready:
                while not queue:
                    ready.wait()
                due, chunk = queue.popleft()
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            if not chunk:
                write(b"")
                return
            write(chunk)

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    while True:
        chunk = read()
        with ready:
            queue.append((time.monotonic() + delay, chunk))
            ready.notify()
        if not chunk:
            break
    t.join()


def main():
    if len(sys.argv) != 4 or sys.argv[1] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        return 2
    host, port, delay = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]) / 1000
    sock = socket.create_connection((host, port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def to_sock(chunk):
        if chunk:
            sock.sendall(chunk)
        else:
            sock.shutdown(socket.SHUT_WR)

    def to_stdout(chunk):
        if chunk:
            view = memoryview(chunk)
            while view:
                view = view[os.write(1, view):]
        else:
            os.close(1)

    up = threading.Thread(target=pump, args=(lambda: os.read(0, 65536), to_sock, delay),
                          daemon=True)
    up.start()
    pump(lambda: sock.recv(65536), to_stdout, delay)
    return 0


if __name__ == "__main__":
    sys.exit(main())
