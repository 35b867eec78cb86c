"""The job side of the tar-stream transports (see transfer.py).

Never imported here: transfer.remote_command() sends this file's text to a
build node or host as `python3 -c <text> MODE ARGS...`, so it must stand
alone, use only the standard library and run on any Python 3.6 or newer.

  stream BASE LINK
      stdin is a tar: first .dtlto-control/job.json ({"args", "cwd",
      "outputs"}, paths relative to the job's root), then the input files.
      They are unpacked into a fresh directory under BASE/dtlto-LINK, the
      command runs in its cwd there, and stdout gets a tar of the outputs
      (only when the command succeeded) followed by .dtlto-control/status.json,
      which holds each output's SHA-256 as read here: the local side checks
      what arrived against it (transfer.read_outputs).
      The directory is removed whatever happens; BASE/dtlto-LINK too once
      no other job of the link uses it. The job side holds a lock on its
      directory until it exits.
  clean BASE LINK
      After a link some of whose jobs were stopped (a failure, a job the
      linker cancelled): waits for each job side of the link still running
      here to end (for its lock, at most CLEAN_WAIT seconds each), then
      removes BASE/dtlto-LINK and all in it.
  shared CWD -- ARGV...
      Runs ARGV in CWD (a filesystem the local side shares) and prints the
      status as one line on stdout.

Status: {"exit": N or null, "node": where it ran, "error": "" or why the
command could not run, "sha256": {member name: hex digest} (stream mode)}. The command's own stdout goes to our stderr, so
stdout carries nothing but the protocol; a missing status tells the local
side that the job never finished here (a lost node or connection).
"""

import fcntl
import hashlib
import io
import json
import os
import select
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time

CONTROL = ".dtlto-control/"
CLEAN_WAIT = 30


def node_name():
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname()


def status(code, error=""):
    return {"exit": code, "node": node_name(), "error": error}


def relative(name):
    """A member name as a safe relative path, or ValueError."""
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if name.startswith("/") or ".." in parts or not parts:
        raise ValueError("unsafe path in the job's tar: " + repr(name))
    return os.path.join(*parts)


def die_with_parent():
    """Run in the command's process before exec: on Linux the kernel kills
    it when we die, even of a SIGKILL that no finally clause sees (srun
    inside an allocation, the OOM killer)."""
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def run(args, cwd):
    """The command's exit code (negative: signal) and an error text."""
    linux = sys.platform.startswith("linux")
    try:
        # stdout=2: the command's stdout must not mix with our protocol.
        proc = subprocess.Popen(args, cwd=cwd, stdin=subprocess.DEVNULL, stdout=2,
                                start_new_session=True,
                                preexec_fn=die_with_parent if linux else None)
    except OSError as e:
        return None, "cannot run {}: {}".format(args[0], e.strerror)
    try:
        code = wait_unless_abandoned(proc)
    finally:
        if proc.returncode is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the command and all it started
            proc.wait()
    if code:
        # The command as it ran there, for whoever reads the failure.
        sys.stderr.write("dtlto job side on {}: {} (in {}) exited with {}\n".format(
            node_name(), " ".join(shlex.quote(a) for a in args), cwd, code))
    return code, ""


def wait_unless_abandoned(proc):
    """Wait for proc; give up (SystemExit) when nobody reads our stdout any
    more: a dropped ssh session closes that pipe, and the compile it was
    for need not run on."""
    watch = select.poll()
    watch.register(1, 0)  # no events asked: POLLERR and POLLHUP come anyway
    while proc.poll() is None:
        if watch.poll(500):
            raise SystemExit(4)
    return proc.returncode


