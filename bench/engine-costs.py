#!/usr/bin/env python3
"""What each distribution engine costs per job on this machine, against local.py.

  bench/engine-costs.py [--runs 3] [--engines local,ssh,...] [--out DIR]

Links one generated program (default: the gen30 tree under
/var/cache/dtlto-bench/generated; its recorded linker arguments, our
build/bin/ld.lld, clang jobs with --thinlto-remote-compiler) through each
distributor, every distributor under bench/benchlib/probe.py with its
--timings, which records each job's duration as the distributor saw it
(from the job's start to its object being back). Every remote engine runs
for real, on the farm its own test harness starts here:

  ssh           distributors/ssh/ssh.py, two sshd hosts in network namespaces
                (test/distributors/ssh/Inputs/hosts.py), one slot each
  reapi         distributors/reapi/reapi.py, two of Bazel's remote workers
                (test/distributors/reapi/Inputs/fixture.py), --jobs 2,
                --skip-cache-lookup (every action executes)
  slurm         distributors/slurm/slurm.py --mode=stream, munged, slurmctld
                and two slurmd nodes (test/distributors/slurm/Inputs/
                cluster.py) that cannot see the tree, --slots 2
  slurm-shared  the same with --mode=shared on nodes that see the tree
  distcc        distributors/distcc/distcc.py, two Debian distccd hosts
                (test/distributors/distcc/Inputs/distcc_farm.py) with
                dtlto-backend in their whitelist (each job one bundle), one
                slot each
  icecream      distributors/icecream/icecream.py, icecc-scheduler and two
                iceccd hosts (test/distributors/icecream/Inputs/
                icecc_farm.py), the environment built with dtlto-backend
                (each job one bundle), --jobs 2
  local         utils/dtlto/local.py --jobs 2: the baseline

Every engine runs two jobs at a time, as local.py does on the 2 cores, so
that the compiles themselves cost the same; the hosts of every farm share
this machine's CPUs and talk over veth pairs. The farms hide the source
tree, the build tree and DIR from their hosts (slurm-shared: none), so every
file travels through the engine. All farms are started first and stay up;
a server inside each harness runs the links it is sent. An untimed warm-up
link per engine (--warmup) first, so that every farm is in its steady state
(icecream's environment installed on the hosts, the REAPI workers' CAS
holding the inputs: later uploads find nothing missing). Then the runs
alternate engines: local, ssh, ..., local, ssh, ... Every output is
compared byte for byte with the first local link's.

Per engine it prints the jobs, the mean and median per-job duration (the
range over runs), local.py's in the same rounds, their difference (the
engine's per-job cost here, the round's local run subtracted from each
run), the distributor's wall, the link's wall, and whether the outputs are
identical; then a suggested --start for bench/farmmodel.py (the mean
difference, with the engine's other per-job costs set to 0: on these veth
links the difference holds them all). An engine that cannot run here is
reported as "not measured: <reason>", never skipped silently.

Needs root (namespaces). DIR (default /tmp/engine-costs) gets a copy of the
tree, the probe records (records/), every link's log (logs/), the harness
logs, the outputs (outputs/) and summary.json.
"""

import argparse
import filecmp
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
from benchlib import default_cache, generate  # noqa: E402
from benchlib.programs import BUILD_STAMP  # noqa: E402

PROBE = os.path.join(HERE, "benchlib", "probe.py")
TESTS = os.path.join(ROOT, "test", "distributors")
DEFAULT_MODULES = 30  # the generated program linked when --tree is not given
ENGINES = ("local", "ssh", "reapi", "slurm", "slurm-shared", "distcc", "icecream")
SERVER_VERB = "_serve"  # the server inside a harness (not for users)
POLL = 0.05


def log(msg):
    print(f"engine-costs: {msg}", flush=True)


def fail(msg):
    sys.exit(f"engine-costs.py: error: {msg}")


def tail(path, lines=3):
    try:
        with open(path, errors="replace") as f:
            text = [t for t in f.read().splitlines() if t.strip()]
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:]) or "(empty log)"


