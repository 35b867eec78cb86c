"""Writes a manifest for fork-server.test: MODULES as jobs, compiled by
COMPILER, and a side file (as our engine writes it) naming LIBRARY as the
fork server, or none with --no-library.

  fork_manifest.py [--no-library] COMPILER LIBRARY OUT.json MODULE...
"""
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
from batch_manifest import write  # noqa: E402

args = sys.argv[1:]
library = not (args and args[0] == "--no-library")
if not library:
    args.pop(0)
compiler, lib, out, modules = args[0], args[1], args[2], args[3:]
write(out, [compiler], modules, **({"fork_server": lib} if library else {}))
