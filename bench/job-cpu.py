#!/usr/bin/env python3
"""The CPU of the same clang jobs as ours and as stock LLVM 22 DTLTO give them.

  bench/job-cpu.py --program gen1000 --gen-module-scale 1 [--every 20] [--rounds 2]

Links the generated program once with our ld.lld and once with LLVM 22's,
each with --save-temps, clang as the remote compiler and a distributor
that keeps the manifest and fails at once: the shards, archive-member
copies and manifests stay, and no job runs. Then it runs every --every'th
job of the manifests with each engine's command line (common.args + the
job's args), the two alternating job by job (the first of each pair
changes from one job to the next and from round to round), one at a time,
and sums each one's CPU (user + system, from getrusage). Both manifests
list the jobs in module order, so job i compiles the same module in both
(checked: the same bytes); what differs is what each engine puts in the
shard and on the command line. Prints the sums, their ratio and the median of the
per-job ratios: whether the clang jobs cost ours more than stock's.

  bench/job-cpu.py --program gen1000 --fork-server [--every 20] [--rounds 2]

compares instead ours's jobs forked from one clang (local.py's fork server,
utils/dtlto/dtltodist/forkserver.py) with the same jobs each started
afresh. A forked job's CPU is its server's to collect, so the picked jobs
run as two passes a round, one each way, their order changing from round
to round; a forked pass starts its own server (its start counted, as a
link's is) and sums that server's CPU with its jobs'.
"""

import json
import os
import resource
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True

from benchlib import BenchError, doc_parser  # noqa: E402
from benchlib.generate import add_replay_options, require_generated  # noqa: E402

SRC_ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SRC_ROOT, "utils", "dtlto"))
from dtltodist.forkserver import ForkServer  # noqa: E402

# A distributor that keeps the manifest (its last argument) and fails.
GRAB = """import shutil, sys
shutil.copy(sys.argv[-1], sys.argv[1])
sys.exit(1)
"""


def manifest(build, ld_lld, clang, work, name, python):
    """The manifest of build's link by ld_lld, its files kept under work/name."""
    out_dir = os.path.join(work, name)
    os.makedirs(out_dir)
    grab = os.path.join(work, "grab.py")
    kept = os.path.join(work, f"{name}.json")
    argv = list(build["args"])
    argv[argv.index("-o") + 1] = os.path.join(out_dir, "prog")
    env = dict(os.environ, DTLTO_STREAM="0", DTLTO_LOCAL_JOBS="0", DTLTO_LOCAL_FALLBACK="0")
    subprocess.run([ld_lld, "--save-temps", f"--thinlto-distributor={python}",
                    f"--thinlto-distributor-arg={grab}", f"--thinlto-distributor-arg={kept}",
                    f"--thinlto-remote-compiler={clang}"] + argv,
                   cwd=build["cwd"], env=env, capture_output=True)
    if not os.path.exists(kept):
        sys.exit(f"bench/job-cpu.py: the {name} link wrote no manifest")
    with open(kept) as f:
        return json.load(f)


def same_module(m, i, cwd):
    """Whether job i of both manifests compiles the same bitcode (each
    engine names its copy of an archive member its own way)."""
    def module_bytes(e):
        with open(os.path.join(cwd, m[e]["jobs"][i]["args"][0]), "rb") as f:
            return f.read()
    return module_bytes("ours") == module_bytes("stock")


def job_command(m, i, out):
    """Job i of manifest m, its object written to out."""
    cmd = m["common"]["args"] + m["jobs"][i]["args"]
    cmd[cmd.index("-o") + 1] = out
    return cmd


def job_cpu(m, i, cwd, out):
    cmd = job_command(m, i, out)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, cwd=cwd, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def pass_cpu(m, picked, cwd, out, library=None):
    """The CPU of the picked jobs of m run one after the other: each started
    afresh, or (library) forked from one server started for the pass."""
    before = children_cpu()
    server = None
    if library:
        server, why = ForkServer.start(m["common"]["args"][0], library)
        if not server:
            sys.exit(f"bench/job-cpu.py: {why}")
    for i in picked:
        cmd = job_command(m, i, out)
        if not server:
            subprocess.run(cmd, cwd=cwd, check=True)
            continue
        with open(os.devnull, "rb") as null:
            child = server.spawn(cmd, cwd, null, sys.stdout, sys.stderr)
        if child.wait():
            sys.exit(f"bench/job-cpu.py: job {i} failed under the fork server")
    if server:
        server.close()  # waits for it: its jobs' CPU is now ours to count
    return children_cpu() - before