def write_json(path, data):
    with open(path + ".tmp", "w") as f:
        json.dump(data, f, indent=1)
    os.replace(path + ".tmp", path)


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


# --- the server that runs inside a harness ---------------------------------

def serve(chan, idle_limit):
    """Inside a harness: publish the harness's environment, then run each
    link request (chan/req.json) and answer it (chan/resp.json) until told
    to quit, or until nothing came for idle_limit seconds."""
    keep = ("FARM_", "REAPI_", "SLURM_", "ICECC_")
    write_json(os.path.join(chan, "ready.json"),
               {k: v for k, v in os.environ.items() if k.startswith(keep)})
    req_path, resp_path = os.path.join(chan, "req.json"), os.path.join(chan, "resp.json")
    last = time.monotonic()
    while time.monotonic() - last < idle_limit:
        req = read_json(req_path) if os.path.exists(req_path) else None
        if req is None:
            time.sleep(POLL)
            continue
        os.remove(req_path)
        last = time.monotonic()
        if req.get("quit"):
            return 0
        write_json(resp_path, dict(run_link(req), id=req["id"]))
        last = time.monotonic()
    return 3


def run_link(req):
    """Run one link as req says: argv, cwd, env additions, log."""
    env = dict(os.environ, **req["env"])
    load = os.getloadavg()[0]
    t0 = time.monotonic()
    with open(req["log"], "wb") as out:
        try:
            rc = subprocess.call(req["argv"], cwd=req["cwd"], env=env,
                                 stdout=out, stderr=subprocess.STDOUT)
        except OSError as e:
            out.write(f"engine-costs: cannot run {req['argv'][0]}: {e}\n".encode())
            rc = 127
    return {"rc": rc, "wall": time.monotonic() - t0, "load": load}


# --- the engines -----------------------------------------------------------

class Ctx:
    def __init__(self, args):
        self.args = args
        self.py = args.python
        self.out = args.out
        self.src = ROOT
        self.build = args.build
        self.jobs = args.jobs

    def tool(self, *parts):
        return os.path.join(self.src, *parts)


def sandbox_missing(ctx, harness):
    r = subprocess.run([ctx.py, harness, "missing"], capture_output=True, text=True)
    if r.returncode:
        return [f"{os.path.basename(harness)} missing failed: {r.stderr.strip()[:200]}"]
    return [m for m in r.stdout.splitlines() if m.strip()]


def reapi_missing(ctx):
    """What test/distributors/reapi/lit.local.cfg asks for its workers."""
    missing = []
    if subprocess.run([ctx.py, "-c", "import grpc, google.protobuf"],
                      capture_output=True).returncode:
        missing.append(f"python3-grpcio python3-protobuf (for {ctx.py})")
    marker = os.path.join(ctx.build, "distributors", "reapi", "gen", "build", "bazel",
                          "remote", "execution", "v2", "remote_execution_pb2.py")
    if not os.path.exists(marker):
        missing.append(f"the protocol stubs ({marker}; ninja -C build dtlto-reapi-stubs)")
    for t in ("java", "javac", "unshare", "nsenter", "ip"):
        if not shutil.which(t):
            missing.append(t)
    for p in ("/usr/share/bazel/A-server.jar", "/usr/src/bazel-bootstrap/src/tools/remote"):
        if not os.path.exists(p):
            missing.append(p)
    return missing


