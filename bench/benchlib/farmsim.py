"""The engine's farm policies, simulated: one-shot, streaming, streaming with
the linker's local slots, and with hedging, on W farm workers (some of them
stragglers), optionally all sharing a few CPU cores (an emulated farm, as
bench/farm.py's).

The rules are the engine's (docs/usage.md, "Local jobs and hedging"):

- one-shot: every job reaches the distributor once every shard is written;
  streaming: each job as its shard is ready (the shards phase, spread evenly
  over the jobs in manifest order);
- the distributor starts waiting jobs largest first (or in the order asked)
  on the first free worker;
- a free local slot takes the smallest job the farm has not started, else
  the worst straggler: a job the farm has run for at least `hedge_min`
  seconds and more than `hedge` times as long as its input bytes predict at
  the median rate (seconds per byte) of the jobs finished so far (the
  farm's winning copies and every local copy);
- the first copy of a job to finish wins. A streaming distributor is told
  to cancel the farm's copy, which frees its worker at once; the linker's
  own copy cannot be stopped and keeps its slot until it ends.

A farm copy costs the engine's per-job costs around the compile: queue,
start, a round trip and the upload before it; a round trip and the download
after it. With `cores`, `start_cpu` seconds of the start are work on them
(on an emulated farm the engine's own processes share the machine). A
straggler worker sleeps (factor - 1) times as long as its compile took after
it (bench/farm.py's slow host does exactly that; on a farm that does not
share cores it is a host `factor` times slower). With `cores`, every compile
running at once (farm and local) shares that many CPUs equally; waits take
no CPU.

Plain data in, plain data out: `simulate()` returns a dict.
"""

import bisect
import heapq

POLICIES = ("oneshot", "stream", "local", "hedge")
EPS = 1e-9   # seconds: events this close are simultaneous


def order_key(order):
    """The sort key of a farm's order: manifest order, largest first by the
    bytes a job reads (what a distributor knows), or longest first by the
    measured durations (what no distributor knows beforehand: the best a
    predictor of durations could do); ties keep manifest order."""
    if order == "manifest":
        return lambda j: j["index"]
    if order == "longest-first":
        return lambda j: (-j["seconds"], j["index"])
    return lambda j: (-j["in"], j["index"])


def engine_costs(job, engine):
    """(seconds before the compile, seconds after it) a farm job pays the
    engine: queue, start, a round trip and the upload; a round trip and the
    download. A shaped link's first `burst` bytes of each transfer go at
    once (a token bucket's burst, full again after the compile's pause)."""
    burst = engine.get("burst", 0)
    before = engine["queue"] + engine["start"] + engine["rtt"]
    if engine["upload"]:
        before += max(0, job["in"] - burst) / (engine["upload"] * 1e6)
    after = engine["rtt"]
    if engine["download"]:
        after += max(0, job["out"] - burst) / (engine["download"] * 1e6)
    return before, after


class _Copy:
    __slots__ = ("job", "where", "phases", "phase", "start", "cpu_start", "alive")

    def __init__(self, job, where, phases, start):
        self.job, self.where, self.phases = job, where, phases
        self.phase, self.start, self.cpu_start = -1, start, start
        self.alive = True


