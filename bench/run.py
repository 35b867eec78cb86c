#!/usr/bin/env python3
"""Benchmark DTLTO on real programs: in-process ThinLTO vs stock LLVM 22 DTLTO
vs ours, side by side, with output equivalence and smoke tests.

Each program is fetched from Debian's source packages and built once with
clang-22 -O2 -flto=thin into a cache outside the repository; its final link
command is recorded and replayed in every mode, modes alternating run by run.
"""

import argparse
import os
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # keep the source tree clean

from benchlib import BenchError, add_cache_option  # noqa: E402
from benchlib.generate import add_generator_options, generator_options  # noqa: E402
from benchlib.modes import MODES  # noqa: E402
from benchlib.prepare import install_packages, prepare, tools as build_tools  # noqa: E402
from benchlib.programs import KNOWN, PROGRAMS, program  # noqa: E402
from benchlib.util import log  # noqa: E402
from benchlib.variants import VARIANTS  # noqa: E402

SRC_ROOT = os.path.dirname(HERE)
LLVM_BIN = "/usr/lib/llvm-22/bin"


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="bench/run.py", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Modes: " + "; ".join(f"{m.key}: {m.label}" for m in MODES)
        + ".\n\nResults go to OUT/results.json (every run) and OUT/results.md "
        "(the table for docs/performance.md).")
    p.add_argument("--programs", default=",".join(PROGRAMS),
                   help="comma-separated programs (default: %(default)s); "
                        "gen<N> is a generated program of N modules "
                        "(bench/benchlib/generate.py, bench/scale.py)")
    p.add_argument("--modes", default=",".join(m.key for m in MODES if m.default),
                   help="comma-separated modes (default: %(default)s; also: "
                        + ", ".join(m.key for m in MODES if not m.default) + ")")
    p.add_argument("--runs", type=int, default=5, metavar="N",
                   help="timed runs per mode (default: %(default)s)")
    p.add_argument("--runs-for", action="append", default=[], metavar="PROGRAM=N",
                   help="timed runs for one program, instead of --runs "
                        "(repeatable; e.g. --runs-for python=3)")
    p.add_argument("--jobs", type=int, default=2, metavar="N",
                   help="ThinLTO threads in-process, distributor jobs "
                        "otherwise (default: %(default)s)")
    p.add_argument("--out", metavar="DIR",
                   help="where results.json, results.md, logs and traces go "
                        "(default: CACHE/results)")
    p.add_argument("--link-dir", metavar="DIR",
                   help="where the links write their outputs, and so every "
                        "file the engines write beside them (shards, objects, "
                        "member copies), one subdirectory per program; "
                        "default: the program's tree. A tmpfs here "
                        "(/dev/shm/...) measures the engines without the "
                        "disk's file costs")
    add_cache_option(p)
    p.add_argument("--ld-lld", default=os.path.join(SRC_ROOT, "build", "bin", "ld.lld"),
                   help="our linker (default: %(default)s)")
    p.add_argument("--dtlto-backend",
                   default=os.path.join(SRC_ROOT, "build", "bin", "dtlto-backend"),
                   help="our native backend, the remote compiler of the "
                        "ours-native mode (default: %(default)s)")
    p.add_argument("--stock-ld-lld", default=os.path.join(LLVM_BIN, "ld.lld"),
                   help="LLVM 22's linker (default: %(default)s)")
    p.add_argument("--clang", default=os.path.join(LLVM_BIN, "clang"),
                   help="compiler for builds and remote jobs (default: %(default)s)")
    p.add_argument("--distributor",
                   default=os.path.join(SRC_ROOT, "utils", "dtlto", "local.py"),
                   help="the local distributor, run with --jobs N "
                        "(default: %(default)s)")
    p.add_argument("--python", default="/usr/bin/python3",
                   help="the interpreter that runs a .py distributor in every "
                        "distributed mode (default: %(default)s, Debian's); "
                        "not the `python3` on PATH, which may be a slow wrapper")
    p.add_argument("--variants", default="", metavar="LIST",
                   help="also check equivalence under link-time variants: a comma "
                        "list of O3,no-pie,mllvm,sample-profile, or 'all' "
                        "(default: none); each is linked in-process, with "
                        "dtlto-backend and with clang, and compared")
    p.add_argument("--sample-ms", type=float, default=20, metavar="MS",
                   help="process-tree RSS sampling interval (default: %(default)s)")
    p.add_argument("--no-warmup", action="store_true",
                   help="skip the untimed first round (it checks outputs and "
                        "warms the page cache)")
    p.add_argument("--trace-runs", type=int, default=3, metavar="N",
                   help="--time-trace links per mode for the phase split, "
                        "reported as medians; 0 skips them (default: %(default)s)")
    p.add_argument("--report-dir", metavar="DIR",
                   help="write the link report of one untimed link per mode of ours "
                        "(the warm-up link, or one more when there is none) to "
                        "DIR/<program>-<mode>.html and .json, and its screenshot to "
                        ".png when chromium is installed (docs/usage.md, 'The link "
                        "report')")
    add_generator_options(p)
    p.add_argument("--probe-runs", type=int, default=0, metavar="N",
                   help="links per distributed mode whose distributor runs under "
                        "bench/benchlib/probe.py: bytes each job needs and returns, "
                        "files the linker writes, manifest size, each job's "
                        "duration; untimed (default: %(default)s)")
    p.add_argument("--build-only", action="store_true",
                   help="fetch and build the programs, then stop")
    p.add_argument("--report", metavar="JSON",
                   help="print the Markdown tables of an earlier results.json "
                        "and stop")
    p.add_argument("--install-deps", action="store_true",
                   help="apt-get install the Debian packages the harness needs "
                        "(as root)")
    args = p.parse_args(argv)
    args.programs = [x for x in args.programs.split(",") if x]
    for name in args.programs:
        if program(name) is None:
            p.error(f"unknown program '{name}' (known: {KNOWN})")
    keys = {m.key for m in MODES}
    args.modes = [x for x in args.modes.split(",") if x]
    for key in args.modes:
        if key not in keys:
            p.error(f"unknown mode '{key}' (known: {', '.join(sorted(keys))})")
    known_variants = [v.key for v in VARIANTS]
    args.variants = (known_variants if args.variants == "all"
                     else [x for x in args.variants.split(",") if x])
    for key in args.variants:
        if key not in known_variants:
            p.error(f"unknown variant '{key}' (known: {', '.join(known_variants)})")
    if args.variants and not {"inproc", "ours", "ours-native"} <= set(args.modes):
        p.error("--variants needs the modes inproc, ours and ours-native")
    runs_for = {}
    for item in args.runs_for:
        name, _, n = item.partition("=")
        if program(name) is None or not n.isdigit() or int(n) < 1:
            p.error(f"--runs-for wants PROGRAM=N with a known program and N >= 1, "
                    f"not '{item}'")
        runs_for[name] = int(n)
    args.runs_for = runs_for
    if args.runs < 1 or args.jobs < 1 or args.trace_runs < 0 or args.probe_runs < 0:
        p.error("--runs and --jobs must be at least 1, --trace-runs and "
                "--probe-runs at least 0")
    args.cache = os.path.abspath(args.cache)
    if args.report_dir:
        args.report_dir = os.path.abspath(args.report_dir)
    args.out = os.path.abspath(args.out or os.path.join(args.cache, "results"))
    return args


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # SIGTERM stops a benchmark as cleanly as Ctrl-C: the running link is
    # interrupted and cleans up after itself.
    import signal
    signal.signal(signal.SIGTERM, _interrupt)
    if args.report:
        import json
        from benchlib.report import markdown
        with open(args.report) as f:
            print(markdown(json.load(f)), end="")
        return 0
    try:
        if args.install_deps:
            install_packages()
        if not args.build_only:
            from benchlib.bench import check_companions
            check_companions(args.ld_lld, args.modes)
        tools = build_tools(args.clang, args.stock_ld_lld)
        builds = [prepare(name, args.cache, tools, generator_options(args))
                  for name in args.programs]
        if args.build_only:
            for b in builds:
                print(f"{b['program']} {b['version']}: (cd {b['cwd']} && "
                      f"ld.lld {shlex.join(b['args'])})")
            return 0
        from benchlib.bench import bench
        return bench(args, builds)
    except BenchError as e:
        print(f"bench/run.py: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
