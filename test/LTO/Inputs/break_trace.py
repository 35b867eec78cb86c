#!/usr/bin/env python3
"""break_trace.py TRACE DIR: write into DIR copies of a link report trace,
each with one fault the schema check must catch (report-schema.test)."""
import argparse
import copy
import json
import os


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("trace")
    p.add_argument("dir")
    a = p.parse_args()
    with open(a.trace) as f:
        good = json.load(f)
    os.makedirs(a.dir, exist_ok=True)

    def jobs(t):
        return [e for e in t["traceEvents"] if e.get("cat") == "job"]

    def info(t):
        return t["otherData"]["dtlto"]

    def lane1(t):
        return [e for e in t["traceEvents"] if e.get("pid") == 2 and e.get("ph") == "X"
                and e.get("tid") == 1]

    faults = {
        "schema": lambda t: info(t).update(schema=2),
        "totals": lambda t: info(t)["totals"].update(jobs=4),
        "bound": lambda t: info(t)["bound"].update(bound_s=info(t)["bound"]["bound_s"] + 1),
        "critical": lambda t: [j["args"].pop("critical", None) for j in jobs(t)],
        "outcome": lambda t: jobs(t)[0]["args"].update(outcome="maybe"),
        "unknown-key": lambda t: jobs(t)[0]["args"].update(colour="blue"),
        "import": lambda t: jobs(t)[0]["args"].update(imports=[len(info(t)["modules"])]),
        "negative": lambda t: jobs(t)[0].update(ts=-5),
        "duplicate-job": lambda t: t["traceEvents"].append(copy.deepcopy(jobs(t)[0])),
        "attempt-orphan": lambda t: t["traceEvents"].append(
            {"name": "x.o", "cat": "attempt", "ph": "X", "pid": 2, "tid": 1, "ts": 0, "dur": 0,
             "args": {"task": 99, "module": "x.o", "outcome": "failed", "source": "engine"}}),
        "no-lane-name": lambda t: t["traceEvents"].__setitem__(slice(None), [
            e for e in t["traceEvents"]
            if not (e["ph"] == "M" and e.get("pid") == 2 and e.get("tid") == 1)]),
        "overlap": lambda t: t["traceEvents"].append(dict(
            copy.deepcopy(lane1(t)[0]), cat="attempt", ts=lane1(t)[0]["ts"] + 1,
            args={"task": lane1(t)[0]["args"]["task"], "module": "x.o", "outcome": "failed",
                  "source": "engine"})),
    }
    for name, fault in faults.items():
        t = copy.deepcopy(good)
        fault(t)
        with open(os.path.join(a.dir, name + ".json"), "w") as f:
            json.dump(t, f)


if __name__ == "__main__":
    main()
