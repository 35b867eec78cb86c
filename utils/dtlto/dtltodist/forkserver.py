"""Clang jobs forked from one clang (the fork server).

A clang job spends a large part of its CPU starting: the dynamic loader maps
and relocates libLLVM and libclang-cpp, their static constructors run, and
every page it touches on the way faults in. That part is the same for every
job. The fork server (libdtlto-forkserver.so, preloaded into the compiler;
llvm/tools/dtlto-forkserver/ForkServer.cpp has the protocol) starts the
compiler once, stops it where its main would begin, and forks a copy of that
process for each job, which then runs main with the job's arguments, in the
job's directory, on the job's stdin, stdout and stderr. The job's output is
the one a fresh compiler would write; only the start is shared.

The one client of that protocol. ForkServer.start() starts the compiler and
waits until it says it is ready; a compiler that cannot be one (a static
binary, a script) exits instead, and the caller runs its jobs as processes
of their own. spawn() gives a Child, which stands in for subprocess.Popen
where runner.py starts a job: pid, returncode, poll(), wait(), and its
process group signalled through the server (signal_group), which knows
whether the job has been reaped, so a reused pid is never signalled.
"""

import array
import errno
import os
import select
import shutil
import signal
import socket
import subprocess
import time

ENV_FD = "DTLTO_FORKSERVER_FD"
# How long the compiler may take to start; it is one compiler start.
READY_TIMEOUT = 60.0
# A request must fit the server's buffer (ForkServer.cpp: 1 MiB); longer
# command lines run as processes of their own.
MAX_REQUEST = 1 << 20
# How much of a failed server's stderr is kept, for its last line.
_LAST_WORDS = 4096