def unpack(stream, work):
    spec = None
    with tarfile.open(fileobj=stream, mode="r|", encoding="utf-8",
                      errors="surrogateescape") as tar:
        for member in tar:
            if spec is None:
                if member.name != CONTROL + "job.json":
                    raise ValueError("the job's tar does not start with its description")
                spec = json.loads(tar.extractfile(member).read().decode("utf-8"))
                continue
            if not member.isreg():
                raise ValueError("not a regular file in the job's tar: " + repr(member.name))
            path = os.path.join(work, relative(member.name))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with tar.extractfile(member) as src, open(path, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
    if spec is None:
        raise ValueError("empty job tar")
    return spec


def make_workdir(linkdir):
    """A fresh directory of this job's in linkdir, which the last job of
    the link to finish removes: made again when another job removed it
    between our two steps."""
    while True:
        os.makedirs(linkdir, mode=0o700, exist_ok=True)
        try:
            return tempfile.mkdtemp(prefix="job-", dir=linkdir)
        except FileNotFoundError:
            continue


def stream(base, link):
    linkdir = os.path.join(base, "dtlto-" + link)
    work = make_workdir(linkdir)
    # Held until we exit (the descriptor is not inherited): `clean` waits
    # for it.
    lock = os.open(work, os.O_RDONLY)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        try:
            spec = unpack(sys.stdin.buffer, work)
        except (ValueError, KeyError, tarfile.TarError) as e:
            sys.stderr.write("dtlto job side: {}\n".format(e))
            return 3
        cwd = os.path.join(work, relative(spec["cwd"])) if spec["cwd"] not in ("", ".") else work
        os.makedirs(cwd, exist_ok=True)
        outputs = [relative(o) for o in spec["outputs"]]
        for o in outputs:
            os.makedirs(os.path.dirname(os.path.join(work, o)), exist_ok=True)
        code, error = run(spec["args"], cwd)
        out = tarfile.open(fileobj=sys.stdout.buffer, mode="w|", format=tarfile.PAX_FORMAT,
                           encoding="utf-8", errors="surrogateescape")
        digests = {}
        if code == 0:
            for o in outputs:
                path = os.path.join(work, o)
                if os.path.isfile(path) and not os.path.islink(path):
                    name = o.replace(os.sep, "/")
                    digests[name] = send_file(out, path, name)
        result = status(code, error)
        result["sha256"] = digests
        data = json.dumps(result).encode("utf-8")
        info = tarfile.TarInfo(CONTROL + "status.json")
        info.size = len(data)
        out.addfile(info, io.BytesIO(data))
        out.close()
        sys.stdout.flush()
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)
        try:
            os.rmdir(linkdir)  # fails while other jobs of the link use it
        except OSError:
            pass


def clean(base, link):
    linkdir = os.path.join(base, "dtlto-" + link)
    try:
        names = os.listdir(linkdir)
    except OSError:
        return 0  # nothing left: every job side removed it
    for name in names:
        try:
            fd = os.open(os.path.join(linkdir, name), os.O_RDONLY)
        except OSError:
            continue  # its job side removed it meanwhile
        try:
            deadline = time.monotonic() + CLEAN_WAIT
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break  # a job side that will not end: remove its files anyway
                    time.sleep(0.05)
        finally:
            os.close(fd)
    shutil.rmtree(linkdir, ignore_errors=True)
    return 0


class Hashing:
    """A file object that hashes what is read through it."""

    def __init__(self, f):
        self.f = f
        self.hash = hashlib.sha256()

    def read(self, size=-1):
        data = self.f.read(size)
        self.hash.update(data)
        return data


def send_file(out, path, name):
    """Add the file at path to the tar out as name; return the SHA-256 of
    the bytes sent, read once: what the local side must receive."""
    with open(path, "rb") as f:
        info = out.gettarinfo(arcname=name, fileobj=f)
        reader = Hashing(f)
        out.addfile(info, reader)
    return reader.hash.hexdigest()


def shared(cwd, args):
    try:
        os.chdir(cwd)
    except OSError as e:
        result = status(None, "cannot enter the working directory {}: {}".format(cwd, e.strerror))
    else:
        result = status(*run(args, cwd))
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


def main(argv):
    # SIGTERM (a cancelled Slurm step) or SIGHUP (a dropped session) must
    # still remove the work directory and stop the command: turn them into
    # SystemExit, which the finally clauses of run() and stream() see.
    for signo in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signo, lambda s, f: sys.exit(128 + s))
    if len(argv) == 3 and argv[0] == "stream":
        return stream(argv[1], argv[2])
    if len(argv) == 3 and argv[0] == "clean":
        return clean(argv[1], argv[2])
    if len(argv) >= 4 and argv[0] == "shared" and argv[2] == "--":
        return shared(argv[1], argv[3:])
    sys.stderr.write("dtlto job side: bad arguments {!r}\n".format(argv))
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
