"""Process launching and supervision: the one place that starts job processes.

Runner.run() starts jobs in manifest order on a number of slots, waits for
them with one select() over pidfds, the jobserver and a signal wake-up pipe,
and on the first failure stops launching and kills what still runs. Every
job gets its own session (process group), so killing it also kills what it
started (clang's cc1, a wrapper's children). Given a fork server
(forkserver.py), it forks the jobs whose compiler is the server's from it
instead of starting each; the server's channel then stands in for their
pidfds. The compiler processes that outlive a job (workers.py's batch
workers, the fork server) are started by those modules. A retry hook lets
remote engines retry transient failures with the same loop; the default
never retries, since a compiler error stays an error.

supervise() runs one engine process that runs every job itself (SN-DBS's
dbsbuild, Incredibuild's ib_console). It is the one part of this module
that also works on Windows, where those engines live; importing the module
works there too.
"""

import contextlib
import dataclasses
import os
import select
import signal
import stat
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass
from collections.abc import Callable

from . import forkserver
from .forkserver import ForkServer
from .jobserver import JobServer
from .events import JobFeed
from .manifest import Job, Manifest, dispatch_order
from .report import EXIT_JOB_FAILED, EXIT_OK, Reporter, exit_code_for_signal, plural

try:
    import resource
except ImportError:  # Windows: no rlimits to raise
    resource = None

# Signals that end a run: the jobs are in their own sessions, so a terminal's
# Ctrl-C does not reach them and we must kill them ourselves.
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                     if hasattr(signal, name))  # Windows has no SIGHUP


def unnamed_file():
    """A temporary file with no name, for a child's output: what
    tempfile.TemporaryFile gives, without importing tempfile (and shutil,
    random...) at every start of a distributor, about 10 ms. The directory
    is the first of tempfile's that is set."""
    where = next((os.environ[v] for v in ("TMPDIR", "TEMP", "TMP") if os.environ.get(v)), "/tmp")
    try:
        fd = os.open(where, os.O_RDWR | os.O_TMPFILE | os.O_CLOEXEC, 0o600)
    except (AttributeError, OSError):  # no O_TMPFILE here, or no such directory
        import tempfile
        return tempfile.TemporaryFile()
    return os.fdopen(fd, "w+b")


@dataclass
class JobResult:
    job: Job
    attempt: int  # 1 for the first try
    returncode: int | None = None  # None: the process could not be started
    stdout: bytes = b""
    stderr: bytes = b""
    problem: str = ""  # why it failed beyond the exit code, e.g. a missing output
    where: str = ""  # the host or node a remote engine ran it on, if known
    ended_at: float | None = None  # when it ended (time.time()), if before now

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.problem

    def describe(self) -> str:
        """'failed with exit code 1', 'was killed by signal SIGSEGV', ..."""
        on = f" on {self.where}" if self.where else ""
        if self.returncode is None or (self.returncode == 0 and self.problem):
            return self.problem + on
        if self.returncode < 0:
            try:
                name = signal.Signals(-self.returncode).name
            except ValueError:
                name = str(-self.returncode)
            return f"was killed by signal {name}{on}"
        return f"failed with exit code {self.returncode}{on}"


# retry(job, result) -> True to run the job again. result.attempt counts the
# tries so far, so the hook decides both what is transient and how often.
RetryHook = Callable[[Job, JobResult], bool]


def never_retry(job: Job, result: JobResult) -> bool:
    return False


# Hooks for engines that move files themselves (see Runner): stdin(job) names
# a file to give the attempt as standard input (None: /dev/null), and
# collect(result) sees every attempt as it ends, before its outputs are
# checked, to unpack what came back on stdout, say where it ran (.where) or
# turn a transport failure into a .problem.
StdinHook = Callable[[Job], "str | None"]
CollectHook = Callable[[JobResult], None]
# Streaming (see Runner): worker(job), called once command(job) has chosen
# where the attempt runs, names that place for the job's started event
# (default: this machine); cancel(job) is called once a running job the
# linker cancelled has been killed, without collect(): its outputs are not
# wanted, and the engine frees what it holds for it and stops what still
# runs for it elsewhere.
WorkerHook = Callable[[Job], "str | None"]
CancelHook = Callable[[Job], None]


