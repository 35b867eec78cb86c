#!/usr/bin/env python3
"""Run the DTLTO backend jobs of a manifest on an existing distcc farm."""
# dtlto-stream-protocol: 1   (the linker streams jobs to us: docs/manifest.md)

import os
import re
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)),
                                "..", "..", "utils", "dtlto"))

from dtltodist import bundle, cli, paths, selfcontained, transfer  # noqa: E402
from dtltodist.events import JobFeed  # noqa: E402
from dtltodist.hostpool import HostPool  # noqa: E402
from dtltodist.report import EXIT_OK, Reporter, plural, usage_error  # noqa: E402
from dtltodist.runner import JobResult, Runner  # noqa: E402

PROG = "distcc.py"

EPILOG = """\
hosts:
  The farm is given as distcc itself takes it: --hosts "SPEC ...", else
  $DISTCC_HOSTS, else ~/.distcc/hosts ($DISTCC_DIR/hosts), else
  /etc/distcc/hosts. A SPEC is HOST[:PORT][/LIMIT][,OPTIONS],
  HOST[/LIMIT][:PORT], [USER]@HOST[/LIMIT][:COMMAND] (distcc over ssh) or
  localhost[/LIMIT]; '#' starts a comment. LIMIT is how many jobs the host
  runs at once (distcc's defaults: 4, and 2 for localhost). Jobs on
  localhost run here, as the manifest says, without distcc.

Each remote job is one distcc compile of one file: the job as a bundle
(docs/bundle.md: its module, its index shard, the modules it imports, the
files every job needs), run on the host as
  distcc dtlto-backend -c <bundle>.i -o <object>
with DISTCC_HOSTS set to that host alone. distccd runs dtlto-backend
(--farm-compiler) as the compiler: it must be in the hosts' distcc
whitelist (/usr/lib/distcc/dtlto-backend) and in distccd's PATH, built
from the same dtlto and LLVM as the linker. With dtlto-backend as the
remote compiler the objects are byte-identical to in-process ThinLTO;
with clang the bundle runs that clang on the host, at the path the
manifest names.

With --self-contained, for farms whose hosts have plain clang but no
dtlto-backend, each job's import step runs here (the manifest's clang,
-O0 -emit-llvm -save-temps=obj keeps the imported module) and a host
compiles that module alone:
  distcc clang-22 <common args> --language=ir -c <module>.i -o <object>
(--farm-compiler names the clang in the hosts' whitelist; default: the
manifest's clang's name, clang-N for Debian's /usr/lib/llvm-N/bin/clang).
That is clang's per-module pipeline, not ThinLTO's backend: the program
is correct, and objects may differ from in-process ThinLTO's. A link that
needs what only the backend reading the index shard does (CFI,
whole-program devirtualization, memprof) or files besides the modules (a
sample profile) is refused, saying why, and its jobs run here.

distcc's own local fallback is off (DISTCC_FALLBACK=0): a host that
cannot be reached, refuses the job or sends back an empty or damaged
object gets no more jobs in this link, and the job runs again on another
host (up to --retries times; localhost counts as one). A compiler error is
never retried. distcc's state and lock files go to a private DISTCC_DIR,
removed with everything else at the end.

The linker streams jobs to distcc.py as their index shards are ready
(docs/manifest.md): each starts on a free slot at once. A job the linker
cancels is dropped if it has not started; a running one's distcc is
killed, and its object, which comes back to a private directory, is never
moved into place. --self-contained must read every job's index shard
before it knows whether the link can go at all, so it takes the linker's
whole stream first and then runs the jobs as a one-shot manifest's.

Use it from the linker:
  ld.lld --thinlto-distributor=distcc.py \\
         --thinlto-remote-compiler=/usr/local/bin/dtlto-backend \\
         --thinlto-distributor-arg=--hosts=build1/8 build2/8 ...
"""

DEFAULT_SLOTS, LOCAL_SLOTS = 4, 2  # distcc's own defaults (src/hosts.c)
# distcc's own exit codes (src/exitcode.h): the farm failed, not the job.
DISTCC_FAILURES = range(100, 128)

