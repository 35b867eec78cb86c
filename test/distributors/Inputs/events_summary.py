#!/usr/bin/env python3
"""Sum up an event log that events_tee.py kept, for FileCheck.

  events_summary.py LOG

Every line must be an event as docs/manifest.md ("The event channel")
defines it; a line that is not makes this exit 1 naming it. Prints:

  jobs: N
  <count> x <that job's events in order>     one line per distinct sequence,
                                             e.g. "3 x accepted started done"
  started on: <worker>, ...                  the distinct workers, sorted
  done on: <worker>, ...
  failed: <reason> (retry true|false)        one line per failed event
  unanswered: N                              jobs whose last event is not
                                             done, cancelled or a final failed
"""

import argparse
import json
import sys
from collections import Counter

EVENTS = ("accepted", "started", "done", "failed", "cancelled")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log", help="the file events_tee.py --log wrote")
    args = parser.parse_args()
    by_job: dict[int, list[str]] = {}
    started, done, failed = set(), set(), []
    with open(args.log, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            try:
                event = json.loads(line)
                ok = (isinstance(event, dict) and isinstance(event.get("id"), int)
                      and event.get("event") in EVENTS
                      and isinstance(event.get("t"), (int, float)))
            except ValueError:
                ok = False
            if not ok:
                print(f"line {number} is no event: {line.rstrip()!r}")
                return 1
            by_job.setdefault(event["id"], []).append(event["event"])
            if event["event"] == "started":
                started.add(event.get("worker", "(none)"))
            elif event["event"] == "done":
                done.add(event.get("worker", "(none)"))
            elif event["event"] == "failed":
                failed.append(f"failed: {event.get('reason')} "
                              f"(retry {json.dumps(event.get('retry'))})")
    print(f"jobs: {len(by_job)}")
    for sequence, count in sorted(Counter(" ".join(s) for s in by_job.values()).items()):
        print(f"{count} x {sequence}")
    print("started on: " + ", ".join(sorted(started)))
    print("done on: " + ", ".join(sorted(done)))
    for line in failed:
        print(line)
    final = ("done", "cancelled", "failed")
    print(f"unanswered: {sum(1 for s in by_job.values() if s[-1] not in final)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
