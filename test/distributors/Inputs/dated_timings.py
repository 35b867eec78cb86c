"""A job whose end local.py learns late (a batch worker's grouped reply):
its --timings entry and its compile time come from the reply's "t", not
from when the reply was read. For batch.test.

  dated_timings.py UTILS_DIR TIMINGS_FILE

The job starts at once, ends (says its reply) 0.1 s into the run, and the
reply is read 0.5 s in. Prints the job's recorded duration to 0.1 s.
"""
import json
import sys
import time

sys.path.insert(0, sys.argv[1])
from dtltodist.manifest import Job  # noqa: E402
from dtltodist.report import Reporter  # noqa: E402
from dtltodist.runner import JobResult  # noqa: E402

began = time.time()
reporter = Reporter("dated", quiet=True, timings=sys.argv[2])
reporter.begin(1)
job = Job(0, [], [], [], [])
reporter.started(job, at=began)
time.sleep(0.5)  # the reply is read late; how late does not matter
reporter.finished(JobResult(job, 1, returncode=0, ended_at=began + 0.1))
reporter.write_timings()
entry = json.load(open(sys.argv[2]))["jobs"][0]
print(f"recorded duration {entry['end'] - entry['start']:.1f} s")
