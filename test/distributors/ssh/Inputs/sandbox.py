"""What the SSH and Slurm test harnesses share: daemons started as "hosts"
of their own, and the proof that they are all gone afterwards.

  sandbox.py boot [--hostname H] [--hide DIR]... [--bind SRC:DST]... -- CMD...
      Run as the first process of new mount, UTS and pid namespaces (see
      Sandbox.spawn): sets the hostname, covers each DIR with an empty
      read-only tmpfs (the build tree is not there: files reach this host
      only through the engine), bind-mounts each SRC over DST (this host's
      own copy of a system directory, e.g. distcc's compiler whitelist),
      runs CMD, reaps every orphan, and exits
      with CMD's status. When it exits, the kernel kills everything left in
      its pid namespace; its mounts vanish with the namespace.

  sandbox.py check-clean RECORD
      Succeeds when nothing RECORD lists is left: no process, network
      namespace, directory, and no tmpfs of ours in this mount namespace.

The harnesses (ssh/Inputs/hosts.py, slurm/Inputs/cluster.py,
distcc/Inputs/distcc_farm.py, icecream/Inputs/icecc_farm.py) import this
module. Every child is tied to its harness with PR_SET_PDEATHSIG and runs
under `unshare --kill-child`, so even a SIGKILLed harness leaves no daemon.
"""

import argparse
import ctypes
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "..", "..", "..", "Inputs"))
import procfs  # noqa: E402

PYTHON = sys.executable or "/usr/bin/python3"
HIDDEN_FS = "dtlto-hidden"  # tmpfs source name: how check-clean finds our mounts
PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)

# Daemons and ip live in sbin directories, which a user's PATH may lack.
os.environ["PATH"] = os.pathsep.join(
    [os.environ.get("PATH", "/usr/bin:/bin")] +
    [d for d in ("/usr/sbin", "/sbin") if d not in os.environ.get("PATH", "").split(os.pathsep)])

# Tools every harness needs, with the Debian package that has them.
BASE_TOOLS = (("ip", "iproute2"), ("unshare", "util-linux"), ("nsenter", "util-linux"),
              ("mount", "mount"))


def missing_tools(tools) -> list[str]:
    """'slurmd (slurmd)' for each tool not found, plus root if we lack it."""
    missing = [f"{tool} ({package})" for tool, package in tools
               if not shutil.which(tool) and not os.path.exists(tool)]
    if os.geteuid() != 0:
        missing.append("root (namespaces and mounts)")
    return missing


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def _die_with_parent():
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # see _start