SPEC = re.compile(r"^(?P<user>[^@/\s]*@)?(?P<host>\[[^\]]+\]|[^:/,@\s]+)"
                  r"(?P<rest>[^,]*)(?P<options>,.*)?$")
OPTIONS = re.compile(r"lzo|cpp|down|auth(=[^,]+)?")  # distcc's own (src/hosts.c)


@dataclass
class Host:
    name: str  # the spec without its options: shown in messages
    spec: str  # what DISTCC_HOSTS gets for a job on this host
    slots: int
    local: bool


def positive(digits: str) -> bool:
    """A LIMIT of ASCII digits that int() takes, above 0."""
    return 0 < len(digits) <= cli.MAX_INT_DIGITS and int(digits) > 0


def parse_host(spec: str) -> Host | None:
    """One DISTCC_HOSTS word as distcc reads it; None for a host marked
    ',down' (distcc does not use it). ValueError saying what is wrong."""
    def bad(why="expected HOST[:PORT][/LIMIT][,OPTIONS]"):
        return ValueError(f"bad distcc host '{spec}': {why}")
    # Only the bare word, or with a LIMIT, means "here" to distcc:
    # localhost:3632 is a distccd on this machine.
    if spec == "localhost" or spec.startswith("localhost/"):
        found = re.fullmatch(r"localhost(?:/([0-9]*))?", spec)
        if not found:
            raise bad("expected localhost[/LIMIT]")
        limit = found[1]
        if limit is not None and not positive(limit):
            raise bad("LIMIT must be a positive number")
        return Host("localhost", spec, int(limit) if limit else LOCAL_SLOTS, True)
    found = SPEC.match(spec)
    if not found:
        raise bad()
    if found["user"] is not None:  # distcc over ssh: [USER]@HOST[/LIMIT][:COMMAND]
        parts = re.fullmatch(r"(?:/([0-9]*))?(?::(\S+))?", found["rest"])
        if not parts:
            raise bad("expected [USER]@HOST[/LIMIT][:COMMAND][,OPTIONS]")
        limit, tail = parts[1], f":{parts[2]}" if parts[2] else ""
    else:  # HOST[/LIMIT][:PORT][/LIMIT]; the last LIMIT counts, as in distcc
        parts = re.fullmatch(r"(?:/([0-9]*))?(?::([0-9]+))?(?:/([0-9]*))?", found["rest"])
        if not parts:
            raise bad()
        limit, tail = parts[3] if parts[3] is not None else parts[1], \
            f":{parts[2]}" if parts[2] else ""
    if limit is not None and not positive(limit):
        raise bad("LIMIT must be a positive number")
    options = found["options"][1:].split(",") if found["options"] else []
    for option in options:
        if not OPTIONS.fullmatch(option):
            raise bad(f"unknown option ',{option}' (distcc knows lzo, cpp, down, auth)")
    if "cpp" in options and "lzo" not in options:
        raise bad("pump mode (,cpp) needs ,lzo")
    if "down" in options:
        return None
    slots = int(limit) if limit else DEFAULT_SLOTS
    name = (found["user"] or "") + found["host"] + tail
    # Pump mode sends a source's headers; a bundle has none, and without
    # distcc's include server the job would fail: plain mode for it.
    kept = "".join("," + o for o in options if o != "cpp")
    return Host(name, spec.split(",", 1)[0] + kept, slots, False)


def parse_hosts(text: str, where: str) -> list[Host]:
    hosts, down = [], 0
    for line in text.splitlines():
        for word in line.split("#", 1)[0].split():
            if word == "--randomize" or word.startswith("--localslots"):
                continue  # we spread jobs ourselves; local compiles are localhost's slots
            if word.startswith("+zeroconf"):
                raise ValueError(f"{where}: +zeroconf is not supported: list the hosts")
            if word.startswith("-"):
                raise ValueError(f"{where}: unknown distcc host option '{word}'")
            try:
                host = parse_host(word)
            except ValueError as e:
                raise ValueError(f"{where}: {e}") from None
            if host:
                hosts.append(host)
            else:
                down += 1
    names = [h.name for h in hosts]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup:
        raise ValueError(f"{where}: host {dup} is listed twice (give it a larger /LIMIT)")
    if not hosts:
        raise ValueError(f"{where}: lists no hosts" +
                         (f" but {plural(down, 'host')} marked ,down" if down else ""))
    return hosts


