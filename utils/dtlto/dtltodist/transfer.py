"""Tar streams: how a job reaches a machine that does not share the build.

Our Slurm (--mode=stream) and SSH engines run each job as one process on
the other machine, `python3 -c <remote_job.py> stream BASE LINK`, started
by the engine's own client (srun, ssh). Its stdin is a tar holding the
job's description and its input files; its stdout brings back a tar of
the outputs and a status. One protocol for both engines, one place that
knows it:

  plan(manifest, job)       what to send: the root directory mirrored on
                            the other side, the command with absolute paths
                            made relative, inputs and outputs by member name
  write_inputs(plan, path)  the tar to feed the job
  read_outputs(data, plan)  check and unpack what came back; returns the
                            status (the command's exit code, where it ran)

Nothing that comes back is trusted: a member must be a regular file named
by a relative path without "..", reaching no symlink below the root, and
be one of the job's declared outputs, or the whole result is refused
(paths.UnsafePathError). Outputs are written only when the command
succeeded, each through a temporary file renamed into place. A stream that
ends early or lacks the status is a TransferError: the job did not finish
there (a lost node or connection), which an engine may retry elsewhere.

The tar's own checksums cover its headers only. So the job side hashes
each output as it sends it (SHA-256, in the status), and every output must
arrive with that digest before any is written: a mismatch is a Damaged
error (a TransferError), never a damaged object in the link.
"""

import base64
import hashlib
import io
import json
import os
import shlex
import tarfile
import tempfile
import zlib
from collections import Counter
from dataclasses import dataclass

from . import paths
from .manifest import Job, Manifest
from .report import plural, size_text

CONTROL = ".dtlto-control/"
JOB_MEMBER = CONTROL + "job.json"
STATUS_MEMBER = CONTROL + "status.json"
PROGRAM_PLACEHOLDER = "<dtltodist/remote_job.py>"
_ENCODING = dict(encoding="utf-8", errors="surrogateescape")


class TransferError(Exception):
    """What came back is incomplete: the job did not finish remotely."""


class Damaged(TransferError):
    """An output arrived with other bytes than the job side sent; .node is
    where the job ran (from its status), or ''."""

    def __init__(self, message: str, node=""):
        super().__init__(message)
        self.node = node if isinstance(node, str) else ""


_program = None


def remote_program() -> str:
    """The text of remote_job.py, to be run with `python3 -c`."""
    global _program
    if _program is None:
        with open(os.path.join(os.path.dirname(__file__), "remote_job.py"),
                  encoding="utf-8") as f:
            _program = f.read()
    return _program


def compact_program() -> str:
    """remote_job.py as one line of letters, digits and a few quotes: for a
    remote login shell, which might not take newlines inside quotes."""
    packed = base64.b64encode(zlib.compress(remote_program().encode("utf-8"), 9)).decode()
    return f'import base64,zlib;exec(zlib.decompress(base64.b64decode("{packed}")))'


def remote_command(python: str, mode: str, args: list[str], compact=False) -> list[str]:
    """argv that runs the job side in mode ("stream" or "shared")."""
    program = compact_program() if compact else remote_program()
    return [python, "-c", program, mode] + list(args)


def shown(argv: list[str]) -> list[str]:
    """argv for messages: the inline program replaced by its name."""
    programs = (remote_program(), compact_program())
    return [PROGRAM_PLACEHOLDER if a in programs else a for a in argv]


@dataclass
class Plan:
    root: str  # local directory that the other side mirrors
    cwd: str  # the command's directory, relative to root
    args: list[str]  # the command to run there
    inputs: list[tuple[str, str]]  # (local path, member name)
    outputs: dict[str, str]  # member name -> local path


def plan(m: Manifest, job: Job, cwd: str | None = None) -> Plan:
    """How to send job; UnsafePathError if a path cannot be mirrored."""
    for p in job.inputs[2:]:
        # The index shard names the modules the job imports by these very
        # paths, and the command line cannot change what the shard says.
        if os.path.isabs(p):
            raise paths.UnsafePathError(
                f'it imports "{p}", an absolute path, which its index shard names '
                "and the other machine does not have: link with relative paths")
    cwd = paths.absolute(".", cwd)
    files = list(m.common_inputs) + list(job.inputs)
    root = paths.common_root(files + list(job.outputs), cwd)

    def member(p: str) -> str:
        name = paths.rebase(p, root, cwd).replace(os.sep, "/")
        if name == "." or name.startswith(CONTROL):
            raise paths.UnsafePathError(f'"{p}" cannot be sent (reserved or not a file)')
        return name

    # The other side mirrors root, so a path relative to cwd means the same
    # file there; an absolute one would name this machine's tree. Keyed by
    # the absolute path, however the inputs list spells the file.
    moved = {paths.absolute(p, cwd): os.path.relpath(paths.absolute(p, cwd), cwd)
             for p in files + list(job.outputs)}
    args = [job.command[0]] + [_relocate(a, moved) for a in job.command[1:]]
    inputs, seen = [], set()
    for p in files:
        name = member(p)
        if name not in seen:
            seen.add(name)
            inputs.append((paths.absolute(p, cwd), name))
    outputs = {member(p): paths.absolute(p, cwd) for p in job.outputs}
    return Plan(root, member(cwd) if cwd != root else ".", args, inputs, outputs)


def describe(p: Plan) -> list[str]:
    """A plan as lines for --dry-run."""
    return [f"runs: {shlex.join(p.args)}", f"in: {p.cwd} (of {p.root})",
            "sends: " + shlex.join(name for _, name in p.inputs),
            "returns: " + shlex.join(p.outputs)]