def simulate(jobs, workers, policy, engine, *, order="largest-first", slow=(),
             slow_factor=1.0, local_slots=None, hedge=3.0, hedge_min=1.0,
             pre=0.0, shards=0.0, after=0.0, cores=None):
    """jobs: dicts with "in" and "out" (bytes) and "seconds" (the compile
    alone), in manifest order. workers: farm workers; slow: the indices of
    the stragglers among them. engine: queue, start, rtt (s) and upload,
    download (MB/s; 0 is free). local_slots: the linker's slots (default: 1
    for "local" and "hedge", else 0)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy}")
    if local_slots is None:
        local_slots = 1 if policy in ("local", "hedge") else 0
    if policy in ("oneshot", "stream"):
        local_slots = 0
    hedging = policy == "hedge"
    cancels = policy != "oneshot"
    n = len(jobs)
    jobs = [dict(j, index=i) for i, j in enumerate(jobs)]
    if policy == "oneshot":
        arrivals = [(pre + shards, i) for i in range(n)]
    else:
        arrivals = [(pre + shards * (i + 1) / max(1, n), i) for i in range(n)]
    slow = set(slow)

    def farm_phases(job, w):
        before, tail = engine_costs(job, engine)
        # The part of the start that is work on the shared cores (an
        # emulated farm's ssh session or worker runs on them too).
        busy = min(engine.get("start_cpu", 0.0), before) if cores else 0.0
        phases = [("wait", before - busy)] + ([("cpu", busy)] if busy > 0 else [])
        phases.append(("cpu", job["seconds"]))
        if w in slow and slow_factor > 1:
            phases.append(("sleep", slow_factor - 1))  # times the compile's wall
        phases.append(("wait", tail))
        return phases

    key = order_key(order)
    farm_queue, small_queue = [], []      # waiting jobs, for the farm and the slots
    started = [False] * n                 # by the farm or a slot
    done_at = [None] * n
    copies = [[] for _ in range(n)]
    free_workers = list(range(workers))
    heapq.heapify(free_workers)
    free_slots = local_slots
    waiting = 0                           # arrived, not started anywhere
    unhedged = {}                         # job index -> its only copy, on the farm
    rates = []                            # farm seconds per input byte, sorted
    waits, cpus = [], []                  # (end, seq, copy): real / virtual time
    t, virtual, running_cpu, seq = 0.0, 0.0, 0, 0
    next_arrival = 0
    stats = {"local_jobs": 0, "hedged": 0, "hedges_won": 0, "cancelled": 0,
             "farm_seconds": 0.0, "farm_seconds_wasted": 0.0}

    def start_phase(c):
        nonlocal running_cpu, seq
        c.phase += 1
        kind, amount = c.phases[c.phase]
        seq += 1
        if kind == "cpu":
            c.cpu_start = t
            running_cpu += 1
            heapq.heappush(cpus, (virtual + amount, seq, c))
        else:
            if kind == "sleep":
                amount *= t - c.cpu_start
            heapq.heappush(waits, (t + amount, seq, c))

    def launch(job, where):
        phases = farm_phases(job, where[1]) if where[0] == "farm" else [("cpu", job["seconds"])]
        c = _Copy(job, where, phases, t)
        i = job["index"]
        copies[i].append(c)
        if where[0] == "farm":
            unhedged[i] = c
        else:
            unhedged.pop(i, None)
        start_phase(c)

    def release(c):
        nonlocal free_slots
        if c.where[0] == "farm":
            heapq.heappush(free_workers, c.where[1])
            stats["farm_seconds"] += t - c.start
        else:
            free_slots += 1

    def cancel(c):
        nonlocal running_cpu
        c.alive = False
        if c.phases[c.phase][0] == "cpu":
            running_cpu -= 1
        stats["cancelled"] += 1
        stats["farm_seconds_wasted"] += t - c.start
        release(c)

    def finish(c):
        i = c.job["index"]
        c.alive = False
        unhedged.pop(i, None)
        release(c)
        if done_at[i] is not None:
            if c.where[0] == "farm":
                stats["farm_seconds_wasted"] += t - c.start
            else:
                bisect.insort(rates, (t - c.start) / max(1, c.job["in"]))
            return
        done_at[i] = t
        bisect.insort(rates, (t - c.start) / max(1, c.job["in"]))
        if c.where[0] == "local":
            stats["local_jobs"] += 1
            if len(copies[i]) > 1:
                stats["hedges_won"] += 1
        for other in copies[i]:
            if other is not c and other.alive and other.where[0] == "farm" and cancels:
                cancel(other)

    def stragglers():
        """(when it becomes one, how far over its prediction it is now,
        copy) of every farm job not hedged."""
        if not hedging or not rates:
            return []
        median = rates[len(rates) // 2]
        out = []
        for c in unhedged.values():
            predicted = max(median * max(1, c.job["in"]), 1e-3)
            out.append((c.start + max(hedge_min, hedge * predicted),
                        (t - c.start) / predicted, c))
        return out

    def pop_waiting(queue):
        nonlocal waiting
        while queue:
            _, i = heapq.heappop(queue)
            if not started[i]:
                started[i] = True
                waiting -= 1
                return jobs[i]
        return None

    def dispatch():
        nonlocal free_slots
        while free_workers:
            job = pop_waiting(farm_queue)
            if job is None:
                break
            launch(job, ("farm", heapq.heappop(free_workers)))
        while free_slots:
            job = pop_waiting(small_queue)
            if job is None:
                ready = [s for s in stragglers() if s[0] <= t + EPS]
                if not ready:
                    break
                job = max(ready, key=lambda s: s[1])[2].job
                stats["hedged"] += 1
            free_slots -= 1
            launch(job, ("local", 0))

    remaining = n
    while remaining:
        while next_arrival < n and arrivals[next_arrival][0] <= t + EPS:
            i = arrivals[next_arrival][1]
            heapq.heappush(farm_queue, (key(jobs[i]), i))
            heapq.heappush(small_queue, ((jobs[i]["in"], i), i))
            waiting += 1
            next_arrival += 1
        dispatch()
        rate = 1.0 if not cores or running_cpu <= cores else cores / running_cpu
        times = []
        if next_arrival < n:
            times.append(arrivals[next_arrival][0])
        while waits and not waits[0][2].alive:
            heapq.heappop(waits)
        while cpus and not cpus[0][2].alive:
            heapq.heappop(cpus)
        if waits:
            times.append(waits[0][0])
        if cpus:
            times.append(t + (cpus[0][0] - virtual) / rate)
        if free_slots and not waiting:
            ths = [s[0] for s in stragglers() if s[0] > t + EPS]
            if ths:
                times.append(min(ths))
        if not times:
            raise RuntimeError("farm simulation stalled")
        t_next = max(t, min(times))
        virtual += (t_next - t) * rate
        t = t_next
        # Every phase that ends now, wait phases then compiles.
        ended = []
        while waits and (not waits[0][2].alive or waits[0][0] <= t + EPS):
            _, _, c = heapq.heappop(waits)
            if c.alive:
                ended.append(c)
        while cpus and (not cpus[0][2].alive or cpus[0][0] <= virtual + EPS):
            _, _, c = heapq.heappop(cpus)
            if c.alive:
                running_cpu -= 1
                ended.append(c)
        for c in ended:
            if not c.alive:
                continue
            if c.phase + 1 < len(c.phases):
                start_phase(c)
            else:
                was_done = done_at[c.job["index"]] is not None
                finish(c)
                if not was_done:
                    remaining -= 1
    last = max(done_at) if n else pre + shards
    # No farm beats every job started as it arrives on a worker of its own
    # (for one-shot: before + the longest job + after).
    bound = max((at + sum(a for k, a in farm_phases(jobs[i], -1) if k != "sleep")
                 for at, i in arrivals), default=pre + shards)
    return dict(stats, policy=policy, workers=workers, local_slots=local_slots,
                wall=last + after, bound=bound + after, jobs_end=last)
