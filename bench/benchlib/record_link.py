#!/usr/bin/env python3
"""Linker stand-in used while building a benchmark program.

clang runs it (--ld-path=) in place of ld.lld: it appends the working
directory and the exact linker arguments to $DTLTO_BENCH_LINK_LOG as one JSON
line, then becomes the real linker ($DTLTO_BENCH_REAL_LD) with the same
arguments, so the build is unchanged. The harness later replays the
recorded command of the program's final link."""

import json
import os
import sys

if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0)
log = os.environ.get("DTLTO_BENCH_LINK_LOG")
real = os.environ.get("DTLTO_BENCH_REAL_LD", "/usr/lib/llvm-22/bin/ld.lld")
if log:
    with open(log, "a") as f:
        f.write(json.dumps({"cwd": os.getcwd(), "args": sys.argv[1:]}) + "\n")
# LLD picks its flavour from argv[0].
os.execv(real, ["ld.lld"] + sys.argv[1:])
