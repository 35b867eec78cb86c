#!/usr/bin/env python3
"""DTLTO on large code bases: generated programs of 1,000 to 30,000 ThinLTO
modules, measured in bench/run.py's modes (in-process, stock, ours, and
ours with dtlto-backend through local.py and through builtin:local in the
linker), and how each cost grows with the module count.

Subcommands:
  census   measure the shape of the benchmark's real programs from their
           summaries (bench/benchlib/census.py) and write the distributions
           the generator draws from (bench/benchlib/shape.json); with
           --program, the census of one program, real or generated, printed
           next to the pooled shape
  run      generate, build (cached) and benchmark programs of the given
           sizes with bench/run.py's harness (those modes, output identity,
           smoke test = the checksum), plus one probe link per mode for bytes
           and files per job, then write the scale report
  report   the scale table (Markdown) and plot (PNG) of a results.json made
           by `run` or by bench/run.py --programs gen<N>,..., ending with
           the issue's targets: each ratio at each size, and whether it
           holds at every size

Generated programs are named gen<N> (N modules) in bench/run.py too.
"""

import argparse
import datetime
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True

from benchlib import BenchError, add_cache_option, census, default_cache, generate  # noqa: E402
from benchlib.util import log  # noqa: E402

REAL = ["lua", "zstd", "redis", "python", "ninja"]


def _tools(args):
    from benchlib.prepare import tools
    return tools(args.clang, args.stock_ld_lld)


