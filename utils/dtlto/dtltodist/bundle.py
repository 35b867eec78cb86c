"""Bundles: one DTLTO job as one file (docs/bundle.md).

distcc and icecream send one input file per compile, and a DTLTO job reads
several (its module, its index shard, the modules it imports, the files
every job needs). A bundle holds them all, with the job's command; on the
farm dtlto-backend, which the daemon runs as the compiler, unpacks it into
a private directory and runs the job there (llvm/tools/dtlto-backend/
Bundle.cpp reads the format this module writes; the two are its only
implementations):

  DTLTO-BUNDLE 1\\n
  {"kind": ..., "args": [...], "cwd": ..., "output": ..., "files": [...]}\\n
  the files' bytes, in the order of "files", nothing after

"kind" is "backend" when the manifest's compiler is dtlto-backend (the
farm's own dtlto-backend runs the job in its process; args[0] is not run)
and "command" otherwise (args[0], e.g. clang, is run). Paths are the ones
transfer.plan() gives a job mirrored on another machine: relative to the
bundle's root, which stands for the deepest directory holding the link's
directory and every file, so that the shard's module paths still name the
right files.
"""

import errno
import json
import os
import shutil
import zlib

from . import paths, transfer
from .manifest import Job, Manifest

MAGIC = b"DTLTO-BUNDLE "
VERSION = 1
SUFFIX = ".i"  # what distcc and icecream send as one preprocessed source


def is_backend(compiler: str) -> bool:
    """Is this manifest compiler dtlto-backend (the engine's own rule)?"""
    return os.path.basename(compiler).startswith("dtlto-backend")


def farm_backend(m: Manifest, given: str | None) -> str:
    """The dtlto-backend here that runs the bundles on a farm that takes
    its compiler from us (icecream's environment, FASTBuild's tool
    manifest), as an absolute path: the one given, else the manifest's
    compiler when it is dtlto-backend, else dtlto-backend in PATH.
    ValueError when there is none."""
    backend = given or (m.compiler if is_backend(m.compiler) else shutil.which("dtlto-backend"))
    if not backend or not os.path.isfile(backend) or not os.access(backend, os.X_OK):
        raise ValueError("cannot find dtlto-backend, which runs the bundles on the farm: "
                         + (f"--backend '{given}' is not an executable file" if given else
                            "give --backend PATH"))
    return os.path.abspath(backend)


def header(m: Manifest, job: Job, plan: transfer.Plan) -> dict:
    """The header, without the files. ValueError if the job cannot be a
    bundle (a bundle brings back one file)."""
    if len(job.outputs) != 1:
        raise ValueError(f"it writes {len(job.outputs)} files, and a bundle "
                         "brings back one")
    output = next(name for name, local in plan.outputs.items())
    return {"kind": "backend" if is_backend(m.compiler) else "command",
            "args": plan.args, "cwd": plan.cwd, "output": output}


def _crc_and_size(path: str) -> tuple[int, int]:
    crc, size = 0, 0
    # A FIFO would block us and /dev/zero never end: regular files only.
    with paths.open_input(path) as f:
        while chunk := f.read(1 << 20):
            crc = zlib.crc32(chunk, crc)
            size += len(chunk)
    return crc, size


def write(m: Manifest, job: Job, plan: transfer.Plan, path: str) -> int:
    """Write job's bundle to path; return its size. OSError naming the
    file that cannot be read (or changed while it was read)."""
    files = []
    for local, name in plan.inputs:
        crc, size = _crc_and_size(local)
        files.append((local, {"name": name, "size": size, "crc32": crc}))
    head = dict(header(m, job, plan), files=[f for _, f in files])
    line = json.dumps(head, ensure_ascii=False, separators=(",", ":"))
    with open(path, "wb") as out:
        out.write(MAGIC + str(VERSION).encode() + b"\n" + line.encode("utf-8") + b"\n")
        for local, f in files:
            crc, size = 0, 0
            with paths.open_input(local) as src:
                while size < f["size"] and (chunk := src.read(min(1 << 20, f["size"] - size))):
                    crc = zlib.crc32(chunk, crc)
                    size += len(chunk)
                    out.write(chunk)
            if (crc, size) != (f["crc32"], f["size"]):
                raise OSError(f"{local}: changed while it was being bundled")
    return os.path.getsize(path)


def describe(m: Manifest, job: Job, plan: transfer.Plan) -> list[str]:
    """A bundle as lines for --dry-run."""
    h = header(m, job, plan)
    return [f"bundle: {h['kind']}, runs in {h['cwd']} (of {plan.root})",
            "holds: " + " ".join(name for _, name in plan.inputs),
            "returns: " + h["output"]]


# Native object files the farm may send back: ELF, and COFF for the
# machines lld-link links (x86-64, x86, ARM64, ARM) or a big-object file.
_COFF_MACHINES = {0x8664, 0x14C, 0xAA64, 0x1C4}


def object_problem(path: str) -> str:
    """'' if path looks like a native object, else what is wrong: a farm
    host that sends back an empty or damaged object exited 0 all the same."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    if not head:
        return "is empty"
    if head[:4] == b"\x7fELF":
        return ""
    if len(head) >= 4 and (int.from_bytes(head[:2], "little") in _COFF_MACHINES
                           or head[:4] == b"\x00\x00\xff\xff"):
        return ""
    return "is not an object file"


def place(src: str, dst: str) -> None:
    """Move a checked object into place, atomically (through a temporary
    file next to dst when src is on another filesystem). OSError."""
    try:
        os.replace(src, dst)
        return
    except OSError as e:
        if e.errno != errno.EXDEV:
            raise
    tmp = os.path.join(os.path.dirname(os.path.abspath(dst)), f".dtlto-{os.getpid()}.o")
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
