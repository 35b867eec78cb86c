"""The scale report of bench/scale.py: every generated program's results
under one directory (one bench/run.py output per size, or per size and mode),
as one table per quantity against the module count, how fast each grows, and
a plot.

Growth is the exponent k of cost ~ modules^k between the smallest and the
largest size measured: 1 is linear; what the issue calls "faster than
linear" is k clearly above 1 (more than 1.15 here, given the noise).
"""

import glob
import json
import math
import os
import re
import statistics

from .modes import MODES as ALL_MODES, OURS, REFERENCE, STOCK

MIB = 1024 * 1024
# The harness's modes, in its order (benchlib/modes.py); a mode a size was
# not run in is left out of its rows.
MODES = [m.key for m in ALL_MODES]
LABELS = {m.key: m.short for m in ALL_MODES}


def collect(out_dir):
    """{modules: {mode: entry}} of every results.json below out_dir. An
    entry has the timed runs' medians (wall, cpu, linker_rss), the trace
    phases and the first probe summary, when present."""
    table = {}
    for path in sorted(glob.glob(os.path.join(out_dir, "*", "results.json"))):
        with open(path) as f:
            results = json.load(f)
        for name, prog in results.get("programs", {}).items():
            m = re.match(r"^gen(\d+)$", name)
            if not m:
                continue
            n = int(m.group(1))
            for mode in prog.get("modes", {}):
                if prog["modes"][mode].get("status", "ok") != "ok":
                    continue
                runs = [r for r in prog.get("runs", [])
                        if r["mode"] == mode and r["kind"] == "run"
                        and r.get("returncode") == 0]
                if not runs:
                    continue
                entry = {
                    "runs": len(runs),
                    "wall": statistics.median(r["wall"] for r in runs),
                    "cpu": statistics.median(r["cpu"] for r in runs),
                    "linker_rss": statistics.median(r["linker_peak_rss"] for r in runs) / MIB,
                    # Run by run, for the ratios of runs that alternated.
                    "each": {r.get("index", i): {"wall": r["wall"], "cpu": r["cpu"],
                                                 "linker_rss": r["linker_peak_rss"] / MIB}
                             for i, r in enumerate(runs)},
                    "load": statistics.median(r.get("loadavg_before", 0) for r in runs),
                    "jobs": runs[0].get("jobs"),
                    "phases": prog.get("phases", {}).get(mode),
                    "probe": (prog.get("probes", {}).get(mode) or [None])[0],
                    # The probe link's own wall: with its distributor's,
                    # the linker's time outside the distributor.
                    "probe_wall": next((r["wall"] for r in prog.get("runs", [])
                                        if r["mode"] == mode and r["kind"] == "probe"
                                        and r.get("returncode") == 0), None),
                    "source": os.path.relpath(path, out_dir),
                    "sha256": sorted({r.get("sha256") for r in runs if r.get("sha256")}),
                }
                table.setdefault(n, {})[mode] = entry
    return table


def growth(points):
    """k of y ~ x^k between the first and the last (x, y) with y > 0."""
    pts = [(x, y) for x, y in sorted(points) if y and y > 0]
    if len(pts) < 2 or pts[0][0] == pts[-1][0]:
        return None
    (x0, y0), (x1, y1) = pts[0], pts[-1]
    return math.log(y1 / y0) / math.log(x1 / x0)


def _fmt(v, digits=2):
    return "-" if v is None else f"{v:.{digits}f}"


def _engine_ms_per_job(entry, n):
    ph = entry.get("phases") or {}
    return 1000 * ph["engine"] / n if ph.get("engine") else None


def _outside(entry, n):
    """Seconds the probe link spent outside its distributor: LLD's own
    work, the thin link, the engine before and after the jobs, the final
    link (the distributor wall is the probe's, around the real one)."""
    p, wall = entry.get("probe"), entry.get("probe_wall")
    if not p or wall is None or not p.get("distributor_wall"):
        return None
    return wall - p["distributor_wall"]


def _series(table, mode, fn):
    out = []
    for n in sorted(table):
        e = table[n].get(mode)
        v = fn(e, n) if e else None
        if v is not None:
            out.append((n, v))
    return out


