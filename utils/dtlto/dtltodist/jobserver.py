"""GNU make jobserver client.

Under `make -jN`, a recipe marked with `+` inherits make's jobserver: a pipe
(make 4.3: MAKEFLAGS has --jobserver-auth=R,W, two inherited fds) or a named
FIFO (make 4.4: --jobserver-auth=fifo:PATH) holding one byte per free job
slot. We own one implicit slot, read one byte before starting each further
concurrent job, and write that same byte back when the job ends. A token we
fail to return is lost to the whole build, so Slots.close() gives everything
back on every way out (success, failure, kill, signal).

The read end is shared with make and its other children: a token select()
says is there may be gone by the time we read. We therefore read only from a
non-blocking descriptor of our own (a reopened /proc/self/fd/R, so make's
file status flags are never touched) and treat EAGAIN as "not now".
"""

import os
import stat

try:
    import fcntl
except ImportError:  # Windows: no make jobserver of this kind
    fcntl = None


class JobServer:
    """Tokens of one jobserver: try_acquire() and release() single bytes."""

    def __init__(self, read_fd: int, write_fd: int, description: str, owned=()):
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.description = description
        self.held: list[bytes] = []
        self._owned = list(owned)  # fds we opened and must close

    def try_acquire(self) -> bytes | None:
        """Take one token without waiting; None if none is free now."""
        try:
            token = os.read(self.read_fd, 1)
        except BlockingIOError:
            return None  # another client was faster
        except OSError:
            return None
        if not token:
            return None  # every writer is gone: make has exited
        self.held.append(token)
        return token

    def release(self) -> None:
        """Give back one token we hold, the very byte we read."""
        token = self.held.pop()
        try:
            os.write(self.write_fd, token)
        except OSError:
            pass  # make is gone; nobody is left to use the token

    def close(self) -> None:
        while self.held:
            self.release()
        for fd in self._owned:
            os.close(fd)
        self._owned = []


def parse_makeflags(makeflags: str) -> str | None:
    """The value of the last --jobserver-auth= (or older --jobserver-fds=)."""
    value = None
    for word in makeflags.split():
        if word == "--":
            break  # command-line variable definitions follow
        for option in ("--jobserver-auth=", "--jobserver-fds="):
            if word.startswith(option):
                value = word[len(option):]
    return value


def from_environment(environ=os.environ) -> tuple[JobServer | None, str]:
    """Connect to the jobserver named in MAKEFLAGS.

    Returns (jobserver or None, a one-line note saying why not / which one).
    """
    auth = parse_makeflags(environ.get("MAKEFLAGS", ""))
    if auth is None:
        return None, "no jobserver in MAKEFLAGS"
    if auth.startswith("fifo:"):
        return _open_fifo(auth[len("fifo:"):])
    return _open_pipe_fds(auth)


def _open_fifo(path: str):
    try:
        # O_RDWR: we both take and give back tokens, and opening a FIFO for
        # reading and writing never blocks waiting for a peer.
        fd = os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        return None, f"jobserver FIFO {path} unusable ({e.strerror}); not using it"
    if not stat.S_ISFIFO(os.fstat(fd).st_mode):
        os.close(fd)
        return None, f"jobserver {path} is not a FIFO; not using it"
    return JobServer(fd, fd, f"fifo:{path}", owned=[fd]), f"using jobserver fifo:{path}"


def _open_pipe_fds(auth: str):
    if fcntl is None:
        return None, "no pipe jobservers on this system; not using one"
    fds = auth.split(",")
    if len(fds) != 2 or not all(f.isdigit() for f in fds):
        return None, f"cannot parse --jobserver-auth={auth}; not using it"
    read_fd, write_fd = int(fds[0]), int(fds[1])
    # Without `+` on the recipe make closes these fds, and the numbers may
    # then belong to something else entirely: insist on both ends of one pipe.
    try:
        r, w = os.fstat(read_fd), os.fstat(write_fd)
    except OSError:
        return None, (f"jobserver fds {read_fd},{write_fd} are not open "
                      "(make runs the recipe without '+'?); not using them")
    if not (stat.S_ISFIFO(r.st_mode) and (r.st_dev, r.st_ino) == (w.st_dev, w.st_ino)):
        return None, (f"jobserver fds {read_fd},{write_fd} are not one pipe "
                      "(make runs the recipe without '+'?); not using them")
    if fcntl.fcntl(write_fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY:
        return None, f"jobserver fd {write_fd} is not open for writing; not using it"
    try:
        private = os.open(f"/proc/self/fd/{read_fd}",
                          os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        return None, f"cannot reopen jobserver fd {read_fd} ({e.strerror}); not using it"
    return (JobServer(private, write_fd, f"fds {read_fd},{write_fd}", owned=[private]),
            f"using jobserver fds {read_fd},{write_fd}")