def output_problem(path: str) -> str:
    """'' if path is a non-empty regular file, else what is wrong with it."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "is missing"
    except OSError as e:
        return f"cannot be checked ({e.strerror})"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if st.st_size == 0:
        return "is empty"
    return ""


def check_outputs(job: Job) -> str:
    """'' if every declared output of job is there, else one line saying what is not."""
    bad = [f'"{p}" {why}' for p in job.outputs if (why := output_problem(p))]
    return "output " + ", ".join(bad) if bad else ""


def check_all_outputs(reporter: Reporter, jobs: list[Job], where: str) -> int:
    """The end of a run in which no job failed: every declared output is
    checked again (one job may have clobbered another's), each problem
    named, the summary printed. Returns the exit code."""
    missing = [(job, problem) for job in jobs if (problem := check_outputs(job))]
    for job, problem in missing:
        reporter.error(f"job {job.index} ({job.module}): {problem}")
    # Streamed records refused by take_feed are jobs that did not succeed.
    failed = len(missing) + reporter.refused
    reporter.summary(where, failed=failed)
    return EXIT_JOB_FAILED if failed else EXIT_OK


@contextlib.contextmanager
def stop_signals_to(handler):
    """While the block runs, SIGINT, SIGTERM and SIGHUP call handler and
    make the yielded fd readable (a poll() wakes up); the previous handlers
    and wake-up fd are back afterwards. Main thread only."""
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    old_handlers = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    old_wakeup = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    try:
        yield wake_r
    finally:
        signal.set_wakeup_fd(old_wakeup)
        for s, old in old_handlers.items():
            signal.signal(s, old)
        os.close(wake_r)
        os.close(wake_w)


class Slots:
    """How many jobs may run now: a fixed limit and, under make, tokens.

    With a jobserver the first running job uses our implicit slot and every
    further one holds a token, so we keep exactly max(0, running - 1).
    """

    def __init__(self, limit: int | None, jobserver: JobServer | None = None):
        self.limit = limit
        self.jobserver = jobserver
        self.peak = 0

    def try_grow(self, running: int) -> bool:
        """May one more job start while `running` jobs run?"""
        if self.limit is not None and running >= self.limit:
            return False
        if self.jobserver and running > 0 and len(self.jobserver.held) < running:
            if self.jobserver.try_acquire() is None:
                return False
        self.peak = max(self.peak, running + 1)
        return True

    def shrink_to(self, running: int) -> None:
        """Return the tokens that `running` jobs no longer need."""
        if self.jobserver:
            while len(self.jobserver.held) > max(0, running - 1):
                self.jobserver.release()

    def token_fd(self) -> int | None:
        return self.jobserver.read_fd if self.jobserver else None

    def close(self) -> None:
        if self.jobserver:
            self.jobserver.close()

    def describe(self) -> str:
        """'8 slots', or under make the most slots the jobserver gave us."""
        if self.jobserver:
            return plural(self.peak, "slot") + " (jobserver)"
        return plural(self.limit, "slot")


def local_cpus() -> int:
    """The CPUs this process may run on (taskset, cgroups), not all the
    machine has: how many jobs run here at once."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def run_quick(argv: list[str], timeout: float = 30) -> subprocess.CompletedProcess:
    """Run a short helper command (a cluster query, a clean-up) with its
    output captured, killed after timeout seconds (returncode None then).
    Raises OSError if it cannot be started."""
    done = run_quick_all([argv], timeout)[0]
    if isinstance(done, OSError):
        raise done
    return done


def run_quick_all(argvs: list[list[str]], timeout: float = 30) -> list:
    """run_quick for several commands at once (one connection per host...).

    Returns, in order, a CompletedProcess for each, or the OSError that
    kept it from starting. Output goes to files, not pipes: a command that
    leaves a daemon behind holding them (ssh -f) cannot make us wait.
    """
    started = []
    try:
        for argv in argvs:
            out, err = unnamed_file(), unnamed_file()
            try:
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=err, start_new_session=True)
            except OSError as e:
                out.close()
                err.close()
                started.append(e)
                continue
            started.append((argv, proc, out, err))
        deadline = time.monotonic() + timeout
        results = []
        for item in started:
            if isinstance(item, OSError):
                results.append(item)
                continue
            argv, proc, out, err = item
            try:
                code = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                signal_group(proc, None)
                proc.wait()
                code = None
            out.seek(0)
            err.seek(0)
            results.append(subprocess.CompletedProcess(argv, code, out.read(), err.read()))
        return results
    finally:
        for item in started:
            if not isinstance(item, OSError):
                _, proc, out, err = item
                if proc.returncode is None:  # on the way out through an exception
                    signal_group(proc, None)
                    proc.wait()
                out.close()
                err.close()


