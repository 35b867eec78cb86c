"""The benchmark loop: modes alternate run by run; outputs are checked."""

import contextlib
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time

from . import BenchError, elfdiff, probe, report, trace
from .measure import run_link
from .modes import MODES, NATIVE, OURS, REFERENCE
from .variants import VARIANTS, write_sample_profile
from .programs import SmokeFailure, program as program_named, smoke_dir
from .util import clean_env, log

# Names of the temporary files DTLTO leaves next to the output when it does
# not clean up (LLVM's and ours).
STRAY = re.compile(r"\.(dist-file\.json|native\.o|native\.o\.thinlto\.bc|thinlto\.bc|imports"
                   r"|dtlto-config\.json|dtlto-index\.bc)$"
                   r"|\.\d+\.\d+\.o$|\.[0-9a-f]{16}(\.\d+)?\.o$|\.o\.tmp$")


def snapshot_linker(path, dest_dir, name="ld.lld"):
    """A private copy of one of our binaries: the linker, named ld.lld (LLD
    picks its flavour from argv[0]), or dtlto-backend (the engine recognises
    it by name). Others rebuild build/bin while a benchmark runs; the copy
    keeps every run of a mode on the same binary."""
    real = os.path.realpath(path)
    if not os.access(real, os.X_OK):
        raise BenchError(f"{path} is missing or not executable: our {name} "
                         "(build it: ninja -C build)")
    os.makedirs(dest_dir, exist_ok=True)
    dest = os.path.join(dest_dir, name)
    shutil.copy2(real, dest)
    return dest, elfdiff.sha256(dest)


# What our linker finds beside itself: the plugin host next to it
# (docs/plugins.md), the fork server library next to it or in ../lib
# (docs/manifest.md); for each, what a mode that needs it would measure
# without it, and which modes need it.
COMPANIONS = {
    "dtlto-plugin-host": (
        ("dtlto-plugin-host",),
        "its plugin modes with the plugin in its host would fail",
        lambda m: m.plugin and ("DTLTO_PLUGIN_IN_PROCESS", "0") in m.env),
    "libdtlto-forkserver.so": (
        ("libdtlto-forkserver.so", "../lib/libdtlto-forkserver.so"),
        "local.py would start every clang job afresh (what the mode ours-fresh "
        "measures), not fork it from one clang",
        lambda m: (m.linker == "ours" and m.distributed and not m.native
                   and not m.plugin and "--no-fork-server" not in m.distributor_args)),
}


def companions(ld_lld):
    """{name: the path our linker would find it at, or None}."""
    bin_dir = os.path.dirname(os.path.realpath(ld_lld))
    found = {}
    for name, (places, _, _) in COMPANIONS.items():
        paths = (os.path.normpath(os.path.join(bin_dir, p)) for p in places)
        found[name] = next((p for p in paths if os.path.exists(p)), None)
    return found


def check_companions(ld_lld, mode_keys):
    """Refuse, before anything is built, to benchmark a mode that would
    silently measure something else because the linker given lacks what it
    finds beside itself (a copy of build/bin/ld.lld alone, say)."""
    found = companions(ld_lld)
    for name, (places, without, needs) in COMPANIONS.items():
        modes = [m.key for m in MODES if m.key in mode_keys and needs(m)]
        if modes and not found[name]:
            raise BenchError(
                f"{ld_lld}: no {name} beside it ({' or '.join(places)}), so "
                f"{without} ({', '.join(modes)}); copy build/bin and build/lib "
                "together, or give --ld-lld build/bin/ld.lld")


class Context:
    def __init__(self, args):
        self.jobs = args.jobs
        self.ours_ld, self.ours_sha256 = snapshot_linker(
            args.ld_lld, os.path.join(args.out, "linker-snapshot"))
        self.stock_ld = os.path.abspath(args.stock_ld_lld)
        self.distributor = os.path.abspath(args.distributor)
        # A Python distributor runs under an interpreter we name, not under
        # whatever `python3` its "#!/usr/bin/env python3" finds on PATH: a
        # wrapper there (a pyenv shim costs about 0.1 s per start) would be
        # timed as DTLTO.
        self.python = args.python if args.distributor.endswith(".py") else ""
        self.remote_compiler = os.path.realpath(args.clang)
        self.native_backend, _ = snapshot_linker(
            args.dtlto_backend, os.path.join(args.out, "linker-snapshot"),
            name="dtlto-backend")
        for path in companions(args.ld_lld).values():
            if path:
                snapshot_linker(path, os.path.join(args.out, "linker-snapshot"),
                                name=os.path.basename(path))
        self.cache_root = os.path.join(args.cache, "thinlto-cache")
        self.program = None

    def cache_dir(self, mode):
        return os.path.join(self.cache_root, self.program, mode.key)


