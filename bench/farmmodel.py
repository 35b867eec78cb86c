#!/usr/bin/env python3
"""The farm model: where a DTLTO link's time goes on a farm of W workers.

It replays the jobs of a measured link (a probe record of bench/run.py
--probe-runs: each job's input bytes, object bytes and duration) on W
workers, each job costing

    queue + start + (bytes in) / upload + duration + (object bytes) / download
    + 2 * round trip

(with --burst B, each transfer's first B bytes are free: a shaped link's
token bucket)

(the engine's per-job costs, --engine), handed out in manifest order,
largest first (by the bytes the job reads: what a distributor knows before
it runs) or longest first (by the measured durations: the best any
prediction of durations could do). Before the jobs come the link's phases up to the first job (the
thin link, shards and manifest) and after them its phases from the last
object on (objects checked, final link); both come from the same link's
--time-trace phases, or --before/--after.

For each W it prints the predicted wall, the bound (before + the longest
job + after, which no number of workers beats) and where the rest goes:
waiting for a worker (the queue, W too small), and per-job engine costs on
the critical path. --scale-to N replays a link of N jobs drawn (with a
seed) from the record's jobs, with --before and --after given for a link of that
size: an extrapolation, said so in the output.

validate compares the model with measured links: for each record it
predicts the distributor's wall (the jobs on --workers workers, the engine
costs given; with --durations-from, each job's duration as another link
measured it, or its median over several such links) and prints it next to
the distributor wall the record measured.

policies runs the engine's scheduling policies (one-shot, streaming,
streaming with the linker's local slots, and with hedging;
benchlib/farmsim.py) on a record's jobs, with some workers stragglers, for
each W. With --farm it checks them against bench/farm.py's measured modes:
the farm's jobs as compiled alone, its hosts, straggler, delay and rate,
all sharing the machine's cores, the engine's start cost per job fitted so
that one-shot's prediction is its measured wall, then the other modes
predicted with that cost.
"""

import argparse
import json
import os
import random
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import farmsim  # noqa: E402

ENGINES = {
    # Per-job costs in seconds and MB/s (0: none). "local" is this machine's
    # local.py (the record's durations already hold its costs). The others
    # are each engine's cost per job on this machine, measured against
    # local.py by bench/engine-costs.py (2026-12-02, gen30, clang jobs, 2 at
    # a time, the farms of the tests on veth links, engine at 865c01a): the
    # whole difference, upload and round trips included, as "start". A farm
    # on a LAN has its own: give --queue/--start/--rtt/--upload/--download
    # measured there.
    "local": dict(queue=0.0, start=0.0, rtt=0.0, upload=0.0, download=0.0),
    "ssh": dict(queue=0.0, start=0.430, rtt=0.0, upload=0.0, download=0.0),
    "reapi": dict(queue=0.0, start=0.024, rtt=0.0, upload=0.0, download=0.0),
    "slurm": dict(queue=0.0, start=0.457, rtt=0.0, upload=0.0, download=0.0),
    "distcc": dict(queue=0.0, start=0.028, rtt=0.0, upload=0.0, download=0.0),
    "icecream": dict(queue=0.0, start=0.034, rtt=0.0, upload=0.0, download=0.0),
}
ORDERS = ("manifest", "largest-first", "longest-first")


def load_record(path):
    with open(path) as f:
        rec = json.load(f)
    jobs = []
    for i, j in enumerate(rec["jobs"]):
        if "seconds" not in j:
            raise SystemExit(f"farmmodel.py: error: {path}: job {i} has no duration "
                             "(the probe link needs the distributor's --timings)")
        jobs.append({"in": j["needs_bytes"], "out": j.get("object_bytes", 0),
                     "seconds": j["seconds"], "index": i})
    return rec, jobs


def job_cost(job, engine):
    """Seconds a worker is busy with job under engine's per-job costs."""
    before, after = farmsim.engine_costs(job, engine)
    return before + job["seconds"] + after