def read_hosts(args) -> tuple[list[Host], str]:
    """The host list, from the first place distcc itself would look, and
    that place."""
    if args.hosts:
        return parse_hosts(" ".join(args.hosts), "--hosts"), "--hosts"
    if os.environ.get("DISTCC_HOSTS", "").strip():
        return parse_hosts(os.environ["DISTCC_HOSTS"], "$DISTCC_HOSTS"), "$DISTCC_HOSTS"
    distcc_dir = os.environ.get("DISTCC_DIR") or os.path.expanduser("~/.distcc")
    for path in (os.path.join(distcc_dir, "hosts"), "/etc/distcc/hosts"):
        try:
            with open(path, encoding="utf-8") as f:
                return parse_hosts(f.read(), path), path
        except FileNotFoundError:
            continue
        except UnicodeDecodeError:
            raise ValueError(f"cannot read {path}: it is not UTF-8 text") from None
        except OSError as e:
            raise ValueError(f"cannot read {path}: {e.strerror}") from None
    raise ValueError("no distcc hosts: give --hosts, or set DISTCC_HOSTS, or list them "
                     "in ~/.distcc/hosts or /etc/distcc/hosts")


def describe_hosts(hosts: list[Host], where: str) -> str:
    """'hosts (from --hosts): a (4 slots), localhost (2 slots, here)'."""
    return f"hosts (from {where}): " + ", ".join(
        f"{h.name} ({plural(h.slots, 'slot')}{', here' if h.local else ''})" for h in hosts)


def parse_args():
    parser = cli.make_parser(PROG, __doc__, EPILOG)
    g = parser.add_argument_group("distcc")
    g.add_argument("--hosts", action="append", default=[], metavar="SPECS",
                   help="the farm, in DISTCC_HOSTS syntax (repeatable; wins over "
                        "$DISTCC_HOSTS and the hosts files)")
    g.add_argument("--distcc", default="distcc", metavar="PATH",
                   help="the distcc client (default: distcc in PATH)")
    g.add_argument("--farm-compiler", metavar="NAME",
                   help="the name distccd runs jobs with: in the hosts' distcc "
                        "whitelist and distccd's PATH (default dtlto-backend; with "
                        "--self-contained the manifest's clang's name)")
    g.add_argument("--self-contained", action="store_true",
                   help="for hosts with plain clang and no dtlto-backend: the import "
                        "step here, one module per job to the farm (objects may differ "
                        "from in-process ThinLTO's; links that need the index shard "
                        "run here)")
    g.add_argument("--retries", type=cli.non_negative_int, default=2, metavar="N",
                   help="run a job its host lost or spoiled again up to N times "
                        "(default 2)")
    return parser.parse_args()


