#!/usr/bin/env python3
"""Run the DTLTO backend jobs of a manifest on a list of hosts over ssh."""
# dtlto-stream-protocol: 1   (the linker streams jobs to us: docs/manifest.md)

import os
import re
import shlex
import shutil
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)),
                                "..", "..", "utils", "dtlto"))

from dtltodist import cli, paths, transfer  # noqa: E402
from dtltodist.events import JobFeed  # noqa: E402
from dtltodist.hostpool import HostPool  # noqa: E402
from dtltodist.report import (EXIT_JOB_FAILED, EXIT_OK, Reporter, host_name, plural,  # noqa: E402
                              usage_error)
from dtltodist.runner import JobResult, Runner, run_quick_all  # noqa: E402

PROG = "ssh.py"

EPILOG = """\
hosts:
  --host [USER@]HOST[:SLOTS] (repeatable) or --hosts-file FILE with one such
  spec a line ('#' starts a comment). SLOTS (default 1) is how many jobs the
  host runs at once. IPv6 addresses go in brackets: [fd00::5]:4.

Each job is one ssh session running `python3 -c <job side> stream DIR LINK`
on the host: the job's inputs go in as a tar on stdin, its objects come
back as a tar on stdout and are checked before they are written here
(relative paths only, no "..", no links, declared outputs only). The job
unpacks into its own directory under DIR/dtlto-LINK (--remote-dir, default
/tmp), removed when it ends. Hosts need python3 (3.6 or newer), a POSIX
login shell and the compiler at the path the manifest names
(--thinlto-remote-compiler); nothing else of ours.

First ssh.py opens master connections (ControlMaster) to every host at
once, one per --sessions-per-connection slots; the jobs' sessions go
through them (--no-multiplex: one connection per job), and they are closed
at the end. A host that cannot be reached is not used. A host that drops a
session gets no more jobs in this link, and the job runs again on another
host (up to --retries times); a compiler error is never retried.

The linker streams jobs to ssh.py as their index shards are ready
(docs/manifest.md): each starts on a free slot at once. A job the linker
cancels is dropped if it has not started; a running one has its session
closed, and its job side on the host stops the compiler and removes its
directory. Before ssh.py exits it waits on each host that ran a cancelled
job for that job side to end, and removes what is left of the link there.

Use it from the linker:
  ld.lld --thinlto-distributor=ssh.py --thinlto-remote-compiler=/usr/bin/clang-22 \\
         --thinlto-distributor-arg=--host=build1:8 \\
         --thinlto-distributor-arg=--host=build2:8 ...
"""

HOST_SPEC = re.compile(r"^(?:(?P<user>[^@\s]+)@)?(?:\[(?P<v6>[^\]]+)\]|(?P<host>[^:@\s\[\]]+))"
                       r"(?::(?P<slots>\d+))?$")


@dataclass
class Host:
    name: str  # as the user wrote it, without slots: "user@host"
    target: str  # what ssh gets
    slots: int


def parse_host(spec: str, where: str = "--host") -> Host:
    """where names the option or hosts file line the spec came from."""
    found = HOST_SPEC.match(spec.strip())
    if not found or (found["slots"] is not None and int(found["slots"]) < 1):
        raise ValueError(f"{where}: bad host '{spec}': expected [USER@]HOST[:SLOTS], "
                         "SLOTS >= 1")
    host = found["v6"] or found["host"]
    user = f"{found['user']}@" if found["user"] else ""
    shown = f"[{host}]" if found["v6"] else host
    return Host(user + shown, user + host, int(found["slots"] or 1))


def read_hosts(args) -> list[Host]:
    if "" in args.host:
        # An unset variable in --host=$HOST: not a host to skip quietly.
        raise ValueError("--host is empty: expected [USER@]HOST[:SLOTS]")
    specs = [(s, "--host") for s in args.host]
    for path in args.hosts_file:
        try:
            with paths.open_input(path) as f:
                text = f.read().decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"cannot read --hosts-file {path}: not UTF-8") from None
        except OSError as e:
            raise ValueError(f"cannot read --hosts-file {path}: {e.strerror}") from None
        specs += [(line.split("#", 1)[0].strip(), f"{path}:{n}")
                  for n, line in enumerate(text.splitlines(), 1)]
    hosts = [parse_host(s, where) for s, where in specs if s]
    names = Counter(h.name for h in hosts)
    dup = [n for n, c in names.items() if c > 1]
    if dup:
        raise ValueError(f"host {dup[0]} is listed twice (give it more slots instead)")
    if not hosts:
        raise ValueError("no hosts: give --host or --hosts-file")
    return hosts