class Engine:
    """name; the harness that starts its farm (None: runs here); the
    distributor's command line given the harness's environment."""
    harness_script = None
    hidden = True

    def __init__(self, name):
        self.name = name

    def missing(self, ctx):
        if os.geteuid() != 0 and self.harness_script:
            return ["root (network namespaces)"]
        return sandbox_missing(ctx, self.harness(ctx)) if self.harness_script else []

    def harness(self, ctx):
        return os.path.join(TESTS, *self.harness_script)

    def hides(self, ctx):
        return ["--hide", ctx.src, "--hide", ctx.build, "--hide", ctx.out] if self.hidden else []

    def harness_argv(self, ctx, record):
        """The harness command, up to (not including) "-- CMD"."""
        return [ctx.py, self.harness(ctx), "run", self.count_option, "2"] + \
            self.hides(ctx) + ["--record", record, "--timeout", str(ctx.args.farm_timeout)] + \
            self.extra_harness_args(ctx)

    count_option = "--hosts"

    def extra_harness_args(self, ctx):
        return []

    def prepare(self, env):
        """Before a link, with the harness's environment."""

    def dist(self, ctx, env):
        raise NotImplementedError


class Local(Engine):
    def dist(self, ctx, env):
        return [ctx.py, ctx.tool("utils", "dtlto", "local.py"), f"--jobs={ctx.jobs}"]