class Distcc:
    def __init__(self, args, m, hosts: list[Host]):
        self.args = args
        self.m = m
        self.pool = HostPool(hosts)
        self.tally = transfer.Tally("host")
        self.rep: Reporter | None = None
        self.work = ""
        self.on: dict[int, tuple[Host, int]] = {}  # job -> host and slot of its running attempt
        self.tried: dict[int, set] = {}  # job -> hosts it was lost on
        self.lost: set[int] = set()
        self.plans: dict[int, transfer.Plan] = {}
        self.bundles: dict[int, str] = {}  # job -> the file sent (bundle or module), counted

    def farm_compiler(self) -> str:
        if self.args.farm_compiler:
            return self.args.farm_compiler
        return farm_clang_name(self.m.compiler) if self.args.self_contained \
            else "dtlto-backend"

    def plan(self, job) -> transfer.Plan:
        if job.index not in self.plans:
            self.plans[job.index] = transfer.plan(self.m, job)
            bundle.header(self.m, job, self.plans[job.index])  # ValueError if it cannot be one
        return self.plans[job.index]

    def bundle_path(self, job) -> str:
        return os.path.join(self.work, f"job{job.index}{bundle.SUFFIX}")

    def object_path(self, job) -> str:
        """Where this attempt's object comes back (a new name per attempt:
        a lost attempt's distcc may still be writing the old one)."""
        return os.path.join(self.work, f"job{job.index}.{len(self.tried.get(job.index, ()))}.o")

    def distcc_argv(self, job, host: Host, obj: str) -> list[str]:
        """The job's attempt on host: a bundle, or with --self-contained the
        import step here and then the imported module (see selfcontained)."""
        distcc = ["env", f"DISTCC_HOSTS={host.spec}", self.args.distcc, self.farm_compiler()]
        if not self.args.self_contained:
            return distcc + ["-c", self.bundle_path(job), "-o", obj]
        src = self.bundle_path(job)  # the imported module, also an X.i
        then = distcc + selfcontained.farm_args(self.m, job, src, obj)
        step = selfcontained.import_step(self.m, job, os.path.join(
            self.work, f"job{job.index}.imp.bc"))
        return selfcontained.step_command(sys.executable, src, step, then)

    def command(self, job) -> list[str]:
        host, slot = self.pool.take(self.tried.get(job.index, ()))
        self.on[job.index] = host, slot
        if host.local:
            return job.command
        return self.distcc_argv(job, host, self.object_path(job))

    def shown(self, job, argv: list[str]) -> list[str]:
        return selfcontained.shown(argv)

    def stdin(self, job) -> None:
        """Writes the job's bundle before its first remote attempt."""
        if self.args.self_contained:
            return None
        if not self.on[job.index][0].local and job.index not in self.bundles:
            try:
                plan = self.plan(job)  # a streamed job is first seen here
            except (paths.UnsafePathError, ValueError) as e:
                raise OSError(f"cannot be sent to distcc: {e}") from None
            path = self.bundle_path(job)
            self.tally.sent += bundle.write(self.m, job, plan, path)
            self.bundles[job.index] = path
        return None

    def worker(self, job) -> str:
        host, slot = self.on[job.index]
        return f"{'here' if host.local else host.name}/{slot}"

    def cancel(self, job) -> None:
        host, slot = self.on.pop(job.index)
        self.pool.release(host, slot)

    def lose(self, result: JobResult, host: Host, why: str) -> None:
        result.returncode, result.problem = None, why
        self.pool.down.setdefault(host.name, why)
        self.tried.setdefault(result.job.index, set()).add(host.name)
        self.lost.add(result.job.index)

    def collect(self, result: JobResult) -> None:
        job = result.job
        host, slot = self.on.pop(job.index)
        self.pool.release(host, slot)
        self.lost.discard(job.index)
        result.where = host.name
        if host.local or result.returncode is None:
            if result.returncode == 0:
                self.tally.where[host.name] += 1
            return
        obj = self.object_path(job)
        if result.returncode and self.args.self_contained and \
                selfcontained.failed_here(result.stderr):
            result.where = "this machine (the import step)"
            return  # the compiler's own error, here: never retried
        if result.returncode in DISTCC_FAILURES:
            self.lose(result, host, f"was lost (distcc exit code {result.returncode}: "
                                    f"{distcc_error(result.stderr)})")
            return
        if result.returncode != 0:
            return  # the compiler's own error: never retried
        problem = bundle.object_problem(obj)
        if problem:
            self.lose(result, host, f"came back with an object that {problem}")
            return
        self.tally.received += os.path.getsize(obj)
        self.tally.where[host.name] += 1
        if self.args.self_contained and job.index not in self.bundles:
            self.bundles[job.index] = self.bundle_path(job)
            self.tally.sent += os.path.getsize(self.bundle_path(job))
        try:
            bundle.place(obj, job.object)
        except OSError as e:
            result.returncode, result.problem = None, f"cannot write {job.object}: {e.strerror}"

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

    def run(self, feed: JobFeed | None) -> int:
        # Next to the manifest: the objects are moved from here into place.
        self.work = tempfile.mkdtemp(prefix=".dtlto-distcc-",
                                     dir=os.path.dirname(os.path.abspath(self.m.path)))
        state = os.path.join(self.work, "distcc")
        os.mkdir(state)
        os.environ.update(DISTCC_DIR=state, DISTCC_FALLBACK="0", DISTCC_SKIP_LOCAL_RETRY="1")
        os.environ.pop("DISTCC_VERBOSE", None)
        try:
            return Runner(self.rep, self.pool, command=self.command, retry=self.retry,
                          stdin=self.stdin, collect=self.collect, shown=self.shown,
                          worker=self.worker, cancel=self.cancel).run(self.m.jobs, feed)
        finally:
            shutil.rmtree(self.work, ignore_errors=True)

    def dry_run(self) -> int:
        hosts = self.pool.hosts
        self.work = os.path.join(os.path.dirname(os.path.abspath(self.m.path)),
                                 ".dtlto-distcc-XXXXXX")
        for job in self.m.jobs:
            host = hosts[job.index % len(hosts)]  # round robin, as if jobs took equally long
            if host.local:
                print(shlex.join(job.command))
                continue
            argv = self.distcc_argv(job, host, os.path.join(self.work, f"job{job.index}.0.o"))
            print(shlex.join(self.shown(job, argv)))
            if not self.args.self_contained:
                for line in bundle.describe(self.m, job, self.plan(job)):
                    print("  " + line)
        return EXIT_OK


