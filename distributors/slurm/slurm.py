#!/usr/bin/env python3
"""Run the DTLTO backend jobs of a manifest on a Slurm cluster, one srun each."""
# dtlto-stream-protocol: 1   (the linker streams jobs to us: docs/manifest.md)

import os
import re
import shlex
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)),
                                "..", "..", "utils", "dtlto"))

from dtltodist import cli, paths, transfer  # noqa: E402
from dtltodist.events import JobFeed  # noqa: E402
from dtltodist.report import EXIT_OK, Reporter, host_name, usage_error  # noqa: E402
from dtltodist.runner import JobResult, Runner, Slots, run_quick  # noqa: E402

PROG = "slurm.py"

EPILOG = """\
modes:
  shared   (default) every job runs in this working directory on a node that
           sees the build directory at the same path (NFS, Lustre, ...);
           nothing is copied.
  stream   for nodes that do not share the build directory: each job's inputs
           go to the node through srun's stdin as a tar, its objects come back
           on srun's stdout and are checked before they are written here.

Each job is one `srun --nodes=1 --ntasks=1 ... python3 -c <job side>`: the
nodes need python3 (3.6 or newer) and the compiler at the path the manifest
names (--thinlto-remote-compiler). Inside an allocation (salloc/sbatch,
SLURM_JOB_ID set) the sruns become job steps of it.

A job that did not finish because of the cluster (node failure, lost
connection, no status from the node) is run again, on another node, up to
--retries times; a compiler error is never retried.

The linker streams jobs to slurm.py as their index shards are ready
(docs/manifest.md): each gets its srun at once, while a slot is free. A
job the linker cancels is dropped if it has not started; a running one's
srun is killed and, outside an allocation, its Slurm job cancelled
(found by its --comment, dtlto-job-<id>). Before slurm.py exits it waits
until every cancelled job has left the queue: nothing of it writes an
object or stays in --remote-dir after the link.

Use it from the linker:
  ld.lld --thinlto-distributor=slurm.py --thinlto-remote-compiler=/usr/bin/clang-22 \\
         --thinlto-distributor-arg=--partition=build ...
"""

# srun says these when the request itself is wrong: retrying cannot help.
PERMANENT = re.compile(r"srun: (fatal|error: (Unable to allocate resources|Invalid|.*invalid"
                       r"|.*not recognized|unrecognized))|srun: unrecognized option")
NODE_LINES = (re.compile(r"Node failure on (\S+)"), re.compile(r"srun: error: ([^\s:]+): task"))


def parse_args():
    parser = cli.make_parser(PROG, __doc__, EPILOG)
    g = parser.add_argument_group("Slurm options")
    g.add_argument("--mode", choices=("shared", "stream"), default="shared",
                   help="shared filesystem (default) or files streamed through srun")
    g.add_argument("-p", "--partition", help="srun --partition")
    g.add_argument("-A", "--account", help="srun --account")
    g.add_argument("-t", "--time", metavar="LIMIT", help="srun --time, per job (e.g. 10:00)")
    g.add_argument("--srun-arg", action="append", default=[], metavar="ARG",
                   help="one more srun argument, e.g. --srun-arg=--qos=high (repeatable)")
    g.add_argument("--slots", type=cli.positive_int, metavar="N",
                   help="at most N jobs at once (default: the CPUs of the partition "
                        "as sinfo counts them, or 16)")
    g.add_argument("--retries", type=cli.non_negative_int, default=2, metavar="N",
                   help="run a job lost to the cluster again up to N times (default 2)")
    g.add_argument("--job-name", default="dtlto", metavar="NAME",
                   help="prefix of the Slurm job name; the name is NAME.<host>.<pid> so "
                        "that a failed link can cancel what it left (default dtlto)")
    g.add_argument("--srun", default="srun", metavar="PATH", help="the srun program")
    g.add_argument("--remote-python", default="python3", metavar="PATH",
                   help="Python 3 on the nodes (default python3)")
    g.add_argument("--remote-dir", default="/tmp", metavar="DIR",
                   help="stream mode: where on a node jobs unpack their files (default /tmp)")
    return parser.parse_args()


