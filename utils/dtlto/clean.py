#!/usr/bin/env python3
"""Remove the temporary files that DTLTO links killed by SIGKILL left behind.

A link removes its temporary files when it ends, also on Ctrl-C, SIGTERM and
SIGHUP. A link killed by SIGKILL (or by the OOM killer, or a power cut)
cannot: its manifest, side file, index shards, objects and dtlto-backend
inputs stay in the output's directory, and a half-written cache entry in the
cache directory. They carry the linker's pid in their names, so no later
link trips over them; this removes them.

A file is stale when its name is one of the engine's (or LLVM 22's own, which
uses the same names), the process of the pid in its name is gone, and it was
last changed more than --older-than minutes ago. The age matters where a
directory is shared across pid namespaces (containers) or machines: there a
live link's pid looks dead from here.

The copies of archive members (<archive>(<member>).<output stem>.<hash>.o) have no
pid in their names: the next link of the same output writes them again and
removes them. --copies removes those too, when nothing links into DIR.
"""

import argparse
import os
import re
import sys
import time

# (pattern, what), the pid in group "pid".
PATTERNS = [
    (r"\.(?P<pid>\d+)\.dist-file\.json", "manifest"),
    (r"\.(?P<pid>\d+)\.dist-file\.dtlto\.json", "manifest side file"),
    (r"\.(?P<pid>\d+)\.dtlto-config\.json", "dtlto-backend configuration"),
    (r"\.(?P<pid>\d+)\.dtlto-index\.bc", "dtlto-backend combined index"),
    (r"\.\d+\.(?P<pid>\d+)\.native\.o", "object"),
    (r"\.\d+\.(?P<pid>\d+)\.native\.o\.thinlto\.bc", "index shard"),
    (r"^dtlto-entry-(?P<pid>\d+)-[A-Za-z0-9]+\.tmp", "unfinished cache entry"),
]
COPY = re.compile(r"\.[0-9a-f]{16}(\.\d+)?\.o$")


# Linux's largest pid_max: a larger number in a name is no pid of ours.
PID_MAX = 1 << 22


def alive(pid: int) -> bool:
    """Whether pid may be a running process (a number no pid can be counts as
    running: its file is not ours to remove)."""
    if not 0 < pid <= PID_MAX:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stale(name: str, path: str, older_than: float, copies: bool) -> str | None:
    """What the file is, if it is stale; None otherwise."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not os.path.isfile(path) or os.path.islink(path) or \
            time.time() - st.st_mtime < older_than:
        return None
    for pattern, what in PATTERNS:
        m = re.search(pattern + "$", name)
        if m and not alive(int(m["pid"])):
            return what
    if copies and COPY.search(name):
        return "archive member copy"
    return None


def main() -> int:
    p = argparse.ArgumentParser(
        prog="clean.py", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dirs", nargs="+", metavar="DIR",
                   help="an output directory of links, or a ThinLTO cache directory")
    p.add_argument("--older-than", type=float, default=60, metavar="MINUTES",
                   help="only files last changed more than this long ago "
                        "(default: %(default)s)")
    p.add_argument("--copies", action="store_true",
                   help="also remove archive member copies (only when no link "
                        "runs in DIR)")
    p.add_argument("--dry-run", action="store_true",
                   help="say what would be removed, remove nothing")
    a = p.parse_args()
    if a.older_than < 0:
        p.error(f"--older-than: expected a number of minutes >= 0, got {a.older_than}")
    removed = problems = 0
    for d in a.dirs:
        try:
            names = sorted(os.listdir(d))
        except OSError as e:
            print(f"clean.py: error: cannot read the directory '{d}': {e.strerror}",
                  file=sys.stderr)
            problems += 1
            continue
        for name in names:
            path = os.path.join(d, name)
            what = stale(name, path, a.older_than * 60, a.copies)
            if not what:
                continue
            if a.dry_run:
                print(f"would remove {path} ({what})")
                continue
            try:
                os.remove(path)
            except OSError as e:
                print(f"clean.py: error: cannot remove '{path}': {e.strerror}",
                      file=sys.stderr)
                problems += 1
                continue
            print(f"removed {path} ({what})")
            removed += 1
    if not a.dry_run:
        print(f"clean.py: {removed} stale file{'' if removed == 1 else 's'} removed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