class Ssh(Engine):
    harness_script = ("ssh", "Inputs", "hosts.py")

    def prepare(self, env):
        os.makedirs(os.path.join(env["FARM_STATE"], "remote"), exist_ok=True)

    def dist(self, ctx, env):
        per = max(1, ctx.jobs // 2)
        return [ctx.py, ctx.tool("distributors", "ssh", "ssh.py"),
                f"--ssh-config={env['FARM_SSH_CONFIG']}", f"--identity={env['FARM_KEY']}",
                f"--known-hosts={env['FARM_KNOWN_HOSTS']}", "--strict-host-key-checking=yes",
                "--remote-python=/usr/bin/python3",
                f"--remote-dir={os.path.join(env['FARM_STATE'], 'remote')}",
                f"--host={env['FARM_H1']}:{per}", f"--host={env['FARM_H2']}:{per}"]


class Reapi(Engine):
    harness_script = ("reapi", "Inputs", "fixture.py")

    def missing(self, ctx):
        if os.geteuid() != 0:
            return ["root (network namespaces)"]
        return reapi_missing(ctx)

    def harness_argv(self, ctx, record):
        # The worker's classes are compiled into --build-dir: ours, not the
        # build tree (hidden like the others).
        return [ctx.py, self.harness(ctx), "run",
                "--build-dir", os.path.join(ctx.out, "reapi-worker"),
                "--hide", ctx.src, "--hide", ctx.build, "--hide", ctx.out,
                "--record", record, "--workers", "2"]

    def dist(self, ctx, env):
        return [ctx.py, ctx.tool("distributors", "reapi", "reapi.py"),
                f"--endpoint={env['REAPI_W1']}", f"--endpoint={env['REAPI_W2']}",
                f"--jobs={ctx.jobs}", "--skip-cache-lookup",
                f"--stubs-dir={os.path.join(ctx.build, 'distributors', 'reapi', 'gen')}"]


class Slurm(Engine):
    harness_script = ("slurm", "Inputs", "cluster.py")
    count_option = "--nodes"

    def __init__(self, name, mode):
        super().__init__(name)
        self.mode = mode
        self.hidden = mode == "stream"

    def prepare(self, env):
        os.makedirs(os.path.join(env["FARM_STATE"], "remote"), exist_ok=True)

    def dist(self, ctx, env):
        argv = [ctx.py, ctx.tool("distributors", "slurm", "slurm.py"), f"--mode={self.mode}",
                "--partition=dtlto", "--time=5:00", f"--slots={ctx.jobs}",
                "--remote-python=/usr/bin/python3"]
        if self.mode == "stream":
            argv.append(f"--remote-dir={os.path.join(env['FARM_STATE'], 'remote')}")
        return argv


class Distcc(Engine):
    harness_script = ("distcc", "Inputs", "distcc_farm.py")

    def extra_harness_args(self, ctx):
        return ["--backend", os.path.join(ctx.build, "bin", "dtlto-backend")]

    def dist(self, ctx, env):
        per = max(1, ctx.jobs // 2)
        return [ctx.py, ctx.tool("distributors", "distcc", "distcc.py"),
                f"--hosts={env['FARM_H1']}/{per} {env['FARM_H2']}/{per}"]


class Icecream(Engine):
    harness_script = ("icecream", "Inputs", "icecc_farm.py")

    def dist(self, ctx, env):
        return [ctx.py, ctx.tool("distributors", "icecream", "icecream.py"),
                f"--jobs={ctx.jobs}", f"--env-cache={os.path.join(ctx.out, 'icecc-env-cache')}",
                f"--backend={os.path.join(ctx.build, 'bin', 'dtlto-backend')}"]


def make_engine(name):
    return {"local": lambda: Local(name), "ssh": lambda: Ssh(name),
            "reapi": lambda: Reapi(name), "slurm": lambda: Slurm(name, "stream"),
            "slurm-shared": lambda: Slurm(name, "shared"),
            "distcc": lambda: Distcc(name), "icecream": lambda: Icecream(name)}[name]()


# --- a farm: a harness with our server inside ------------------------------

class Farm:
    def __init__(self, ctx, engine):
        self.ctx, self.engine = ctx, engine
        self.chan = os.path.join(ctx.out, "chan", engine.name)
        self.record = os.path.join(ctx.out, f"{engine.name}.harness-record.json")
        self.log = os.path.join(ctx.out, f"{engine.name}.harness.log")
        self.proc = None
        self.env = None
        self.next_id = 0
        self.why = None  # why it cannot run links, once known

    def start(self):
        shutil.rmtree(self.chan, ignore_errors=True)
        os.makedirs(self.chan)
        argv = self.engine.harness_argv(self.ctx, self.record) + \
            ["--", self.ctx.py, os.path.abspath(__file__), SERVER_VERB, self.chan,
             str(self.ctx.args.farm_timeout)]
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)

    def wait_ready(self, deadline):
        ready = os.path.join(self.chan, "ready.json")
        while time.monotonic() < deadline:
            env = read_json(ready) if os.path.exists(ready) else None
            if env is not None:
                self.env = env
                return True
            if self.proc.poll() is not None:
                self.why = (f"the harness exited ({self.proc.returncode}) before its "
                            f"farm was up: {tail(self.log)}")
                return False
            time.sleep(0.2)
        self.why = f"the farm was not up after {self.ctx.args.startup_timeout:.0f} s: " + \
            tail(self.log)
        return False

    def link(self, req):
        """Send req to the server; wait for its answer."""
        if self.why:
            return {"rc": None, "why": self.why}
        self.next_id += 1
        req = dict(req, id=self.next_id)
        resp_path = os.path.join(self.chan, "resp.json")
        if os.path.exists(resp_path):
            os.remove(resp_path)
        write_json(os.path.join(self.chan, "req.json"), req)
        while True:
            resp = read_json(resp_path) if os.path.exists(resp_path) else None
            if resp is not None and resp.get("id") == self.next_id:
                os.remove(resp_path)
                return resp
            if self.proc.poll() is not None:
                self.why = f"the harness exited ({self.proc.returncode}): {tail(self.log)}"
                return {"rc": None, "why": self.why}
            time.sleep(POLL)

    def stop(self):
        """Quit the server; the harness tears its farm down. Returns what
        the harness's check-clean says, if anything."""
        if not self.proc:
            return ""
        if self.proc.poll() is None:
            write_json(os.path.join(self.chan, "req.json"), {"quit": True, "id": 0})
            try:
                self.proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGTERM)  # the harness we started
                try:
                    self.proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        shutil.rmtree(self.chan, ignore_errors=True)
        if not os.path.exists(self.record):
            return ""
        verb = ["check-clean", "--record", self.record] if isinstance(self.engine, Reapi) \
            else ["check-clean", self.record]
        r = subprocess.run([self.ctx.py, self.engine.harness(self.ctx)] + verb,
                           capture_output=True, text=True)
        lines = [t for t in (r.stdout + r.stderr).splitlines() if t.strip()]
        return lines[-1] if lines else f"check-clean exited {r.returncode}"