def exec_program(argv: list[str]) -> None:
    """Replace this process with argv (searched in PATH); raises OSError."""
    os.execvp(argv[0], argv)


def _raise_open_file_limit(slots: int | None) -> None:
    # Each running job costs three descriptors (pidfd, stdout and stderr
    # files); a wide remote run may need more than the usual soft limit of
    # 1024. Raise it only as far as needed: children inherit it.
    if slots is None or resource is None:
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 3 * slots + 64
    if soft != resource.RLIM_INFINITY and soft < want:
        new = want if hard == resource.RLIM_INFINITY else min(want, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
        except (ValueError, OSError):
            pass


class _Running:
    """A started job: its process, what wakes us when it ends (its pidfd,
    or its fork server's channel) and its captured output."""

    def __init__(self, job: Job, attempt: int, argv: list[str], stdin_path: str | None = None,
                 fork_server: ForkServer | None = None):
        self.job = job
        self.attempt = attempt
        self.argv = argv
        # Files, not pipes: a job writing megabytes of diagnostics can never
        # block on us, and we need no reader thread per job.
        self.out = unnamed_file()
        self.err = unnamed_file()
        self.pidfd = None
        try:
            with open(stdin_path or os.devnull, "rb") as stdin:  # the child has its own copy
                self.proc = self._fork(fork_server, stdin) or \
                    subprocess.Popen(argv, stdin=stdin, stdout=self.out, stderr=self.err,
                                     start_new_session=True)
        except OSError:
            self.out.close()
            self.err.close()
            raise
        if isinstance(self.proc, forkserver.Child):
            self.wake_fd = fork_server.fileno()
            return
        try:
            self.pidfd = os.pidfd_open(self.proc.pid)
        except (AttributeError, OSError):
            pass  # old kernel: the runner polls instead
        self.wake_fd = self.pidfd

    def _fork(self, server: ForkServer | None, stdin) -> forkserver.Child | None:
        """The job forked from server, when its compiler is the server's;
        None when it is not, or the server cannot (the job then starts as a
        process of its own, as it would without one)."""
        if server is None or not server.alive or self.argv[0] != server.compiler:
            return None
        try:
            return server.spawn(self.argv, os.getcwd(), stdin, self.out, self.err)
        except OSError:
            return None

    def kill(self) -> None:
        # The job leads its own process group: kill it and all it started.
        signal_group(self.proc, None)

    def result(self) -> JobResult:
        def read(f):
            f.seek(0)
            data = f.read()
            f.close()
            return data
        if self.pidfd is not None:
            os.close(self.pidfd)
        lost = getattr(self.proc, "lost", "")
        return JobResult(self.job, self.attempt, None if lost else self.proc.returncode,
                         read(self.out), read(self.err), problem=lost)


def take_feed(feed: JobFeed, reporter: Reporter, jobs: list[Job]):
    """Streaming: what the linker sent since the last call. New jobs join
    jobs (and the reporter's count); a record that cannot be used fails its
    job, and the run (reporter.refused). Returns the new jobs and the ids the
    linker cancelled."""
    new, cancels = feed.read()
    with reporter.events.batch():  # a burst of records, one write back
        for job_id, problem in feed.problems:
            reporter.error(f"the linker sent {problem}")
            reporter.refused += 1
            if job_id is not None:
                reporter.total += 1
                reporter.events.failed(job_id, problem, retry=False)
        feed.problems.clear()
        for job in new:
            jobs.append(job)
            reporter.total += 1
            reporter.events.accepted(job.index)
    return new, cancels


def whole_manifest(m: Manifest, feed: JobFeed, reporter: Reporter) -> Manifest:
    """Streaming, for a mode that must see every job before it runs any:
    m with every job the linker sends, until its end, but those it cancels
    meanwhile (each answered cancelled), to run as a one-shot manifest. A
    stop signal while it waits ends the distributor (no job runs yet).
    Main thread only."""
    jobs: list[Job] = []
    received: list[int] = []
    with stop_signals_to(lambda signo, frame: received.append(signo)) as wake_fd:
        poller = select.poll()
        poller.register(wake_fd, select.POLLIN)
        poller.register(feed.fileno(), select.POLLIN)
        while not received:
            _, cancels = take_feed(feed, reporter, jobs)
            for job in [j for j in jobs if j.index in cancels]:
                drop_cancelled(reporter, jobs, job)
            if feed.ended:
                return dataclasses.replace(m, jobs=jobs, streaming=False)
            poller.poll()
    reporter.error(f"interrupted by {signal.Signals(received[0]).name} while the "
                   "linker was still sending jobs")
    sys.exit(exit_code_for_signal(received[0]))


def drop_cancelled(reporter: Reporter, jobs: list[Job], job: Job) -> None:
    """A job the linker cancelled is no longer ours to run or to check."""
    jobs.remove(job)
    reporter.total -= 1
    reporter.cancelled(job)


class Runner:
    """Runs jobs as processes; see the module doc.

    An engine that moves files itself also gives the stdin and collect
    hooks (see StdinHook), and shown(job, argv) for the argv to show in
    messages instead of the one started (e.g. without an inline program).
    Jobs it stops get SIGTERM and, `grace` seconds later, SIGKILL; an engine
    whose launcher turns SIGTERM into a SIGKILL of the remote job (srun)
    gives grace=0 and stops the remote jobs its own way. Streaming, the
    worker and cancel hooks (see WorkerHook) name where each job runs and
    stop what a cancelled job left running elsewhere.
    """

    def __init__(self, reporter: Reporter, slots: Slots,
                 command: Callable[[Job], list[str]] = lambda job: job.command,
                 retry: RetryHook = never_retry, stdin: StdinHook | None = None,
                 collect: CollectHook | None = None,
                 shown: Callable[[Job, list[str]], list[str]] | None = None,
                 grace: float | None = None, worker: WorkerHook | None = None,
                 cancel: CancelHook | None = None, fork_server: ForkServer | None = None):
        self.reporter = reporter
        self.fork_server = fork_server
        self.slots = slots
        self.command = command
        self.retry = retry
        self.stdin = stdin
        self.collect = collect
        self.shown = shown or (lambda job, argv: argv)
        self.grace = STOP_GRACE if grace is None else grace
        self.worker = worker or (lambda job: None)
        self.cancel = cancel or (lambda job: None)
        self.failure: JobResult | None = None
        self._signal = 0

    def run(self, jobs: list[Job], feed: JobFeed | None = None) -> int:
        """Run every job; return the distributor's exit code. With a feed
        (streaming), jobs also come from the linker while others run, until
        it says there are no more; jobs it cancels are dropped or stopped.

        Call it from the main thread: it owns SIGINT, SIGTERM and SIGHUP
        while it runs, and restores the previous handlers before returning.
        """
        self.reporter.begin(len(jobs))
        jobs = list(jobs)
        pending = deque((job, 1) for job in dispatch_order(jobs))
        running: dict[int, _Running] = {}
        self.failure = None
        _raise_open_file_limit(self.slots.limit)
        with stop_signals_to(self._on_signal) as wake_fd:
            try:
                while not self._signal:
                    if feed is not None:
                        self._take_feed(feed, jobs, pending, running)
                    if self.failure is None:
                        self._launch(pending, running)
                    more = feed is not None and not feed.ended
                    if not running and (self.failure or (not pending and not more)):
                        break
                    self._wait(running, wake_fd,
                               want_token=bool(pending) and not self.failure,
                               feed=feed if feed is not None and not feed.closed else None)
                    self._reap(running, pending)
            finally:
                # Every way out, a signal or a bug included: no job outlives
                # us and no token is lost.
                stop_groups([r.proc for r in running.values()], self.grace)
                for r in running.values():
                    r.proc.wait()
                    r.result()
                self.slots.close()
        return self._finish(jobs, stopped=len(running))

    def _on_signal(self, signo, frame):
        self._signal = self._signal or signo

    def _take_feed(self, feed: JobFeed, jobs, pending, running) -> None:
        new, cancels = take_feed(feed, self.reporter, jobs)
        if new:
            # Jobs waiting for a slot start largest first, as a whole
            # manifest's do; retries keep their place at the front.
            retries = [e for e in pending if e[1] > 1]
            fresh = [e[0] for e in pending if e[1] == 1] + new
            pending.clear()
            pending.extend(retries + [(job, 1) for job in dispatch_order(fresh)])
        for job_id in cancels:
            for entry in [e for e in pending if e[0].index == job_id]:
                pending.remove(entry)
                drop_cancelled(self.reporter, jobs, entry[0])
            for pid, r in [(p, r) for p, r in running.items() if r.job.index == job_id]:
                stop_groups([r.proc], self.grace)
                r.proc.wait()
                r.result()
                del running[pid]
                self.slots.shrink_to(len(running))
                self.cancel(r.job)
                drop_cancelled(self.reporter, jobs, r.job)

    def _launch(self, pending, running) -> None:
        while pending and self.slots.try_grow(len(running)):
            job, attempt = pending.popleft()
            argv = self.command(job)
            self.reporter.started(job, self.shown(job, argv), self.worker(job))
            try:
                stdin_path = self.stdin(job) if self.stdin else None
            except OSError as e:
                problem = f"could not be prepared: {e}"
            else:
                try:
                    r = _Running(job, attempt, argv, stdin_path, self.fork_server)
                except OSError as e:
                    problem = f"could not be started: {argv[0]}: {e.strerror}"
                else:
                    running[r.proc.pid] = r
                    continue
            self.slots.shrink_to(len(running))
            result = JobResult(job, attempt, problem=problem)
            if self.collect:
                self.collect(result)
            self._done(result, argv, pending, running)
            if self.failure:
                return

    def _wait(self, running, wake_fd, want_token: bool, feed=None) -> None:
        # poll(), not select(): a remote engine may run more jobs than
        # select()'s 1024-descriptor limit allows.
        poller = select.poll()
        poller.register(wake_fd, select.POLLIN)
        if feed is not None:
            poller.register(feed.fileno(), select.POLLIN)
        for r in running.values():
            if r.wake_fd is not None:
                poller.register(r.wake_fd, select.POLLIN)
        token_fd = self.slots.token_fd()
        if want_token and token_fd is not None:
            poller.register(token_fd, select.POLLIN)
        polling = any(r.wake_fd is None for r in running.values())
        # A fork server's channel may have been read already (starting a
        # job reads what came before the job's pid): a job whose end was
        # read there has its returncode, and no wake-up is left for it.
        ended = any(isinstance(r.proc, forkserver.Child) and r.proc.returncode is not None
                    for r in running.values())
        poller.poll(0 if ended else 50 if polling else None)
        try:
            while os.read(wake_fd, 64):
                pass  # drain: the handler already noted the signal
        except BlockingIOError:
            pass

    def _reap(self, running, pending) -> None:
        for pid in [pid for pid, r in running.items() if r.proc.poll() is not None]:
            r = running.pop(pid)
            self.slots.shrink_to(len(running))
            result = r.result()
            if self.collect:
                self.collect(result)
            if self.failure:
                continue  # killed after an earlier failure: not news
            if result.returncode == 0 and not result.problem:
                result.problem = check_outputs(r.job)
                if result.problem:
                    result.problem = f"exited 0 but its {result.problem}"
            self._done(result, r.argv, pending, running)

    def _done(self, result: JobResult, argv, pending, running) -> None:
        if result.ok:
            self.reporter.finished(result)
            return
        if self.retry(result.job, result):
            self.reporter.retrying(result)
            pending.appendleft((result.job, result.attempt + 1))
            return
        self.failure = result
        self.reporter.failed(result, self.shown(result.job, argv))
        stop_groups([r.proc for r in running.values()], self.grace)

    def _finish(self, jobs, stopped: int) -> int:
        rep = self.reporter
        if self._signal:
            rep.error(f"interrupted by {signal.Signals(self._signal).name}; "
                      f"killed {plural(stopped, 'running job')}")
            return exit_code_for_signal(self._signal)
        if self.failure:
            rep.summary(self.slots.describe(), failed=1)
            return EXIT_JOB_FAILED
        return check_all_outputs(rep, jobs, self.slots.describe())


@dataclass
class Supervised:
    """How an engine process started by supervise() ended."""
    returncode: int  # negative: killed by that signal
    stopped_by: int = 0  # the stop signal we received and passed on, 0 if none


def supervise(argv: list[str], tick: Callable[[], None] | None = None,
              interval: float = 1.0, env: dict | None = None,
              grace: float = 5.0, cwd: str | None = None,
              stdout_to_stderr: bool = False) -> Supervised:
    """Run one engine process that runs every job itself, and wait for it.

    Unlike Runner's jobs it keeps our stdout and stderr, so the engine's own
    messages show as they come. On POSIX it gets its own session: a stop
    signal we receive (SIGINT, SIGTERM, SIGHUP) is passed on to its process
    group, so the engine can cancel its remote work, and what is left after
    `grace` seconds (or at a second signal) is killed. Whatever it leaves
    behind in its group when it exits is killed too: nothing outlives us.
    On Windows the engine shares our console, so Ctrl-C reaches it directly.
    cwd is the engine's working directory (None: ours); stdout_to_stderr
    sends what it prints on stdout to our stderr (the linker's stdout may
    be a pipe someone parses). tick() is called about every `interval` seconds while it runs (progress).
    Raises OSError when the process cannot be started. Main thread only.
    """
    posix = os.name == "posix"
    received: list[int] = []

    def on_signal(signo, frame):
        received.append(signo)

    # Caught before the engine starts, so that a signal that comes while it
    # starts is passed on too (the loop below does that first thing).
    old_handlers = {s: signal.signal(s, on_signal) for s in STOP_SIGNALS}
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, env=env, cwd=cwd,
                                stdout=sys.stderr.fileno() if stdout_to_stderr else None,
                                start_new_session=posix)
    except BaseException:
        for s, handler in old_handlers.items():
            signal.signal(s, handler)
        raise
    passed_on = 0
    deadline = None
    next_tick = time.monotonic() + interval
    try:
        while not _has_exited(proc):
            if len(received) > passed_on:
                # The first signal is passed on; a second one, or the end of
                # our patience, kills the group.
                if passed_on == 0:
                    signal_group(proc, received[0])
                    deadline = time.monotonic() + grace
                else:
                    signal_group(proc, None)
                passed_on = len(received)
            if deadline is not None and time.monotonic() > deadline:
                signal_group(proc, None)
                deadline = None
            if tick and not received and time.monotonic() >= next_tick:
                tick()
                next_tick = time.monotonic() + interval
            time.sleep(0.05)
    finally:
        # The leader has exited but is not reaped yet, so its group id cannot
        # have been reused: kill what it left behind, then reap it. On the way
        # out through an exception, the same kill stops it.
        signal_group(proc, None)
        proc.wait()
        for s, handler in old_handlers.items():
            signal.signal(s, handler)
    return Supervised(proc.returncode, received[0] if received else 0)