def fork_main(args, build):
    library = os.path.join(os.path.dirname(os.path.realpath(args.ld_lld)), "..", "lib",
                           "libdtlto-forkserver.so")
    m = manifest(build, os.path.abspath(args.ld_lld), args.clang, args.work, "ours",
                 sys.executable)
    picked = range(0, len(m["jobs"]), args.every)
    total = {"forked": 0.0, "fresh": 0.0}
    rounds = []
    for r in range(args.rounds):
        order = ("forked", "fresh") if r % 2 == 0 else ("fresh", "forked")
        cpu = {way: pass_cpu(m, picked, build["cwd"], os.path.join(args.work, f"{way}.o"),
                             library if way == "forked" else None) for way in order}
        for way in total:
            total[way] += cpu[way]
        rounds.append(cpu["forked"] / cpu["fresh"])
    print(f"{args.program} (module scale {args.gen_module_scale}): {len(picked)} jobs x "
          f"{args.rounds} rounds: forked {total['forked']:.2f} s, fresh {total['fresh']:.2f} s "
          f"of CPU; forked / fresh {total['forked'] / total['fresh']:.3f}, by round "
          + ", ".join(f"{x:.3f}" for x in rounds))
    shutil.rmtree(args.work, ignore_errors=True)


def main():
    p = doc_parser(__doc__)
    p.add_argument("--program", required=True, help="a generated program: gen1000, ...")
    p.add_argument("--every", type=int, default=20, help="run every N'th job (default: 20)")
    p.add_argument("--rounds", type=int, default=2, help="times each job runs (default: 2)")
    p.add_argument("--work", default="/dev/shm/job-cpu",
                   help="where the links' files go; emptied first (default: %(default)s)")
    add_replay_options(p, SRC_ROOT)
    p.add_argument("--clang", default="/usr/lib/llvm-22/bin/clang")
    p.add_argument("--fork-server", action="store_true",
                   help="compare ours's jobs forked from one clang with the same jobs "
                        "started afresh, instead of ours with stock")
    args = p.parse_args()
    try:
        build = require_generated(args.cache, args.program, args.gen_module_scale)
    except BenchError as e:
        sys.exit(f"bench/job-cpu.py: {e}")
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    with open(os.path.join(args.work, "grab.py"), "w") as f:
        f.write(GRAB)
    if args.fork_server:
        fork_main(args, build)
        return
    engines = {"ours": os.path.abspath(args.ld_lld), "stock": args.stock_ld_lld}
    m = {name: manifest(build, ld, args.clang, args.work, name, sys.executable)
         for name, ld in engines.items()}
    if len(m["ours"]["jobs"]) != len(m["stock"]["jobs"]):
        sys.exit("bench/job-cpu.py: the two manifests have different jobs")
    total = dict.fromkeys(engines, 0.0)
    ratios = []
    picked = range(0, len(m["ours"]["jobs"]), args.every)
    for i in picked:
        if not same_module(m, i, build["cwd"]):
            sys.exit(f"bench/job-cpu.py: job {i} compiles different modules in the two "
                     "manifests; their orders differ, so the jobs cannot be paired")
    for r in range(args.rounds):
        for n, i in enumerate(picked):
            order = ("ours", "stock") if (n + r) % 2 == 0 else ("stock", "ours")
            cpu = {e: job_cpu(m[e], i, build["cwd"], os.path.join(args.work, f"{e}.o"))
                   for e in order}
            for e in engines:
                total[e] += cpu[e]
            ratios.append(cpu["ours"] / cpu["stock"])
    ratios.sort()
    print(f"{args.program} (module scale {args.gen_module_scale}): {len(picked)} jobs x "
          f"{args.rounds} rounds: ours {total['ours']:.2f} s, stock {total['stock']:.2f} s "
          f"of CPU; ours / stock {total['ours'] / total['stock']:.3f}, per job (median) "
          f"{ratios[len(ratios) // 2]:.3f} [{ratios[0]:.3f}-{ratios[-1]:.3f}]")
    shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