def _start(argv, **kw) -> subprocess.Popen:
    """Popen with the stop signals held until the caller has recorded the
    child (returned with the signals still blocked; call _unblock after):
    a SIGTERM in between would leave a child that nobody kills."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        return subprocess.Popen(argv, start_new_session=True, preexec_fn=_die_with_parent, **kw)
    except BaseException:
        _unblock()
        raise


def _unblock():
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def sh(*argv, check=True, **kw):
    return subprocess.run(argv, check=check, stdin=subprocess.DEVNULL, **kw)


def netns_prefix(netns: str | None) -> list[str]:
    # nsenter, not `ip netns exec`: that one also mounts a fresh /sys, which
    # lacks the cgroup filesystem slurmd insists on.
    return ["nsenter", f"--net=/run/netns/{netns}"] if netns else []


def kill_session(sid: int) -> None:
    """SIGKILL every process of session sid: what a command started in a
    process group of its own (a link's distributor, a job under set -m)
    is still in its session, and would otherwise outlive it, holding
    whatever pipes it inherited."""
    for pid in procfs.pids():
        if procfs.session(pid) == sid:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


class Sandbox:
    """State directory, network namespaces and processes of one harness run."""

    def __init__(self, prefix: str, record_path: str | None):
        # In /tmp itself, not lit's private TMPDIR: munged insists that every
        # directory above its socket be searchable by all.
        self.state = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
        os.chmod(self.state, 0o755)
        self.record_path = record_path
        self.record = {"dirs": [self.state], "netns": [], "procs": []}
        self.procs: dict[str, subprocess.Popen] = {}
        self.logs: dict[str, str] = {}
        self._save()

    def _save(self):
        if self.record_path:
            with open(self.record_path, "w") as f:
                json.dump(self.record, f)

    def path(self, *parts) -> str:
        return os.path.join(self.state, *parts)

    def add_netns(self, name: str) -> str:
        if not self.record["netns"]:
            remove_stale_netns()
        sh("ip", "netns", "add", name)
        self.record["netns"].append(name)
        self._save()
        sh("ip", "-n", name, "link", "set", "lo", "up")
        return name

    def spawn(self, name: str, argv: list[str], netns: str | None = None,
              host: str | None = None, hide=(), env=None, bind=()) -> subprocess.Popen:
        """Start argv; with host, as that host: own pid, mount, UTS namespaces."""
        full = netns_prefix(netns)
        if host is not None:
            full += ["unshare", "--mount", "--uts", "--pid", "--fork", "--kill-child",
                     "--mount-proc", "--propagation", "private",
                     PYTHON, HERE, "boot", "--hostname", host]
            for d in hide:
                full += ["--hide", d]
            for src, dst in bind:
                full += ["--bind", f"{src}:{dst}"]
            full.append("--")
        full += argv
        log = self.path(f"{name}.log")
        self.logs[name] = log
        with open(log, "ab") as out:
            proc = _start(full, stdin=subprocess.DEVNULL, stdout=out,
                          stderr=subprocess.STDOUT, env=env, cwd=self.state)
        try:
            self.procs[name] = proc
            self.record["procs"].append([name, proc.pid, procfs.start_time(proc.pid)])
            self._save()
        finally:
            _unblock()
        return proc

    def log_tail(self, name: str, lines: int = 15) -> str:
        try:
            with open(self.logs[name], errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except (OSError, KeyError):
            return ""

    def wait_for_log(self, name: str, text: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log_tail(name, 200):
                return
            if self.procs[name].poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"{name} did not start (no '{text}' in its log):\n"
                           + self.log_tail(name))

    def kill(self, name: str) -> None:
        """SIGKILL a process started by spawn(), with everything in its group."""
        proc = self.procs[name]
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()

    def close(self) -> None:
        for name in reversed(list(self.procs)):
            self.kill(name)
        for ns in self.record["netns"]:
            sh("ip", "netns", "del", ns, check=False, stderr=subprocess.DEVNULL)
        # Processes in a pid namespace die when its first process does;
        # give the kernel a moment before the directory goes.
        wait_gone(self.record["procs"], timeout=10)
        shutil.rmtree(self.state, ignore_errors=True)


def remove_stale_netns() -> None:
    """Delete the namespaces of harness runs that died by SIGKILL, the one
    way out without a finally: their names end in the dead harness's pid."""
    listed = sh("ip", "netns", "list", capture_output=True, text=True).stdout.split()
    for name in listed:
        found = re.fullmatch(r"dtlto-(?:ssh|slurm|distcc|icecc)-(\d+)(?:-h\d+)?", name)
        if found and not procfs.exists(found[1]):
            sh("ip", "netns", "del", name, check=False, stderr=subprocess.DEVNULL)


def wait_gone(procs, timeout: float) -> list:
    """Waits up to timeout seconds for the recorded [name, pid, start time]
    processes to go; returns those still there (a zombie too: it is there
    until reaped). A pid whose start time differs is another process."""
    left = []

    def none_left():
        left[:] = [p for p in procs if p[2] is not None and procfs.start_time(p[1]) == p[2]]
        return not left
    procfs.wait_until(none_left, timeout, step=0.05)
    return left


def run_guarded(body) -> int:
    """Run body() with SIGTERM/SIGHUP/SIGINT turned into SystemExit, so the
    harness's finally clauses run when lit or a user stops it."""
    def stop(signo, frame):
        raise SystemExit(128 + signo)
    for signo in STOP_SIGNALS:
        signal.signal(signo, stop)
    return body()


def run_command(sandbox: Sandbox, argv: list[str], netns: str | None, env: dict,
                watch=None, timeout: float = 600) -> int:
    """Run the test's command (in netns), with watch() polled while it runs;
    killed, and a failure, after timeout seconds: a hung test must not hang
    the whole suite."""
    full = netns_prefix(netns) + argv
    proc = _start(full, env=env)
    deadline = time.monotonic() + timeout
    try:
        sandbox.record["procs"].append(["command", proc.pid, procfs.start_time(proc.pid)])
        sandbox._save()
        _unblock()
        while proc.poll() is None:
            if time.monotonic() > deadline:
                print(f"harness: the command did not finish in {timeout:.0f} s; killed it",
                      file=sys.stderr, flush=True)
                return 124
            if watch:
                watch()
            time.sleep(0.1)
        return proc.returncode
    finally:
        kill_session(proc.pid)  # whatever it left behind
        proc.wait()


def stall_compiler(sandbox: Sandbox, clang: str) -> tuple[str, str]:
    """A compiler for the kill tests: its first run anywhere writes the name
    of the host it runs on to a marker and hangs, and so does every run on
    that host, so that whatever runs there when the harness kills the host
    is lost, however fast clang would have been; runs elsewhere wait for the
    marker, then are clang. Returns (compiler path, marker path)."""
    marker = sandbox.path("stalled", "host")
    script = sandbox.path("stall-cc")
    with open(script, "w") as f:
        f.write("#!/bin/sh\n"
                "here=${SLURMD_NODENAME:-$(hostname)}\n"
                f"if mkdir '{sandbox.path('stalled')}' 2>/dev/null; then\n"
                f"  echo \"$here\" > '{marker}.tmp'\n"
                f"  mv '{marker}.tmp' '{marker}'\n"
                "  exec sleep 300\n"
                "fi\n"
                # No time limit: the harness's own (run_command) ends a hang.
                f"while [ ! -e '{marker}' ]; do sleep 0.05; done\n"
                f"[ \"$(cat '{marker}')\" = \"$here\" ] && exec sleep 300\n"
                f"exec '{clang}' \"$@\"\n")
    os.chmod(script, 0o755)
    return script, marker


class KillWhenStalled:
    """watch() for run_command: once the marker names a host, kill it."""

    def __init__(self, sandbox: Sandbox, marker: str, names: dict[str, str]):
        self.sandbox, self.marker, self.names = sandbox, marker, names
        self.killed = None

    def __call__(self):
        if self.killed or not os.path.exists(self.marker):
            return
        with open(self.marker) as f:
            host = f.read().strip()
        self.killed = host
        print(f"harness: killing {host} while it runs a job", file=sys.stderr, flush=True)
        self.sandbox.kill(self.names[host])


class Harness:
    """What a harness script says about itself; main() does the rest.

    start(sandbox, args) starts the daemons and returns (environment for
    the command, network namespace to run it in); host(i) names the
    process of host i (1-based) for the kill tests; logs are the processes
    whose log tails to show when the command fails."""

    def __init__(self, prog, doc, tools, count_option, start, host, logs, options=None,
                 watch=None):
        self.prog, self.doc, self.tools = prog, doc, tools
        self.count_option, self.start, self.host, self.logs = count_option, start, host, logs
        self.options = options  # options(run_parser) adds the harness's own
        # watch(sandbox, args) -> a callable polled while the command runs
        # (or None): a harness's own fault injection.
        self.watch = watch

    def main(self) -> int:
        p = argparse.ArgumentParser(prog=self.prog, description=self.doc.split("\n")[0])
        sub = p.add_subparsers(dest="what", required=True)
        r = sub.add_parser("run")
        r.add_argument(self.count_option, dest="count", type=int, default=2)
        r.add_argument("--hide", action="append", default=[])
        r.add_argument("--stall-compiler", metavar="CLANG")
        r.add_argument("--record")
        r.add_argument("--timeout", type=float, default=600,
                       help="seconds the command may take (default 600)")
        if self.options:
            self.options(r)
        r.add_argument("command", nargs=argparse.REMAINDER)
        sub.add_parser("missing")
        c = sub.add_parser("check-clean")
        c.add_argument("record")
        args = p.parse_args()
        if args.what == "missing":
            print("\n".join(missing_tools(self.tools)))
            return 0
        if args.what == "check-clean":
            return check_clean(args.record)
        args.command = args.command[1:] if args.command[:1] == ["--"] else args.command
        missing = missing_tools(self.tools)
        if missing:
            print(f"{self.prog}: cannot start here; missing: " + "; ".join(missing),
                  file=sys.stderr)
            return 2
        return run_guarded(lambda: self.run(args))

    def run(self, args) -> int:
        sb = Sandbox(f"dtlto-{self.prog.split('.')[0]}-", args.record)
        try:
            env, netns = self.start(sb, args)
            env["FARM_STATE"] = sb.state
            watch = self.watch(sb, args) if self.watch else None
            if args.stall_compiler:
                env["FARM_STALL_CC"], marker = stall_compiler(sb, args.stall_compiler)
                names = [self.host(i) for i in range(1, args.count + 1)]
                watch = KillWhenStalled(sb, marker, {n: n for n in names})
            code = run_command(sb, args.command, netns, env, watch, args.timeout)
            if code:
                for name in self.logs(args):
                    print(f"{self.prog}: the command exited with {code}; the log of "
                          f"{name} ends:\n" + sb.log_tail(name, 8), file=sys.stderr)
            return code
        finally:
            sb.close()


def boot(args) -> int:
    """pid 1 of a host's namespaces (see the module doc)."""
    if args.hostname:
        socket.sethostname(args.hostname)
    for d in args.hide:
        if os.path.isdir(d):
            sh("mount", "-t", "tmpfs", "-o", "ro,size=16k,mode=755", HIDDEN_FS, d)
    for pair in args.bind:
        src, dst = pair.split(":", 1)
        sh("mount", "--bind", src, dst)
    child = subprocess.Popen(args.command)

    def forward(signo, frame):
        child.send_signal(signo)
    for signo in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signo, forward)
    while True:
        try:
            pid, status = os.wait()  # reaps orphans too: we are their init
        except ChildProcessError:
            return 1
        except InterruptedError:
            continue
        if pid == child.pid:
            return os.waitstatus_to_exitcode(status) if status else 0