def parse_args():
    parser = cli.make_parser(PROG, __doc__, EPILOG)
    g = parser.add_argument_group("hosts")
    g.add_argument("--host", action="append", default=[], metavar="[USER@]HOST[:SLOTS]",
                   help="a host to run jobs on, with its number of slots (repeatable)")
    g.add_argument("--hosts-file", action="append", default=[], metavar="FILE",
                   help="a file of host specs, one a line")
    g.add_argument("--retries", type=cli.non_negative_int, default=2, metavar="N",
                   help="run a job lost with its host again up to N times (default 2)")
    g.add_argument("--remote-python", default="python3", metavar="PATH",
                   help="Python 3 on the hosts (default python3)")
    g.add_argument("--remote-dir", default="/tmp", metavar="DIR",
                   help="where on a host jobs unpack their files (default /tmp)")
    s = parser.add_argument_group("ssh options (passed to ssh, never printed with secrets)")
    s.add_argument("--ssh", default="ssh", metavar="PATH", help="the ssh client")
    s.add_argument("-i", "--identity", metavar="FILE", help="ssh -i: the private key")
    s.add_argument("--port", type=cli.positive_int, metavar="N", help="ssh -p")
    s.add_argument("-F", "--ssh-config", metavar="FILE", help="ssh -F: a configuration file")
    s.add_argument("--known-hosts", metavar="FILE", help="ssh -o UserKnownHostsFile=FILE")
    s.add_argument("--strict-host-key-checking", choices=("yes", "no", "accept-new"),
                   help="ssh -o StrictHostKeyChecking=...")
    s.add_argument("-o", "--ssh-option", action="append", default=[], metavar="OPTION",
                   help="one ssh -o option, e.g. -o ProxyJump=bastion (repeatable); "
                        "these win over ours")
    s.add_argument("--connect-timeout", type=cli.positive_int, default=10, metavar="SECONDS",
                   help="give up connecting to a host after this long (default 10)")
    s.add_argument("--no-multiplex", action="store_true",
                   help="one connection per job instead of shared master connections")
    s.add_argument("--sessions-per-connection", type=cli.positive_int, default=8, metavar="N",
                   help="jobs sharing one master connection (default 8; sshd allows "
                        "MaxSessions, 10 by default): a host gets one master per N slots")
    return parser.parse_args()


