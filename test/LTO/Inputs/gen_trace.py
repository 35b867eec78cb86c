#!/usr/bin/env python3
"""Write a link report trace (schema 1, as the engine writes it) of a made-up
link of N jobs on a farm of HOSTS hosts with SLOTS slots each: a thin link,
jobs queued and run largest-first-ish on the slots, a few cache hits, a few
retries, a few jobs lost and compiled in the linker, then the final link.
For testing the report page at sizes no test link reaches. Deterministic:
the same arguments give the same file."""

import argparse
import heapq
import json
import random


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("jobs", type=int)
    p.add_argument("output")
    p.add_argument("--hosts", type=int, default=64)
    p.add_argument("--slots", type=int, default=8)
    p.add_argument("--seed", type=int, default=17)
    a = p.parse_args()
    rnd = random.Random(a.seed)

    us = lambda s: round(s * 1e6)  # noqa: E731
    events, jobs_out, attempts_out = [], [], []

    def meta(pid, tid, name, value):
        e = {"name": name, "ph": "M", "pid": pid,
             "args": {("sort_index" if name.endswith("sort_index") else "name"): value}}
        if tid is not None:
            e["tid"] = tid
        events.append(e)

    def span(name, cat, pid, tid, start, end, args):
        events.append({"name": name, "cat": cat, "ph": "X", "pid": pid, "tid": tid,
                       "ts": us(start), "dur": us(end) - us(start), "args": args})

    modules = [f"src/lib{i % 97}/unit{i}.o" for i in range(a.jobs)]
    thin_end, backend_start, shards_end, dist_start = 18.0, 18.2, 24.0, 24.5
    lanes = [f"node{h:03d}/{s}" for h in range(a.hosts) for s in range(a.slots)]
    free = [(dist_start, i) for i in range(len(lanes))]
    heapq.heapify(free)
    totals = dict(jobs=a.jobs, cache_hits=0, distributed=0, from_distributor=0, fallbacks=0,
                  local_slot=0, hedged=0, hedges_won=0, cancelled=0,
                  failed=0, retries=0, input_bytes=0, object_bytes=0, farm_s=0.0, local_s=0.0)
    lost = []
    for task in range(1, a.jobs + 1):
        module = modules[task - 1]
        imports = sorted(rnd.sample(range(a.jobs), min(a.jobs, rnd.randint(0, 12))))
        in_bytes, obj_bytes = rnd.randint(20_000, 4_000_000), rnd.randint(4_000, 900_000)
        prepared = backend_start + (shards_end - backend_start) * task / a.jobs
        base = dict(task=task, module=module, cache="miss", input_bytes=in_bytes,
                    imports=imports, prepared_s=round(prepared, 6))
        if rnd.random() < 0.02:
            totals["cache_hits"] += 1
            jobs_out.append((task, dict(base, outcome="cache", cache="hit", input_bytes=0,
                                        imports=[], object_bytes=obj_bytes, attempts=0,
                                        run_s=0, source="engine"), (prepared, prepared), (1, 2)))
            continue
        totals["distributed"] += 1
        totals["input_bytes"] += in_bytes
        run = rnd.lognormvariate(1.0, 0.6)
        upload = in_bytes / 80e6
        tries = 2 if rnd.random() < 0.01 else 1
        attempt_no = 0
        for t in range(tries):
            attempt_no += 1
            at, lane = heapq.heappop(free)
            start = max(at, dist_start + upload)
            if t + 1 < tries:
                end = start + run * rnd.random()
                heapq.heappush(free, (end, lane))
                totals["retries"] += 1
                totals["farm_s"] += end - start
                attempts_out.append(("attempt", dict(task=task, module=module, attempt=attempt_no,
                                     outcome="failed", worker=lanes[lane],
                                     reason=f"{lanes[lane].split('/')[0]}: connection lost",
                                     retry=True, source="distributor"), lane + 1, start, end))
                continue
            if rnd.random() < 0.001:
                end = start + 0.2
                heapq.heappush(free, (end, lane))
                totals["farm_s"] += 0.2
                attempts_out.append(("attempt", dict(task=task, module=module, attempt=attempt_no,
                                     outcome="failed", worker=lanes[lane],
                                     reason="the compiler was killed", source="distributor"),
                                     lane + 1, start, end))
                lost.append((task, dict(base, attempts=attempt_no, source="distributor",
                                        handed_over_s=dist_start, object_bytes=0)))
                break
            end = start + run
            heapq.heappush(free, (end, lane))
            totals["from_distributor"] += 1
            totals["object_bytes"] += obj_bytes
            totals["farm_s"] += run
            jobs_out.append((task, dict(base, outcome="distributor", object_bytes=obj_bytes,
                                        attempts=attempt_no, worker=lanes[lane],
                                        queue_s=round(start - dist_start - upload, 6),
                                        upload_s=round(upload, 6), compile_s=round(run - 0.05, 6),
                                        download_s=0.05, run_s=round(run + upload, 6),
                                        source="distributor", handed_over_s=dist_start,
                                        linked_s=round(end + 0.01, 6)),
                             (start, end), (2, lane + 1)))
    dist_end = max(t for t, _ in free) + 0.2
    checks_end = dist_end + 0.5
    local_free = [checks_end, checks_end]
    for task, args in lost:
        k = min(range(2), key=lambda i: local_free[i])
        start, run = local_free[k], rnd.lognormvariate(0.0, 0.4)
        local_free[k] = start + run
        totals["fallbacks"] += 1
        totals["local_s"] += run
        jobs_out.append((task, dict(args, outcome="fallback", worker=f"linker thread {k + 1}",
                                    run_s=round(run, 6), local_start_s=round(start, 6),
                                    local_end_s=round(start + run, 6),
                                    fallback_reason="the DTLTO job returned no object"),
                         (start, start + run), (1, 10 + k)))
    backend_end = max(local_free) + 0.3
    link_end = backend_end + 4.0

    # The job that finished last is the critical one.
    jobs_out.sort(key=lambda j: j[0])
    ran = [j for j in jobs_out if j[1]["outcome"] != "cache"]
    crit = max(ran, key=lambda j: j[2][1])
    crit[1]["critical"] = True
    longest = max(ran, key=lambda j: j[1]["run_s"])

    meta(1, None, "process_name", "linker: ld.lld")
    meta(1, None, "process_sort_index", 1)
    for tid, name in ((1, "linker"), (2, "ThinLTO cache"), (3, "distributor process"),
                      (10, "linker thread 1"), (11, "linker thread 2")):
        meta(1, tid, "thread_name", name)
        meta(1, tid, "thread_sort_index", tid)
    meta(2, None, "process_name", "distributor: farm.py")
    meta(2, None, "process_sort_index", 2)
    for i, name in enumerate(lanes):
        meta(2, i + 1, "thread_name", name)
        meta(2, i + 1, "thread_sort_index", i + 1)
    phases = [("Read inputs and resolve symbols", 0, 6.0), ("Regular LTO and thin link", 6.0, thin_end),
              ("Cache lookups and index shards", backend_start, shards_end),
              ("Input copies and manifest", shards_end, dist_start),
              ("Wait for the jobs (objects linked as they come)", dist_start, dist_end),
              ("Check and add objects", dist_end, checks_end),
              ("Compile in the linker", checks_end, max(local_free)),
              ("Clean up", max(local_free), backend_end), ("Final link", backend_end, link_end)]
    for name, s, e in phases:
        if e > s:
            span(name, "phase", 1, 1, s, e, {"critical": True})
    span("farm.py", "distributor", 1, 3, dist_start, dist_end, {"failed": False,
                                                              "jobs": totals["distributed"]})
    for cat, args, tid, s, e in attempts_out:
        span(args["module"], cat, 2, tid, s, e, args)
    for task, args, (s, e), (pid, tid) in jobs_out:
        span(args["module"], "job", pid, tid, s, e, args)

    crit_start = crit[2][0]
    segments = [("before the jobs (inputs, thin link)", 0, backend_start),
                ("until the job went to the distributor", backend_start, dist_start),
                ("waiting for a worker", dist_start, crit_start), ("the job", crit_start, crit[2][1]),
                ("after the job (checks, clean-up)", crit[2][1], backend_end),
                ("final link", backend_end, link_end)]
    before, after = backend_start, link_end - backend_end
    info = {
        "schema": 1, "engine": "dtlto (gen_trace.py)", "linker": "ld.lld",
        "output": f"bin/big-{a.jobs}", "distributor": "farm.py", "remote_compiler": "clang",
        "start_epoch": 1764590000.0, "complete": True, "link_failed": False,
        "cache": True,
        "distributor_events": 3 * totals["distributed"], "bad_events": 0, "time_trace": "",
        "phases": [{"name": n, "start": s, "end": e, "critical": True} for n, s, e in phases if e > s],
        "totals": dict(totals, bytes_moved=totals["input_bytes"] + totals["object_bytes"],
                       link_s=link_end, engine_s=backend_end - backend_start,
                       distributor_s=dist_end - dist_start,
                       farm_s=round(totals["farm_s"], 6), local_s=round(totals["local_s"], 6)),
        "bound": {"before_jobs_s": before, "longest_job_s": longest[1]["run_s"],
                  "longest_task": longest[0], "after_jobs_s": after,
                  "bound_s": before + longest[1]["run_s"] + after, "actual_s": link_end},
        "critical_path": {"task": crit[0], "segments": [
            {"name": n, "start": s, "end": e} for n, s, e in segments if e > s]},
        "modules": modules,
    }
    with open(a.output, "w") as f:
        json.dump({"displayTimeUnit": "ms", "traceEvents": events,
                   "otherData": {"dtlto": info}}, f, separators=(",", ":"))


if __name__ == "__main__":
    main()
