"""Writes a manifest for batch.test: MODULES as jobs, compiled by
batch_worker.py, which the manifest's side file marks as able to run
batches (OUT.dtlto.json, as our engine writes it).

  batch_manifest.py PYTHON OUT.json MODULE...
"""
import json
import os
import sys

python, out, modules = sys.argv[1], sys.argv[2], sys.argv[3:]
worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "batch_worker.py")
jobs = [{"args": [m, f"-fthinlto-index={m}.shard", "-o", f"{m}.obj"],
         "inputs": [m, f"{m}.shard"], "outputs": [f"{m}.obj"]} for m in modules]
for m in modules:
    for f in (m, m + ".shard"):
        open(f, "w").close()
with open(out, "w") as f:
    json.dump({"common": {"linker_output": "prog", "args": [python, worker],
                          "inputs": []},
               "jobs": jobs}, f)
with open(out[:-len(".json")] + ".dtlto.json", "w") as f:
    json.dump({"engine": "dtlto", "version": "test", "jobs": len(jobs),
               "batch_arg": "--batch", "input_bytes": [0] * len(jobs)}, f)