def _output_arg(args):
    i = args.index("-o")
    return i + 1


def _jobs_of(stderr):
    """Backend jobs run, and cache hits, from the distributor's summary line
    and our engine's verbose line."""
    jobs = {}
    m = re.search(r"^dtlto: (\d+) ThinLTO jobs: (\d+) from the cache, (\d+) given to",
                  stderr, re.M)
    if m:
        jobs = {"modules": int(m.group(1)), "cache_hits": int(m.group(2)),
                "jobs": int(m.group(3))}
    m = re.search(r"^dtlto: (\d+) ThinLTO jobs: all from the cache", stderr, re.M)
    if m:
        jobs = {"modules": int(m.group(1)), "cache_hits": int(m.group(1)), "jobs": 0}
    m = re.search(r"^\S*local\.py: (\d+) jobs? on", stderr, re.M)
    if m and "jobs" not in jobs:
        jobs["jobs"] = int(m.group(1))
    return jobs


def _check_tools(ctx):
    for path, what in [(ctx.stock_ld, "LLVM 22's ld.lld (apt-get install lld-22)"),
                       (ctx.distributor, "the local distributor")] + (
                          [(ctx.python, "the Python that runs the distributor (--python)")]
                          if ctx.python else []):
        if not os.access(path, os.X_OK):
            raise BenchError(f"{path} is missing or not executable: {what}")


