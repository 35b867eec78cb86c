"""How deep local.py feeds a batch worker (workers.may_hold), for batch.test.

  hold_policy.py UTILS_DIR

Prints, for jobs of a few sizes, how many a worker holds in all (the one it
runs included) with 100 jobs waiting and one busy worker, and with 3
waiting and two busy workers; and whether jobs whose size the side file
does not give are held beyond one.
"""
import sys

sys.path.insert(0, sys.argv[1])
from dtltodist.manifest import Job  # noqa: E402
from dtltodist.workers import may_hold  # noqa: E402


def job(i, size):
    return Job(i, [], [], [], [], input_bytes=size)


def depth(size, waiting, busy):
    jobs = [job(0, size)]
    while may_hold(jobs, job(len(jobs), size), waiting - len(jobs) + 1, busy):
        jobs.append(job(len(jobs), size))
    return len(jobs)


for size in (0, 20_000, 100_000, 300_000):
    print(f"{size} bytes: {depth(size, 100, 1)} held, "
          f"{depth(size, 3, 2)} near the end")
print(f"unknown size: {depth(None, 100, 1)} held")