def cmd_census(args):
    from benchlib.prepare import prepare
    tools = _tools(args)
    llvm_dis = os.path.join(os.path.dirname(os.path.realpath(args.clang)), "llvm-dis")
    names = [args.program] if args.program else args.programs.split(",")
    per_program, pooled = {}, {}
    for name in names:
        b = prepare(name, args.cache, tools, generate.generator_options(args))
        samples, modules = census.census(args.stock_ld_lld, llvm_dis, b["cwd"], b["args"])
        per_program[name] = {"modules": modules, "version": b["version"],
                             "summary": census.summarize(samples)}
        for q, v in samples.items():
            pooled.setdefault(q, []).extend(v)
        log(f"census of {name}: {modules} modules")
    shape = {
        "what": "distributions of the benchmark programs' ThinLTO summaries "
                "(bench/benchlib/census.py); the generator draws from 'pooled'",
        "command": " ".join(["python3", "bench/scale.py"] + sys.argv[1:]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "percentiles": sorted(census.PERCENTILES),
        "descriptions": census.QUANTITIES,
        "programs": per_program,
        "pooled": census.summarize(pooled),
    }
    ext, callees = shape["pooled"]["external_calls"], shape["pooled"]["callees"]
    shape["calls_per_callee_module"] = (ext["mean"] / callees["mean"]
                                        if callees["mean"] else 1.0)
    if args.program:
        print(census_table(shape, generate.load_shape()), end="")
        return 0
    out = args.write or generate.SHAPE
    with open(out + ".tmp", "w") as f:
        json.dump(shape, f, indent=1)
        f.write("\n")
    os.replace(out + ".tmp", out)
    print(census_table(shape), end="")
    log(f"wrote {out}")
    return 0


def _cell(entry):
    q = dict(zip(sorted(census.PERCENTILES), entry["q"]))
    return f"{entry['mean']:.1f} / {q[50]:g} / {q[90]:g} / {q[100]:g}"


def census_table(shape, reference=None):
    """Markdown: per quantity, mean / median / p90 / max of each program and
    of the pool (and of a reference shape's pool, when given)."""
    names = list(shape["programs"])
    cols = names + (["pooled"] if len(names) > 1 else []) + (
        ["shape.json pooled"] if reference else [])
    lines = ["| quantity | " + " | ".join(
        f"{n} ({shape['programs'][n]['modules']} modules)" if n in shape["programs"]
        else n for n in cols) + " |",
        "|---|" + "---|" * len(cols)]
    for q, text in census.QUANTITIES.items():
        cells = [_cell(shape["programs"][n]["summary"][q]) for n in names]
        if len(names) > 1:
            cells.append(_cell(shape["pooled"][q]))
        if reference:
            cells.append(_cell(reference["pooled"][q]))
        lines.append(f"| {text} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# ours-native is local.py with dtlto-backend workers, ours-inlinker the
# same workers fed by builtin:local in the linker: the two one-machine
# native paths, both measured against in-process ThinLTO.
MODES = ["inproc", "stock", "ours", "ours-native", "ours-inlinker"]


def _sizes(text):
    try:
        sizes = [int(x) for x in text.split(",") if x]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma list of module counts")
    return sizes


def cmd_run(args):
    """Each size through bench/run.py: its own output directory per size
    (per size and mode from --separate-modes-from on), so that an interrupted
    run keeps what it finished and a later one adds to it."""
    import run
    os.makedirs(args.out, exist_ok=True)
    for n in args.sizes:
        runs = args.runs_at.get(n, args.runs)
        groups = ([[m] for m in args.modes] if n >= args.separate_modes_from
                  else [args.modes])
        for modes in groups:
            tag = f"gen{n}" + (f"-{modes[0]}" if len(modes) == 1 and
                                n >= args.separate_modes_from else "")
            out = os.path.join(args.out, tag)
            if os.path.exists(os.path.join(out, "results.json")) and not args.again:
                log(f"{tag}: results already in {out} (--again runs it again)")
                continue
            argv = ["--programs", f"gen{n}", "--modes", ",".join(modes),
                    "--runs", str(runs), "--trace-runs", str(args.trace_runs),
                    "--probe-runs", str(args.probe_runs), "--jobs", str(args.jobs),
                    "--cache", args.cache, "--out", out, "--clang", args.clang,
                    "--stock-ld-lld", args.stock_ld_lld,
                    "--gen-seed", str(args.gen_seed), "--gen-scale", str(args.gen_scale),
                    "--gen-module-scale", str(args.gen_module_scale)]
            if args.link_dir:
                argv += ["--link-dir", args.link_dir]
            if args.ld_lld:
                argv += ["--ld-lld", args.ld_lld]
            if args.dtlto_backend:
                argv += ["--dtlto-backend", args.dtlto_backend]
            if not args.warmup:
                argv.append("--no-warmup")
            log(f"{tag}: bench/run.py {' '.join(argv)}")
            rc = run.main(argv)
            if rc:
                log(f"{tag}: bench/run.py exited {rc}")
                return rc
    return cmd_report(args)


def cmd_report(args):
    from benchlib import scalereport
    text = scalereport.report(args.out, args.plot)
    path = os.path.join(args.out, "scale.md")
    with open(path, "w") as f:
        f.write(text)
    print(text, end="")
    log(f"wrote {path}" + (f" and {args.plot}" if args.plot else ""))
    return 0


def add_tool_options(p):
    add_cache_option(p)
    p.add_argument("--clang", default="/usr/lib/llvm-22/bin/clang",
                   help="compiler (default: %(default)s)")
    p.add_argument("--stock-ld-lld", default="/usr/lib/llvm-22/bin/ld.lld",
                   help="LLVM 22's linker, for the index-only links of the census "
                        "(default: %(default)s)")
    generate.add_generator_options(p)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/scale.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("census", help="measure the real programs' shape (or one program's)")
    add_tool_options(c)
    c.add_argument("--program", help="the census of this one program (lua, ..., "
                                     "gen<N>) against shape.json, printed only")
    c.add_argument("--programs", default=",".join(REAL),
                   help="the programs whose pooled shape is written "
                        "(default: %(default)s)")
    c.add_argument("--write", metavar="JSON",
                   help=f"where to write the shape (default: {generate.SHAPE})")
    r = sub.add_parser("run", help="generate, build and benchmark each size")
    add_tool_options(r)
    r.add_argument("--sizes", type=_sizes, default=_sizes("1000,3000,10000,30000"),
                   help="module counts (default: 1000,3000,10000,30000)")
    r.add_argument("--modes", default=",".join(MODES),
                   help="bench/run.py modes (default: %(default)s)")
    r.add_argument("--runs", type=int, default=3, metavar="N",
                   help="timed runs per mode and size (default: %(default)s)")
    r.add_argument("--runs-at", action="append", default=[], metavar="SIZE=N",
                   help="timed runs at one size instead of --runs (repeatable; "
                        "e.g. --runs-at 30000=1)")
    r.add_argument("--trace-runs", type=int, default=1, metavar="N",
                   help="--time-trace links per mode, for the engine's phases "
                        "(default: %(default)s)")
    r.add_argument("--probe-runs", type=int, default=1, metavar="N",
                   help="probe links per distributed mode, for bytes and files "
                        "per job (default: %(default)s)")
    r.add_argument("--jobs", type=int, default=2, metavar="N",
                   help="ThinLTO threads / distributor jobs (default: %(default)s)")
    r.add_argument("--separate-modes-from", type=int, default=10000, metavar="SIZE",
                   help="from this size on, one bench/run.py per mode, one "
                        "after the other (default: %(default)s)")
    r.add_argument("--warmup", action="store_true",
                   help="bench/run.py's untimed first round (off: the timed "
                        "runs check every output anyway)")
    r.add_argument("--again", action="store_true",
                   help="run sizes whose results are already there again")
    r.add_argument("--link-dir", metavar="DIR",
                   help="bench/run.py --link-dir: where the links write (a tmpfs "
                        "measures the engines without the disk's file costs)")
    r.add_argument("--ld-lld", help="our linker (bench/run.py's default)")
    r.add_argument("--dtlto-backend", help="our backend (bench/run.py's default)")
    for q in (r, sub.add_parser("report", help="the scale table and plot of a run's "
                                              "output directory")):
        q.add_argument("--out", metavar="DIR",
                       default=os.path.join(default_cache(), "results-scale"),
                       help="where each size's bench/run.py results go, and "
                            "scale.md (default: %(default)s)")
        q.add_argument("--plot", metavar="PNG",
                       help="also draw the growth plot (python3-matplotlib)")
    args = p.parse_args(argv)
    if hasattr(args, "cache"):
        args.cache = os.path.abspath(args.cache)
    args.out = os.path.abspath(args.out) if getattr(args, "out", None) else None
    runs_at = {}
    for item in getattr(args, "runs_at", []):
        size, _, n = item.partition("=")
        if not size.isdigit() or not n.isdigit() or int(n) < 1:
            p.error(f"--runs-at wants SIZE=N, not '{item}'")
        runs_at[int(size)] = int(n)
    if hasattr(args, "runs_at"):
        args.runs_at = runs_at
        args.modes = [m for m in args.modes.split(",") if m]
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return {"census": cmd_census, "run": cmd_run,
                "report": cmd_report}[args.command](args)
    except BenchError as e:
        print(f"bench/scale.py: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
