#!/usr/bin/env python3
"""Network delay for a TCP connection.

  delayrelay.py HOST PORT DELAY_MS
      As an ssh ProxyCommand: connects to HOST:PORT and relays stdin to it
      and it to stdout.
  delayrelay.py --listen LPORT HOST PORT DELAY_MS
      As a server on 127.0.0.1:LPORT (a REAPI endpoint's stand-in): relays
      every connection it accepts to HOST:PORT, until it is killed.
  delayrelay.py --wait LPORT
      Returns once a --listen relay started in the background accepts
      connections on 127.0.0.1:LPORT (status 1 after 30 s).

Either way every chunk is held DELAY_MS milliseconds in each direction
before it is passed on, as a link with that one-way latency would. bench/farm.py uses it because this
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
    read; b"" (or a reset of the reading side) ends it. Once the writing
    side is gone, what is still read is dropped, as a network would."""
    queue = collections.deque()
    ready = threading.Condition()

    def writer():
        alive = True
        while True:
            with ready:
                while not queue:
                    ready.wait()
                due, chunk = queue.popleft()
            pause = due - time.monotonic()
            if pause > 0 and alive:
                time.sleep(pause)
            try:
                if alive:
                    write(chunk)
            except OSError:
                alive = False
            if not chunk:
                return

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    while True:
        try:
            chunk = read()
        except OSError:
            chunk = b""
        with ready:
            queue.append((time.monotonic() + delay, chunk))
            ready.notify()
        if not chunk:
            break
    t.join()


def writer(sock):
    """A pump's write for sock: each chunk sent, the end as a shutdown of
    sock's sending side (so the other end sees EOF, the connection stays
    open for its answer)."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def write(chunk):
        if chunk:
            sock.sendall(chunk)
        else:
            sock.shutdown(socket.SHUT_WR)
    return write


def relay(sock, read, write, delay):
    """Both directions between sock and (read, write), each chunk delayed;
    returns once sock's side has ended (the connection's other side is then
    closed by the caller)."""
    up = threading.Thread(target=pump, args=(read, writer(sock), delay), daemon=True)
    up.start()
    pump(lambda: sock.recv(65536), write, delay)


def serve(lport, host, port, delay):
    server = socket.create_server(("127.0.0.1", lport))

    def one(client):
        with client, socket.create_connection((host, port)) as upstream:
            relay(upstream, lambda: client.recv(65536), writer(client), delay)

    while True:
        client, _ = server.accept()
        threading.Thread(target=one, args=(client,), daemon=True).start()


def wait_listening(lport, timeout=30.0):
    """Waits until 127.0.0.1:lport accepts a connection (a --listen relay
    just started); a clear error after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", lport)).close()
            return
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise SystemExit(f"delayrelay.py: error: no relay listens on port {lport} "
                                 f"after {timeout:g} s")
            time.sleep(0.05)


def main():
    argv = sys.argv[1:]
    if argv[:1] == ["--listen"] and len(argv) == 5:
        serve(int(argv[1]), argv[2], int(argv[3]), float(argv[4]) / 1000)
        return 0
    if argv[:1] == ["--wait"] and len(argv) == 2:
        wait_listening(int(argv[1]))
        return 0
    if len(argv) != 3 or argv[0] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        return 2
    host, port, delay = argv[0], int(argv[1]), float(argv[2]) / 1000

    def to_stdout(chunk):
        if chunk:
            view = memoryview(chunk)
            while view:
                view = view[os.write(1, view):]
        else:
            os.close(1)

    with socket.create_connection((host, port)) as sock:
        relay(sock, lambda: os.read(0, 65536), to_stdout, delay)
    return 0


if __name__ == "__main__":
    sys.exit(main())
