#!/usr/bin/env python3
"""The CPU a link spends up to its distributor: ours against stock.

  bench/upto.py --program gen1000 [--rounds 20] [--link-dir /dev/shm/upto]

Replays the program's recorded link (bench/run.py prepares it in CACHE)
with a distributor that fails at once (/bin/false), one-shot
(DTLTO_STREAM=0), no local slot and no local fallback, and clang as the
remote compiler: the link does everything up to the distributor (input
preparation, the thin link, the shards, the archive-member copies, the
manifest), then fails and removes its files. The CPU it took (user +
system of the linker, its threads and the distributor it waited for, from
wait4) is the engine's own work
up to the distributor plus what the linker does before LTO, which is the
same in every mode. Modes, alternating round by round:

  ours    our ld.lld (--ld-lld)
  compat  our ld.lld with DTLTO_UPSTREAM_COMPAT=1 (LLVM's file names,
          thin-archive members read in place)
  stock   LLVM 22's ld.lld

Prints each mode's median and range in ms, and its median over stock's.
Where the link directory is on the disk, creating files costs what the
file system's recent deletions make it cost: alternate many rounds.
"""

import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True

from benchlib import BenchError, doc_parser  # noqa: E402
from benchlib.generate import add_replay_options, require_generated  # noqa: E402

SRC_ROOT = os.path.dirname(HERE)
MODES = ("ours", "compat", "stock")


def link_cpu(build, mode, out, args):
    """CPU seconds of one link that fails at its distributor."""
    argv = list(build["args"])
    argv[argv.index("-o") + 1] = out
    linker = args.stock_ld_lld if mode == "stock" else args.ld_lld
    env = dict(os.environ, DTLTO_STREAM="0", DTLTO_LOCAL_JOBS="0",
               DTLTO_LOCAL_FALLBACK="0")
    if mode == "compat":
        env["DTLTO_UPSTREAM_COMPAT"] = "1"
    proc = subprocess.Popen(
        [linker] + argv + [f"--thinlto-jobs={args.jobs}", "--thinlto-distributor=/bin/false",
                           f"--thinlto-remote-compiler={args.clang}"],
        cwd=build["cwd"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) == 0 or b"distributor" not in err:
        sys.exit(f"bench/upto.py: the {mode} link did not stop at its distributor:\n"
                 f"{err.decode(errors='replace')}")
    return usage.ru_utime + usage.ru_stime


def main():
    p = doc_parser(__doc__)
    p.add_argument("--program", default="gen1000",
                   help="a prepared generated program (default: %(default)s)")
    p.add_argument("--rounds", type=int, default=20,
                   help="links per mode, the modes alternating (default: %(default)s)")
    p.add_argument("--modes", default=",".join(MODES),
                   help="comma list of %s (default: all)" % ", ".join(MODES))
    p.add_argument("--jobs", type=int, default=2, help="--thinlto-jobs (default: %(default)s)")
    p.add_argument("--link-dir", default="/dev/shm/upto",
                   help="where the outputs and the engine's files go (default: %(default)s)")
    p.add_argument("--clang", default="/usr/lib/llvm-22/bin/clang")
    add_replay_options(p, SRC_ROOT)
    args = p.parse_args()
    modes = args.modes.split(",")
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        p.error("unknown mode(s): " + ",".join(unknown))
    try:
        build = require_generated(args.cache, args.program, args.gen_module_scale)
    except BenchError as e:
        sys.exit(f"bench/upto.py: {e}")

    os.makedirs(args.link_dir, exist_ok=True)
    cpu = {m: [] for m in modes}
    for _ in range(args.rounds):
        for m in modes:
            cpu[m].append(link_cpu(build, m, os.path.join(args.link_dir, f"prog.{m}"), args))
    left = [f for f in os.listdir(args.link_dir) if not f.startswith("prog.")]
    print(f"{args.program}: {args.rounds} rounds in {args.link_dir}; "
          f"files left by the links: {len(left)}")
    stock = statistics.median(cpu["stock"]) if "stock" in cpu else None
    print("mode median_ms min_ms max_ms over_stock")
    for m in modes:
        med = statistics.median(cpu[m])
        ratio = f"{med / stock:.2f}" if stock else "-"
        print(f"{m} {med * 1e3:.0f} {min(cpu[m]) * 1e3:.0f} {max(cpu[m]) * 1e3:.0f} {ratio}")


if __name__ == "__main__":
    main()
