#!/usr/bin/env python3
"""The DTLTO link report, from Python: check a trace against its schema,
print it as text, make its page, or render the page in headless Chromium.

A link run with DTLTO_REPORT=FILE.html (or -mllvm -dtlto-report=FILE.html)
writes FILE.json, a Chrome trace (Perfetto, chrome://tracing), and FILE.html,
a self-contained page with the trace inside. The schema is documented in
docs/usage.md ("The link report"); this file is the one place in Python that
knows it.
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

PROG = "report.py"
HERE = os.path.dirname(os.path.realpath(__file__))
PAGE = os.path.join(HERE, "..", "..", "llvm", "lib", "LTO", "ReportPage.html")
MARK = "@DTLTO_TRACE@"

OUTCOMES = {"cache", "distributor", "local", "fallback", "failed", "unfinished"}
ATTEMPT_OUTCOMES = {"done", "failed", "cancelled", "lost", "unfinished"}
LOCAL_RUNS = {"slot", "hedge", "fallback"}
META = {"process_name", "process_sort_index", "thread_name", "thread_sort_index"}
NUM = (int, float)


class SchemaError(Exception):
    """What is wrong with a trace; str() is one line."""


def _type(v, kind):
    if kind is NUM:
        return isinstance(v, NUM) and not isinstance(v, bool) and math.isfinite(v)
    if kind is int:
        return isinstance(v, int) and not isinstance(v, bool)
    return isinstance(v, kind)


def _keys(obj, where, required, optional=None):
    """obj has every key of required (name -> type), and no key that is in
    neither required nor optional."""
    if not isinstance(obj, dict):
        raise SchemaError(f"{where}: expected an object")
    optional = optional or {}
    for k, kind in required.items():
        if k not in obj:
            raise SchemaError(f"{where}: no '{k}'")
    for k, v in obj.items():
        kind = required.get(k, optional.get(k))
        if kind is None:
            raise SchemaError(f"{where}: unknown key '{k}'")
        if not _type(v, kind):
            raise SchemaError(f"{where}.{k}: expected {getattr(kind, '__name__', 'a number')}, "
                              f"got {json.dumps(v)[:60]}")


JOB_ARGS = {"task": int, "module": str, "outcome": str, "cache": str, "input_bytes": int,
            "object_bytes": int, "imports": list, "attempts": int, "run_s": NUM,
            "source": str}
JOB_OPTIONAL = {"worker": str, "queue_s": NUM, "upload_s": NUM, "compile_s": NUM,
                "download_s": NUM, "fallback_reason": str, "failure": str,
                "prepared_s": NUM, "handed_over_s": NUM, "object_written_s": NUM,
                "linked_s": NUM, "local_start_s": NUM, "local_end_s": NUM, "critical": bool,
                "local_run": str, "cancel_sent_s": NUM}
ATTEMPT_ARGS = {"task": int, "module": str, "outcome": str, "source": str}
ATTEMPT_OPTIONAL = {"attempt": int, "worker": str, "reason": str, "retry": bool}
DTLTO_KEYS = {"schema": int, "engine": str, "linker": str, "output": str, "distributor": str,
              "remote_compiler": str, "start_epoch": NUM, "complete": bool, "link_failed": bool,
              "cache": bool,
              "distributor_events": int, "bad_events": int, "time_trace": str, "phases": list,
              "totals": dict, "bound": dict, "critical_path": dict, "modules": list}
TOTALS = {k: int for k in ("jobs", "cache_hits", "distributed", "from_distributor",
                           "fallbacks", "failed", "retries", "local_slot", "hedged",
                           "hedges_won", "cancelled", "input_bytes", "object_bytes",
                           "bytes_moved")}
TOTALS.update({k: NUM for k in ("link_s", "engine_s", "distributor_s", "farm_s", "local_s")})
BOUND = {"before_jobs_s": NUM, "longest_job_s": NUM, "after_jobs_s": NUM, "bound_s": NUM,
         "actual_s": NUM}


def check(trace):
    """Raise SchemaError unless trace (decoded JSON) is a link report trace.
    Returns (info, jobs, attempts, lanes) for callers that want them."""
    _keys(trace, "trace", {"traceEvents": list, "otherData": dict},
          {"displayTimeUnit": str})
    info = trace["otherData"].get("dtlto")
    _keys(info, "otherData.dtlto", DTLTO_KEYS)
    if info["schema"] != 1:
        raise SchemaError(f"otherData.dtlto.schema: {info['schema']} is not 1")
    _keys(info["totals"], "otherData.dtlto.totals", TOTALS)
    _keys(info["bound"], "otherData.dtlto.bound", BOUND, {"longest_task": int})
    _keys(info["critical_path"], "otherData.dtlto.critical_path", {"segments": list},
          {"task": int})
    for i, p in enumerate(info["phases"]):
        _keys(p, f"otherData.dtlto.phases[{i}]",
              {"name": str, "start": NUM, "end": NUM, "critical": bool})
        if p["end"] < p["start"]:
            raise SchemaError(f"otherData.dtlto.phases[{i}]: ends before it starts")
    for i, s in enumerate(info["critical_path"]["segments"]):
        _keys(s, f"otherData.dtlto.critical_path.segments[{i}]",
              {"name": str, "start": NUM, "end": NUM})
    modules = info["modules"]
    if not all(isinstance(m, str) for m in modules):
        raise SchemaError("otherData.dtlto.modules: expected strings")

    names, lanes, jobs, attempts = {}, {}, {}, []
    for i, e in enumerate(trace["traceEvents"]):
        where = f"traceEvents[{i}]"
        if not isinstance(e, dict) or e.get("ph") not in ("X", "M"):
            raise SchemaError(f"{where}: expected an object with ph 'X' or 'M'")
        if e["ph"] == "M":
            _keys(e, where, {"name": str, "ph": str, "pid": int, "args": dict}, {"tid": int})
            if e["name"] not in META:
                raise SchemaError(f"{where}: unknown metadata '{e['name']}'")
            arg = "sort_index" if e["name"].endswith("sort_index") else "name"
            _keys(e["args"], where + ".args", {arg: int if arg == "sort_index" else str})
            if e["name"] == "thread_name":
                if "tid" not in e:
                    raise SchemaError(f"{where}: thread_name without a tid")
                names[(e["pid"], e["tid"])] = e["args"]["name"]
            continue
        _keys(e, where, {"name": str, "cat": str, "ph": str, "pid": int, "tid": int,
                         "ts": NUM, "dur": NUM}, {"args": dict})
        if e["ts"] < 0 or e["dur"] < 0:
            raise SchemaError(f"{where}: negative ts or dur")
        lanes.setdefault((e["pid"], e["tid"]), []).append(e)
        a = e.get("args", {})
        if e["cat"] == "job":
            _keys(a, where + ".args", JOB_ARGS, JOB_OPTIONAL)
            if a["outcome"] not in OUTCOMES:
                raise SchemaError(f"{where}.args.outcome: unknown '{a['outcome']}'")
            if a.get("local_run", "slot") not in LOCAL_RUNS:
                raise SchemaError(f"{where}.args.local_run: unknown '{a['local_run']}'")
            if a["cache"] not in ("hit", "miss", "off"):
                raise SchemaError(f"{where}.args.cache: unknown '{a['cache']}'")
            if a["source"] not in ("engine", "distributor"):
                raise SchemaError(f"{where}.args.source: unknown '{a['source']}'")
            if not all(_type(m, int) and 0 <= m < len(modules) for m in a["imports"]):
                raise SchemaError(f"{where}.args.imports: not indices into otherData.dtlto.modules")
            if a["module"] not in modules:
                raise SchemaError(f"{where}.args.module: not in otherData.dtlto.modules")
            if a["task"] in jobs:
                raise SchemaError(f"{where}: a second job event for task {a['task']}")
            jobs[a["task"]] = e
        elif e["cat"] == "attempt":
            _keys(a, where + ".args", ATTEMPT_ARGS, ATTEMPT_OPTIONAL)
            if a["outcome"] not in ATTEMPT_OUTCOMES:
                raise SchemaError(f"{where}.args.outcome: unknown '{a['outcome']}'")
            attempts.append(e)
        elif e["cat"] not in ("phase", "distributor", "time-trace"):
            raise SchemaError(f"{where}: unknown category '{e['cat']}'")
    for a in attempts:
        if a["args"]["task"] not in jobs:
            raise SchemaError(f"an attempt of task {a['args']['task']}, which has no job event")

    for (pid, tid), evs in lanes.items():
        if (pid, tid) not in names:
            raise SchemaError(f"lane pid {pid} tid {tid} has no thread_name")
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        # Our lanes hold spans one after another; LLD's nest.
        stack = []
        for e in evs:
            if pid != 3 and e["dur"] == 0:
                continue  # an instant (a cache hit, an attempt that never ran)
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            if stack and (pid != 3 or e["ts"] + e["dur"] > stack[-1]["ts"] + stack[-1]["dur"]):
                raise SchemaError(f"lane '{names[(pid, tid)]}': '{e['name']}' overlaps "
                                  f"'{stack[-1]['name']}'")
            stack.append(e)

    t = info["totals"]
    outcome = lambda o: sum(1 for j in jobs.values() if j["args"]["outcome"] == o)  # noqa: E731
    for key, want in (("jobs", len(jobs)), ("cache_hits", outcome("cache")),
                      ("from_distributor", outcome("distributor")),
                      ("fallbacks", sum(1 for j in jobs.values() if "fallback_reason" in j["args"])),
                      ("local_slot", outcome("local")),
                      ("hedged", sum(1 for j in jobs.values() if j["args"].get("local_run") == "hedge")),
                      ("hedges_won", sum(1 for j in jobs.values() if j["args"].get("local_run") == "hedge"
                                         and j["args"]["outcome"] == "local")),
                      ("cancelled", sum(1 for j in jobs.values() if "cancel_sent_s" in j["args"])),
                      ("bytes_moved", t["input_bytes"] + t["object_bytes"])):
        if t[key] != want:
            raise SchemaError(f"otherData.dtlto.totals.{key} is {t[key]}, the events say {want}")
    b = info["bound"]
    if abs(b["before_jobs_s"] + b["longest_job_s"] + b["after_jobs_s"] - b["bound_s"]) > 1e-5:
        raise SchemaError("otherData.dtlto.bound.bound_s is not the sum of its parts")
    crit = info["critical_path"].get("task")
    if crit is not None and not (crit in jobs and jobs[crit]["args"].get("critical")):
        raise SchemaError(f"critical_path.task {crit} is not a job marked critical")
    return info, jobs, attempts, {k: names[k] for k in lanes}


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise SchemaError(f"cannot read: {e.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise SchemaError(f"not JSON: {e}") from None


# ---- check ------------------------------------------------------------------

def check_one(args, path):
    """Checks the trace at path as args says; prints why not; True if good."""
    try:
        info, jobs, attempts, lanes = check(load(path))
    except SchemaError as e:
        print(f"{PROG}: error: {path}: {e}", file=sys.stderr)
        return False
    problems = []
    if args.jobs is not None and len(jobs) != args.jobs:
        problems.append(f"{len(jobs)} jobs, expected {args.jobs}")
    for m in args.module:
        if not any(j["args"]["module"] == m for j in jobs.values()):
            problems.append(f"no job of module '{m}'")
    if args.time_trace and not any(pid == 3 for pid, _ in lanes):
        problems.append("no --time-trace scopes merged")
    if args.events and not info["distributor_events"]:
        problems.append("no events from the distributor")
    if args.complete and not info["complete"]:
        problems.append("the final link is missing")
    for p in problems:
        print(f"{PROG}: error: {path}: {p}", file=sys.stderr)
    if problems:
        return False
    print(f"{path}: a valid link report trace: {len(jobs)} jobs, {len(attempts)} other "
          f"attempts, {len(lanes)} lanes, {len(info['phases'])} phases")
    return True


def cmd_check(args):
    good = [check_one(args, path) for path in args.trace]
    return 0 if all(good) else 1


# ---- summary ----------------------------------------------------------------

def cmd_summary(args):
    try:
        info, jobs, attempts, lanes = check(load(args.trace))
    except SchemaError as e:
        print(f"{PROG}: error: {args.trace}: {e}", file=sys.stderr)
        return 1
    t, b = info["totals"], info["bound"]
    modules = info["modules"]
    print(f"link {info['output']} by {info['linker']} ({info['engine']}), distributor "
          f"{info['distributor'] or '-'}; {'complete' if info['complete'] else 'without the final link'}"
          f"{'; the link failed' if info['link_failed'] else ''}")
    print(f"jobs {t['jobs']}: {t['cache_hits']} cache hits, {t['distributed']} distributed, "
          f"{t['from_distributor']} from the distributor, {t['fallbacks']} fallbacks, "
          f"{t['failed']} failed, {t['retries']} retries; events {info['distributor_events']}, "
          f"bad lines {info['bad_events']}")
    if t["local_slot"] or t["hedged"] or t["cancelled"]:
        print(f"linker: {t['local_slot']} objects from its local slots, {t['hedged']} hedged "
              f"({t['hedges_won']} won), {t['cancelled']} cancels sent")
    print(f"time: link {t['link_s']:.3f} s, engine {t['engine_s']:.3f} s, distributor "
          f"{t['distributor_s']:.3f} s, farm {t['farm_s']:.3f} s, local {t['local_s']:.3f} s; "
          f"moved {t['bytes_moved']} bytes")
    print(f"bound {b['bound_s']:.3f} s = before {b['before_jobs_s']:.3f} + longest job "
          f"{b['longest_job_s']:.3f} + after {b['after_jobs_s']:.3f}; actual {b['actual_s']:.3f} s")
    print("phases: " + ", ".join(p["name"] + ("*" if p["critical"] else "") for p in info["phases"]))
    print("critical path: " + " > ".join(s["name"] for s in info["critical_path"]["segments"]))
    for task in sorted(jobs):
        a = jobs[task]["args"]
        extra = "".join(f" {k}={a[k]}" for k in ("worker",) if k in a)
        timed = "".join(f" {k}" for k in ("queue_s", "upload_s", "compile_s", "download_s")
                        if k in a)
        imports = " ".join(modules[i] for i in a["imports"]) or "-"
        print(f"job {task} {a['module']}: {a['outcome']}, cache {a['cache']}, source "
              f"{a['source']}, attempts {a['attempts']}{extra}{' critical' if a.get('critical') else ''}; "
              f"input {a['input_bytes']} B, object {a['object_bytes']} B; reported:{timed or ' -'}; "
              f"imports {imports}")
        if "fallback_reason" in a:
            print(f"  fallback: {a['fallback_reason']}")
        if "failure" in a:
            print(f"  failure: {a['failure']}")
        if a.get("local_run") in ("slot", "hedge") or "cancel_sent_s" in a:
            print(f"  linker: {a.get('local_run', 'none')}"
                  + ("; cancel sent" if "cancel_sent_s" in a else ""))
    for e in sorted(attempts, key=lambda e: (e["args"]["task"], e["args"].get("attempt", 0))):
        a = e["args"]
        print(f"attempt {a['task']} {a['module']}: {a['outcome']}"
              + (f" #{a['attempt']}" if "attempt" in a else "")
              + (f" on {a['worker']}" if "worker" in a else "")
              + (" (retried)" if a.get("retry") else "")
              + (f": {a['reason']}" if "reason" in a else ""))
    for pid, tid in sorted(lanes):
        if pid != 3:
            print(f"lane {pid}.{tid}: {lanes[(pid, tid)]}")
    return 0


# ---- page -------------------------------------------------------------------

def page_of(trace_text):
    """The report page with trace_text (JSON) inside: every '<' (only ever
    inside a JSON string) as \\u003c, so that nothing can end the element."""
    with open(PAGE, encoding="utf-8") as f:
        before, mark, after = f.read().partition(MARK)
    if not mark:
        raise SchemaError(f"{PAGE} has no {MARK}")
    return before + trace_text.replace("<", "\\u003c") + after


def cmd_page(args):
    try:
        trace = load(args.trace)
        check(trace)
        text = page_of(json.dumps(trace, separators=(",", ":")))
    except SchemaError as e:
        print(f"{PROG}: error: {args.trace}: {e}", file=sys.stderr)
        return 1
    tmp = args.output + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, args.output)
    return 0


# ---- render -----------------------------------------------------------------

# Headless, nothing from the network, no first-run work, a fresh profile.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync",
                  "--enable-logging=stderr", "--v=0"]


def chromium(args, page_url, action):
    """Runs Chromium on page_url with action (--dump-dom or --screenshot=);
    returns (stdout, console errors)."""
    with tempfile.TemporaryDirectory(prefix="dtlto-chromium-") as profile:
        argv = [args.chromium] + CHROMIUM_FLAGS + [f"--user-data-dir={profile}",
                f"--window-size={args.window}", action, page_url]
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=args.timeout,
                               errors="replace")
        except subprocess.TimeoutExpired:
            raise SchemaError(f"{args.chromium} did not finish in {args.timeout} s") from None
        except OSError as e:
            raise SchemaError(f"cannot run {args.chromium}: {e.strerror} (apt-get install "
                              "chromium)") from None
    if r.returncode:
        raise SchemaError(f"{args.chromium} exited {r.returncode}: {r.stderr.strip()[-400:]}")
    errors = [line for line in r.stderr.splitlines()
              if ":CONSOLE" in line and re.search(r"Uncaught|Error|error", line)]
    return r.stdout, errors


def cmd_render(args):
    if not shutil.which(args.chromium):
        print(f"{PROG}: error: {args.chromium} not found (apt-get install chromium)",
              file=sys.stderr)
        return 1
    url = "file://" + os.path.abspath(args.page) + (f"#{args.fragment}" if args.fragment else "")
    try:
        dom, errors = chromium(args, url, "--dump-dom")
        if args.screenshot:
            _, more = chromium(args, url, f"--screenshot={os.path.abspath(args.screenshot)}")
            errors += more
    except SchemaError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    if args.dom:
        with open(args.dom, "w", encoding="utf-8") as f:
            f.write(dom)
    status = re.search(r'<p id="status"[^>]*>', dom)
    attrs = dict(re.findall(r'data-(\w+)="([^"]*)"', status.group(0))) if status else {}
    for line in errors:
        print(f"{PROG}: error: the page logged: {line}", file=sys.stderr)
    state = attrs.get("state", "missing")
    if state != "ok" or errors:
        text = re.search(r'<p id="status"[^>]*>(.*?)</p>', dom, re.S)
        print(f"{PROG}: error: {args.page}: the page's state is {state}"
              + (f": {text.group(1).strip()}" if text else ""), file=sys.stderr)
        return 1
    print(f"{args.page}: rendered: state {state}, {attrs.get('jobs', '?')} jobs, aggregated "
          f"{attrs.get('aggregated', '?')}")
    return 0


def main():
    p = argparse.ArgumentParser(prog=PROG, description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="check traces (FILE.json) against the schema; "
                       "exits 1 if any is not valid")
    c.add_argument("trace", nargs="+")
    c.add_argument("--jobs", type=int, metavar="N", help="and that it has N jobs")
    c.add_argument("--module", action="append", default=[], metavar="M",
                   help="and a job of module M (repeatable)")
    c.add_argument("--time-trace", action="store_true",
                   help="and LLD's --time-trace scopes merged in")
    c.add_argument("--events", action="store_true",
                   help="and events the distributor reported")
    c.add_argument("--complete", action="store_true", help="and the final link in it")
    c.set_defaults(func=cmd_check)
    s = sub.add_parser("summary", help="print a trace as text: totals, bound, critical "
                       "path, one line per job and per other attempt")
    s.add_argument("trace")
    s.set_defaults(func=cmd_summary)
    g = sub.add_parser("page", help="make the report page (HTML) of a trace")
    g.add_argument("trace")
    g.add_argument("-o", "--output", required=True, metavar="FILE.html")
    g.set_defaults(func=cmd_page)
    r = sub.add_parser("render", help="render a report page in headless Chromium: fails "
                       "unless the page says it is shown and logged no error")
    r.add_argument("page")
    r.add_argument("--dom", metavar="FILE", help="write the rendered page's DOM to FILE")
    r.add_argument("--screenshot", metavar="FILE.png", help="and a screenshot to FILE.png")
    r.add_argument("--fragment", metavar="TEXT",
                   help="open page#TEXT (t=A-B shows seconds A to B of the link)")
    r.add_argument("--window", default="1400,2000", metavar="W,H",
                   help="the window size (default: %(default)s)")
    r.add_argument("--chromium", default="chromium",
                   help="the browser (default: %(default)s, Debian's)")
    r.add_argument("--timeout", type=float, default=600, metavar="S",
                   help="give up on Chromium after S seconds (default: %(default)s)")
    r.set_defaults(func=cmd_render)
    args = p.parse_args()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