class Slurm:
    def __init__(self, args, m, reporter: Reporter):
        self.args = args
        self.m = m
        self.rep = reporter
        self.link = f"{host_name()}.{os.getpid()}"
        self.name = f"{args.job_name}.{self.link}"
        self.in_allocation = bool(os.environ.get("SLURM_JOB_ID"))
        self.tally = transfer.Tally("node")
        self.tally.shared = args.mode == "shared"
        self.excluded: dict[int, list[str]] = {}  # job -> nodes it was lost on
        self.lost: dict[int, str] = {}  # job -> node of the attempt just lost
        self.plans: dict[int, transfer.Plan] = {}
        self.tmpdir = None
        self.streaming = False
        self.cancelled: list[str] = []  # Slurm job ids of cancelled jobs
        self.stopped_steps = False  # a cancelled job's step was killed (in an allocation)

    def tool(self, name: str) -> str:
        """A Slurm command (sinfo, squeue, scancel) from srun's directory."""
        path = os.path.join(os.path.dirname(shutil.which(self.args.srun) or ""), name)
        return path if os.path.exists(path) else name

    def srun(self, job) -> list[str]:
        a = self.args
        argv = [a.srun, "--nodes=1", "--ntasks=1", "--quiet", f"--job-name={self.name}"]
        if self.in_allocation:
            argv.append("--exact")  # a step of the allocation, not all of it
        for flag, value in (("--partition", a.partition), ("--account", a.account),
                            ("--time", a.time)):
            if value:
                argv.append(f"{flag}={value}")
        if self.excluded.get(job.index):
            argv.append("--exclude=" + ",".join(self.excluded[job.index]))
        if self.streaming and not self.in_allocation:
            argv.append(f"--comment={comment(job)}")  # so that a cancel finds it
        argv += a.srun_arg
        if a.mode == "shared":
            cwd = os.getcwd()
            return argv + [f"--chdir={cwd}", "--"] + transfer.remote_command(
                a.remote_python, "shared", [cwd, "--"] + job.command)
        return argv + [f"--chdir={a.remote_dir}", "--"] + transfer.remote_command(
            a.remote_python, "stream", [a.remote_dir, self.link])

    def plan(self, job) -> transfer.Plan:
        if job.index not in self.plans:
            self.plans[job.index] = transfer.plan(self.m, job)
        return self.plans[job.index]

    def stdin(self, job) -> str | None:
        if self.args.mode == "shared":
            return None
        try:
            p = self.plan(job)
        except paths.UnsafePathError as e:
            raise OSError(str(e)) from None
        path = os.path.join(self.tmpdir, f"job{job.index}.tar")
        self.tally.sent += transfer.write_inputs(p, path)
        return path

    def collect(self, result: JobResult) -> None:
        job = result.job
        self.lost.pop(job.index, None)
        if result.returncode is None:
            return  # srun could not be started, or the tar not be made
        data, result.stdout = result.stdout, b""
        self.tally.received += len(data) if self.args.mode == "stream" else 0
        err = result.stderr.decode("utf-8", "replace")
        try:
            if self.args.mode == "stream":
                status = transfer.read_outputs(data, self.plan(job))
            else:
                status = transfer.status_line(data)
                if status is None:
                    raise transfer.TransferError("no status came back")
        except paths.UnsafePathError as e:
            result.returncode, result.where = None, node_named(err)
            result.problem = f"was refused ({e})"
            return
        except transfer.Damaged as e:
            # Nothing was written; run it again on another node.
            node = e.node or node_named(err)
            result.returncode, result.where = None, node
            result.problem = f"came back damaged ({e})"
            self.lost[job.index] = node
            return
        except transfer.TransferError as e:
            node = node_named(err)
            result.returncode, result.where = None, node
            result.problem = f"did not complete ({srun_error(err) or e})"
            if not PERMANENT.search(err):
                self.lost[job.index] = node
            return
        result.where = status.get("node") or ""
        self.tally.where[result.where] += 1
        if status["exit"] is None:
            result.returncode, result.problem = None, status.get("error") or "could not run"
            return
        result.returncode = status["exit"]
        if result.returncode == 0 and self.args.mode == "shared":
            missing = [p for p in job.outputs if not os.path.exists(p)]
            if missing:
                result.problem = (f'exited 0 but its output "{missing[0]}" is missing here: '
                                  "does the node share this directory? (else use --mode=stream)")

    def retry(self, job, result: JobResult) -> bool:
        if job.index not in self.lost or result.attempt > self.args.retries:
            return False
        node = self.lost.pop(job.index)
        if node:
            self.excluded.setdefault(job.index, []).append(node)
        self.tally.retries += 1
        self.rep.note(f"job {job.index} ({job.module}) {result.describe()}; "
                      f"retrying on another node ({result.attempt + 1} of "
                      f"{self.args.retries + 1})")
        return True

    def shown(self, job, argv) -> list[str]:
        return transfer.shown(argv)

    def worker(self, job) -> str:
        # Slurm picks the node; the job's done event names it.
        return f"slurm/{self.args.partition}" if self.args.partition else "slurm"

    def cancel(self, job) -> None:
        """A cancelled job's srun is gone; outside an allocation its Slurm
        job may still run: cancel it too (inside one, see clean_steps)."""
        if self.in_allocation:
            self.stopped_steps = True  # a step, which ended with its srun
            return
        try:
            done = run_quick([self.tool("squeue"), "--noheader", f"--name={self.name}",
                              f"--user={os.getuid()}", "--format=%i %k"], timeout=15)
        except OSError:
            return
        ids = [line.split()[0] for line in done.stdout.decode("utf-8", "replace").splitlines()
               if line.split()[1:] == [comment(job)]]
        if ids:
            try:
                run_quick([self.tool("scancel")] + ids, timeout=15)
            except OSError:
                return
            self.cancelled += ids

    def clean_steps(self) -> None:
        """Inside an allocation srun ends a step's tasks with SIGKILL, so the
        job side of a cancelled job could not remove its directory: one
        step on every node of the allocation removes what the link left
        in --remote-dir (the job side's clean mode)."""
        if not self.stopped_steps or self.args.mode != "stream":
            return
        nodes = os.environ.get("SLURM_JOB_NUM_NODES") or os.environ.get("SLURM_NNODES") or "1"
        argv = [self.args.srun, f"--nodes={nodes}", f"--ntasks={nodes}",
                "--ntasks-per-node=1", "--quiet", f"--job-name={self.name}",
                f"--chdir={self.args.remote_dir}", "--"] + transfer.remote_command(
                    self.args.remote_python, "clean", [self.args.remote_dir, self.link])
        try:
            run_quick(argv, timeout=90)  # the job side waits up to 30 s per job
        except OSError:
            pass

    def wait_cancelled(self, patience: float = 60) -> None:
        """Until every cancelled Slurm job has left the queue, for at most
        `patience` seconds: then none of them writes anything any more."""
        deadline = time.monotonic() + patience
        while self.cancelled and time.monotonic() < deadline:
            try:
                done = run_quick([self.tool("squeue"), "--noheader", "--format=%i",
                                  "--jobs=" + ",".join(self.cancelled)], timeout=15)
            except OSError:
                return
            # A job purged from the queue makes squeue fail: gone too.
            left = done.stdout.decode().split() if done.returncode == 0 else []
            self.cancelled = [i for i in self.cancelled if i in left]
            if self.cancelled:
                time.sleep(0.2)

    def cancel_leftovers(self) -> None:
        # Runner killed our sruns; jobs they started may still run. Inside an
        # allocation they are steps that end with their srun.
        if self.in_allocation:
            return
        try:
            run_quick([self.tool("scancel"), f"--name={self.name}", f"--user={os.getuid()}"],
                      timeout=15)
        except OSError:
            pass

    def default_slots(self) -> int:
        argv = [self.tool("sinfo"), "--noheader", "--format=%C"]
        if self.args.partition:
            argv.append(f"--partition={self.args.partition}")
        try:
            done = run_quick(argv, timeout=15)
            total = sum(int(line.split("/")[3]) for line in done.stdout.decode().split())
        except (OSError, ValueError, IndexError):
            total = 0
        return total or 16

    def run(self) -> int:
        feed = JobFeed.from_environment(self.m)
        self.streaming = feed is not None
        # Streaming, the manifest has no jobs yet: they are coming.
        slots = Slots(self.args.slots or (self.default_slots() if self.m.jobs or feed else 1))
        self.tmpdir = tempfile.mkdtemp(prefix="dtlto-slurm-")
        try:
            # srun passes a SIGTERM on to its tasks as a SIGKILL: the job side
            # could neither stop its compiler nor remove its directory. So
            # outside an allocation srun is killed at once and the job left
            # running is cancelled by name (cancel_leftovers), which gives
            # its processes SIGTERM and the cluster's KillWait to clean up.
            grace = None if self.in_allocation else 0
            code = Runner(self.rep, slots, command=self.srun, retry=self.retry,
                          stdin=self.stdin, collect=self.collect, shown=self.shown,
                          grace=grace, worker=self.worker,
                          cancel=self.cancel).run(self.m.jobs, feed)
        finally:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.wait_cancelled()
            self.clean_steps()
        if code != EXIT_OK:
            self.cancel_leftovers()
        return code

    def dry_run(self) -> int:
        for job in self.m.jobs:
            print(shlex.join(self.shown(job, self.srun(job))))
            if self.args.mode == "stream":
                for line in transfer.describe(self.plan(job)):
                    print("  " + line)
        return EXIT_OK


def comment(job) -> str:
    """The --comment of a streamed job's srun."""
    return f"dtlto-job-{job.index}"


def node_named(stderr: str) -> str:
    for pattern in NODE_LINES:
        found = pattern.search(stderr)
        if found:
            return found.group(1)
    return ""


def srun_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if "error" in line or "fatal" in line]
    return lines[-1].strip() if lines else ""


def main() -> int:
    args = parse_args()
    m = cli.load_or_exit(PROG, args.manifest)
    if args.mode == "stream":
        for job in m.jobs:
            try:
                transfer.plan(m, job)
            except paths.UnsafePathError as e:
                return usage_error(PROG, f"job {job.index}: {e}")
    engine = Slurm(args, m, None)
    if args.dry_run:
        return engine.dry_run()
    engine.rep = Reporter.for_args(PROG, args, placement=engine.tally.describe)
    return engine.run()


if __name__ == "__main__":
    sys.exit(main())