# --- links -----------------------------------------------------------------

def default_tree(clang, cache):
    """Where bench/run.py keeps the default generated program as this
    generator makes it, or None when it has not built it."""
    version = subprocess.run([clang, "--version"], capture_output=True,
                             text=True).stdout.splitlines()[0]
    return generate.built_tree(generate.Spec(DEFAULT_MODULES), cache, version)


def linker_args(tree):
    meta = read_json(os.path.join(tree, BUILD_STAMP))
    if not meta or "args" not in meta:
        fail(f"{tree}/{BUILD_STAMP} has no linker arguments (\"args\")")
    args = list(meta["args"])
    if "-o" not in args[:-1]:
        fail(f"{tree}/{BUILD_STAMP}: the linker arguments have no -o")
    return args


def link_request(ctx, engine, env, tag):
    """(request for run_link, paths) of one link of engine."""
    out_name = f"prog.engine-costs-{tag}"
    args = list(ctx.base_args)
    args[args.index("-o") + 1] = out_name
    record = os.path.join(ctx.out, "records", tag + ".json")
    timings = os.path.join(ctx.out, "records", tag + ".timings")
    for p in (record, timings):
        if os.path.exists(p):
            os.remove(p)
    dist = [ctx.py, PROBE, "--record", record, "--since", repr(time.time()),
            "--timings", timings, "--"] + engine.dist(ctx, env) + [f"--timings={timings}"]
    argv = [ctx.args.ld_lld] + args + [f"--thinlto-jobs={ctx.jobs}",
                                       f"--thinlto-distributor={dist[0]}"]
    argv += [f"--thinlto-distributor-arg={a}" for a in dist[1:]]
    argv.append(f"--thinlto-remote-compiler={ctx.args.clang}")
    # Every job through the distributor: no fallback and no local slot in
    # the linker.
    req = {"argv": argv, "cwd": ctx.tree, "log": os.path.join(ctx.out, "logs", tag + ".log"),
           "env": {"DTLTO_LOCAL_FALLBACK": "0", "DTLTO_LOCAL_JOBS": "0"}}
    return req, {"record": record, "output": os.path.join(ctx.tree, out_name)}


def summary_line(path, prog):
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return ""
    hits = [t for t in lines if t.startswith(f"{prog}: ") and " jobs on " in t]
    return hits[-1] if hits else ""


def one_link(ctx, engine, farm, tag):
    """Run one link; return its result (dict)."""
    env = farm.env if farm else {}
    try:
        engine.prepare(env)
        req, paths = link_request(ctx, engine, env, tag)
    except KeyError as e:
        return {"tag": tag, "ok": False,
                "why": f"the harness did not set {e.args[0]} in the command's environment"}
    if os.path.exists(paths["output"]):
        os.remove(paths["output"])
    resp = farm.link(req) if farm else run_link(req)
    res = {"tag": tag, "ok": False, "log": req["log"], "load": resp.get("load"),
           "link_wall": resp.get("wall")}
    if resp.get("rc") is None:
        res["why"] = resp.get("why", "no answer")
        return res
    if resp["rc"] != 0:
        res["why"] = f"the link exited {resp['rc']}: {tail(req['log'])}"
        return res
    rec = read_json(paths["record"])
    if rec is None:
        res["why"] = f"no probe record {paths['record']}: {tail(req['log'])}"
        return res
    secs = [j["seconds"] for j in rec["jobs"] if "seconds" in j]
    if not secs or len(secs) != len(rec["jobs"]):
        res["why"] = (f"{len(rec['jobs']) - len(secs)} of {len(rec['jobs'])} jobs without a "
                      "duration (no --timings from the distributor?)")
        return res
    kept = os.path.join(ctx.out, "outputs", tag)
    shutil.move(paths["output"], kept)
    prog = os.path.basename(next(a for a in engine.dist(ctx, env)[1:] if a.endswith(".py")))
    res.update(ok=True, jobs=len(secs), mean=statistics.mean(secs),
               median=statistics.median(secs), dist_wall=rec.get("distributor_wall"),
               output=kept, summary=summary_line(req["log"], prog))
    return res