def _has_exited(proc: subprocess.Popen) -> bool:
    """Has proc exited? On POSIX without reaping it (see supervise)."""
    if proc.returncode is not None:
        return True
    if isinstance(proc, forkserver.Child):
        return proc.poll() is not None  # its server reaps it
    if hasattr(os, "waitid"):
        try:
            return os.waitid(os.P_PID, proc.pid,
                             os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True
    return proc.poll() is not None


def _stop_grace() -> float:
    """DTLTO_STOP_GRACE, in seconds, else 2."""
    text = os.environ.get("DTLTO_STOP_GRACE", "")
    if not text:
        return 2.0
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 3600:
        print(f"error: DTLTO_STOP_GRACE='{text}' is not a number of seconds "
              "from 0 to 3600", file=sys.stderr)
        sys.exit(2)
    return value


# How long stopped jobs get to clean up before they are killed: a compiler
# removes its half-written output on SIGTERM (LLVM's signal handler), never
# on SIGKILL. By default shorter than the linker's own patience with a
# distributor (3 s); DTLTO_STOP_GRACE sets it (tests on a loaded machine
# give jobs all the time they need).
STOP_GRACE = _stop_grace()


def stop_groups(procs: list, grace: float = STOP_GRACE) -> None:
    """Stop the process groups of procs: SIGTERM, then SIGKILL for what is
    still there after `grace` seconds. Returns once every leader has exited
    (the caller reaps them). With grace 0 they are killed at once."""
    for proc in procs:
        signal_group(proc, signal.SIGTERM if os.name == "posix" and grace > 0 else None)
    deadline = time.monotonic() + grace
    while any(not _has_exited(p) for p in procs) and time.monotonic() < deadline:
        time.sleep(0.01)
    for proc in procs:
        signal_group(proc, None)  # what is left, the leaders' children too
    for proc in procs:
        while not _has_exited(proc):
            time.sleep(0.01)


def signal_group(proc: subprocess.Popen, signo: int | None) -> None:
    """Send signo (None: kill) to proc's process group.

    On Windows only the kill is done: the engine shares our console, so the
    Ctrl-C that stops us has already reached it.
    """
    if isinstance(proc, forkserver.Child):
        proc.signal_group(signal.SIGKILL if signo is None else signo)
        return
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL if signo is None else signo)
        elif signo is None and proc.returncode is None:
            proc.kill()
    except OSError:  # already gone
        pass