class SSH:
    def __init__(self, args, m, hosts: list[Host]):
        self.args = args
        self.m = m
        self.pool = HostPool(hosts)
        self.link = f"{host_name()}.{os.getpid()}"
        self.tally = transfer.Tally("host")
        self.rep: Reporter | None = None
        self.on: dict[int, tuple[Host, int]] = {}  # job -> host and slot of its running attempt
        self.tried: dict[int, set] = {}  # job -> hosts it was lost on
        self.lost: set[int] = set()  # jobs whose last attempt the host lost
        self.plans: dict[int, transfer.Plan] = {}
        self.tmpdir = None
        self.control_dir = None
        self.used: set[str] = set()  # hosts that got a job
        self.masters: dict[str, list[str]] = {}  # host -> its masters' control paths
        self.sessions: Counter = Counter()  # control path -> jobs using it now
        self.session_of: dict[int, str] = {}  # job -> control path it uses
        self.stopped_on: set[str] = set()  # hosts where a cancelled job was stopped

    def ssh_base(self) -> list[str]:
        a = self.args
        argv = [a.ssh]
        # ssh keeps the first value of each option: the user's come first.
        for opt in a.ssh_option:
            argv += ["-o", opt]
        if a.ssh_config:
            argv += ["-F", a.ssh_config]
        if a.identity:
            argv += ["-i", a.identity]
        if a.port:
            argv += ["-p", str(a.port)]
        if a.known_hosts:
            argv += ["-o", f"UserKnownHostsFile={a.known_hosts}"]
        if a.strict_host_key_checking:
            argv += ["-o", f"StrictHostKeyChecking={a.strict_host_key_checking}"]
        argv += ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={a.connect_timeout}",
                 "-o", "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3",
                 "-o", "LogLevel=ERROR"]
        return argv

    def open_masters(self) -> None:
        """Open the master connections, all hosts at once: one per
        --sessions-per-connection slots of a host, since sshd refuses more
        sessions than its MaxSessions (10 by default) on one connection.
        A host none of whose masters opens is not used, and says why."""
        per = self.args.sessions_per_connection
        wanted = []
        for i, host in enumerate(self.pool.hosts):
            for k in range(-(-host.slots // per)):
                path = os.path.join(self.control_dir, f"h{i}.{k}")
                # Closed at the end; should we die without closing them,
                # they go by themselves after two idle minutes.
                wanted.append((host, path, self.ssh_base() + [
                    "-M", "-N", "-f", "-o", "ControlPersist=120", "-o", f"ControlPath={path}",
                    "--", host.target]))
        results = run_quick_all([argv for _, _, argv in wanted],
                                timeout=self.args.connect_timeout + 20)
        why: dict[str, str] = {}
        for (host, path, _), done in zip(wanted, results):
            if not isinstance(done, OSError) and done.returncode == 0 and os.path.exists(path):
                self.masters.setdefault(host.name, []).append(path)
            elif isinstance(done, OSError):
                why[host.name] = f"{self.args.ssh}: {done.strerror}"
            else:
                err = done.stderr.decode("utf-8", "replace").strip().splitlines()
                why[host.name] = err[-1] if err else (
                    "timed out" if done.returncode is None else f"ssh exit code {done.returncode}")
        for host in self.pool.hosts:
            paths = self.masters.get(host.name, [])
            if not paths:
                self.pool.down[host.name] = why.get(host.name, "no connection")
                self.rep.note(f"{host.name} cannot be reached ({self.pool.down[host.name]}); "
                              "not using it")
            elif len(paths) * per < host.slots:
                host.slots = len(paths) * per
                self.rep.note(f"{host.name}: only {plural(len(paths), 'connection')} opened; "
                              f"running {plural(host.slots, 'job')} there at once")
        self.pool.limit = sum(h.slots for h in self.pool.usable())

    def multiplex(self, job, host: Host) -> list[str]:
        """Options for a job's session: through the host's least used
        master. Should the master be gone, ssh connects on its own."""
        paths = self.masters.get(host.name)
        if not paths:
            return []
        path = min(paths, key=lambda p: self.sessions[p])
        self.sessions[path] += 1
        self.session_of[job.index] = path
        return ["-o", "ControlMaster=no", "-o", f"ControlPath={path}"]

    def remote(self, mode: str) -> str:
        """The job side in mode ("stream", "clean") for this link."""
        # ssh hands the remote login shell one string: every word quoted.
        return shlex.join(transfer.remote_command(
            self.args.remote_python, mode, [self.args.remote_dir, self.link], compact=True))

    def command(self, job, host: Host | None = None) -> list[str]:
        mux = []
        if host is None:
            host, slot = self.pool.take(self.tried.get(job.index, ()))
            self.on[job.index] = host, slot
            self.used.add(host.name)
            mux = self.multiplex(job, host)
        return self.ssh_base() + mux + [
            "-T", "--", host.target, self.remote("stream")]

    def plan(self, job) -> transfer.Plan:
        if job.index not in self.plans:
            self.plans[job.index] = transfer.plan(self.m, job)
        return self.plans[job.index]

    def stdin(self, job) -> str:
        try:
            plan = self.plan(job)  # a streamed job is first seen here
        except paths.UnsafePathError as e:
            raise OSError(str(e)) from None
        path = os.path.join(self.tmpdir, f"job{job.index}.tar")
        self.tally.sent += transfer.write_inputs(plan, path)
        return path

    def worker(self, job) -> str:
        host, slot = self.on[job.index]
        return f"{host.name}/{slot}"

    def leave(self, job) -> Host:
        """The job's attempt has ended: its slot and session are free."""
        host, slot = self.on.pop(job.index)
        self.pool.release(host, slot)
        if job.index in self.session_of:
            self.sessions[self.session_of.pop(job.index)] -= 1
        return host

    def cancel(self, job) -> None:
        self.stopped_on.add(self.leave(job).name)

    def collect(self, result: JobResult) -> None:
        job = result.job
        host = self.leave(job)
        self.lost.discard(job.index)
        result.where = host.name
        if result.returncode is None:
            return  # ssh could not be started, or an input not be read
        data, result.stdout = result.stdout, b""
        self.tally.received += len(data)
        try:
            status = transfer.read_outputs(data, self.plan(job))
        except paths.UnsafePathError as e:
            result.returncode, result.problem = None, f"was refused ({e})"
            return
        except transfer.Damaged as e:
            # Nothing was written; the host (or the way to it) spoils what
            # it sends, so it gets no more jobs and this one runs elsewhere.
            result.returncode, result.problem = None, f"came back damaged ({e})"
            self.pool.down.setdefault(host.name, f"sent back damaged output ({e})")
            self.tried.setdefault(job.index, set()).add(host.name)
            self.lost.add(job.index)
            return
        except transfer.TransferError as e:
            err = result.stderr.decode("utf-8", "replace").strip().splitlines()
            why = err[-1] if err else str(e)
            if not err or result.returncode not in (0, 255):
                why = f"{why} (ssh exit code {result.returncode})"
            result.returncode, result.problem = None, f"was lost ({why})"
            self.pool.down.setdefault(host.name, why)
            self.tried.setdefault(job.index, set()).add(host.name)
            self.lost.add(job.index)
            return
        self.tally.where[host.name] += 1
        if status["exit"] is None:
            result.returncode, result.problem = None, status.get("error") or "could not run"
        else:
            result.returncode = status["exit"]

    def retry(self, job, result: JobResult) -> bool:
        if job.index not in self.lost or result.attempt > self.args.retries:
            return False
        if not self.pool.usable():
            self.rep.error("no host is left: " + "; ".join(
                f"{h}: {why}" for h, why in self.pool.down.items()))
            return False
        self.tally.retries += 1
        self.rep.note(f"job {job.index} ({job.module}) {result.describe()}; retrying on "
                      f"another host ({result.attempt + 1} of {self.args.retries + 1})")
        return True

    def shown(self, job, argv) -> list[str]:
        return argv[:-1] + [shlex.join(transfer.shown(shlex.split(argv[-1])))]

    def close_masters(self, failed: bool) -> None:
        """After a failed link, remove what its jobs left in the remote
        directories of the hosts still up, and after cancelled jobs what
        they left on their hosts (once their job sides have ended); then
        close the master connections."""
        dirty = [host for host in self.pool.usable()
                 if host.name in (self.used if failed else self.stopped_on)]
        if dirty:
            # The job side waits for each job side still running there,
            # at most 30 s each (remote_job.py, "clean").
            run_quick_all([self.ssh_base() + self.through(host) +
                           ["-T", "--", host.target, self.remote("clean")] for host in dirty],
                          timeout=self.args.connect_timeout + 65)
        run_quick_all([self.ssh_base() + ["-o", f"ControlPath={path}", "-O", "exit", "--",
                                          host.target]
                       for host in self.pool.hosts for path in self.masters.get(host.name, [])],
                      timeout=10)

    def through(self, host: Host) -> list[str]:
        paths = self.masters.get(host.name)
        return ["-o", "ControlMaster=no", "-o", f"ControlPath={paths[0]}"] if paths else []

    def run(self) -> int:
        self.tmpdir = tempfile.mkdtemp(prefix="dtlto-ssh-")
        if not self.args.no_multiplex:
            # A short path: a socket path has a limit of about 100 bytes.
            self.control_dir = os.path.join(self.tmpdir, "cm")
            os.mkdir(self.control_dir, 0o700)
        code = None
        # Streaming, the manifest has no jobs yet: they are coming.
        feed = JobFeed.from_environment(self.m)
        try:
            if self.control_dir and (self.m.jobs or feed):
                self.open_masters()
                if not self.pool.usable():
                    self.rep.error("no host can be reached")
                    code = EXIT_JOB_FAILED
                    return code
            code = Runner(self.rep, self.pool, command=self.command, retry=self.retry,
                          stdin=self.stdin, collect=self.collect, shown=self.shown,
                          worker=self.worker, cancel=self.cancel).run(self.m.jobs, feed)
        finally:
            self.close_masters(failed=code != EXIT_OK)
            shutil.rmtree(self.tmpdir, ignore_errors=True)
        return code

    def dry_run(self) -> int:
        hosts = self.pool.hosts
        for job in self.m.jobs:
            # Where it would go if every job took as long: round robin.
            host = hosts[job.index % len(hosts)]
            print(shlex.join(self.shown(job, self.command(job, host))))
            for line in transfer.describe(self.plan(job)):
                print("  " + line)
        return EXIT_OK


def main() -> int:
    args = parse_args()
    try:
        hosts = read_hosts(args)
    except ValueError as e:
        return usage_error(PROG, str(e))
    m = cli.load_or_exit(PROG, args.manifest)
    engine = SSH(args, m, hosts)
    for job in m.jobs:
        try:
            engine.plan(job)
        except paths.UnsafePathError as e:
            return usage_error(PROG, f"job {job.index}: {e}")
    if args.dry_run:
        return engine.dry_run()
    engine.rep = Reporter.for_args(PROG, args, placement=engine.tally.describe)
    engine.rep.verbose_note(f"{plural(len(hosts), 'host')}, "
                            f"{plural(engine.pool.limit, 'slot')}")
    return engine.run()


if __name__ == "__main__":
    sys.exit(main())