def order_jobs(jobs, order):
    return sorted(jobs, key=farmsim.order_key(order))


def makespan(jobs, workers, engine, order):
    """Jobs handed out in order to the first free of workers: the time the
    last one ends, and the total time jobs waited for a worker."""
    import heapq
    free = [0.0] * min(workers, max(1, len(jobs)))
    heapq.heapify(free)
    end, waited = 0.0, 0.0
    for job in order_jobs(jobs, order):
        start = heapq.heappop(free)
        waited += start
        finish = start + job_cost(job, engine)
        end = max(end, finish)
        heapq.heappush(free, finish)
    return end, waited


def scaled(jobs, n, seed):
    rng = random.Random(seed)
    return [dict(rng.choice(jobs), index=i) for i in range(n)]


def model(jobs, before, after, workers, engine, order):
    span, waited = makespan(jobs, workers, engine, order)
    longest = max((job_cost(j, engine) for j in jobs), default=0.0)
    overhead = sum(job_cost(j, engine) - j["seconds"] for j in jobs)
    work = sum(j["seconds"] for j in jobs)
    wall = before + span + after
    bound = before + longest + after
    return {"workers": workers, "order": order, "wall": wall, "bound": bound,
            "ratio": wall / bound if bound else 1.0,
            # What the jobs add beyond the longest one: the rest of the work
            # spread over the workers, and their engine costs.
            "beyond_bound": span - longest,
            "work_per_worker": work / workers, "overhead_per_worker": overhead / workers,
            "mean_wait": waited / max(1, len(jobs))}


def knee(jobs, before, after, engine, order, within=1.10, limit=100000):
    """The fewest workers whose wall is within `within` of the bound."""
    lo, hi = 1, 1
    while hi < limit and model(jobs, before, after, hi, engine, order)["ratio"] > within:
        lo, hi = hi, hi * 2
    if hi >= limit:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if model(jobs, before, after, mid, engine, order)["ratio"] > within:
            lo = mid + 1
        else:
            hi = mid
    return lo


def phases_of(results_path, program, mode):
    """(before the first job, after the last object) of a traced link."""
    pre, shards, after = split_phases_of(results_path, program, mode)
    return pre + shards, after


def split_phases_of(results_path, program, mode):
    """(up to the first shard, the shards and manifest, after the last
    object) of a traced link."""
    with open(results_path) as f:
        results = json.load(f)
    ph = results["programs"][program].get("phases", {}).get(mode)
    if not ph:
        raise SystemExit(f"farmmodel.py: error: {results_path} has no --time-trace phases "
                         f"of {program} {mode} (run with --trace-runs 1 or more, or "
                         "give --before and --after)")
    return (ph["inputs"] + ph["thin_link"], ph["shards"],
            ph["after"] + ph["final_link"])


def engine_of(args):
    e = dict(ENGINES[args.engine])
    for k in ("queue", "start", "rtt", "upload", "download", "burst", "start_cpu"):
        v = getattr(args, k, None)
        if v is not None:
            e[k] = v
    return e


