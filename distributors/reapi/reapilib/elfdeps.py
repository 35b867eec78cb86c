"""What a shipped compiler needs: its own shared libraries.

A toolchain such as Debian's clang-22 is a small executable that loads
libclang-cpp and libLLVM through RUNPATH $ORIGIN/../lib. Shipping only the
executable would not run on a worker without that toolchain, so we follow
DT_NEEDED through the RUNPATH (or RPATH) entries that are relative to
$ORIGIN: those libraries belong to the toolchain and go along, at the same
place relative to the executable. Libraries found elsewhere (libc,
libstdc++) are the worker image's business and are not shipped.

Only 64-bit little-endian ELF is read (x86-64 is the only host we support);
anything else, a script for example, has no dependencies here.
"""

import mmap
import os
import struct

PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_NEEDED, DT_STRTAB, DT_RPATH, DT_RUNPATH = 0, 1, 5, 15, 29


def dynamic_info(path: str) -> tuple[list[str], list[str]]:
    """(DT_NEEDED names, search path entries) of an ELF file, ([], []) otherwise."""
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size < 64:
                return [], []
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                return _parse(m)
    except (OSError, ValueError, struct.error):
        return [], []


def _parse(m) -> tuple[list[str], list[str]]:
    if m[:4] != b"\x7fELF" or m[4] != 2 or m[5] != 1:  # ELFCLASS64, little endian
        return [], []
    phoff, = struct.unpack_from("<Q", m, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", m, 0x36)
    loads, dynamic = [], None
    for i in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz, _, _ = struct.unpack_from(
            "<IIQQQQQQ", m, phoff + i * phentsize)
        if p_type == PT_LOAD:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == PT_DYNAMIC:
            dynamic = (p_offset, p_filesz)
    if dynamic is None:
        return [], []
    entries = []
    off, end = dynamic[0], dynamic[0] + dynamic[1]
    while off + 16 <= end:
        tag, val = struct.unpack_from("<qQ", m, off)
        if tag == DT_NULL:
            break
        entries.append((tag, val))
        off += 16
    strtab = next((v for t, v in entries if t == DT_STRTAB), None)
    if strtab is None:
        return [], []
    base = next((o + strtab - va for va, o, sz in loads if va <= strtab < va + sz), None)
    if base is None:
        return [], []

    def string(offset):
        start = base + offset
        return m[start:m.find(b"\0", start)].decode("utf-8", "surrogateescape")

    needed = [string(v) for t, v in entries if t == DT_NEEDED]
    runpath = [string(v) for t, v in entries if t == DT_RUNPATH]
    # RPATH counts only when there is no RUNPATH, as for the dynamic loader.
    search = runpath or [string(v) for t, v in entries if t == DT_RPATH]
    dirs = [d for s in search for d in s.split(":") if d]
    return needed, dirs


def _origin_dirs(dirs: list[str], origin: str) -> list[str]:
    out = []
    for d in dirs:
        if "$ORIGIN" in d or "${ORIGIN}" in d:
            out.append(os.path.normpath(
                d.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)))
    return out


def toolchain_files(executable: str) -> list[tuple[str, str]]:
    """(path to read, absolute path where it belongs) for the executable and
    every library it loads through $ORIGIN, recursively.

    The executable belongs in its real directory (the loader takes $ORIGIN
    from the real path of the running program) under the name it was called
    by (clang picks its driver mode from that name); a library belongs where
    the loader finds it, under its DT_NEEDED name.
    """
    real = os.path.realpath(executable)
    first = (real, os.path.join(os.path.dirname(real), os.path.basename(executable)))
    out = [first]
    seen = {first[1]}
    todo = [(real, os.path.dirname(real))]
    while todo:
        path, origin = todo.pop()
        needed, dirs = dynamic_info(path)
        search = _origin_dirs(dirs, origin)
        for name in needed:
            for d in search:
                candidate = os.path.join(d, name)
                if os.path.isfile(candidate):
                    if candidate not in seen:
                        seen.add(candidate)
                        out.append((os.path.realpath(candidate), candidate))
                        todo.append((os.path.realpath(candidate), d))
                    break
    return out
