#!/usr/bin/env python3
"""What creating a link's worth of small files costs in a directory, fresh
and again after the files of a link before were removed.

  bench/fs-churn.py --dir /var/tmp/churn [--files 3000] [--pause 12]

A DTLTO link with files (a distributor program) writes a shard, a member
copy and an object for most jobs and removes them all at its end; the next
link in the same directory writes as many again. On ext4 without a journal
the kernel does not like to reuse an inode it freed in the last seconds
(to minutes, while its inode table block is not yet written back), and each
new file's inode search walks past every such inode of the group, looking
each one up: after a link removed thousands of files, every file the next
link creates costs a walk of the whole group. With a journal (ext4's
default) that check is off; tmpfs has none.

Each round writes --files files of 4 KiB (the size of an object at module
scale 0.1) into DIR, removes them, and prints the system CPU seconds the
writes took: first in a fresh directory, then at once again, then after
--pause seconds. Nothing is left in DIR, which must not exist or be empty.
"""

import argparse
import os
import resource
import sys
import time


def system_seconds():
    return resource.getrusage(resource.RUSAGE_SELF).ru_stime


def write_and_remove(directory, tag, files):
    """The system CPU seconds of writing the files (their removal apart)."""
    names = [os.path.join(directory, f"{tag}.{i}.o") for i in range(files)]
    try:
        before = system_seconds()
        for name in names:
            with open(name, "wb") as f:
                f.write(b"x" * 4096)
        return system_seconds() - before
    finally:
        for name in names:
            try:
                os.unlink(name)
            except FileNotFoundError:
                pass


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--dir", required=True, help="the directory to write in (made, then removed)")
    p.add_argument("--files", type=int, default=3000, metavar="N",
                   help="files a round writes (default: %(default)s, about a link of 1,000 jobs)")
    p.add_argument("--pause", type=float, default=12.0, metavar="S",
                   help="seconds to wait before the last round (default: %(default)s)")
    args = p.parse_args()
    if args.files < 1 or args.pause < 0:
        p.error("--files must be at least 1 and --pause not negative")
    try:
        os.makedirs(args.dir, exist_ok=True)
        if os.listdir(args.dir):
            p.error(f"--dir {args.dir} is not empty: its files would be mixed with ours")
    except OSError as e:
        p.error(f"--dir {args.dir}: {e.strerror}")
    try:
        rounds = [("fresh directory", 0.0), ("again at once", 0.0),
                  (f"again after {args.pause:g} s", args.pause)]
        for i, (what, pause) in enumerate(rounds):
            time.sleep(pause)
            spent = write_and_remove(args.dir, f"r{i}", args.files)
            print(f"{what}: {spent:.3f} s of system CPU for {args.files} files "
                  f"({1000 * spent / args.files:.3f} ms a file)")
    except OSError as e:
        sys.exit(f"fs-churn.py: {e.filename}: {e.strerror}")
    finally:
        try:
            os.rmdir(args.dir)
        except OSError:
            pass


if __name__ == "__main__":
    main()
