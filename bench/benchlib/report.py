"""Statistics over the runs, and the Markdown tables for docs/performance.md."""

import statistics

from . import elfdiff
from .modes import NATIVE, OURS, REFERENCE, STOCK

MIB = 1024 * 1024


def timed_runs(prog, mode):
    """The timed runs of a mode that count: linked and not failed."""
    if prog["modes"].get(mode, {}).get("status", "ok") != "ok":
        return []
    return [r for r in prog["runs"] if r["mode"] == mode and r["kind"] == "run"
            and r["returncode"] == 0]


def stat(runs, key):
    values = [r[key] for r in runs if r.get(key) is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values),
            "max": max(values), "n": len(values)}


def ratio(prog, num, den, key):
    a, b = stat(timed_runs(prog, num), key), stat(timed_runs(prog, den), key)
    if not a or not b or not b["median"]:
        return None
    return a["median"] / b["median"]


def _fmt_range(s, scale=1.0, digits=2):
    if not s:
        return "-"
    return (f"{s['median'] / scale:.{digits}f} "
            f"[{s['min'] / scale:.{digits}f}-{s['max'] / scale:.{digits}f}]")


def _fmt_ratio(r):
    return f"{r:.2f}x" if r else "-"


def _per_job(prog):
    """(CPU of our DTLTO link - CPU of the in-process link) / jobs, in ms:
    what running a backend as a separate process costs."""
    ours, ref = timed_runs(prog, OURS), timed_runs(prog, REFERENCE)
    a, b = stat(ours, "cpu"), stat(ref, "cpu")
    jobs = [r["jobs"] for r in ours if r.get("jobs")]
    if not a or not b or not jobs:
        return "-"
    return f"{1000 * (a['median'] - b['median']) / statistics.median(jobs):+.0f} ms"


def _same_bytes(prog, a, b):
    """Whether two modes linked the same bytes, from the runs' SHA-256."""
    ha = {r["sha256"] for r in prog["runs"] if r["mode"] == a and r.get("sha256")}
    hb = {r["sha256"] for r in prog["runs"] if r["mode"] == b and r.get("sha256")}
    if not ha or not hb:
        return "-"
    if len(ha) > 1 or len(hb) > 1:
        return "not deterministic"
    return "identical" if ha == hb else "differs"


def _load(prog):
    """The 1-minute load average before each timed run (the benchmark's own
    links count too: 2 to 3 on 2 CPUs is the benchmark alone)."""
    s = stat([r for r in prog["runs"] if r["kind"] == "run"], "loadavg_before")
    return _fmt_range(s, 1.0, 1) if s else "-"


def _engine(prog):
    ph = prog.get("phases", {})
    a, b = ph.get(OURS, {}).get("engine"), ph.get(STOCK, {}).get("engine")
    if a is None or not b:
        return "-"
    return f"{1000 * a:.0f} / {1000 * b:.0f} ms ({a / b:.2f}x)"


def _jobs(runs):
    vals = sorted({r.get("jobs") for r in runs if r.get("jobs") is not None})
    hits = sorted({r.get("cache_hits") for r in runs if r.get("cache_hits")})
    text = "/".join(str(v) for v in vals) if vals else "-"
    if hits:
        text += f" (+{'/'.join(str(h) for h in hits)} cached)"
    return text


def equivalence_text(result):
    """A comparison's one-line summary; a link that failed says so."""
    if result is None:
        return "-"
    if result.get("failed"):
        return "LINK FAILED"
    return elfdiff.summary(result)


def _equivalence(prog, mode):
    info = prog["modes"][mode]
    checked = list(info.get("checked", {}).values())
    if not checked:
        return "-", "-"
    smoke = "pass" if all(c.get("smoke") == "pass" for c in checked) else "FAIL"
    if mode == REFERENCE:
        return "reference", smoke
    outputs = [elfdiff.summary(c.get("vs_reference")) for c in checked]
    eq = outputs[0] if len(set(outputs)) == 1 else \
        f"{len(checked)} different outputs: " + "; ".join(outputs)
    return eq, smoke