def _exe(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return "?"


def run_request(tag: int, cwd: str, argv: list[str]) -> bytes:
    """The "run" message for a job (ForkServer.cpp's protocol): the word,
    the tag, the directory and the arguments, each ending in a NUL."""
    return b"\0".join([b"run", str(tag).encode(), os.fsencode(cwd)]
                       + [os.fsencode(a) for a in argv]) + b"\0"


def _first_word(sock: socket.socket, err: int, timeout: float) -> tuple[bytes | None, bytes]:
    """What a starting server says first (b"" when it exits without a
    word, None when it says nothing within timeout), and the end of what
    it wrote on stderr meanwhile. Its stderr is read as it comes: a
    compiler that writes much before main (LD_DEBUG, say) must not stop on
    a full pipe."""
    deadline = time.monotonic() + timeout
    said = b""
    watch = [sock, err]
    while (left := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select(watch, [], [], left)
        if err in readable:
            chunk = os.read(err, 65536)
            said = (said + chunk)[-_LAST_WORDS:]
            if not chunk:
                watch.remove(err)
        if sock in readable:
            return sock.recv(512), said
    return None, said


def _drain(err: int) -> bytes:
    """The end of what is in the pipe now. A process the compiler left
    behind may hold it open, so no waiting for its end."""
    os.set_blocking(err, False)
    said = b""
    try:
        while chunk := os.read(err, 65536):
            said = (said + chunk)[-_LAST_WORDS:]
    except BlockingIOError:
        pass
    return said


class Child:
    """A job forked by the server, in the place of a subprocess.Popen."""

    def __init__(self, server: "ForkServer", pid: int):
        self.server = server
        self.pid = pid
        self.returncode: int | None = None
        self.lost = ""  # why it died with its server, if it did

    def poll(self) -> int | None:
        if self.returncode is None:
            self.server.pump(block=False)
        return self.returncode

    def wait(self) -> int:
        while self.returncode is None:
            self.server.pump(block=True)
        return self.returncode

    def signal_group(self, signo: int) -> None:
        if self.returncode is None:
            self.server.signal_group(self.pid, signo)


class ForkServer:
    """One compiler process that forks a copy of itself per job."""

    def __init__(self, proc: subprocess.Popen, sock: socket.socket, compiler: str):
        self.proc = proc
        self.sock = sock
        self.compiler = compiler
        self.children: dict[int, Child] = {}
        self.lost = ""  # why the server is gone, once it is
        self._tag = 0
        self.forked = 0  # jobs started, for the summary

    @classmethod
    def start(cls, compiler: str, library: str) -> tuple["ForkServer | None", str]:
        """(server, "") or (None, why not)."""
        if not os.path.isfile(library):
            return None, f"{library} does not exist"
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = dict(os.environ)
        preload = env.get("LD_PRELOAD", "")
        env["LD_PRELOAD"] = f"{preload}:{library}" if preload else library
        env[ENV_FD] = str(theirs.fileno())
        try:
            # Its stderr is ours to read until it says ready (then it is
            # /dev/null): what a compiler that fails to start says.
            proc = subprocess.Popen([compiler], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    env=env, pass_fds=[theirs.fileno()],
                                    start_new_session=True)
        except OSError as e:
            ours.close()
            return None, f"cannot start {compiler}: {e.strerror}"
        finally:
            theirs.close()
        err = proc.stderr.fileno()
        word, said = _first_word(ours, err, READY_TIMEOUT)
        if word == b"ready":
            # A wrapper script that execs the compiler would pass the
            # preload on: the server would be the compiler without what
            # the wrapper does for each job. Only the program itself serves.
            proc.stderr.close()
            running = _exe(proc.pid)
            if running == os.path.realpath(shutil.which(compiler) or compiler):
                return cls(proc, ours, compiler), ""
            why = f"it runs {running} (a wrapper?)"
        elif word is None:
            why = f"it did not say it was ready within {READY_TIMEOUT:g} s"
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # hung: closing our end won't do
            except ProcessLookupError:
                pass  # it ended just now
        elif word.startswith(b"refused "):
            why = word[len(b"refused "):].decode(errors="replace")
        else:
            why = ""  # it exited: its status says more, below
        ours.close()
        try:
            proc.wait(timeout=10)  # our channel closed: a server ends
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if not why:
            why = (f"it exited with status {proc.returncode} instead "
                   "(not a dynamically linked program?)")
        if not proc.stderr.closed:
            said += _drain(err)
            proc.stderr.close()
            last = said.decode(errors="replace").strip().splitlines()
            if last:
                why += f"; its last words: {last[-1]}"
        return None, f"{compiler} did not become a fork server: {why}"

    def fileno(self) -> int:
        """Readable when a job it forked has ended (or the server has)."""
        return self.sock.fileno()

    @property
    def alive(self) -> bool:
        return not self.lost

    def spawn(self, argv: list[str], cwd: str, stdin, stdout, stderr) -> Child:
        """Forks a job: argv in cwd on the given files (objects with
        fileno()). OSError when the server cannot, or is gone."""
        if self.lost:
            raise OSError(0, self.lost)
        self._tag += 1
        request = run_request(self._tag, cwd, argv)
        if len(request) > MAX_REQUEST:
            raise OSError(0, "the command line is too long for the fork server")
        fds = array.array("i", [f.fileno() for f in (stdin, stdout, stderr)])
        try:
            self.sock.sendmsg([request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
        except OSError as e:
            if e.errno in (errno.EMSGSIZE, errno.ENOBUFS):
                raise  # this command line alone: it runs as a process of its own
            self._lose(f"the fork server stopped taking jobs ({e.strerror})")
            raise OSError(0, self.lost) from None
        while True:
            message = self._receive(block=True)
            if message is None:
                raise OSError(0, self.lost)
            word, tag, rest = (message.split(b" ", 2) + [b"", b""])[:3]
            if word in (b"started", b"failed") and tag == str(self._tag).encode():
                break
        if word == b"failed":
            raise OSError(0, f"the fork server could not start it: {rest.decode(errors='replace')}")
        child = Child(self, int(rest))
        self.children[child.pid] = child
        self.forked += 1
        return child

    def signal_group(self, pid: int, signo: int) -> None:
        if not self.lost:
            try:
                self.sock.send(f"kill {pid} {signo}".encode())
            except OSError:
                pass

    def pump(self, block: bool) -> None:
        """Reads what the server said: the jobs that ended get their
        returncode. With block, waits for one message at least."""
        while self._receive(block) is not None:
            block = False

    def _receive(self, block: bool) -> bytes | None:
        """One message, handled if it says a job ended; None when there is
        none (not blocking) or the server is gone."""
        if self.lost:
            return None
        try:
            message = self.sock.recv(512, 0 if block else socket.MSG_DONTWAIT)
        except BlockingIOError:
            return None
        except OSError as e:
            message = b""
            self._lose(f"the fork server's channel failed ({e.strerror})")
        if not message:
            self._lose("the fork server exited")
            return None
        fields = message.split()
        if fields[0] == b"exited" and len(fields) == 3:
            child = self.children.pop(int(fields[1]), None)
            if child is not None:
                child.returncode = os.waitstatus_to_exitcode(int(fields[2]))
        return message

    def _lose(self, why: str) -> None:
        """The server is gone: its jobs died with it (PR_SET_PDEATHSIG)."""
        if self.lost:
            return
        # Its end of the channel closes as it exits: its status is moments
        # away, and says why (-9: killed, by the OOM killer say).
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self.lost = why if self.proc.returncode is None else \
            f"{why} (status {self.proc.returncode})"
        for child in self.children.values():
            child.returncode = -signal.SIGKILL
            child.lost = f"was killed with the fork server it was forked from: {self.lost}"
        self.children.clear()

    def close(self) -> None:
        """Ends the server, and with it every job it still runs."""
        self.sock.close()
        if not self.lost:
            self.lost = "closed"
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
