#!/usr/bin/env python3
"""Peak memory of one mode's link, for several builds of our linker in turn.

  bench/peak-rss.py --program gen10000 --mode plugin \\
      --ld-lld /tmp/old/ld.lld --ld-lld build/bin/ld.lld[,ENV=VALUE...]

Replays the program's recorded link (bench/run.py prepares it in CACHE) in
the mode given (bench/cpu-split.py's modes: inproc, native, plugin,
inlinker, prefed) once per --ld-lld, in the order given, --rounds times,
and prints, per link, the linker's peak RSS (its VmHWM at exit, as
bench/run.py measures it) and the process tree's (the sum sampled every
20 ms), in MiB, and whether the output is in-process ThinLTO's. Each
--ld-lld may carry environment settings after a comma
(build/bin/ld.lld,DTLTO_PLUGIN_QUEUE_MIB=100000). builtin:local runs the
dtlto-plugin-host and dtlto-backend beside each linker, and so does native
(--dtlto-backend is ignored here). No time is measured: bench/run.py does.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True

from benchlib import doc_parser  # noqa: E402
from benchlib.elfdiff import sha256 as sha  # noqa: E402
from benchlib.generate import add_replay_options  # noqa: E402
from benchlib.measure import run_link  # noqa: E402
from benchlib.replay import MODES, find_program, mode_argv, mode_env  # noqa: E402

SRC_ROOT = os.path.dirname(HERE)


def parse_build(spec):
    """(linker, environment settings) from PATH[,NAME=VALUE...]."""
    path, *settings = spec.split(",")
    if not os.path.isfile(path):
        sys.exit(f"bench/peak-rss.py: --ld-lld {path} is not a file")
    env = {}
    for s in settings:
        name, eq, value = s.partition("=")
        if not eq or not name:
            sys.exit(f"bench/peak-rss.py: '{s}' in --ld-lld {spec} is not NAME=VALUE")
        env[name] = value
    return os.path.abspath(path), env


def main():
    p = doc_parser(__doc__)
    p.add_argument("--program", required=True, help="a prepared program: lua, gen1000, ...")
    p.add_argument("--mode", default="plugin", choices=MODES,
                   help="how the links run (default: %(default)s)")
    p.add_argument("--rounds", type=int, default=1, help="links per build (default: 1)")
    p.add_argument("--jobs", type=int, default=2, help="threads or workers (default: 2)")
    p.add_argument("--link-dir", default="/dev/shm/peak-rss",
                   help="where the outputs and the engines' files go (default: %(default)s)")
    add_replay_options(p, SRC_ROOT, several_linkers=True)
    p.add_argument("--local-py", default=os.path.join(SRC_ROOT, "utils/dtlto/local.py"),
                   help="the distributor of the native mode (default: %(default)s)")
    p.add_argument("--python", default="/usr/bin/python3",
                   help="the interpreter that runs local.py (default: %(default)s)")
    args = p.parse_args()
    builds = [parse_build(s) for s in args.ld_lld or [os.path.join(SRC_ROOT, "build/bin/ld.lld")]]
    args.link_dir = os.path.abspath(args.link_dir)
    args.local_py = os.path.abspath(args.local_py)
    build = find_program(args, "bench/peak-rss.py")
    os.makedirs(args.link_dir, exist_ok=True)
    log = os.path.join(args.link_dir, "link.log")

    def link(mode, linker, env, out):
        # This build's linker, and the dtlto-backend beside it.
        tools = argparse.Namespace(**dict(
            vars(args), ld_lld=linker,
            dtlto_backend=os.path.join(os.path.dirname(linker), "dtlto-backend")))
        argv = list(build["args"])
        argv[argv.index("-o") + 1] = out
        first, *rest = mode_argv(mode, tools)
        m = run_link([first] + argv + rest, build["cwd"], dict(mode_env(mode), **env),
                     log, log + ".err")
        if m["returncode"]:
            sys.exit(f"bench/peak-rss.py: the link failed ({log}.err)")
        return m

    reference = os.path.join(args.link_dir, "prog.reference")
    link("inproc", builds[0][0], {}, reference)
    print("build round linker_peak_rss_mib tree_peak_rss_mib output")
    for r in range(1, args.rounds + 1):
        for i, (linker, env) in enumerate(builds, 1):
            out = os.path.join(args.link_dir, f"prog.{i}")
            m = link(args.mode, linker, env, out)
            same = "identical" if sha(out) == sha(reference) else "DIFFERS"
            print(f"{i} {r} {m['linker_peak_rss'] / 2**20:.1f} "
                  f"{m['tree_peak_rss'] / 2**20:.1f} {same}", flush=True)
    for i, (linker, env) in enumerate(builds, 1):
        print(f"build {i}: {linker} {' '.join(f'{k}={v}' for k, v in env.items())}".rstrip())


if __name__ == "__main__":
    main()
