"""Writes OUT/gen100/results.json and OUT/gen400/results.json, as
bench/run.py would for two generated programs, with round numbers: the
in-process wall grows as the module count (10 s -> 40 s), ours as its
power 1.5 (5 s -> 40 s); one probe link of ours at each size. Stock and
the local plugin in the linker give the targets' ratios: ours / stock 0.5
and 0.8; the plugin 1.02 and 1.00 of in-process's wall, 1.05 and 1.00 of
its CPU, 0.9 of its linker peak. At 400 modules in-process and the plugin
ran twice, alternating: the plugin's CPU 0.975 and 1.025 of in-process's
run by run."""
import json
import os
import sys


def run(mode, wall, cpu, rss_mib, n, index=0):
    return {"mode": mode, "kind": "run", "index": index, "returncode": 0, "wall": wall,
            "cpu": cpu, "linker_peak_rss": rss_mib * 1024 * 1024, "loadavg_before": 1.0,
            "jobs": n, "sha256": "a"}


out = sys.argv[1]
for n, inproc, ours, stock, plugin_cpu in ((100, 10.0, 5.0, 10.0, 10.5),
                                           (400, 40.0, 40.0, 50.0, 39.0)):
    runs = [
        run("inproc", inproc, inproc, 100, None),
        run("ours", ours, ours, 50, n),
        {"mode": "ours", "kind": "probe", "returncode": 0, "wall": ours + n / 100},
        run("stock", stock, stock, 60, n),
        run("ours-inlinker", inproc * (1.02 if n == 100 else 1.0), plugin_cpu, 90, n),
    ]
    if n == 400:
        runs += [run("inproc", inproc, inproc, 100, None, index=1),
                 run("ours-inlinker", inproc, 41.0, 90, n, index=1)]
    per_job = {k: {"mean": 1024.0, "median": 1024, "max": 2048, "total": 1024 * n}
               for k in ("needs_bytes", "module_bytes", "shard_bytes", "import_bytes",
                         "imports", "copy_bytes", "common_bytes", "object_bytes",
                         "seconds")}
    probe = {"manifest_bytes": 500 * n, "linker_files": 3 * n, "distributor_wall": ours,
             "job_count": n, "per_job": per_job}
    results = {"programs": {f"gen{n}": {
        "modes": {m: {"status": "ok"} for m in ("inproc", "ours", "stock", "ours-inlinker")},
        "runs": runs, "probes": {"ours": [probe]}}}}
    os.makedirs(os.path.join(out, f"gen{n}"), exist_ok=True)
    with open(os.path.join(out, f"gen{n}", "results.json"), "w") as f:
        json.dump(results, f)
