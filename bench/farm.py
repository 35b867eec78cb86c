#!/usr/bin/env python3
"""A farm emulated on this machine: DTLTO links of a benchmark program
through a real engine's distributor to hosts in network namespaces of their
own, behind delay and bandwidth limits, one host a straggler; the
scheduling policies of the engine side by side.

  bench/farm.py [--engine ssh|reapi] [--program lua] [--hosts 3] [--slots 1]
                [--delay-ms 5] [--rate-mbit 100] [--straggler 4] [--runs 3]
                [--modes oneshot,stream,local,hedge] [--out DIR]

Engines (each the farm its tests start, the build tree hidden from the
hosts, so every input and object travels over the network):
  ssh     distributors/ssh/ssh.py to sshd hosts h1..hN
          (test/distributors/ssh/Inputs/hosts.py)
  reapi   distributors/reapi/reapi.py to Bazel's remote workers w1..wN
          (test/distributors/reapi/Inputs/fixture.py), each running --slots
          actions at once, the action cache skipped (every link runs its
          jobs); inputs are in the workers' CAS after the first link, as
          for a relink, and objects come back through it.
Every connection to a host goes through a relay that holds each chunk
--delay-ms in each direction (benchlib/delayrelay.py: this machine's kernel
has no netem): ssh's as its ProxyCommand, REAPI's as the endpoint the
distributor is given. The kernel's tbf limits the linker machine's
downlink and uplink (--rate-mbit, shared by all hosts, as the linker's one
network card is).
The last host is a straggler: its compiler is a wrapper that, after the
compile, sleeps --straggler - 1 times as long as the compile took.

Modes (alternating run by run):
  oneshot   the whole manifest once every shard is written (DTLTO_STREAM=0)
  stream    each job as its shard is ready (the distributor declares the
            protocol), no local slot (DTLTO_LOCAL_JOBS=0: the engine's
            default is one)
  local     streaming, and one job at a time in the linker
            (DTLTO_LOCAL_JOBS=1, DTLTO_HEDGE=0)
  hedge     as local, and stragglers hedged (DTLTO_HEDGE=3)

Every output is compared with in-process ThinLTO's. The bound is what no
farm can beat: the link before its first job is ready and after its last
object arrived (benchlib/trace.py's phases of a oneshot link: all but its
distributor phase), plus the longest job, compiled alone here. Results:
DIR/farm.json and DIR/farm.md (DIR/farm-reapi.* for --engine reapi).

The machine's 2 cores are shared by every host: the farm's width is the
cores, not the hosts; the network, the straggler and the policies are what
this measures.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from benchlib import add_cache_option, delayrelay  # noqa: E402
from benchlib import prepare as prepare_mod  # noqa: E402
from benchlib import probe  # noqa: E402
from benchlib import trace  # noqa: E402

RELAY = os.path.join(HERE, "benchlib", "delayrelay.py")
MODES = {
    "oneshot": {"DTLTO_STREAM": "0", "DTLTO_LOCAL_JOBS": "0"},
    "stream": {"DTLTO_STREAM": "auto", "DTLTO_LOCAL_JOBS": "0"},
    "local": {"DTLTO_STREAM": "auto", "DTLTO_LOCAL_JOBS": "1", "DTLTO_HEDGE": "0"},
    "hedge": {"DTLTO_STREAM": "auto", "DTLTO_LOCAL_JOBS": "1", "DTLTO_HEDGE": "3"},
}
STRAGGLER = """#!/bin/sh
# The compiler of a slow host: the compile, then a sleep of (F - 1) times
# as long, on host {host} only.
start=$(date +%s.%N)
{clang} "$@"
rc=$?
if [ "$(hostname)" = "{host}" ]; then
  now=$(date +%s.%N)
  sleep "$(echo "$start $now" | awk '{{ printf "%.3f", ($2 - $1) * ({factor} - 1) }}')"