QUANTITIES = [
    # (name, unit, digits, fn(entry, modules))
    ("wall", "s", 1, lambda e, n: e["wall"]),
    ("CPU", "s", 1, lambda e, n: e["cpu"]),
    ("linker peak RSS", "MiB", 0, lambda e, n: e["linker_rss"]),
    ("thin link", "s", 2, lambda e, n: (e.get("phases") or {}).get("thin_link")),
    ("shards + manifest", "s", 2, lambda e, n: (e.get("phases") or {}).get("shards")),
    ("distributor", "s", 1, lambda e, n: (e.get("phases") or {}).get("distributor")),
    ("after the distributor", "s", 2, lambda e, n: (e.get("phases") or {}).get("after")),
    ("final link", "s", 2, lambda e, n: (e.get("phases") or {}).get("final_link")),
    ("engine own time per job", "ms", 2, _engine_ms_per_job),
    ("linker outside the distributor (probe link)", "s", 2, _outside),
    ("linker outside the distributor, per job", "ms", 2,
     lambda e, n: 1000 * _outside(e, n) / n if _outside(e, n) is not None else None),
    ("bytes a job needs, mean", "KiB", 1,
     lambda e, n: e["probe"]["per_job"]["needs_bytes"]["mean"] / 1024 if e.get("probe") else None),
    ("bytes a job needs, max", "KiB", 1,
     lambda e, n: e["probe"]["per_job"]["needs_bytes"]["max"] / 1024 if e.get("probe") else None),
    ("shard per job, mean", "KiB", 2,
     lambda e, n: e["probe"]["per_job"]["shard_bytes"]["mean"] / 1024 if e.get("probe") else None),
    ("common inputs per job", "KiB", 1,
     lambda e, n: e["probe"]["per_job"]["common_bytes"]["mean"] / 1024 if e.get("probe") else None),
    ("object per job, mean", "KiB", 1,
     lambda e, n: e["probe"]["per_job"]["object_bytes"]["mean"] / 1024 if e.get("probe") else None),
    ("manifest", "KiB", 0,
     lambda e, n: e["probe"]["manifest_bytes"] / 1024 if e.get("probe") else None),
    ("manifest per job", "bytes", 0,
     lambda e, n: e["probe"]["manifest_bytes"] / max(1, e["probe"]["job_count"])
     if e.get("probe") else None),
    ("files the link writes", "", 0,
     lambda e, n: e["probe"]["linker_files"] if e.get("probe") else None),
    ("job seconds, mean", "s", 3,
     lambda e, n: e["probe"]["per_job"]["seconds"]["mean"] if e.get("probe") else None),
]


# The targets (docs/performance.md, "Large code bases"): one mode's
# median against another's at the same size, and the bound it must stay
# within. Native means any mode whose workers are dtlto-backend (through
# local.py, or the local plugin in its host or in the linker); memory is
# checked for every mode that runs our linker.
NATIVE_MODES = [m.key for m in ALL_MODES if m.native]
TARGETS = [
    # (ratio, modes, reference mode, entry field, bound)
    ("wall / stock DTLTO's", [OURS], STOCK, "wall", 1.00),
    ("wall / in-process's", NATIVE_MODES, REFERENCE, "wall", 1.03),
    ("CPU / in-process's", NATIVE_MODES, REFERENCE, "cpu", 1.03),
    ("linker peak RSS / in-process's", [m.key for m in ALL_MODES if m.linker == "ours"],
     REFERENCE, "linker_rss", 1.00),
]


def _pairs(a, b, field):
    """[lo-hi] of the run-by-run ratios when both modes ran alternately in
    one benchmark (same results, two or more runs with the same index)."""
    if a["source"] != b["source"]:
        return ""
    both = sorted(set(a["each"]) & set(b["each"]))
    ratios = [a["each"][i][field] / b["each"][i][field] for i in both
              if b["each"][i][field]]
    return f" [{min(ratios):.3f}-{max(ratios):.3f}]" if len(ratios) > 1 else ""