class ProgramBench:
    """All runs of one program."""

    def __init__(self, args, ctx, build, modes):
        self.args, self.ctx, self.build, self.modes = args, ctx, build, modes
        self.program = program_named(build["program"])
        self.cwd = build["cwd"]
        self.base = list(build["args"])
        self.oi = _output_arg(self.base)
        self.orig_out = self.base[self.oi]
        # The outputs' directory: the tree, or --link-dir's own for the
        # program (the engines write their files beside the output).
        self.out_base = os.path.join(self.cwd, self.orig_out)
        if getattr(args, "link_dir", None):
            outdir = os.path.join(os.path.abspath(args.link_dir), build["program"])
            os.makedirs(outdir, exist_ok=True)
            self.out_base = os.path.join(outdir, os.path.basename(self.orig_out))
        self.logdir = os.path.join(args.out, "logs", build["program"])
        os.makedirs(self.logdir, exist_ok=True)
        self.result = {k: build[k] for k in ("program", "package", "version", "cwd",
                                             "build_seconds")}
        self.result["link_args"] = self.base
        self.result["link_dir"] = os.path.dirname(self.out_base)
        self.result["runs"] = []
        self.result["modes"] = {m.key: {"label": m.label, "status": "ok",
                                        "checked": {}} for m in modes}
        self.failed = set()

    def output(self, mode):
        return self.out_base + ".bench-" + mode.key

    def argv(self, mode, extra=(), probe=None):
        args = list(self.base)
        args[self.oi] = self.output(mode)
        return mode.argv(self.ctx, args, probe) + list(extra)

    def env(self, mode):
        # Our engine's local fallback off: a job it compiled in the linker
        # would be timed as DTLTO (it fails the mode instead). No local slot
        # either (the default with a streaming distributor): ours and stock
        # get the same distributor and the same width; bench/farm.py
        # measures local slots.
        return clean_env({"DTLTO_VERBOSE": "1", "DTLTO_LOCAL_FALLBACK": "0",
                          "DTLTO_LOCAL_JOBS": "0", **dict(mode.env)}
                         if mode.linker == "ours" else None)

    def fail(self, mode, why):
        log(f"{self.program.name} / {mode.key}: FAILED: {why}")
        self.failed.add(mode.key)
        self.result["modes"][mode.key]["status"] = f"FAIL: {why}"

    def report_path(self, mode):
        """Where the link report of mode goes (--report-dir), if anywhere:
        only our engine writes one."""
        if not self.args.report_dir or mode.linker != "ours":
            return None
        return os.path.join(self.args.report_dir, f"{self.program.name}-{mode.key}.html")

    def link(self, mode, kind, index, extra=(), report=None, probe=None):
        """Run one link of mode; record it; return the record or None. With
        report, the link writes its link report there (never a timed run);
        with probe, its distributor runs under benchlib/probe.py."""
        out = self.output(mode)
        if os.path.exists(out):
            os.remove(out)
        outdir = os.path.dirname(out)
        before = set(os.listdir(outdir))
        tag = f"{mode.key}-{kind}{index}"
        stdout = os.path.join(self.logdir, tag + ".out")
        stderr = os.path.join(self.logdir, tag + ".err")
        argv = self.argv(mode, extra, probe)
        # Other work on the machine shows here (the benchmark's own links
        # raise it too).
        load = os.getloadavg()[0]
        env = self.env(mode)
        if kind == "trace" and mode.linker == "ours":
            # A streaming link writes shards while the farm runs, and its
            # main thread enters the distributor scope only once every job
            # is handed over: its phases would count the farm's time as the
            # engine's. One-shot, ours is split as stock is.
            env["DTLTO_STREAM"] = "0"
        if report:
            env["DTLTO_REPORT"] = report
        rec = run_link(argv, self.cwd, env, stdout, stderr,
                       sample_ms=self.args.sample_ms)
        with open(stderr, errors="replace") as f:
            err_text = f.read()
        rec.update({"mode": mode.key, "kind": kind, "index": index,
                    "loadavg_before": load})
        rec.update(_jobs_of(err_text))
        stray = sorted(n for n in set(os.listdir(outdir)) - before
                       if STRAY.search(n) and n != os.path.basename(out))
        if stray:
            rec["stray_files"] = stray
        if rec["returncode"] != 0 or not os.path.exists(out):
            last = err_text.strip().splitlines()[-1:] or ["no output"]
            self.fail(mode, f"link exited {rec['returncode']}: {last[0][:200]}")
            rec["sha256"] = None
        else:
            rec["sha256"] = elfdiff.sha256(out)
        if stray:
            self.fail(mode, f"temporary files left next to the output: "
                      f"{', '.join(stray[:3])}")
            for name in stray:
                os.remove(os.path.join(outdir, name))
        self.result["runs"].append(rec)
        return rec if rec["sha256"] else None

    def check(self, mode, rec):
        """Equivalence with the reference and the smoke test, once per
        distinct output of the mode."""
        checked = self.result["modes"][mode.key]["checked"]
        if rec["sha256"] in checked:
            return
        entry = {}
        ref = next((m for m in self.modes if m.key == REFERENCE), None)
        if ref is not None and mode.key != REFERENCE and ref.key not in self.failed \
                and os.path.exists(self.output(ref)):
            entry["vs_reference"] = elfdiff.compare(self.output(ref), self.output(mode))
        workdir = smoke_dir()
        try:
            self.program.smoke(self.output(mode), self.build["tree"], workdir)
            entry["smoke"] = "pass"
        except SmokeFailure as e:
            entry["smoke"] = f"FAIL: {e}"
            self.fail(mode, f"smoke test: {e}")
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        checked[rec["sha256"]] = entry
        log(f"{self.program.name} / {mode.key}: smoke {entry['smoke']}; "
            f"{elfdiff.summary(entry.get('vs_reference')) if 'vs_reference' in entry else 'reference'}")

    def run(self):
        name = self.program.name
        # Warm caches are filled by a link of their own, from scratch.
        for mode in self.modes:
            if mode.warm_cache:
                shutil.rmtree(self.ctx.cache_dir(mode), ignore_errors=True)
                os.makedirs(self.ctx.cache_dir(mode))
                log(f"{name} / {mode.key}: filling the ThinLTO cache")
                rec = self.link(mode, "fill", 0)
                if rec and rec.get("jobs", 0) == 0:
                    self.fail(mode, "the cache-filling link ran no backend job")
        # The reference first, so that every other output can be compared.
        order = sorted(self.modes, key=lambda m: m.key != REFERENCE)
        if not self.args.no_warmup:
            for mode in [m for m in order if m.key not in self.failed]:
                log(f"{name} / {mode.key}: warm-up link")
                rec = self.link(mode, "warmup", 0, report=self.report_path(mode))
                if rec:
                    self.check(mode, rec)
        elif self.args.report_dir:
            for mode in [m for m in order if m.key not in self.failed and self.report_path(m)]:
                log(f"{name} / {mode.key}: link for the report")
                self.link(mode, "report", 0, report=self.report_path(mode))
        if self.args.report_dir:
            self.screenshots()
        runs = self.args.runs_for.get(self.program.name, self.args.runs)
        self.result["timed_runs"] = runs
        for i in range(runs):
            for mode in [m for m in order if m.key not in self.failed]:
                rec = self.link(mode, "run", i)
                if rec:
                    self.check(mode, rec)
                    log(f"{name} run {i + 1}/{runs} {mode.key}: "
                        f"{rec['wall']:.2f} s wall, {rec['cpu']:.2f} s CPU")
                    if mode.warm_cache and rec.get("jobs"):
                        self.fail(mode, f"{rec['jobs']} backend jobs ran although "
                                  "the cache was warm")
        if self.args.trace_runs:
            self.traces()
        if self.args.probe_runs:
            self.probes()
        if self.args.variants:
            self.variants()
        return self.result

    def screenshots(self):
        """Each mode's report rendered to a PNG next to it, by the report's
        own tool (utils/dtlto/report.py render) in headless chromium."""
        reports = self.result.setdefault("reports", {})
        tool = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))), "utils", "dtlto", "report.py")
        for mode in self.modes:
            page = self.report_path(mode)
            if not page or not os.path.exists(page):
                continue
            entry = reports[mode.key] = {"html": page, "json": page[:-5] + ".json"}
            if not shutil.which("chromium"):
                continue
            png = page[:-5] + ".png"
            r = subprocess.run([sys.executable, tool, "render", page, "--screenshot", png,
                                "--window", "1400,2600"], capture_output=True, text=True)
            if r.returncode == 0:
                entry["png"] = png
            else:
                log(f"{self.program.name} / {mode.key}: no screenshot of the report: "
                    f"{r.stderr.strip()[-300:]}")
        for key, entry in reports.items():
            log(f"{self.program.name} / {key}: report {entry['html']}"
                + (f", screenshot {entry['png']}" if "png" in entry else ""))

    def variants(self):
        """Each link-time variant linked in-process, with dtlto-backend and
        with clang; the DTLTO outputs compared with the in-process one, and
        dtlto-backend's smoke-tested."""
        by_key = {m.key: m for m in MODES}
        ref, native, clang = by_key[REFERENCE], by_key[NATIVE], by_key[OURS]
        work = os.path.join(self.logdir, "variants")
        os.makedirs(work, exist_ok=True)
        out = self.result["variants"] = {}
        for v in [v for v in VARIANTS if v.key in self.args.variants]:
            if v.key == "sample-profile":
                write_sample_profile(self.output(ref), work)
            outputs = {}
            for mode in (ref, native, clang):
                args = v.change(list(self.base), work)
                oi = _output_arg(args)
                args[oi] = f"{self.output(mode)}-{v.key}"
                argv = mode.argv(self.ctx, args)
                err = os.path.join(self.logdir, f"variant-{v.key}-{mode.key}.err")
                with open(err, "wb") as f:
                    r = subprocess.run(argv, cwd=self.cwd, env=self.env(mode),
                                       stdout=f, stderr=f)
                outputs[mode.key] = args[oi] if r.returncode == 0 else None
            entry = {}
            for mode in (native, clang):
                o, refo = outputs[mode.key], outputs[ref.key]
                entry[mode.key] = (elfdiff.compare(refo, o) if o and refo
                                   else {"failed": True})
            if outputs[native.key]:
                workdir = smoke_dir()
                try:
                    self.program.smoke(outputs[native.key], self.build["tree"], workdir)
                    entry["smoke"] = "pass"
                except SmokeFailure as e:
                    entry["smoke"] = f"FAIL: {e}"
                finally:
                    shutil.rmtree(workdir, ignore_errors=True)
            for o in outputs.values():
                if o and os.path.exists(o):
                    os.remove(o)
            out[v.key] = entry
            log(f"{self.program.name} / variant {v.key}: dtlto-backend "
                f"{report.equivalence_text(entry.get(native.key))}, clang "
                f"{report.equivalence_text(entry.get(clang.key))}")


    def probes(self):
        """Links whose distributor runs under probe.py: the bytes each job
        needs and gives back, the files the linker writes, the manifest's
        size, each job's duration (--timings). Per mode the per-job record
        is kept in the log directory (the farm model replays it) and
        summarised in the results."""
        out = self.result["probes"] = {}
        for i in range(self.args.probe_runs):
            for mode in [m for m in self.modes if m.distributed and not m.warm_cache
                         and not m.plugin and m.key not in self.failed]:
                path = os.path.join(self.logdir, f"{mode.key}-probe{i}.json")
                timings = path + ".timings"
                for stale in (path, timings):
                    if os.path.exists(stale):
                        os.remove(stale)
                wrapper = [self.ctx.python or sys.executable, probe.__file__,
                           "--record", path, "--since", repr(time.time() - 1),
                           "--timings", timings]
                rec = self.link(mode, "probe", i,
                                probe=(wrapper, [f"--timings={timings}"]))
                if rec and os.path.exists(path):
                    self.check(mode, rec)
                    with open(path) as f:
                        out.setdefault(mode.key, []).append(
                            probe.summary(json.load(f), path))

    def traces(self):
        """--time-trace links, modes alternating; per phase the median."""
        phase_runs, scope_runs = {}, {}
        for i in range(self.args.trace_runs):
            for mode in [m for m in self.modes if m.trace and m.key not in self.failed]:
                path = os.path.join(self.logdir, f"{mode.key}-trace{i}.json")
                extra = [f"--time-trace={path}"]
                if mode.distributed:
                    extra.append("--time-trace-granularity=0")
                rec = self.link(mode, "trace", i, extra)
                if rec:
                    self.check(mode, rec)
                    phase_runs.setdefault(mode.key, []).append(trace.phases(path))
                    scope_runs.setdefault(mode.key, []).append(trace.dtlto_scopes(path))
        self.result["phase_runs"] = phase_runs
        self.result["phases"] = {k: _medians(v) for k, v in phase_runs.items()}
        self.result["scopes"] = {
            k: {name: _medians([r.get(name, {"seconds": 0.0, "count": 0}) for r in v])
                for name in sorted({n for r in v for n in r})}
            for k, v in scope_runs.items()}


