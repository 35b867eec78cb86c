"""A prepared program's recorded link, replayed in one of our modes: what
bench/cpu-split.py and bench/peak-rss.py share."""

import os
import sys

from . import BenchError
from .generate import is_generated_name, require_generated

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODES = ("inproc", "native", "plugin", "inlinker", "prefed")


def find_program(args, script):
    """The recorded build of args.program: a generated one (gen<N>) of
    args.gen_module_scale, else bench/plugin.py's lookup."""
    if is_generated_name(args.program):
        try:
            return require_generated(args.cache, args.program, args.gen_module_scale)
        except BenchError as e:
            sys.exit(f"{script}: {e}")
    sys.path.insert(0, HERE)
    from plugin import find_build
    return find_build(args.cache, args.program)


def mode_argv(mode, args, plugin="builtin:local"):
    """The linker and the options that make the recorded link one of MODES:
    args has stock_ld_lld, ld_lld, dtlto_backend, jobs, and for native and
    prefed python and local_py."""
    if mode == "inproc":
        return [args.stock_ld_lld, f"--thinlto-jobs={args.jobs}"]
    dist = ([plugin] if mode in ("plugin", "inlinker") else
            [args.python, os.path.join(HERE, "benchlib", "prefeddist.py")] if mode == "prefed"
            else [args.python, args.local_py])
    dist.append(f"--jobs={args.jobs}")
    return ([args.ld_lld, f"--thinlto-jobs={args.jobs}", f"--thinlto-distributor={dist[0]}"]
            + [f"--thinlto-distributor-arg={a}" for a in dist[1:]]
            + [f"--thinlto-remote-compiler={args.dtlto_backend}"])


def mode_env(mode):
    """The environment of a link in mode: no local slot and no local
    fallback, as bench/run.py's links."""
    env = dict(os.environ, DTLTO_LOCAL_JOBS="0", DTLTO_LOCAL_FALLBACK="0")
    if mode == "prefed":
        env["DTLTO_STREAM"] = "0"
    if mode in ("plugin", "inlinker"):
        # Said either way: a built-in plugin runs in the linker by default.
        env["DTLTO_PLUGIN_IN_PROCESS"] = "1" if mode == "inlinker" else "0"
    return env