def cmd_replay(args):
    rec, jobs = load_record(args.record)
    if args.before is not None and args.after is not None:
        before, after = args.before, args.after
    elif args.results:
        before, after = phases_of(args.results, args.program, args.mode)
    else:
        raise SystemExit("farmmodel.py: error: give --results PROGRAM MODE's phases or "
                         "--before and --after")
    note = ""
    if args.scale_to:
        jobs = scaled(jobs, args.scale_to, args.seed)
        note = (f" (extrapolated: {args.scale_to} jobs drawn from the record's "
                f"{len(rec['jobs'])})")
    engine = engine_of(args)
    out = {"record": args.record, "jobs": len(jobs), "before": before, "after": after,
           "engine": args.engine, "engine_costs": engine, "note": note.strip(),
           "rows": [], "knee": {}}
    for w in args.workers:
        for order in ORDERS:
            out["rows"].append(model(jobs, before, after, w, engine, order))
    for order in ORDERS:
        out["knee"][order] = knee(jobs, before, after, engine, order)
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"{len(jobs)} jobs{note}, engine {args.engine} "
          + ", ".join(f"{k} {v:g}" for k, v in engine.items())
          + f"; before the jobs {before:.2f} s, after them {after:.2f} s")
    print()
    print("| workers | order | wall s | bound s | wall / bound | beyond the longest job s "
          "| work per worker s | engine costs per worker s | mean wait for a worker s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in out["rows"]:
        print(f"| {r['workers']} | {r['order']} | {r['wall']:.2f} | {r['bound']:.2f} "
              f"| {r['ratio']:.2f} | {r['beyond_bound']:.2f} | {r['work_per_worker']:.2f} "
              f"| {r['overhead_per_worker']:.3f} | {r['mean_wait']:.2f} |")
    print()
    for order in ORDERS:
        k = out["knee"][order]
        print(f"{order}: wall within 10% of the bound from "
              + (f"{k} workers" if k else "no worker count up to 100,000"))
    return 0


def cmd_validate(args):
    engine = engine_of(args)
    print("| record | jobs | workers | predicted distributor wall s "
          "| measured s | predicted / measured |")
    print("|---|---|---|---|---|---|")
    worst = 0.0
    reference = None
    if args.durations_from:
        # Each job's median over the reference links: on a noisy machine one
        # link's durations are off by as much as the condition under test.
        seen = {}
        for ref in args.durations_from:
            _, ref_jobs = load_record(ref)
            with open(ref) as f:
                modules = [j["module"] for j in json.load(f)["jobs"]]
            for m, j in zip(modules, ref_jobs):
                seen.setdefault(m, []).append(j["seconds"])
        reference = {m: statistics.median(v) for m, v in seen.items()}
    for path in args.records:
        rec, jobs = load_record(path)
        if reference is not None:
            # The jobs as another link measured them (the same program
            # through the same engine without the condition under test).
            for job, raw in zip(jobs, rec["jobs"]):
                if raw["module"] not in reference:
                    raise SystemExit(f"farmmodel.py: error: {', '.join(args.durations_from)} "
                                     f"has no job of {raw['module']}")
                job["seconds"] = reference[raw["module"]]
        measured = rec.get("distributor_wall")
        if not measured:
            raise SystemExit(f"farmmodel.py: error: {path} has no distributor wall")
        # The record's jobs as the distributor handed them out (it starts
        # them in manifest order).
        span, _ = makespan(jobs, args.workers_for_validation, engine, "manifest")
        ratio = span / measured
        worst = max(worst, abs(ratio - 1))
        print(f"| {os.path.basename(path)} | {len(jobs)} | {args.workers_for_validation} "
              f"| {span:.2f} | {measured:.2f} | {ratio:.2f} |")
    print()
    print(f"largest error: {100 * worst:.0f}%")
    return 0


def policy_row(jobs, workers, policy, engine, args, pre, shards, after):
    slow = range(workers - args.slow, workers) if args.slow else ()
    return farmsim.simulate(jobs, workers, policy, engine, order=args.order, slow=slow,
                            slow_factor=args.slow_factor, local_slots=args.local_slots,
                            hedge=args.hedge, hedge_min=args.hedge_min, pre=pre,
                            shards=shards, after=after, cores=args.cores)


def print_policy_rows(rows):
    print("| workers | policy | wall s | / bound | / oneshot | jobs in the linker "
          "| hedged (linker won) | farm seconds wasted |")
    print("|---|---|---|---|---|---|---|---|")
    oneshot = {r["workers"]: r["wall"] for r in rows if r["policy"] == "oneshot"}
    for r in rows:
        base = oneshot.get(r["workers"])
        vs = f"{r['wall'] / base:.2f}" if base else "-"
        print(f"| {r['workers']} | {r['policy']} | {r['wall']:.2f} | "
              f"{r['wall'] / r['bound']:.2f} | {vs} | {r['local_jobs']} "
              f"| {r['hedged']} ({r['hedges_won']}) | {r['farm_seconds_wasted']:.2f} |")


def cmd_policies(args):
    if args.farm:
        return policies_against_farm(args)
    rec, jobs = load_record(args.record)
    if args.before is not None and args.after is not None:
        pre, shards, after = args.before, args.shards, args.after
    elif args.results:
        pre, shards, after = split_phases_of(args.results, args.program, args.mode)
    else:
        raise SystemExit("farmmodel.py: error: give --results PROGRAM MODE's phases or "
                         "--before and --after")
    if args.scale_to:
        jobs = scaled(jobs, args.scale_to, args.seed)
    engine = engine_of(args)
    print(f"{len(jobs)} jobs, engine {args.engine} "
          + ", ".join(f"{k} {v:g}" for k, v in engine.items())
          + (f"; the last {args.slow} worker(s) {args.slow_factor:g}x slower; "
             if args.slow else "; no straggler; ")
          + f"{pre:.2f} s before the shards, {shards:.2f} s of shards, {after:.2f} s after; "
          + (f"every compile sharing {args.cores} cores" if args.cores else "no shared cores"))
    print()
    print_policy_rows([policy_row(jobs, w, p, engine, args, pre, shards, after)
                       for w in args.workers for p in args.policies])
    return 0


def policies_against_farm(args):
    """bench/farm.py's modes, predicted and measured."""
    with open(args.farm) as f:
        farm = json.load(f)
    cfg, res = farm.get("config"), farm.get("result")
    if not isinstance(cfg, dict) or not isinstance(res, dict):
        raise SystemExit(f"farmmodel.py: error: {args.farm} is not a bench/farm.py farm.json")
    if "alone" not in res:
        raise SystemExit(f"farmmodel.py: error: {args.farm} has no per-job times "
                         "(made by a bench/farm.py older than the policies model: run it again)")
    jobs = [{"in": j["needs_bytes"], "out": j["object_bytes"], "seconds": j["seconds"]}
            for j in res["alone"]]
    workers = cfg["hosts"] * cfg["slots"]
    args.slow = cfg["slots"] if cfg["straggler"] > 1 else 0
    args.slow_factor = cfg["straggler"]
    args.cores = args.cores or res["cores"]
    engine = engine_of(args)
    # The relay's delay each way, and the linker's link shared by the hosts
    # (each job gets its share: the model has no shared link).
    engine["rtt"] = 2 * cfg["delay_ms"] / 1000
    share = cfg["rate_mbit"] / 8 / max(1, min(workers, args.cores))
    engine["upload"] = engine["download"] = share
    if cfg.get("engine") == "reapi":
        engine["upload"] = 0  # the inputs are in the workers' CAS after the first link
    if args.burst is None:
        engine["burst"] = cfg.get("burst_bytes", 0)
    # The farm's work per job beyond the compile, on the machine's cores
    # (ssh sessions, the workers' own processing): the machine's busy CPU
    # seconds in the oneshot links, less the compiles' and the linker's.
    cpu = [r["cpu_s"] for r in res["runs"].get("oneshot", []) if "cpu_s" in r]
    if cpu and args.start_cpu is None:
        linker = res["pre_s"] + res["shards_s"] + res["after_s"]
        work = sum(j["seconds"] for j in jobs)
        engine["start_cpu"] = max(0.0, (statistics.median(cpu) - work - linker)
                                  / max(1, len(jobs)))
    pre, shards, after = res["pre_s"], res["shards_s"], res["after_s"]
    measured = {m: statistics.median(r["wall_s"] for r in runs)
                for m, runs in res["runs"].items()}
    if "oneshot" not in measured:
        raise SystemExit(f"farmmodel.py: error: {args.farm} has no oneshot runs to fit on")

    def predict(mode, start):
        e = dict(engine, start=start)
        return policy_row(jobs, workers, mode, e, args, pre, shards, after)

    lo, hi = 0.0, 10.0
    if predict("oneshot", lo)["wall"] >= measured["oneshot"]:
        hi = lo
    for _ in range(50):
        mid = (lo + hi) / 2
        if predict("oneshot", mid)["wall"] < measured["oneshot"]:
            lo = mid
        else:
            hi = mid
    # The replay's wall can jump with the start cost (a job lands on the slow
    # worker or not): of the two sides of the jump, the closer.
    start = min((lo, hi), key=lambda x: abs(predict("oneshot", x)["wall"] - measured["oneshot"]))
    print(f"{args.farm}: {len(jobs)} jobs on {workers} workers (the last "
          f"{args.slow} {args.slow_factor:g}x slow), {args.cores} shared cores, round trip "
          f"{engine['rtt'] * 1000:.0f} ms, "
          + ("inputs in the CAS, " if engine["upload"] == 0 else "")
          + f"{share:.1f} MB/s per job"
          + (f" (the first {engine['burst']} bytes of each at once)" if engine.get("burst") else "")
          + "; per-job start cost fitted on oneshot: "
          f"{start * 1000:.0f} ms"
          + (f", of it {engine['start_cpu'] * 1000:.0f} ms on the cores (measured)"
             if "start_cpu" in engine else ""))
    print()
    print("| mode | measured wall s (median) | predicted s | predicted / measured "
          "| jobs in the linker | hedged (linker won) |")
    print("|---|---|---|---|---|---|")
    worst = 0.0
    for mode in res["runs"]:
        r = predict(mode, start)
        ratio = r["wall"] / measured[mode]
        if mode != "oneshot":
            worst = max(worst, abs(ratio - 1))
        print(f"| {mode} | {measured[mode]:.2f} | {r['wall']:.2f} | {ratio:.2f} "
              f"| {r['local_jobs']} | {r['hedged']} ({r['hedges_won']}) |")
    print()
    print(f"largest error of the predicted modes: {100 * worst:.0f}%")
    return 0


def _workers(text):
    try:
        ws = [int(x) for x in text.split(",") if x]
    except ValueError:
        ws = []
    if not ws or min(ws) < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma list of worker counts")
    return ws


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/farmmodel.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    def engine_options(q):
        q.add_argument("--engine", choices=sorted(ENGINES), default="local",
                       help="per-job costs to start from (default: %(default)s)")
        q.add_argument("--queue", type=float, help="seconds a job waits in the engine")
        q.add_argument("--start", type=float, help="seconds to start a job on a worker")
        q.add_argument("--rtt", type=float, help="network round trip, seconds")
        q.add_argument("--upload", type=float, help="MB/s to the worker (0: free)")
        q.add_argument("--download", type=float, help="MB/s back (0: free)")
        q.add_argument("--burst", type=int, metavar="BYTES",
                       help="of each upload and download, bytes that go at once "
                            "(a token bucket's burst: tc tbf's, which refills "
                            "while the job compiles; default 0)")

    r = sub.add_parser("replay", help="a measured link on 1..N workers")
    r.add_argument("record", help="a probe record (OUT/logs/PROGRAM/MODE-probe0.json)")
    r.add_argument("--results", help="the run's results.json, for the link's phases")
    r.add_argument("--program", help="the program in --results")
    r.add_argument("--mode", help="the mode in --results (default: the record's)")
    r.add_argument("--before", type=float, help="seconds before the first job")
    r.add_argument("--after", type=float, help="seconds after the last object")
    r.add_argument("--workers", type=_workers, default=_workers("1,2,4,8,16,32,64,128,256,512,1000"),
                   help="worker counts (default: 1,2,4,...,512,1000)")
    r.add_argument("--scale-to", type=int, metavar="N",
                   help="replay N jobs drawn from the record's (extrapolation)")
    r.add_argument("--seed", type=int, default=1, help="seed of --scale-to")
    r.add_argument("--json", action="store_true", help="print JSON")
    engine_options(r)
    v = sub.add_parser("validate", help="the model against measured distributor walls")
    v.add_argument("records", nargs="+", help="probe records")
    v.add_argument("--durations-from", metavar="RECORD", action="append",
                   help="each job's duration from this record (the same jobs "
                        "measured without the engine costs given), not its own; "
                        "repeat it for the median of several links")
    v.add_argument("--workers", dest="workers_for_validation", type=int, default=2,
                   help="the workers the measured links had (default: %(default)s)")
    engine_options(v)
    q = sub.add_parser("policies", help="the engine's scheduling policies on 1..N workers")
    q.add_argument("record", nargs="?", help="a probe record (or give --farm)")
    q.add_argument("--farm", metavar="FARM_JSON",
                   help="check the policies against bench/farm.py's farm.json")
    q.add_argument("--results", help="the run's results.json, for the link's phases")
    q.add_argument("--program", help="the program in --results")
    q.add_argument("--mode", help="the mode in --results (default: the record's)")
    q.add_argument("--before", type=float, help="seconds before the first shard")
    q.add_argument("--shards", type=float, default=0.0,
                   help="with --before: seconds of shards and manifest, over which "
                        "streaming hands the jobs out (default: %(default)s)")
    q.add_argument("--after", type=float, help="seconds after the last object")
    q.add_argument("--workers", type=_workers, default=_workers("4,16,64,256"),
                   help="worker counts (default: 4,16,64,256)")
    q.add_argument("--policies", default=",".join(farmsim.POLICIES),
                   type=lambda t: [x for x in t.split(",") if x],
                   help=f"comma list (default: {','.join(farmsim.POLICIES)})")
    q.add_argument("--order", choices=ORDERS, default="largest-first",
                   help="the farm's order (default: %(default)s, as our distributors)")
    q.add_argument("--slow", type=int, default=1,
                   help="straggler workers, the last ones (default: %(default)s)")
    q.add_argument("--slow-factor", type=float, default=4.0,
                   help="how many times as long a straggler takes (default: %(default)s)")
    q.add_argument("--local-slots", type=int,
                   help="the linker's slots in local and hedge (default: 1, the engine's)")
    q.add_argument("--hedge", type=float, default=3.0,
                   help="DTLTO_HEDGE: a straggler has run this many times its "
                        "prediction (default: %(default)s)")
    q.add_argument("--hedge-min", type=float, default=1.0,
                   help="and at least this many seconds (default: %(default)s, the engine's)")
    q.add_argument("--cores", type=int,
                   help="every compile shares this many cores (an emulated farm; "
                        "default: none shared, or farm.json's)")
    q.add_argument("--start-cpu", type=float,
                   help="with --cores: seconds of each farm job's start that are "
                        "work on those cores (an emulated farm's sessions or "
                        "workers; --farm measures it: farm.json's cpu_s)")
    q.add_argument("--scale-to", type=int, metavar="N",
                   help="replay N jobs drawn from the record's (extrapolation)")
    q.add_argument("--seed", type=int, default=1, help="seed of --scale-to")
    engine_options(q)
    args = p.parse_args(argv)
    if args.command == "policies":
        if bool(args.record) == bool(args.farm):
            p.error("policies needs a probe record or --farm, not both")
        for pol in args.policies:
            if pol not in farmsim.POLICIES:
                p.error(f"--policies: unknown policy '{pol}' "
                        f"(known: {', '.join(farmsim.POLICIES)})")
        if args.results and not args.program:
            p.error("--results needs --program")
        if args.record and args.results and not args.mode:
            args.mode = os.path.basename(args.record).split("-probe")[0]
    if args.command == "replay":
        if args.scale_to and (args.before is None or args.after is None):
            p.error("--scale-to needs --before and --after: the phases of a link of "
                    "that size (measured, or fitted from the measured sizes)")
        if args.results and not args.program:
            p.error("--results needs --program")
        if args.results and not args.mode:
            base = os.path.basename(args.record)
            args.mode = base.split("-probe")[0]
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    return {"replay": cmd_replay, "validate": cmd_validate,
            "policies": cmd_policies}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
