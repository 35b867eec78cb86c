#!/usr/bin/env python3
"""Run a distributor and keep a copy of what it says on the event channel.

  events_tee.py --log=FILE --run=DISTRIBUTOR [DISTRIBUTOR-ARG...] MANIFEST

Used as the linker's distributor in the tests of real engines: the wrapped
distributor gets an event channel of ours, and each line it writes there
is appended to FILE and passed on to the linker's channel, unchanged. The
job channel (streaming), the standard streams, the exit code and the
process group are the distributor's own. Our options come first, each as
--NAME=VALUE; everything after --run=DISTRIBUTOR is the distributor's.
"""
# dtlto-stream-protocol: 1   (so that the linker streams through us; the
# wrapped distributor must speak it too, and DTLTO_STREAM=0 tests one-shot)

import argparse
import os
import subprocess
import sys

EVENTS_VAR = "DTLTO_EVENTS_FD"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log", required=True, metavar="FILE",
                        help="append each event line here")
    parser.add_argument("--run", required=True, metavar="DISTRIBUTOR",
                        help="the distributor to run; the arguments after this one are its")
    argv = sys.argv[1:]
    ours = []
    while argv and argv[0].split("=", 1)[0] in ("--log", "--run", "-h", "--help"):
        ours.append(argv.pop(0))
        if ours[-1].startswith("--run="):
            break
    args = parser.parse_args(ours)

    linker = os.environ.get(EVENTS_VAR, "")
    linker_fd = int(linker) if linker.isdigit() else None
    read_end, write_end = os.pipe()
    env = dict(os.environ, **{EVENTS_VAR: str(write_end)})
    keep = [write_end] + [int(v) for k, v in os.environ.items()
                          if k == "DTLTO_JOBS_FD" and v.isdigit()]
    proc = subprocess.Popen([args.run] + argv, env=env, pass_fds=keep)
    os.close(write_end)
    if linker_fd is not None:
        os.set_inheritable(linker_fd, False)
    pending = b""
    with open(args.log, "ab") as log, os.fdopen(read_end, "rb", buffering=0) as events:
        while True:
            chunk = events.read(65536)
            if not chunk:
                break  # the distributor (and all it started) closed the channel
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                log.write(line + b"\n")
                log.flush()
                if linker_fd is not None:
                    try:
                        os.write(linker_fd, line + b"\n")
                    except OSError:
                        linker_fd = None
        if pending:
            log.write(pending + b"\n")
    return proc.wait()


if __name__ == "__main__":
    sys.exit(main())