def farm_clang_name(compiler: str) -> str:
    """The name the hosts know the manifest's clang by: distccd runs only
    names in its whitelist, not paths. Debian's /usr/lib/llvm-N/bin/clang
    is clang-N there (/usr/bin/clang may be another version)."""
    found = re.fullmatch(r"/usr/lib/llvm-(\d+)/bin/(clang(?:\+\+)?)", os.path.normpath(compiler))
    return f"{found[2]}-{found[1]}" if found else os.path.basename(compiler)


def distcc_error(stderr: bytes) -> str:
    """distcc's first error, without its "distcc[PID] (function) ERROR: "."""
    lines = stderr.decode("utf-8", "replace").splitlines()
    for line in lines:
        found = re.match(r"distcc\[\d+\] (?:\(\w+\) )?ERROR: (.*)", line)
        if found:
            return found[1].strip()
    return next((line.strip() for line in reversed(lines) if line.strip()), "no message")


def main() -> int:
    args = parse_args()
    try:
        hosts, hosts_from = read_hosts(args)
    except ValueError as e:
        return usage_error(PROG, str(e))
    m = cli.load_or_exit(PROG, args.manifest)
    engine = Distcc(args, m, hosts)
    engine.rep = Reporter.for_args(PROG, args, placement=engine.tally.describe)
    feed = None if args.dry_run else JobFeed.from_environment(m)
    m, feed, code = selfcontained.start(PROG, args, m, feed, engine.rep)
    engine.m = m
    if code is not None:
        return code
    if any(not h.local for h in hosts) and not args.self_contained:
        for job in m.jobs:
            try:
                engine.plan(job)
            except (paths.UnsafePathError, ValueError) as e:
                return usage_error(PROG, f"job {job.index} cannot be sent to distcc: {e}")
    if any(not h.local for h in hosts):
        if not shutil.which(args.distcc):
            return usage_error(PROG, f"cannot find the distcc client --distcc '{args.distcc}' "
                  "(Debian: apt-get install distcc)")
    if args.dry_run:
        print(describe_hosts(hosts, hosts_from))
        return engine.dry_run()
    engine.rep.verbose_note(describe_hosts(hosts, hosts_from))
    return engine.run(feed)


if __name__ == "__main__":
    sys.exit(main())
