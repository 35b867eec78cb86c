"""Writes a manifest for fork-server.test: MODULES as jobs, compiled by
COMPILER, and a side file (as our engine writes it) naming LIBRARY as the
fork server, or none with --no-library.

  fork_manifest.py [--no-library] COMPILER LIBRARY OUT.json MODULE...
"""
import json
import sys

args = sys.argv[1:]
library = not (args and args[0] == "--no-library")
if not library:
    args.pop(0)
compiler, lib, out, modules = args[0], args[1], args[2], args[3:]
jobs = [{"args": [m, f"-fthinlto-index={m}.shard", "-o", f"{m}.obj"],
         "inputs": [m, f"{m}.shard"], "outputs": [f"{m}.obj"]} for m in modules]
for m in modules:
    for f in (m, m + ".shard"):
        open(f, "w").close()
with open(out, "w") as f:
    json.dump({"common": {"linker_output": "prog", "args": [compiler], "inputs": []},
               "jobs": jobs}, f)
side = {"engine": "dtlto", "version": "test", "jobs": len(jobs),
        "input_bytes": [0] * len(jobs)}
if library:
    side["fork_server"] = lib
with open(out[:-len(".json")] + ".dtlto.json", "w") as f:
    json.dump(side, f)