fi
exit $rc
"""


class Ssh:
    """ssh.py to sshd hosts; the delay is each ssh connection's ProxyCommand."""
    harness_py = os.path.join(ROOT, "test", "distributors", "ssh", "Inputs", "hosts.py")

    def harness(self, cfg):
        return [sys.executable, self.harness_py, "run", "--hosts", str(cfg["hosts"]),
                "--hide", ROOT, "--hide", cfg["cache"], "--"]

    def host(self, i):
        return f"h{i}"

    def state(self):
        return os.environ["FARM_STATE"]

    def distributor(self, cfg):
        state = self.state()
        remote = os.path.join(state, "remote")
        os.mkdir(remote)
        config = os.path.join(state, "ssh_config")
        with open(config, "w") as f:
            f.write(f"Host *\n  ProxyCommand {sys.executable} {RELAY} %h %p "
                    f"{cfg['delay_ms']}\n")
        argv = [sys.executable, os.path.join(ROOT, "distributors", "ssh", "ssh.py"),
                f"--ssh-config={config}", f"--identity={os.environ['FARM_KEY']}",
                f"--known-hosts={os.environ['FARM_KNOWN_HOSTS']}",
                "--strict-host-key-checking=yes", "--remote-python=/usr/bin/python3",
                f"--remote-dir={remote}"]
        return argv + [f"--host={os.environ[f'FARM_H{i}']}:{cfg['slots']}"
                       for i in range(1, cfg["hosts"] + 1)]

    def stop(self):
        pass


class Reapi:
    """reapi.py to Bazel's remote workers; the delay is a listening relay in
    front of each worker's endpoint."""
    harness_py = os.path.join(ROOT, "test", "distributors", "reapi", "Inputs", "fixture.py")

    def __init__(self):
        self.relays = []

    def harness(self, cfg):
        # The worker's classes are cached in the build tree, as the tests do.
        return [sys.executable, self.harness_py, "run", "--build-dir", cfg["build"],
                "--hide", ROOT, "--hide", cfg["cache"],
                "--record", os.path.join(cfg["work"], "reapi.record"),
                "--workers", str(cfg["hosts"]), "--worker-jobs", str(cfg["slots"]), "--"]

    def host(self, i):
        return f"w{i}"

    def state(self):
        return os.environ["REAPI_STATE"]

    def distributor(self, cfg):
        # The fixture's network namespace is new: its loopback starts down.
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        endpoints = []
        for i in range(1, cfg["hosts"] + 1):
            host, port = os.environ[f"REAPI_W{i}"].split("://", 1)[1].rsplit(":", 1)
            local = 18980 + i
            self.relays.append(subprocess.Popen(
                [sys.executable, RELAY, "--listen", str(local), host, port,
                 str(cfg["delay_ms"])]))
            delayrelay.wait_listening(local)
            endpoints.append(f"--endpoint=grpc://127.0.0.1:{local}")
        # Debian's python3: the one with python3-grpcio.
        return ["/usr/bin/python3", os.path.join(ROOT, "distributors", "reapi", "reapi.py"),
                *endpoints, f"--jobs={cfg['hosts'] * cfg['slots']}", "--skip-cache-lookup",
                f"--stubs-dir={os.path.join(cfg['build'], 'distributors', 'reapi', 'gen')}"]

    def stop(self):
        for r in self.relays:
            r.kill()
            r.wait()


ENGINES = {"ssh": Ssh, "reapi": Reapi}