@contextlib.contextmanager
def _exclusive(cwd, name):
    """One benchmark at a time in a program's link directory. Two harnesses
    linking the same program there (the cache is shared by everyone on the
    machine) saw each other's temporary files appear during their links,
    took them for leftovers and removed them: the other link's shards went
    missing under its running jobs. The second harness waits."""
    import fcntl
    path = os.path.join(cwd, ".dtlto-bench.lock")
    with open(path, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"{name}: another benchmark links in {cwd}; waiting for it")
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _medians(dicts):
    import statistics
    keys = sorted({k for d in dicts for k in d})
    return {k: statistics.median(d.get(k, 0.0) for d in dicts) for k in keys}


def machine_info():
    info = {"host": platform.node(), "kernel": platform.release(),
            "cpus": os.cpu_count(),
            "usable_cpus": len(os.sched_getaffinity(0))}
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"^model name\s*:\s*(.*)$", f.read(), re.M)
            info["cpu"] = m.group(1) if m else "?"
        with open("/proc/meminfo") as f:
            kib = int(re.search(r"MemTotal:\s*(\d+)", f.read()).group(1))
            info["memory_gib"] = round(kib / 1024 / 1024, 1)
        with open("/etc/debian_version") as f:
            info["debian"] = f.read().strip()
    except (OSError, AttributeError):
        pass
    return info


