"""The link modes the harness compares: the one place to add a mode.

A mode turns the recorded linker arguments into a linker command. Modes run
alternately (A B C D A B C D ...) so that machine drift hits all alike.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Mode:
    key: str             # short name used in --modes, JSON and tables
    label: str           # what the table says
    short: str           # what the scale report's tables and plot say
    linker: str          # "stock" (LLVM 22's ld.lld) or "ours"
    distributed: bool    # runs backend jobs through the distributor
    warm_cache: bool = False  # relinks against a ThinLTO cache warmed first
    trace: bool = True   # gets a separate --time-trace run for the phase split
    native: bool = False  # dtlto-backend is the remote compiler (batch workers)
    # The distributor is this plugin (docs/plugins.md), not the script: jobs
    # go memory to memory, no shard or object file is written, and there is
    # no distributor process for probe.py to wrap (no probe links).
    plugin: str = ""
    default: bool = True  # run unless --modes names the modes
    distributor_args: tuple = ()  # more options for the distributor script
    env: tuple = ()  # (name, value) pairs for the link's environment

    def argv(self, ctx, base_args, probe=None):
        """The linker command: linker, recorded arguments, mode options.
        probe: (wrapper argv, distributor options) for a probe link, whose
        distributor runs under the wrapper (probe.py) with more options."""
        linker = ctx.ours_ld if self.linker == "ours" else ctx.stock_ld
        extra = [f"--thinlto-jobs={ctx.jobs}"]
        if self.distributed:
            dist = [self.plugin] if self.plugin else (
                ([ctx.python] if ctx.python else []) + [ctx.distributor])
            dist += [f"--jobs={ctx.jobs}"]
            if not self.plugin:
                dist += list(self.distributor_args)
            if probe:
                wrapper, options = probe
                dist = list(wrapper) + ["--"] + dist + list(options)
            extra += [f"--thinlto-distributor={dist[0]}"]
            extra += [f"--thinlto-distributor-arg={a}" for a in dist[1:]]
            extra += ["--thinlto-remote-compiler=" +
                      (ctx.native_backend if self.native else ctx.remote_compiler)]
        if self.warm_cache:
            extra.append(f"--thinlto-cache-dir={ctx.cache_dir(self)}")
        return [linker] + list(base_args) + extra


MODES = [
    # Not traced: a traced in-process link is much slower (CPython 45 s ->
    # 69 s) and has no DTLTO phases to split.
    Mode("inproc", "in-process ThinLTO (stock ld.lld-22)", "in-process", "stock", False,
         trace=False),
    Mode("stock", "stock ld.lld-22 DTLTO + local.py", "stock DTLTO", "stock", True),
    Mode("ours", "our ld.lld DTLTO + local.py", "ours", "ours", True),
    # Opt-in: ours with each clang job started afresh, as before the fork
    # server (what the fork server saves is ours-fresh against ours).
    Mode("ours-fresh", "our ld.lld DTLTO + local.py --no-fork-server", "ours, no fork server",
         "ours", True, distributor_args=("--no-fork-server",), default=False),
    Mode("ours-cache", "our ld.lld DTLTO, warm ThinLTO cache", "ours, warm cache", "ours", True,
         warm_cache=True),
    Mode("ours-native", "our ld.lld DTLTO + local.py, dtlto-backend batch workers",
         "ours, dtlto-backend", "ours", True, native=True),
    # Opt-in (--modes ...,ours-plugin): the same dtlto-backend workers fed
    # by the built-in local plugin; what bench/plugin.py compares on the
    # real programs, here for bench/scale.py's sizes.
    # In dtlto-plugin-host, said so: a built-in plugin runs in the linker by
    # default.
    Mode("ours-plugin", "our ld.lld DTLTO + builtin:local plugin in its host, "
         "dtlto-backend --memory", "ours, plugin", "ours", True, native=True,
         plugin="builtin:local", default=False, env=(("DTLTO_PLUGIN_IN_PROCESS", "0"),)),
    # Opt-in: the same plugin on a thread of the linker (no host process;
    # docs/plugins.md; the default for builtin:local), the cheapest local
    # path there is.
    Mode("ours-inlinker", "our ld.lld DTLTO + builtin:local plugin in the linker, "
         "dtlto-backend --memory", "ours, plugin in the linker", "ours", True, native=True,
         plugin="builtin:local", default=False, env=(("DTLTO_PLUGIN_IN_PROCESS", "1"),)),
]

# The reference every output is compared with, and the ratio denominators.
REFERENCE = "inproc"
OURS = "ours"
STOCK = "stock"
NATIVE = "ours-native"
