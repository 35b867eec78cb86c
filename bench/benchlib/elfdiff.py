"""Comparing two linked programs: byte-identical, or which sections differ.

Reads the ELF64 little-endian section headers directly (the programs are
x86-64 Linux executables), so the comparison needs no tool output parsing.
"""

import hashlib
import struct


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def sections(path):
    """{name: (size, sha256 of contents or None for NOBITS)} of an ELF file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path} is not a little-endian ELF64 file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
               for i in range(shnum)]
    strtab = headers[shstrndx]
    names = data[strtab[4]:strtab[4] + strtab[5]]
    out = {}
    for name_off, stype, _, _, off, size, *_ in headers[1:]:
        name = names[name_off:names.index(b"\0", name_off)].decode()
        content = None if stype == 8 else hashlib.sha256(data[off:off + size]).hexdigest()
        key = name
        n = 2
        while key in out:  # repeated names: keep each
            key = f"{name}#{n}"
            n += 1
        out[key] = (size, content)
    return out


def compare(reference, other):
    """Equivalence of other with reference, as plain data for the JSON.

    identical: byte-identical files; else sections: the sections whose size
    or contents differ, with both sizes; size_delta: file size difference."""
    ref_hash, other_hash = sha256(reference), sha256(other)
    result = {"identical": ref_hash == other_hash, "sha256": other_hash,
              "reference_sha256": ref_hash}
    if result["identical"]:
        return result
    a, b = sections(reference), sections(other)
    diffs = []
    for name in list(a) + [n for n in b if n not in a]:
        sa, sb = a.get(name), b.get(name)
        if sa == sb:
            continue
        diffs.append({"section": name,
                      "reference_size": sa[0] if sa else None,
                      "size": sb[0] if sb else None,
                      "same_size_other_bytes": bool(sa and sb and sa[0] == sb[0])})
    import os
    result["size_delta"] = os.path.getsize(other) - os.path.getsize(reference)
    result["sections"] = diffs
    return result


def summary(result, limit=4):
    """One short line for the Markdown table."""
    if result is None:
        return "n/a"
    if result["identical"]:
        return "identical"
    parts = []
    # Largest differences first; metadata-only differences last.
    diffs = sorted(result["sections"], key=lambda d: -abs((d["size"] or 0)
                                                          - (d["reference_size"] or 0)))
    for d in diffs[:limit]:
        if d["reference_size"] is None:
            parts.append(f"{d['section']} added")
        elif d["size"] is None:
            parts.append(f"{d['section']} missing")
        elif d["size"] == d["reference_size"]:
            parts.append(f"{d['section']} bytes")
        else:
            delta = d["size"] - d["reference_size"]
            pct = 100.0 * delta / d["reference_size"] if d["reference_size"] else 0
            parts.append(f"{d['section']} {delta:+d} B ({pct:+.1f}%)")
    more = len(diffs) - limit
    tail = f", {more} more" if more > 0 else ""
    return f"differs: {', '.join(parts)}{tail}"