# --- the report ------------------------------------------------------------

def rng(values, fmt="{:.3f}"):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    mid = fmt.format(statistics.mean(values))
    if len(values) == 1:
        return mid
    return f"{mid} ({fmt.format(min(values))}..{fmt.format(max(values))})"


def report(ctx, names, results, reasons, cleanup):
    local = results.get("local", [])
    ref = next((r["output"] for r in local if r["ok"]), None)
    rows, table = {}, []
    for name in names:
        runs = results.get(name, [])
        good = [r for r in runs if r["ok"]]
        if not good:
            why = reasons.get(name) or next((r["why"] for r in runs if not r["ok"]),
                                            "no run was made")
            rows[name] = {"measured": False, "why": why}
            continue
        diffs_mean, diffs_median = [], []
        for r in good:
            lr = next((x for x in local if x["ok"] and x["round"] == r["round"]), None)
            if lr:
                diffs_mean.append(r["mean"] - lr["mean"])
                diffs_median.append(r["median"] - lr["median"])
        same = [filecmp.cmp(r["output"], ref, shallow=False) if ref else None for r in good]
        row = {"measured": True, "runs": len(good), "failed_runs": len(runs) - len(good),
               "jobs": sorted({r["jobs"] for r in good}),
               "mean": [r["mean"] for r in good], "median": [r["median"] for r in good],
               "local_mean": [x["mean"] for x in local if x["ok"]
                              and any(x["round"] == r["round"] for r in good)],
               "local_median": [x["median"] for x in local if x["ok"]
                                and any(x["round"] == r["round"] for r in good)],
               "diff_mean": diffs_mean, "diff_median": diffs_median,
               "dist_wall": [r["dist_wall"] for r in good],
               "link_wall": [r["link_wall"] for r in good],
               "identical": same, "summary": good[-1].get("summary", ""),
               "failures": [r["why"] for r in runs if not r["ok"]]}
        rows[name] = row
    print()
    print(f"Per-job durations as each distributor saw them (seconds; mean over runs, "
          f"range in parentheses), {ctx.args.runs} run(s), jobs {ctx.jobs} at a time.")
    head = ("engine", "jobs", "mean/job", "median/job", "local mean", "local median",
            "diff mean", "diff median", "distributor wall", "link wall", "identical")
    for name in names:
        row = rows[name]
        if not row["measured"]:
            continue
        if name == "local":
            diff = ("0 (baseline)", "0 (baseline)")
        else:
            diff = (rng(row["diff_mean"]), rng(row["diff_median"]))
        ident = "-" if None in row["identical"] else \
            ("yes" if all(row["identical"]) else
             f"NO ({row['identical'].count(False)} of {len(row['identical'])} differ)")
        table.append((name, ",".join(map(str, row["jobs"])), rng(row["mean"]),
                      rng(row["median"]), rng(row["local_mean"]), rng(row["local_median"]),
                      *diff, rng(row["dist_wall"], "{:.2f}"), rng(row["link_wall"], "{:.2f}"),
                      ident))
    widths = [max(len(h), *(len(t[i]) for t in table)) if table else len(h)
              for i, h in enumerate(head)]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
    for t in table:
        print("  ".join(c.ljust(w) for c, w in zip(t, widths)))
    print()
    for name in names:
        row = rows[name]
        if not row["measured"]:
            print(f"{name}: not measured: {row['why']}")
            continue
        if row["summary"]:
            print(f"{name}: last link's distributor said: {row['summary']}")
        for why in row["failures"]:
            print(f"{name}: a run failed: {why}")
        if name in cleanup and cleanup[name]:
            print(f"{name}: after the farm stopped: {cleanup[name]}")
    print()
    print("Suggested bench/farmmodel.py per-job start cost (the mean difference; "
          "queue, rtt, upload and download 0: the difference holds them all here):")
    for name in names:
        row = rows[name]
        if name == "local":
            continue
        if not row["measured"]:
            print(f"  {name}: not measured: {row['why']}")
            continue
        if not row["diff_mean"]:
            print(f"  {name}: not measured: no local run in the same rounds to subtract")
            continue
        start = max(0.0, statistics.mean(row["diff_mean"]))
        row["suggested_start"] = round(start, 3)
        preset = "slurm" if name.startswith("slurm") else name
        print(f"  {name}: --engine {preset} --start {start:.3f} "
              "--queue 0 --rtt 0 --upload 0 --download 0")
    return rows


