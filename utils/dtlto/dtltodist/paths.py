"""Path rules for distributors that move files to and from another machine.

Manifest paths are as the linker saw them: usually relative to its working
directory, sometimes absolute, sometimes with "..". A remote engine needs
them relative to one root it can mirror (rebase, common_root), and must not
trust a path a remote engine hands back (check_returned_output): a result
named "../../etc/x" or a symlink planted in the output tree would let a
remote job write outside the build.
"""

import errno
import os
import stat


class UnsafePathError(Exception):
    """A path that would leave its root or follow a link. str() is one line."""


def open_input(path: str):
    """path opened for reading in binary, if it is a regular file (after
    symlinks); else OSError whose strerror says so. A distributor that reads
    inputs itself (to hash or ship them) would wait forever on a FIFO and
    read /dev/zero without end."""
    # Non-blocking, so that opening a FIFO returns at once; blocking again
    # for the reads.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def absolute(path: str, cwd: str | None = None, pathmod=os.path) -> str:
    """path made absolute against cwd (default: ours) and normalized lexically.

    pathmod is the path flavour (ntpath for a Windows cwd such as C:\\b, when
    a script for a Windows engine is made or tested elsewhere).
    """
    return pathmod.normpath(pathmod.join(cwd or os.getcwd(), path))


def total_size(paths, cwd: str | None = None) -> int:
    """Bytes in the distinct files of paths (missing ones count 0): for summaries."""
    total = 0
    for p in {absolute(p, cwd) for p in paths}:
        try:
            total += os.stat(p).st_size
        except OSError:
            pass
    return total


def common_root(paths, cwd: str | None = None) -> str:
    """The deepest directory containing cwd and every path in paths."""
    base = absolute(".", cwd)
    return os.path.commonpath([base] + [absolute(p, base) for p in paths])


def rebase(path: str, root: str, cwd: str | None = None) -> str:
    """path relative to root, e.g. for a remote input tree mirrored at root.

    Raises UnsafePathError if path is not below root.
    """
    full = absolute(path, cwd)
    root = absolute(root, cwd)
    if full != root and os.path.commonpath([full, root]) != root:
        raise UnsafePathError(f'"{path}" is outside the root "{root}"')
    return os.path.relpath(full, root)


def check_returned_output(path: str, root: str) -> str:
    """Check a path a remote engine says it wrote, return it joined to root.

    It must be relative, free of ".." and of symlinks in every component
    below root (a symlinked directory would redirect a later write).
    """
    if not path or os.path.isabs(path):
        raise UnsafePathError(f'returned output "{path}" is not a relative path')
    parts = [p for p in path.split(os.sep) if p not in ("", ".")]
    if ".." in parts:
        raise UnsafePathError(f'returned output "{path}" contains ".."')
    if not parts:
        raise UnsafePathError(f'returned output "{path}" names no file')
    current = root
    for part in parts:
        current = os.path.join(current, part)
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            break  # not written yet: nothing below it can be a link either
        except OSError as e:
            raise UnsafePathError(f'returned output "{path}": {e.strerror}') from None
        if stat.S_ISLNK(mode):
            raise UnsafePathError(
                f'returned output "{path}" goes through the symlink "{current}"')
    return os.path.join(root, *parts)