def _relocate(arg: str, moved: dict[str, str]) -> str:
    """arg with an absolute path of one of the job's files made relative."""
    def rel(path):
        return moved.get(os.path.normpath(path)) if os.path.isabs(path) else None
    if rel(arg):
        return rel(arg)
    key, sep, value = arg.partition("=")  # -fthinlto-index=/abs/x.thinlto.bc
    if sep and rel(value):
        return key + sep + rel(value)
    return arg


def write_inputs(p: Plan, path: str) -> int:
    """Write the tar that feeds the job to path; return its size in bytes.

    OSError (naming the file) if an input cannot be read.
    """
    spec = json.dumps({"args": p.args, "cwd": p.cwd, "outputs": list(p.outputs)}).encode()
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT, **_ENCODING) as tar:
        _add_bytes(tar, JOB_MEMBER, spec)
        for local, name in p.inputs:
            # Opened first so the size is the one we copy; symlinks followed,
            # the other side gets plain files.
            with paths.open_input(local) as f:
                info = tarfile.TarInfo(name)
                st = os.fstat(f.fileno())
                info.size, info.mtime, info.mode = st.st_size, int(st.st_mtime), 0o644
                tar.addfile(info, f)
    return os.path.getsize(path)


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def read_outputs(data: bytes, p: Plan) -> dict:
    """Check and unpack the job's returned tar; return its status.

    The status has "exit" (None if the command could not run), "node" and
    "error". Outputs are written only when exit is 0. Raises UnsafePathError
    for a member that may not be written, TransferError for an incomplete
    stream.
    """
    if not data:
        raise TransferError("nothing came back")
    files: dict[str, bytes] = {}
    status = None
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:", **_ENCODING) as tar:
            for member in tar:
                if status is not None:
                    raise TransferError(f'"{member.name}" came after the status')
                if member.name == STATUS_MEMBER:
                    status = json.loads(tar.extractfile(member).read().decode("utf-8"))
                    continue
                name = member.name
                full = paths.check_returned_output(name, p.root)
                key = os.path.relpath(full, p.root).replace(os.sep, "/")
                if not member.isreg():
                    kind = "a link" if member.issym() or member.islnk() else "not a regular file"
                    raise paths.UnsafePathError(f'returned output "{name}" is {kind}')
                if p.outputs.get(key) != full:
                    raise paths.UnsafePathError(
                        f'returned file "{name}" is not a declared output of the job')
                if key in files:
                    raise paths.UnsafePathError(f'returned output "{name}" came twice')
                files[key] = tar.extractfile(member).read()
    except (tarfile.TarError, EOFError, UnicodeDecodeError, ValueError) as e:
        raise TransferError(f"the returned stream is damaged ({e})") from None
    if not isinstance(status, dict) or "exit" not in status:
        raise TransferError("the returned stream ended before the job's status")
    if status["exit"] == 0:
        _check_digests(files, status)
        for key, content in files.items():
            _write_atomically(p.outputs[key], content)
    return status


def _check_digests(files: dict[str, bytes], status: dict) -> None:
    """Every output as the job side sent it (see the module doc)."""
    sent = status.get("sha256")
    node = status.get("node") if isinstance(status.get("node"), str) else ""
    where = node or "the other side"
    if not isinstance(sent, dict):
        raise Damaged(f"the status from {where} has no digests of the outputs", node)
    for key, content in files.items():
        digest = hashlib.sha256(content).hexdigest()
        if key not in sent:
            raise Damaged(f'"{key}" came back without its digest', node)
        if sent[key] != digest:
            raise Damaged(f'"{key}" was damaged on the way back from {where}: SHA-256 '
                          f"{digest[:16]}... here, {str(sent[key])[:16]}... where it was "
                          "written", node)
    missing = sorted(set(sent) - set(files))
    if missing:
        raise Damaged(f'"{missing[0]}" was sent by {where} but did not arrive', node)


def _write_atomically(path: str, content: bytes) -> None:
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".dtlto-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(content)
            os.fchmod(f.fileno(), 0o666 & ~_umask())
        os.replace(tmp, path)  # replaces a link itself, never follows it
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _umask() -> int:
    mask = os.umask(0o22)
    os.umask(mask)
    return mask


def status_line(stdout: bytes) -> dict | None:
    """The status the job side printed in shared mode, or None."""
    for line in reversed(stdout.splitlines()):
        try:
            status = json.loads(line)
        except ValueError:
            return None
        return status if isinstance(status, dict) and "exit" in status else None
    return None


class Tally:
    """Where jobs ran, retries and bytes moved: the remote engines' summary."""

    def __init__(self, noun: str):
        self.noun = noun  # "node", "host"
        self.where: Counter = Counter()
        self.retries = 0
        self.sent = 0
        self.received = 0
        self.shared = False  # files stay on a shared filesystem

    def describe(self, places: str | None = None) -> str:
        """'2 nodes (n1: 3, n2: 2), 1 retry, 1.2 MiB moved'; places, when
        given, says where instead of the first part."""
        if places is None:
            where = ", ".join(f"{w}: {n}" for w, n in sorted(self.where.items()))
            places = plural(len(self.where), self.noun) + (f" ({where})" if where else "")
        text = places + ", " + plural(self.retries, "retry").replace("retrys", "retries")
        moved = "shared filesystem" if self.shared else \
            f"{size_text(self.sent + self.received)} moved"
        return f"{text}, {moved}"
