"""Persistent workers: many jobs per compiler process.

A compiler that can run many jobs in one process (dtlto-backend --batch; the
engine names the argument in the manifest's side file: "batch_arg")
pays its start-up once per slot instead of once per job. BatchRunner keeps
one such worker per slot alive for the whole run and hands it jobs one at a
time: one line of stdin per job (the job's arguments as a JSON array), one
line of stdout back ({"ok": true} or {"ok": false, "error": "..."}). What a
worker writes on stderr while it runs a job is that job's output. A worker
that replied ok gets its next job before that reply's object is checked and
reported, so that it waits only for its reply to be read.

The rest is Runner's contract (runner.py): jobs start in manifest order,
make's jobserver is honoured (a busy worker beyond the first holds a
token), the first failure stops the run and shows the job's command and
output, SIGINT/SIGTERM/SIGHUP kill every worker and exit 128+n, and every
declared output is checked.
"""

import json
import os
import select
import signal
import subprocess
import tempfile
from collections import deque

from .events import JobFeed
from .manifest import Job, Manifest, dispatch_order
from .report import EXIT_JOB_FAILED, Reporter, exit_code_for_signal, plural
from .runner import (JobResult, Slots, check_all_outputs, check_outputs, drop_cancelled,
                     signal_group, stop_groups, stop_signals_to, take_feed)




class _Worker:
    """One compiler process running jobs one after the other."""

    def __init__(self, argv: list[str]):
        # stderr to a file: we read what each job added to it, and a worker
        # writing a lot can never block on us.
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, start_new_session=True)
        os.set_blocking(self.proc.stdout.fileno(), False)
        self.buffer = b""
        self.job: Job | None = None
        self.err_start = 0

    def give(self, job: Job) -> None:
        """Send job; the worker is busy with it only once the line is sent
        (OSError: it is not, and stays idle)."""
        self.err_start = self.err.seek(0, os.SEEK_END)
        self.proc.stdin.write(json.dumps(job.args).encode() + b"\n")
        self.proc.stdin.flush()
        self.job = job

    def read_result(self) -> tuple[bool, dict | None]:
        """(ended, result): result is the job's reply once a line is complete;
        ended is True when the worker closed its stdout (it died)."""
        try:
            data = self.proc.stdout.read()
        except BlockingIOError:
            data = b""
        if data is None:
            data = b""
        self.buffer += data
        if b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            try:
                reply = json.loads(line)
            except ValueError:
                reply = {"ok": False, "error": f"garbled reply {line[:200]!r}"}
            return False, reply if isinstance(reply, dict) else {"ok": False}
        return data == b"" and self.proc.poll() is not None, None

    def job_stderr(self) -> bytes:
        self.err.seek(self.err_start)
        return self.err.read()

    def kill(self) -> None:
        signal_group(self.proc, None)

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass


class BatchRunner:
    """Runs a manifest's jobs on persistent workers; see the module doc."""

    def __init__(self, reporter: Reporter, slots: Slots, manifest: Manifest):
        self.reporter = reporter
        self.slots = slots
        self.argv = manifest.common_args + [manifest.batch_arg]
        self.failure: JobResult | None = None
        self._signal = 0

    def run(self, jobs: list[Job], feed: JobFeed | None = None) -> int:
        """As Runner.run: every job, and with a feed those the linker
        streams until it says there are no more."""
        self.reporter.begin(len(jobs))
        jobs = list(jobs)
        pending = deque(dispatch_order(jobs))
        workers: list[_Worker] = []
        with stop_signals_to(self._on_signal) as wake_fd:
            try:
                while not self._signal:
                    if feed is not None:
                        self._take_feed(feed, jobs, pending, workers)
                    busy = [w for w in workers if w.job]
                    if self.failure is None:
                        self._dispatch(pending, workers, busy)
                        busy = [w for w in workers if w.job]
                    more = feed is not None and not feed.ended
                    if not busy and (self.failure or (not pending and not more)):
                        break
                    self._wait(busy, wake_fd,
                               want_token=bool(pending) and not self.failure,
                               feed=feed if feed is not None and not feed.closed else None)
                    self._collect(busy, workers, pending)
            finally:
                # Idle workers end when their stdin closes; busy ones (after
                # a failure or a signal) are killed. Nothing outlives us.
                stopping = self._signal or self.failure
                stop_groups([w.proc for w in workers if stopping and w.job])
                for w in workers:
                    w.close()
                for w in workers:
                    try:
                        w.proc.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        w.kill()
                        w.proc.wait()
                    w.err.close()
                self.slots.close()
        return self._finish(jobs, len(workers))

    def _on_signal(self, signo, frame):
        self._signal = self._signal or signo

    def _take_feed(self, feed: JobFeed, jobs, pending, workers) -> None:
        new, cancels = take_feed(feed, self.reporter, jobs)
        if new:
            # Waiting jobs start largest first, as a whole manifest's do.
            waiting = dispatch_order(list(pending) + new)
            pending.clear()
            pending.extend(waiting)
        for job_id in cancels:
            for job in [j for j in pending if j.index == job_id]:
                pending.remove(job)
                drop_cancelled(self.reporter, jobs, job)
            # A worker cannot drop the job it runs: the worker goes (its
            # group killed, as Runner kills a job's), and the slot is free
            # for the next job at once; a new worker starts when one is
            # needed. Its output is the linker's to remove, as for any
            # cancelled job.
            for w in [w for w in workers if w.job and w.job.index == job_id]:
                job, w.job = w.job, None
                stop_groups([w.proc])
                w.close()
                w.proc.wait()
                w.err.close()
                workers.remove(w)
                self.slots.shrink_to(len([x for x in workers if x.job]))
                drop_cancelled(self.reporter, jobs, job)

    def _dispatch(self, pending, workers, busy) -> None:
        while pending and self.slots.try_grow(len(busy)):
            idle = next((w for w in workers if not w.job), None)
            started = self._start(pending.popleft(), idle, workers)
            if started is None:
                self.slots.shrink_to(len(busy))
                return
            busy.append(started)

    def _start(self, job: Job, w: _Worker | None, workers) -> _Worker | None:
        """Hands job to w, or to a new worker (added to workers) when w is
        None; returns the worker, or None when it could not be started or
        fed (the run has then failed, naming the job)."""
        try:
            if w is None:
                w = _Worker(self.argv)
                workers.append(w)
            self.reporter.started(job, job.command)
            w.give(job)
        except OSError as e:
            self._fail(JobResult(job, 1, problem=f"could not be started: "
                                                 f"{self.argv[0]}: {e.strerror}"))
            return None
        return w

    def _wait(self, busy, wake_fd, want_token: bool, feed=None) -> None:
        poller = select.poll()
        poller.register(wake_fd, select.POLLIN)
        if feed is not None:
            poller.register(feed.fileno(), select.POLLIN)
        for w in busy:
            poller.register(w.proc.stdout.fileno(), select.POLLIN)
        token_fd = self.slots.token_fd()
        if want_token and token_fd is not None:
            poller.register(token_fd, select.POLLIN)
        poller.poll()
        try:
            while os.read(wake_fd, 64):
                pass
        except BlockingIOError:
            pass

    def _collect(self, busy, workers, pending) -> None:
        for w in busy:
            ended, reply = w.read_result()
            if reply is None and not ended:
                continue
            job, w.job = w.job, None
            stderr = w.job_stderr()
            if pending and not ended and reply.get("ok") and not (self.failure or self._signal):
                # The worker gets its next job before we check and report
                # this one: it idles only while we read its reply, not
                # while we stat the object and tell the linker. Its slot
                # (and jobserver token) goes on to the next job; a failure
                # found below still stops it, as it stops every busy one.
                self._start(pending.popleft(), w, workers)
            self.slots.shrink_to(len([x for x in workers if x.job]))
            if self.failure:
                continue
            result = JobResult(job, 1, returncode=0, stderr=stderr)
            if ended:
                workers.remove(w)
                w.proc.wait()
                result.returncode = None  # describe() then shows the problem
                result.problem = (f"lost its worker ({self.argv[0]} ended with "
                                  f"status {w.proc.returncode})")
            elif not reply.get("ok"):
                result.returncode = None
                result.problem = "failed: " + str(reply.get("error", "no reason given"))
            elif problem := check_outputs(job):
                result.problem = f"succeeded but its {problem}"
            if result.ok:
                self.reporter.finished(result)
            else:
                self._fail(result)

    def _fail(self, result: JobResult) -> None:
        self.failure = result
        self.reporter.failed(result, result.job.command)

    def _finish(self, jobs, workers: int) -> int:
        rep = self.reporter
        where = f"{plural(workers, 'batch worker')}, {self.slots.describe()}"
        if self._signal:
            rep.error(f"interrupted by {signal.Signals(self._signal).name}; "
                      f"killed every worker")
            return exit_code_for_signal(self._signal)
        if self.failure:
            rep.summary(where, failed=1)
            return EXIT_JOB_FAILED
        return check_all_outputs(rep, jobs, where)