# --- main ------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="engine-costs.py", description=__doc__.split("\n")[0],
        epilog="\n".join(__doc__.split("\n")[2:]),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=3, help="timed links per engine (default 3)")
    p.add_argument("--warmup", type=int, default=1,
                   help="untimed links per engine before the runs (default 1)")
    p.add_argument("--engines", default=",".join(ENGINES),
                   help=f"comma-separated subset of {','.join(ENGINES)} (default: all; "
                        "local is always run, as the baseline)")
    p.add_argument("--out", default="/tmp/engine-costs",
                   help="directory for the tree copy, records, logs and outputs "
                        "(default /tmp/engine-costs)")
    p.add_argument("--tree",
                   help=f"a generated program's tree with {BUILD_STAMP} (default: "
                        f"gen{DEFAULT_MODULES}'s in $DTLTO_BENCH_CACHE or "
                        f"/var/cache/dtlto-bench, as bench/run.py --programs "
                        f"gen{DEFAULT_MODULES} --build-only makes it)")
    p.add_argument("--jobs", type=int, default=2,
                   help="jobs in flight for every engine (default 2, the cores)")
    p.add_argument("--ld-lld", default=os.path.join(ROOT, "build", "bin", "ld.lld"),
                   help="the linker (default: build/bin/ld.lld)")
    p.add_argument("--clang", default="/usr/lib/llvm-22/bin/clang",
                   help="the jobs' compiler (default /usr/lib/llvm-22/bin/clang)")
    p.add_argument("--build", default=os.path.join(ROOT, "build"),
                   help="the build tree (dtlto-backend, REAPI stubs; default build/)")
    p.add_argument("--python", default="/usr/bin/python3",
                   help="the Python every distributor and harness runs with "
                        "(default /usr/bin/python3, which has Debian's grpc)")
    p.add_argument("--startup-timeout", type=float, default=600,
                   help="seconds a farm may take to come up (default 600)")
    p.add_argument("--farm-timeout", type=float, default=4 * 3600,
                   help="seconds a farm may stay up (default 4 hours)")
    args = p.parse_args(argv)
    if args.runs < 1 or args.warmup < 0 or args.jobs < 1:
        p.error("--runs and --jobs must be at least 1, --warmup at least 0")
    names = [n.strip() for n in args.engines.split(",") if n.strip()]
    bad = [n for n in names if n not in ENGINES]
    if bad:
        p.error(f"unknown engine(s) {', '.join(bad)}; choose from {', '.join(ENGINES)}")
    if "local" not in names:
        names.insert(0, "local")
    args.names = [n for n in ENGINES if n in names]
    for path, what in ((args.ld_lld, "--ld-lld"), (args.clang, "--clang"),
                       (args.python, "--python")):
        if not os.access(path, os.X_OK):
            p.error(f"{what} {path} is not an executable file")
    if args.tree is None:
        cache = default_cache()
        args.tree = default_tree(args.clang, cache)
        if args.tree is None:
            p.error(f"gen{DEFAULT_MODULES} is not built in {cache}: run bench/run.py "
                    f"--programs gen{DEFAULT_MODULES} --build-only, or give --tree")
    if not os.path.isfile(os.path.join(args.tree, BUILD_STAMP)):
        p.error(f"--tree {args.tree} has no {BUILD_STAMP} (a generated program's tree)")
    args.out = os.path.abspath(args.out)
    args.build = os.path.abspath(args.build)
    return args