def _version(argv):
    try:
        return subprocess.run(argv + ["--version"], capture_output=True, text=True,
                              timeout=30).stdout.splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "?"


def _git_commit(root):
    try:
        return subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


def bench(args, builds):
    os.makedirs(args.out, exist_ok=True)
    if args.report_dir:
        os.makedirs(args.report_dir, exist_ok=True)
    ctx = Context(args)
    _check_tools(ctx)
    modes = [m for m in MODES if m.key in args.modes]
    os.makedirs(args.out, exist_ok=True)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    results = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(["python3", "bench/run.py"] + sys.argv[1:]),
        "commit": _git_commit(root),
        "machine": machine_info(),
        "jobs": args.jobs, "runs": args.runs, "trace_runs": args.trace_runs,
        "probe_runs": args.probe_runs,
        "linkers": {"ours": _version([ctx.ours_ld]), "stock": _version([ctx.stock_ld]),
                    "ours_path": os.path.abspath(args.ld_lld),
                    "ours_sha256": ctx.ours_sha256,
                    "ours_built": datetime.datetime.fromtimestamp(
                        os.path.getmtime(os.path.realpath(args.ld_lld)),
                        datetime.timezone.utc).isoformat(timespec="seconds"),
                    "clang": _version([ctx.remote_compiler]),
                    "distributor": ([ctx.python] if ctx.python else []) + [ctx.distributor]},
        "modes": {m.key: m.label for m in modes},
        "programs": {},
    }
    failed = False
    for b in builds:
        ctx.program = b["program"]
        pb = ProgramBench(args, ctx, b, modes)
        with _exclusive(b["cwd"], b["program"]):
            results["programs"][b["program"]] = pb.run()
        failed |= bool(pb.failed)
        _write(args.out, results)  # partial results survive an interruption
    _write(args.out, results)
    print(report.markdown(results))
    log(f"results: {os.path.join(args.out, 'results.json')} and results.md")
    return 1 if failed else 0


def _write(out, results):
    for name, text in (("results.json", json.dumps(results, indent=1) + "\n"),
                       ("results.md", report.markdown(results))):
        tmp = os.path.join(out, name + ".tmp")
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, os.path.join(out, name))