def targets(table):
    """Markdown: each target's ratio of the medians at each size (with the
    range of its run-by-run ratios where the modes alternated), and whether
    it holds at every size measured (compared unrounded)."""
    sizes = sorted(table)
    lines = ["| ratio | mode | at most | " + " | ".join(f"{n:,} modules" for n in sizes)
             + " | within it at every size |",
             "|---|---|---|" + "---|" * len(sizes) + "---|"]
    for name, modes, ref, field, bound in TARGETS:
        for mode in modes:
            cells, over, measured = [], [], 0
            for n in sizes:
                a, b = table[n].get(mode), table[n].get(ref)
                if not a or not b or not b[field]:
                    cells.append("-")
                    continue
                r = a[field] / b[field]
                measured += 1
                cells.append(f"{r:.3f}" + _pairs(a, b, field))
                if r > bound:
                    over.append(f"{n:,}")
            if not measured:
                continue
            verdict = ("yes" if not over else "no: " + ", ".join(over)) + (
                "" if measured == len(sizes) else f" (measured at {measured} of {len(sizes)})")
            lines.append(f"| {name} | {LABELS[mode]} | {bound:.2f} | " + " | ".join(cells)
                         + f" | {verdict} |")
    return "\n".join(lines) + "\n" if len(lines) > 2 else ""


def markdown(table):
    sizes = sorted(table)
    lines = ["Generated programs (bench/benchlib/generate.py), median of the timed "
             "runs per mode; phases from one `--time-trace` link per mode; bytes "
             "and files from one probe link per distributed mode (probe.py). "
             "'growth' is k of cost ~ modules^k from the smallest to the largest "
             "size measured (1 = linear).", ""]
    lines.append("| quantity | mode | " + " | ".join(f"{n:,} modules" for n in sizes)
                 + " | growth |")
    lines.append("|---|---|" + "---|" * len(sizes) + "---|")
    for name, unit, digits, fn in QUANTITIES:
        for mode in MODES:
            cells, pts = [], []
            for n in sizes:
                e = table[n].get(mode)
                v = fn(e, n) if e else None
                cells.append(_fmt(v, digits))
                if v is not None:
                    pts.append((n, v))
            if not pts:
                continue
            k = growth(pts)
            label = f"{name} ({unit})" if unit else name
            lines.append(f"| {label} | {LABELS[mode]} | " + " | ".join(cells)
                         + f" | {_fmt(k)} |")
    lines.append("")
    lines.append("| modules | mode | runs | jobs | output vs in-process | load average "
                 "| results |")
    lines.append("|---|---|---|---|---|---|---|")
    for n in sizes:
        ref = table[n].get("inproc", {}).get("sha256")
        for mode in MODES:
            e = table[n].get(mode)
            if not e:
                continue
            if mode == "inproc":
                same = "reference"
            elif not ref or not e["sha256"]:
                same = "-"
            else:
                same = "identical" if e["sha256"] == ref else "differs"
            lines.append(f"| {n:,} | {LABELS[mode]} | {e['runs']} | {e['jobs'] or '-'} "
                         f"| {same} | {e['load']:.1f} | {e['source']} |")
    goals = targets(table)
    if goals:
        lines += ["", "Against the targets, each ratio of the medians above at one size "
                  "[and the range of the ratios run by run, where the modes alternated]:",
                  "", goals.rstrip("\n")]
    return "\n".join(lines) + "\n"


def plot(table, path):
    """Four panels against the module count, log-log: wall, engine own time
    per job, linker peak RSS, bytes per job."""
    try:
        import matplotlib
    except ImportError:
        from . import BenchError
        raise BenchError("the plot needs python3-matplotlib (docs/packages.md), "
                         "seen by Debian's /usr/bin/python3")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    by_name = {q[0]: q[3] for q in QUANTITIES}
    colors = {"inproc": "tab:blue", "stock": "tab:orange", "ours": "tab:green",
              "ours-native": "tab:red", "ours-plugin": "tab:purple",
              "ours-inlinker": "tab:brown"}
    panels = [("wall (s)", by_name["wall"], MODES),
              ("linker outside the distributor, per job (ms)",
               lambda e, n: 1000 * _outside(e, n) / n if _outside(e, n) is not None
               else None, ["stock", "ours", "ours-native"]),
              ("linker peak RSS (MiB)", by_name["linker peak RSS"], MODES),
              ("bytes a job needs, mean (KiB)", by_name["bytes a job needs, mean"],
               ["stock", "ours", "ours-native"])]
    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5))
    for ax, (title, fn, modes) in zip(axes.flat, panels):
        for mode in modes:
            pts = _series(table, mode, fn)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                        label=LABELS[mode], color=colors.get(mode))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel("modules")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("DTLTO on generated programs (bench/scale.py)")
    fig.tight_layout()
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=90)
    os.replace(tmp, path)


def report(out_dir, plot_path=None):
    table = collect(out_dir)
    if plot_path and table:
        plot(table, plot_path)
    return markdown(table) if table else "no results of generated programs\n"
