"""Writes a manifest for batch.test: MODULES as jobs, compiled by
batch_worker.py, which the manifest's side file marks as able to run
batches (OUT.dtlto.json, as our engine writes it).

  batch_manifest.py [--input-bytes=N] PYTHON OUT.json MODULE...

Each job's input bytes (the side file's) are N, 0 by default.
"""
import json
import os
import sys


def write(out: str, common_args: list, modules: list, size: int = 0, **side) -> None:
    """OUT.json with a job per module (and its empty module and shard
    files), and its side file with side's fields."""
    jobs = [{"args": [m, f"-fthinlto-index={m}.shard", "-o", f"{m}.obj"],
             "inputs": [m, f"{m}.shard"], "outputs": [f"{m}.obj"]} for m in modules]
    for m in modules:
        for f in (m, m + ".shard"):
            open(f, "w").close()
    with open(out, "w") as f:
        json.dump({"common": {"linker_output": "prog", "args": common_args, "inputs": []},
                   "jobs": jobs}, f)
    with open(out[:-len(".json")] + ".dtlto.json", "w") as f:
        json.dump({"engine": "dtlto", "version": "test", "jobs": len(jobs),
                   "input_bytes": [size] * len(jobs), **side}, f)


if __name__ == "__main__":
    args = sys.argv[1:]
    size = int(args.pop(0).split("=", 1)[1]) if args[0].startswith("--input-bytes=") else 0
    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "batch_worker.py")
    write(args[1], [args[0], worker], args[2:], size, batch_arg="--batch")