def markdown(results):
    lines = []
    m = results["machine"]
    lines.append(f"Measured {results['date']} on {m.get('cpu', '?')}, "
                 f"{m.get('usable_cpus')} CPUs, {m.get('memory_gib')} GiB, "
                 f"Debian {m.get('debian', '?')}, kernel {m.get('kernel')}; "
                 f"commit {results['commit']}; jobs {results['jobs']}; timed runs "
                 "per mode: " + ", ".join(f"{n} {p.get('timed_runs', results['runs'])}"
                                          for n, p in results["programs"].items())
                 + ".")
    lines.append("")
    lines.append(f"Command: `{results['command']}`")
    lk = results.get("linkers", {})
    lines.append("")
    lines.append(f"Linkers: ours `{lk.get('ours_path', '?')}` (a copy taken at the "
                 f"start, built {lk.get('ours_built', '?')}, sha256 "
                 f"{lk.get('ours_sha256', '?')[:12]}); stock: {lk.get('stock', '?')}.")
    if lk.get("distributor"):
        lines.append("")
        lines.append(f"Distributor command: `{' '.join(lk['distributor'])}`.")
    lines.append("")
    lines.append("Headline ratios (medians of the same run):")
    lines.append("")
    lines.append("| program | ours / in-process wall | ours / in-process CPU "
                 "| ours / stock wall | ours / stock CPU | extra CPU per job "
                 "vs in-process | engine own time, ours / stock (trace) "
                 "| ours vs stock output | load average during the runs |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for name, prog in results["programs"].items():
        lines.append(f"| {name} | {_fmt_ratio(ratio(prog, OURS, REFERENCE, 'wall'))} "
                     f"| {_fmt_ratio(ratio(prog, OURS, REFERENCE, 'cpu'))} "
                     f"| {_fmt_ratio(ratio(prog, OURS, STOCK, 'wall'))} "
                     f"| {_fmt_ratio(ratio(prog, OURS, STOCK, 'cpu'))} "
                     f"| {_per_job(prog)} | {_engine(prog)} "
                     f"| {_same_bytes(prog, OURS, STOCK)} | {_load(prog)} |")
    if any(NATIVE in prog["modes"] for prog in results["programs"].values()):
        lines.append("")
        lines.append("With dtlto-backend as the remote compiler (batch workers, "
                     "no compiler start-up per job):")
        lines.append("")
        lines.append("| program | native / in-process wall | native / in-process CPU "
                     "| native / stock wall | native / stock CPU "
                     "| native output vs in-process |")
        lines.append("|---|---|---|---|---|---|")
        for name, prog in results["programs"].items():
            if NATIVE not in prog["modes"]:
                continue
            lines.append(
                f"| {name} | {_fmt_ratio(ratio(prog, NATIVE, REFERENCE, 'wall'))} "
                f"| {_fmt_ratio(ratio(prog, NATIVE, REFERENCE, 'cpu'))} "
                f"| {_fmt_ratio(ratio(prog, NATIVE, STOCK, 'wall'))} "
                f"| {_fmt_ratio(ratio(prog, NATIVE, STOCK, 'cpu'))} "
                f"| {_equivalence(prog, NATIVE)[0]} |")
    lines.append("")
    lines.append("Every mode, median [min-max]; RSS in MiB; jobs = backend "
                 "compilations the distributor ran:")
    lines.append("")
    lines.append("| program | mode | wall s | CPU s | linker peak RSS | tree peak RSS "
                 "| jobs | output vs in-process | smoke test |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for name, prog in results["programs"].items():
        for mode, info in prog["modes"].items():
            runs = timed_runs(prog, mode)
            eq, smoke = _equivalence(prog, mode)
            if info["status"] != "ok":
                smoke = info["status"].replace("|", "/")[:160]
            lines.append(
                f"| {name} | {mode} | {_fmt_range(stat(runs, 'wall'))} "
                f"| {_fmt_range(stat(runs, 'cpu'))} "
                f"| {_fmt_range(stat(runs, 'linker_peak_rss'), MIB, 0)} "
                f"| {_fmt_range(stat(runs, 'tree_peak_rss'), MIB, 0)} "
                f"| {_jobs(runs)} | {eq} | {smoke} |")
    if any(prog.get("variants") for prog in results["programs"].values()):
        lines.append("")
        lines.append("Equivalence under link-time variants (options that change code "
                     "generation), against in-process ThinLTO with the same options:")
        lines.append("")
        lines.append("| program | variant | dtlto-backend | smoke test | clang |")
        lines.append("|---|---|---|---|---|")
        for name, prog in results["programs"].items():
            for key, entry in prog.get("variants", {}).items():
                lines.append(f"| {name} | {key} | {equivalence_text(entry.get(NATIVE))} "
                             f"| {entry.get('smoke', '-')} "
                             f"| {equivalence_text(entry.get(OURS))} |")
    if any(prog.get("phases") for prog in results["programs"].values()):
        lines.append("")
        lines.append(f"Phases in seconds, median of {results.get('trace_runs', 1)} "
                     "`--time-trace` links per mode, separate from the timed runs "
                     "(traces slow links down; phases are defined in "
                     "docs/performance.md):")
        lines.append("")
        lines.append("| program | mode | inputs | thin link | shards + manifest "
                     "| distributor | after | in-process backends | final link "
                     "| engine own | total |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for name, prog in results["programs"].items():
            for mode, ph in prog.get("phases", {}).items():
                cells = [ph.get(k, 0) for k in ("inputs", "thin_link", "shards",
                                                 "distributor", "after", "backends",
                                                 "final_link", "engine", "total")]
                lines.append(f"| {name} | {mode} | "
                             + " | ".join(f"{c:.3f}" for c in cells) + " |")
    if any(prog.get("probes") for prog in results["programs"].values()):
        lines.append("")
        lines.append("What each job needs, from the probe links (bench/benchlib/probe.py; "
                     "KiB, mean / max over the jobs; 'needs' = module + shard + "
                     "modules imported from + common inputs; 'copies' = archive "
                     "members the linker copied (a thin member's hard-linked name copies "
                     "nothing); 'written' = files the jobs' inputs and "
                     "outputs add to the link's directory (linker's files, the "
                     "manifest, the objects, thin members' hard links) / MiB the "
                     "linker wrote):")
        lines.append("")
        lines.append("| program | mode | jobs | needs | shard | imports (files) "
                     "| copies | common inputs | object | manifest | written "
                     "| job seconds |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for name, prog in results["programs"].items():
            for mode, recs in prog.get("probes", {}).items():
                p = recs[0]
                j = p["per_job"]

                def kib(key):
                    return f"{j[key]['mean'] / 1024:.1f} / {j[key]['max'] / 1024:.1f}"
                lines.append(
                    f"| {name} | {mode} | {p['job_count']} | {kib('needs_bytes')} "
                    f"| {kib('shard_bytes')} | {kib('import_bytes')} "
                    f"({j['imports']['mean']:.1f}) | {kib('copy_bytes')} "
                    f"| {j['common_bytes']['mean'] / 1024:.1f} | {kib('object_bytes')} "
                    f"| {p['manifest_bytes'] / 1024:.1f} "
                    f"| {p['linker_files']} / {p['linker_bytes'] / MIB:.1f} "
                    f"| {j['seconds']['mean']:.3f} / {j['seconds']['max']:.3f} |")
    return "\n".join(lines) + "\n"