def machine_busy_s():
    """CPU seconds the whole machine has spent busy so far (/proc/stat): the
    linker, the distributor, the hosts' sessions and compilers all share
    it. bench/farmmodel.py policies takes the farm's work per job beyond the
    compile from it."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq = fields[:7]
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--engine", choices=sorted(ENGINES), default="ssh",
                   help="the farm's engine (default: ssh)")
    p.add_argument("--program", default="lua", help="a benchmark program (default: lua)")
    p.add_argument("--hosts", type=int, default=3, help="farm hosts (default: 3)")
    p.add_argument("--slots", type=int, default=1, help="jobs at once per host (default: 1)")
    p.add_argument("--delay-ms", type=float, default=5.0,
                   help="delay on each host's link, each way (default: 5)")
    p.add_argument("--rate-mbit", type=float, default=100.0,
                   help="the linker machine's bandwidth, each way (default: 100)")
    p.add_argument("--straggler", type=float, default=4.0,
                   help="the last host takes this many times as long per job "
                        "(default: 4; 1 for none)")
    p.add_argument("--runs", type=int, default=3, help="timed runs per mode (default: 3)")
    p.add_argument("--modes", default=",".join(MODES),
                   help=f"comma-separated (default: {','.join(MODES)})")
    p.add_argument("--ld-lld", default=os.path.join(ROOT, "build", "bin", "ld.lld"))
    p.add_argument("--clang", default="/usr/lib/llvm-22/bin/clang")
    add_cache_option(p)
    p.add_argument("--out", help="results directory (default: CACHE/results)")
    p.add_argument("--inside", help=argparse.SUPPRESS)  # the run inside the farm
    a = p.parse_args()
    for m in a.modes.split(","):
        if m not in MODES:
            p.error(f"--modes: unknown mode '{m}' (known: {', '.join(MODES)})")
    if a.hosts < 1 or a.slots < 1 or a.runs < 1:
        p.error("--hosts, --slots and --runs must be at least 1")
    return a


def output_of(args):
    for i, arg in enumerate(args):
        if arg == "-o":
            return i + 1
        if arg.startswith("-o") and len(arg) > 2:
            return i
    raise SystemExit("the recorded link has no -o")


def with_output(args, path):
    args = list(args)
    i = output_of(args)
    args[i] = path if args[i - 1] == "-o" or i == 0 else "-o" + path
    return args


def jobs_alone(manifest_path, cwd):
    """Every job of a kept manifest compiled alone here, in manifest order:
    its input bytes and object bytes (as probe.py measures them) and its
    seconds. bench/farmmodel.py policies replays them."""
    with open(manifest_path) as f:
        m = json.load(f)
    common = m["common"]["args"]
    here = os.getcwd()
    os.chdir(cwd)   # the manifest's paths are the link's
    try:
        _, sizes = probe.measure_inputs(os.path.abspath(manifest_path), 0)
    finally:
        os.chdir(here)
    jobs = []
    with tempfile.TemporaryDirectory() as d:
        obj = os.path.join(d, "o.o")
        for job, size in zip(m["jobs"], sizes):
            args = list(job["args"])
            args[args.index("-o") + 1] = obj
            start = time.monotonic()
            subprocess.run(common + args, cwd=cwd, check=True)
            jobs.append({"module": size["module"], "needs_bytes": size["needs_bytes"],
                         "object_bytes": os.path.getsize(obj),
                         "seconds": time.monotonic() - start})
    return jobs


def inside(cfg):
    """In the farm's client namespace (the engine's harness run): shape the
    network, then link in every mode, alternating."""
    engine = ENGINES[cfg["engine"]]()
    n = cfg["hosts"]
    # Bandwidth in the kernel: the linker's side of the bridge carries what
    # the hosts send it, shaped as one link; uploads leave through the
    # bridge's ports (a veth per host), which share the uplink's rate.
    def tbf(dev, mbit):
        subprocess.run(["tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate",
                        f"{mbit:.3f}mbit", "burst", str(cfg["burst_bytes"]), "latency", "2s"],
                       check=True)
    ports = [ln.split(":")[1].strip().split("@")[0] for ln in subprocess.run(
        ["ip", "-o", "link", "show", "master", "br0"], capture_output=True, text=True,
        check=True).stdout.splitlines()]
    if len(ports) != n:
        raise SystemExit(f"farm: {len(ports)} hosts on the bridge, not {n}: {ports}")
    tbf("br0", cfg["rate_mbit"])
    for port in ports:
        tbf(port, cfg["rate_mbit"] / n)
    cc = os.path.join(engine.state(), "cc")
    with open(cc, "w") as f:
        f.write(STRAGGLER.format(clang=cfg["clang"], host=engine.host(n),
                                 factor=cfg["straggler"]))
    os.chmod(cc, 0o755)
    # The links' outputs, and so the member copies and shards beside them,
    # go below the link's directory under relative names: the hosts do not
    # have absolute paths of this machine (ssh.py refuses them).
    work = f".dtlto-farm-{os.getpid()}"
    os.mkdir(os.path.join(cfg["cwd"], work))
    dist_argv = engine.distributor(cfg)
    dist = [f"--thinlto-distributor={dist_argv[0]}"]
    dist += [f"--thinlto-distributor-arg={a}" for a in dist_argv[1:]]
    dist += [f"--thinlto-remote-compiler={cc}", "--thinlto-jobs=2"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DTLTO_")}
    # A job the farm failed must fail the run: compiled in the linker, it
    # would be measured as if the farm had run it.
    env.update(DTLTO_VERBOSE="1", DTLTO_LOCAL_FALLBACK="0")

    def link(mode, out, extra=()):
        argv = [cfg["ld"]] + with_output(cfg["args"], out) + dist + list(extra)
        start, busy = time.monotonic(), machine_busy_s()
        r = subprocess.run(argv, cwd=cfg["cwd"], env=dict(env, **MODES[mode]),
                           capture_output=True, text=True)
        wall, busy = time.monotonic() - start, machine_busy_s() - busy
        if r.returncode:
            raise SystemExit(f"{mode} link failed:\n{r.stderr[-3000:]}")
        summary = [ln for ln in r.stderr.splitlines()
                   if ln.startswith("dtlto:") and " ThinLTO jobs: " in ln]
        same = subprocess.run(["cmp", "-s", out, cfg["reference"]],
                              cwd=cfg["cwd"]).returncode == 0
        return {"wall_s": round(wall, 3), "cpu_s": round(busy, 2),
                "summary": summary[-1] if summary else "",
                "streamed": "(streaming" in (summary[-1] if summary else ""),
                "identical": same}

    try:
        return measure(cfg, link, work)
    finally:
        engine.stop()
        shutil.rmtree(os.path.join(cfg["cwd"], work), ignore_errors=True)


def measure(cfg, link, work):
    """The bound's parts (a oneshot link's phases, its longest job), then
    every mode, alternating."""
    cwd = cfg["cwd"]
    keep = os.path.join(work, "keep")
    os.makedirs(os.path.join(cwd, keep))
    link("oneshot", os.path.join(keep, "prog"), ["--save-temps", "--time-trace"])
    split = trace.phases(os.path.join(cwd, keep, "prog.time-trace"))
    pre = split["inputs"] + split["thin_link"]
    before = pre + split["shards"]
    after = split["after"] + split["final_link"]
    manifest = next(os.path.join(cwd, keep, n) for n in os.listdir(os.path.join(cwd, keep))
                    if n.endswith(".dist-file.json"))
    alone = jobs_alone(manifest, cwd)
    worst = max(j["seconds"] for j in alone)
    work_s = sum(j["seconds"] for j in alone)
    runs = {m: [] for m in cfg["modes"]}
    for r in range(cfg["runs"]):
        for mode in cfg["modes"]:
            result = link(mode, os.path.join(work, f"prog.{mode}"))
            runs[mode].append(result)
            print(f"farm: run {r + 1} {mode}: {result['wall_s']:.2f} s"
                  f"{'' if result['identical'] else ' DIFFERENT'}", file=sys.stderr)
    # The farm's width is the machine's cores (every host shares them), or
    # fewer hosts' slots: no policy makes the jobs' work take less.
    width = min(cfg["hosts"] * cfg["slots"], os.cpu_count() or 1)
    return {"jobs": len(alone), "before_s": before, "pre_s": pre,
            "shards_s": split["shards"], "after_s": after, "longest_job_s": worst,
            "bound_s": before + worst + after, "work_s": work_s, "width": width,
            "cores": os.cpu_count() or 1,
            "capacity_bound_s": before + max(worst, work_s / width) + after,
            "alone": alone, "runs": runs}


def markdown(cfg, res):
    lines = [f"`{' '.join(cfg['command'])}`", "",
             f"{cfg['program']}: {res['jobs']} jobs through {cfg['engine']} on "
             f"{cfg['hosts']} hosts x {cfg['slots']} "
             f"slot(s), {cfg['delay_ms']} ms each way, {cfg['rate_mbit']} Mbit/s at the "
             f"linker, host {ENGINES[cfg['engine']]().host(cfg['hosts'])} {cfg['straggler']}x "
             f"slower. Bound "
             f"{res['bound_s']:.2f} s = {res['before_s']:.2f} s before the first job + "
             f"{res['longest_job_s']:.2f} s longest job + {res['after_s']:.2f} s after the "
             f"last object. The jobs' work is {res['work_s']:.2f} s; on {res['width']} cores "
             f"no policy beats {res['capacity_bound_s']:.2f} s (the capacity bound).", "",
             "| mode | wall s (median, range) | / bound | / capacity bound | / oneshot | "
             "streamed | identical |",
             "|---|---|---|---|---|---|---|"]
    base = statistics.median(r["wall_s"] for r in res["runs"].get("oneshot", [])) \
        if res["runs"].get("oneshot") else None
    for mode, runs in res["runs"].items():
        walls = [r["wall_s"] for r in runs]
        med = statistics.median(walls)
        vs_base = f"{med / base:.2f}" if base else "-"
        lines.append(f"| {mode} | {med:.2f} ({min(walls):.2f}-{max(walls):.2f}) | "
                     f"{med / res['bound_s']:.2f} | {med / res['capacity_bound_s']:.2f} | "
                     f"{vs_base} | "
                     f"{'yes' if all(r['streamed'] for r in runs) else 'no'} | "
                     f"{'yes' if all(r['identical'] for r in runs) else 'NO'} |")
    return "\n".join(lines) + "\n"


def main():
    a = parse_args()
    if a.inside:
        with open(a.inside) as f:
            cfg = json.load(f)
        res = inside(cfg)
        with open(cfg["result"], "w") as f:
            json.dump(res, f, indent=1)
        return 0
    tools = prepare_mod.tools(a.clang, os.path.join(os.path.dirname(a.clang), "ld.lld"))
    info = prepare_mod.prepare(a.program, a.cache, tools)
    out = a.out or os.path.join(a.cache, "results")
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="farm-", dir=a.cache)
    try:
        reference = os.path.join(work, "prog.inproc")
        subprocess.run([a.ld_lld] + with_output(info["args"], reference) + ["--thinlto-jobs=2"],
                       cwd=info["cwd"], check=True)
        cfg = {"engine": a.engine, "program": a.program, "hosts": a.hosts, "slots": a.slots,
               "delay_ms": a.delay_ms, "rate_mbit": a.rate_mbit,
               # tbf's bucket: bench/farmmodel.py policies --farm takes it as free.
               "burst_bytes": 65536, "straggler": a.straggler,
               "runs": a.runs, "modes": a.modes.split(","), "ld": os.path.abspath(a.ld_lld),
               "clang": a.clang, "args": info["args"], "cwd": info["cwd"],
               "reference": reference, "work": work, "cache": a.cache,
               "build": os.path.dirname(os.path.dirname(os.path.abspath(a.ld_lld))),
               "result": os.path.join(work, "result.json"),
               "command": ["bench/farm.py"] + sys.argv[1:]}
        with open(os.path.join(work, "cfg.json"), "w") as f:
            json.dump(cfg, f)
        subprocess.run(ENGINES[a.engine]().harness(cfg) + [
            sys.executable, os.path.abspath(__file__),
            "--inside", os.path.join(work, "cfg.json")], check=True)
        with open(cfg["result"]) as f:
            res = json.load(f)
        name = "farm" if a.engine == "ssh" else f"farm-{a.engine}"
        with open(os.path.join(out, f"{name}.json"), "w") as f:
            json.dump({"config": cfg, "result": res}, f, indent=1)
        text = markdown(cfg, res)
        with open(os.path.join(out, f"{name}.md"), "w") as f:
            f.write(text)
        print(text)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
