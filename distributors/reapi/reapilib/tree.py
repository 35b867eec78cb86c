"""Content digests and the input root Merkle tree of an action.

A digest is a (sha256 hex, size) tuple: hashable, so it keys the blob maps,
and turned into a protobuf Digest only at the wire. A Blob is content the
CAS may need: bytes held in memory (Directory, Command and Action messages)
or a file on disk, read only when it is uploaded.

REAPI wants each Directory message canonical: files and subdirectories
sorted by name, no duplicates, serialized deterministically, so that equal
trees have equal digests on every client; the action cache depends on it.
"""

import hashlib
import os

from dtltodist import paths

Digest = tuple[str, int]

CHUNK = 1 << 20
EMPTY: Digest = (hashlib.sha256(b"").hexdigest(), 0)


class TreeError(Exception):
    """Two inputs that cannot share one tree. str() is one line."""


def digest_bytes(data: bytes) -> Digest:
    return hashlib.sha256(data).hexdigest(), len(data)


def digest_file(path: str) -> Digest:
    h = hashlib.sha256()
    size = 0
    with paths.open_input(path) as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def show(d: Digest) -> str:
    return f"{d[0]}/{d[1]}"


class Blob:
    __slots__ = ("digest", "data", "path")

    def __init__(self, digest: Digest, data: bytes | None = None, path: str | None = None):
        self.digest = digest
        self.data = data
        self.path = path

    def read(self) -> bytes:
        """The whole content, checked against the digest (files may change)."""
        if self.data is not None:
            return self.data
        with paths.open_input(self.path) as f:
            data = f.read()
        if digest_bytes(data) != self.digest:
            raise OSError(f"{self.path} changed while the distributor was running")
        return data

    def chunks(self, size: int = CHUNK):
        """The content in pieces, for streaming uploads; checked at the end."""
        if self.data is not None:
            for i in range(0, len(self.data), size):
                yield self.data[i:i + size]
            return
        h = hashlib.sha256()
        n = 0
        with paths.open_input(self.path) as f:
            while chunk := f.read(size):
                h.update(chunk)
                n += len(chunk)
                yield chunk
        if (h.hexdigest(), n) != self.digest:
            raise OSError(f"{self.path} changed while the distributor was running")


class FileDigests:
    """Digests of local files, computed once per path per run."""

    def __init__(self):
        self._known: dict[str, Digest] = {}

    def blob(self, path: str) -> Blob:
        key = os.path.abspath(path)
        d = self._known.get(key)
        if d is None:
            d = self._known[key] = digest_file(path)
        return Blob(d, path=path)


class _File:
    __slots__ = ("blob", "executable", "origin")

    def __init__(self, blob: Blob, executable: bool, origin: str):
        self.blob = blob
        self.executable = executable
        self.origin = origin


def split_relative(path: str) -> list[str]:
    """Components of a normalized relative tree path ('' is the root)."""
    if os.path.isabs(path):
        raise TreeError(f'"{path}" is not a relative path in the input tree')
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise TreeError(f'"{path}" leaves the input tree')
    return parts


class InputTree:
    """Files at relative paths, built into REAPI Directory messages."""

    def __init__(self):
        self._root: dict = {}

    def _dir(self, parts: list[str], origin: str) -> dict:
        node = self._root
        for i, name in enumerate(parts):
            child = node.setdefault(name, {})
            if isinstance(child, _File):
                raise TreeError(f'"{"/".join(parts[:i + 1])}" is both a file '
                                f'({child.origin}) and a directory ({origin})')
            node = child
        return node

    def add_dir(self, path: str, origin: str = "") -> None:
        self._dir(split_relative(path), origin or path)

    def add_file(self, path: str, blob: Blob, executable: bool = False,
                 origin: str = "") -> None:
        origin = origin or path
        parts = split_relative(path)
        if not parts:
            raise TreeError(f'"{path}" names no file')
        parent = self._dir(parts[:-1], origin)
        old = parent.get(parts[-1])
        if isinstance(old, dict):
            raise TreeError(f'"{path}" is both a directory and a file ({origin})')
        if old is not None:
            if old.blob.digest != blob.digest:
                raise TreeError(f'"{path}" would hold two different files: '
                                f"{old.origin} and {origin}")
            old.executable = old.executable or executable
            return
        parent[parts[-1]] = _File(blob, executable, origin)

    def files(self):
        """(path, _File) for every file, sorted by path."""
        def walk(node, prefix):
            for name in sorted(node):
                child = node[name]
                path = f"{prefix}{name}"
                if isinstance(child, _File):
                    yield path, child
                else:
                    yield from walk(child, path + "/")
        yield from walk(self._root, "")

    def build(self, re) -> tuple[Digest, dict[Digest, Blob]]:
        """The root Directory's digest and every blob the tree needs."""
        blobs: dict[Digest, Blob] = {}

        def build_dir(node: dict) -> Digest:
            msg = re.Directory()
            # Names compare as UTF-8 bytes, as the spec's "lexicographical
            # order" means; for str this is the same as code point order.
            for name in sorted(node):
                child = node[name]
                if isinstance(child, _File):
                    d = child.blob.digest
                    msg.files.add(name=name, digest=re.Digest(hash=d[0], size_bytes=d[1]),
                                  is_executable=child.executable)
                    blobs.setdefault(d, child.blob)
                else:
                    sub = build_dir(child)
                    msg.directories.add(name=name,
                                        digest=re.Digest(hash=sub[0], size_bytes=sub[1]))
            data = msg.SerializeToString(deterministic=True)
            d = digest_bytes(data)
            blobs[d] = Blob(d, data=data)
            return d

        return build_dir(self._root), blobs
