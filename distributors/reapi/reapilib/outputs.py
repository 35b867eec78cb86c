"""Bringing an action's outputs home without trusting the server.

A result may come from any server and any cache entry, so before a byte is
written: no symlinks and no directories are accepted (we asked for neither),
every returned path must pass dtltodist.paths.check_returned_output
(relative, no "..", no symlink on the way) and be one of the job's declared
outputs, and every declared output must be there. The files are then
downloaded into a private staging directory next to the outputs, each
checked against its size and SHA-256, and only when all are good moved to
their declared paths, so a failed or refused result leaves nothing behind:
no half-written object, no file anywhere else; nor does a job the linker
cancelled, however late its result comes.
"""

import errno
import os
import shutil
import tempfile

from dtltodist import paths

from .action import Plan
from .client import RemoteError, Session, Stopped
from .tree import EMPTY, digest_bytes

STAGE_PREFIX = ".dtlto-reapi-stage-"
MISSING_OUTPUT = "MISSING_OUTPUT"  # RemoteError.code of a result without an output


def _refuse(ep_name: str, what: str) -> RemoteError:
    return RemoteError(f"refused the result from {ep_name}: {what}")


def fetch(session: Session, ep, plan: Plan, result) -> None:
    for kind in ("output_file_symlinks", "output_symlinks", "output_directory_symlinks"):
        for link in getattr(result, kind):
            raise _refuse(ep.name, f'output "{link.path}" is a symlink (to "{link.target}")')
    for d in result.output_directories:
        raise _refuse(ep.name, f'output "{d.path}" is a directory, which the job did not ask for')

    if session.stopping():
        raise Stopped()  # cancelled: not a byte of it is written
    first = next(iter(plan.outputs.values()))
    stage = tempfile.mkdtemp(prefix=STAGE_PREFIX, dir=os.path.dirname(first) or ".")
    try:
        chosen = {}
        for f in result.output_files:
            try:
                dest = paths.check_returned_output(f.path, stage)
            except paths.UnsafePathError as e:
                raise _refuse(ep.name, str(e)) from None
            name = os.path.relpath(dest, stage)
            if name not in plan.outputs:
                raise _refuse(ep.name, f'output "{f.path}" is not one the job declared')
            if name in chosen:
                raise _refuse(ep.name, f'output "{f.path}" is returned twice')
            chosen[name] = (f, dest)
        for name, local in plan.outputs.items():
            if name not in chosen:
                raise RemoteError(f'{ep.name} did not return the output "{local}" '
                                  f"(remote name {name})", code=MISSING_OUTPUT)

        for name, (f, dest) in chosen.items():
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o644)
            with os.fdopen(fd, "wb") as out:
                digest = (f.digest.hash, f.digest.size_bytes)
                if f.contents or digest == EMPTY:
                    if digest_bytes(f.contents) != digest:
                        raise RemoteError(f'{ep.name} sent output "{f.path}" inline with '
                                          "content that does not match its digest",
                                          transient=True)
                    out.write(f.contents)
                else:
                    session.read(ep, digest, out.write, plan.action)
        # Not once the linker has cancelled the job (Session.committing).
        with session.committing():
            for name, (f, dest) in chosen.items():
                _move(dest, plan.outputs[name])
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _move(src: str, dst: str) -> None:
    """Replace dst by src atomically (the old dst, even a symlink, is
    replaced, never written through)."""
    try:
        os.replace(src, dst)
        return
    except OSError as e:
        if e.errno != errno.EXDEV:
            raise
    # Another filesystem: copy next to dst first, then rename.
    fd, tmp = tempfile.mkstemp(prefix=STAGE_PREFIX, dir=os.path.dirname(dst) or ".")
    try:
        with os.fdopen(fd, "wb") as out, open(src, "rb") as inp:
            shutil.copyfileobj(inp, out)
        os.replace(tmp, dst)
    except BaseException:
        os.unlink(tmp)
        raise