def check_clean(record_path: str) -> int:
    with open(record_path) as f:
        record = json.load(f)
    problems = [f"process {name} ({pid}) still runs"
                for name, pid, _ in wait_gone(record["procs"], timeout=10)]
    listed = sh("ip", "netns", "list", capture_output=True, text=True).stdout.split()
    problems += [f"network namespace {ns} is left" for ns in record["netns"] if ns in listed]
    problems += [f"directory {d} is left" for d in record["dirs"] if os.path.exists(d)]
    if f" {HIDDEN_FS} " in procfs.mountinfo():
        problems.append("a tmpfs of ours is mounted in this namespace")
    for p in problems:
        print(f"check-clean: {p}")
    print("check-clean: " + ("NOT CLEAN" if problems else
                             f"clean ({len(record['procs'])} processes, "
                             f"{len(record['netns'])} network namespaces gone)"))
    return 1 if problems else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    b = sub.add_parser("boot")
    b.add_argument("--hostname")
    b.add_argument("--hide", action="append", default=[])
    b.add_argument("--bind", action="append", default=[])
    b.add_argument("command", nargs=argparse.REMAINDER)
    c = sub.add_parser("check-clean")
    c.add_argument("record")
    args = p.parse_args()
    if args.what == "boot":
        args.command = args.command[1:] if args.command[:1] == ["--"] else args.command
        return boot(args)
    return check_clean(args.record)


if __name__ == "__main__":
    sys.exit(main())
