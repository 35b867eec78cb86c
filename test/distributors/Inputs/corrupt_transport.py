#!/usr/bin/env python3
"""A transport that damages what comes back, for transport-digest.test.

Installed as `ssh` or `srun` (it acts by the name it is run as), it runs
the job side on this machine instead of another one and changes one byte
of the tar stream the job side writes back:

  ssh [options] -T -- HOST COMMAND    COMMAND run with sh -c
  srun [options] -- ARGV...           ARGV run, on "node1", or "node2" when
                                      --exclude names node1 (SLURMD_NODENAME)

The damage: the first "payload" in the stream becomes "PAYLOAD", which
keeps the tar well formed (its checksums cover headers only), so only the
object's bytes differ. CORRUPT=always damages every stream that has it,
CORRUPT=once only the first (the one that creates the file CORRUPT_MARK).
Each start appends the host or node to TRANSPORT_LOG.
"""

import os
import subprocess
import sys


def main(argv: list[str]) -> int:
    me = os.path.basename(argv[0])
    args = argv[1:]
    cut = args.index("--")
    env = dict(os.environ)
    if me == "ssh":
        where, command = args[cut + 1], ["/bin/sh", "-c", args[cut + 2]]
    else:
        excluded = [a.split("=", 1)[1].split(",") for a in args[:cut]
                    if a.startswith("--exclude=")]
        where = "node2" if any("node1" in e for e in excluded) else "node1"
        env["SLURMD_NODENAME"] = where
        command = args[cut + 1:]
    with open(os.environ["TRANSPORT_LOG"], "a") as log:
        log.write(f"{me} {where}\n")
    done = subprocess.run(command, stdout=subprocess.PIPE, env=env)
    data = done.stdout
    if b"payload" in data and damage_this_one():
        data = data.replace(b"payload", b"PAYLOAD", 1)
    sys.stdout.buffer.write(data)
    sys.stdout.flush()
    return done.returncode


def damage_this_one() -> bool:
    mode = os.environ.get("CORRUPT", "")
    if mode == "always":
        return True
    if mode == "once":
        try:
            os.close(os.open(os.environ["CORRUPT_MARK"], os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return True
        except FileExistsError:
            return False
    return False


if __name__ == "__main__":
    sys.exit(main(sys.argv))