def main(argv):
    if argv[:1] == [SERVER_VERB]:
        if len(argv) != 3:
            fail(f"usage: engine-costs.py {SERVER_VERB} CHANNEL-DIR IDLE-SECONDS (internal)")
        return serve(argv[1], float(argv[2]))
    args = parse_args(argv)
    ctx = Ctx(args)
    for d in ("records", "logs", "outputs"):
        os.makedirs(os.path.join(args.out, d), exist_ok=True)
    # A copy of the tree of our own: the links write their shards and
    # outputs next to it, and other benchmarks may be using the original.
    ctx.tree = os.path.join(args.out, "tree")
    shutil.rmtree(ctx.tree, ignore_errors=True)
    shutil.copytree(args.tree, ctx.tree, symlinks=True)
    ctx.base_args = linker_args(ctx.tree)
    load_start = open("/proc/loadavg").read().strip()
    log(f"load average at start: {load_start}")
    engines = {n: make_engine(n) for n in args.names}
    reasons, farms, cleanup = {}, {}, {}
    for name, eng in engines.items():
        if not eng.harness_script:
            continue
        missing = eng.missing(ctx)
        if missing:
            reasons[name] = "this machine lacks " + "; ".join(missing)
            log(f"{name}: not measured: {reasons[name]}")
            continue
        farms[name] = Farm(ctx, eng)
    results = {n: [] for n in args.names}
    t0 = time.monotonic()
    try:
        for name, farm in farms.items():
            log(f"{name}: starting its farm ({' '.join(farm.engine.harness_argv(ctx, farm.record)[1:3])})")
            farm.start()
        deadline = time.monotonic() + args.startup_timeout
        for name, farm in farms.items():
            if farm.wait_ready(deadline):
                log(f"{name}: farm up after {time.monotonic() - t0:.1f} s")
            else:
                reasons[name] = farm.why
                log(f"{name}: not measured: {farm.why}")
        live = [n for n in args.names if n == "local" or (n in farms and not farms[n].why)]
        rounds = [("warmup", i) for i in range(args.warmup)] + \
            [("run", i) for i in range(args.runs)]
        for kind, i in rounds:
            for name in live:
                farm = farms.get(name)
                if farm and farm.why:
                    continue
                tag = f"{name}-{kind}{i}"
                res = one_link(ctx, engines[name], farm, tag)
                res.update(round=i, kind=kind)
                state = (f"{res['jobs']} jobs, mean {res['mean']:.3f} s, median "
                         f"{res['median']:.3f} s, distributor {res['dist_wall']:.2f} s"
                         if res["ok"] else f"FAILED: {res['why']}")
                log(f"{tag}: {state} (load {res.get('load') or 0:.2f})")
                if kind == "run":
                    results[name].append(res)
                elif not res["ok"]:
                    results[name].append(dict(res, kind="warmup"))
    finally:
        for name, farm in farms.items():
            cleanup[name] = farm.stop()
        try:
            os.rmdir(os.path.join(args.out, "chan"))
        except OSError:
            pass
    load_end = open("/proc/loadavg").read().strip()
    # A failed warm-up counts as a failure only when no run succeeded.
    for name in results:
        if any(r["ok"] for r in results[name]):
            results[name] = [r for r in results[name] if r["kind"] == "run"]
    rows = report(ctx, args.names, results, reasons, cleanup)
    print()
    log(f"load average at start: {load_start}")
    log(f"load average at end:   {load_end}")
    write_json(os.path.join(args.out, "summary.json"),
               {"tree": args.tree, "runs": args.runs, "warmup": args.warmup, "jobs": ctx.jobs,
                "clang": args.clang, "ld_lld": args.ld_lld,
                "loadavg_start": load_start, "loadavg_end": load_end,
                "engines": rows, "links": results})
    log(f"records, logs and outputs in {args.out}; summary in {args.out}/summary.json")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
