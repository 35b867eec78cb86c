"""Persistent workers: many jobs per compiler process.

A compiler that can run many jobs in one process (dtlto-backend --batch; the
engine names the argument in the manifest's side file: "batch_arg")
pays its start-up once per slot instead of once per job. BatchRunner keeps
one such worker per slot alive for the whole run and hands it jobs: one line
of stdin per job (the job's arguments as a JSON array), one line of stdout
back ({"ok": true} or {"ok": false, "error": "..."}). What a worker writes on
stderr while it runs a job is that job's output. A worker whose replies say
where each job's output on stderr ends ("stderr_end": the file offset, as
dtlto-backend's do when stderr is a file) holds a second job on its stdin
while it runs one, and so starts it as it replies, without waiting for us;
the job counts as started then (its "started" event), and needs no slot
until it does. Small jobs are held deeper: up to 7 behind the one running,
while those held come to at most 256 KiB of input. dtlto-backend then
replies for several jobs at once (it keeps a job's reply while it still
holds two jobs or more), so that neither we nor the linker are woken once
per job: on a busy machine each wake-up of another process costs about
what a small job's own work outside the compiler does. A reply's "t" (when
the job ended, seconds since the epoch) dates the job's "done" event and
its successor's "started", so the linker's job times stay true. The last
jobs of the queue are not held that way: they go to whichever worker is
free first. A worker that does not say gets one job at a time, and the
next as soon as it replies ok, before that reply's object is checked and
reported.

The rest is Runner's contract (runner.py): jobs start in manifest order,
make's jobserver is honoured (a busy worker beyond the first holds a
token), the first failure stops the run and shows the job's command and
output, SIGINT/SIGTERM/SIGHUP kill every worker and exit 128+n, and every
declared output is checked. Jobs already started when a failure is seen
run to their end, and so do those a worker holds (its worker starts them).
A cancelled job that a worker runs kills that worker; one held behind
another job is answered when the worker, having replied for that job, is
killed as it starts it.
"""

import json
import os
import select
import signal
import subprocess
from collections import deque

from .events import JobFeed
from .manifest import Job, Manifest, dispatch_order
from .report import EXIT_JOB_FAILED, Reporter, exit_code_for_signal, plural
from .runner import (JobResult, Slots, check_all_outputs, check_outputs, drop_cancelled,
                     signal_group, stop_groups, stop_signals_to, take_feed, unnamed_file)


# A worker whose stdout closed has that long to exit before it is killed: a
# dying one exits at once, and one that lives on would never reply.
_EXIT_GRACE = 5

# How deep a worker that says where each job's stderr ends is fed: besides
# the job it runs, one job whatever its size, and more up to _DEEP jobs in
# all while those it holds come to at most _DEEP_BYTES of input. Bounded in
# bytes because held jobs run on after a failure.
_DEEP = 8
_DEEP_BYTES = 256 * 1024


def may_hold(jobs, job: Job, waiting: int, busy: int) -> bool:
    """Whether a worker that can hold jobs and has jobs (the one it runs
    first) is given job to hold, with waiting jobs queued (job among them)
    and busy workers. The queue's last jobs are not held (each worker's
    share of them is what it holds already): they go to whichever worker is
    free first."""
    if waiting <= busy * len(jobs):
        return False
    if len(jobs) == 1:
        return True
    held = [j.input_bytes for j in list(jobs)[1:]] + [job.input_bytes]
    return len(jobs) < _DEEP and None not in held and sum(held) <= _DEEP_BYTES


def _reply_time(reply: dict | None) -> float | None:
    """When a reply says its job ended (time.time()), if it says."""
    t = reply.get("t") if reply else None
    return float(t) if type(t) in (int, float) and t >= 0 else None


class _Worker:
    """One compiler process running jobs one after the other: jobs[0] is the
    one it runs, the others (when it holds jobs) wait on its stdin."""

    def __init__(self, argv: list[str]):
        # stderr to a file: we read what each job added to it, and a worker
        # writing a lot can never block on us. Only the worker moves the
        # file's offset (we pread), so its offset is where its output ends.
        self.err = unnamed_file()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, start_new_session=True)
        self.out = self.proc.stdout.fileno()
        os.set_blocking(self.out, False)
        self.buffer = b""
        self.jobs: deque[Job] = deque()
        self.err_start = 0
        # Whether it may hold jobs behind the one it runs: once a reply of
        # its has said where that job's stderr ends ("stderr_end"), as
        # dtlto-backend's do.
        self.holds = False
        self.cancelled: set[int] = set()  # of its waiting job, by the linker

    def give(self, job: Job) -> None:
        """Send job; the worker holds it only once the line is sent
        (OSError: it does not)."""
        self.proc.stdin.write(json.dumps(job.args).encode() + b"\n")
        self.proc.stdin.flush()
        self.jobs.append(job)

    def read_reply(self) -> tuple[bool, dict | None]:
        """(ended, reply): the reply to jobs[0] once its line is complete;
        ended is True when the worker closed its stdout (it died). A read
        can bring two replies: the second stays in the buffer for the next
        call, which reads no more until it is used. One read(2) a call, on
        the pipe itself: a file object's read() costs an fstat, an lseek
        and a read that fails, each call, on every job."""
        if b"\n" not in self.buffer:
            try:
                data = os.read(self.out, 65536)
            except BlockingIOError:
                return False, None
            if not data:
                return True, None
            self.buffer += data
            if b"\n" not in self.buffer:
                return False, None
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            reply = json.loads(line)
        except ValueError:
            reply = {"ok": False, "error": f"garbled reply {line[:200]!r}"}
        return False, reply if isinstance(reply, dict) else {"ok": False}

    def take_stderr(self, reply: dict | None) -> bytes:
        """What the worker wrote on stderr for jobs[0]: up to where its
        reply says that job's output ends, else (no reply: it died; or a
        worker that does not say, which then gets one job at a time) all
        it has written."""
        fd = self.err.fileno()
        end = reply.get("stderr_end") if reply else None
        if type(end) is int and end >= self.err_start:
            self.holds = True
        else:
            end, self.holds = os.fstat(fd).st_size, False
        data = os.pread(fd, end - self.err_start, self.err_start) if end > self.err_start else b""
        self.err_start = end
        return data

    def kill(self) -> None:
        signal_group(self.proc, None)

    def reap(self, grace: float) -> None:
        """Waits for the worker to exit, killing it after grace seconds."""
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.kill()
            self.proc.wait()

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
        # The descriptors the last poll found readable (None: read them
        # all): a job costs a few system calls, not a read of every pipe
        # each time any of them has news.
        ready: set[int] | None = None
        with stop_signals_to(self._on_signal) as wake_fd:
            try:
                while not self._signal:
                    # The turn's events go to the linker in one write.
                    with self.reporter.events.batch():
                        # The linker's news before the workers' replies: a
                        # cancel it sent before a reply came is seen first.
                        if feed is not None and (ready is None or feed.fileno() in ready):
                            self._take_feed(feed, jobs, pending, workers)
                        self._collect(workers, pending, jobs, ready)
                        if self.failure is None:
                            self._dispatch(pending, workers)
                    busy = [w for w in workers if w.jobs]
                    more = feed is not None and not feed.ended
                    if not busy and (self.failure or (not pending and not more)):
                        break
                    ready = self._wait(busy, wake_fd,
                               want_token=bool(pending) and not self.failure,
                               feed=feed if feed is not None and not feed.closed else None)
            finally:
                # Idle workers end when their stdin closes; busy ones (after
                # a failure or a signal) are killed. Nothing outlives us.
                stopping = self._signal or self.failure
                stop_groups([w.proc for w in workers if stopping and w.jobs])
                for w in workers:
                    w.close()
                for w in workers:
                    w.reap(grace=10)
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
            for w in [w for w in workers if any(j.index == job_id for j in w.jobs)]:
                if w.jobs[0].index == job_id:
                    self._retire(w, workers, pending, jobs)
                else:
                    # Its predecessor runs on; the worker goes as it
                    # starts this one (_collect).
                    w.cancelled.add(job_id)

    def _retire(self, w: _Worker, workers, pending, jobs) -> None:
        """The linker cancelled w's running job. A worker cannot drop the
        job it runs: the worker goes (its group killed, as Runner kills a
        job's), and the slot is free for the next job at once; a new worker
        starts when one is needed. The cancelled job's output is the
        linker's to remove, as for any cancelled job; the job waiting
        behind it (not started) goes back to the queue."""
        running = w.jobs.popleft()
        stop_groups([w.proc])
        w.close()
        w.proc.wait()
        w.err.close()
        workers.remove(w)
        pending.extendleft(reversed([j for j in w.jobs if j.index not in w.cancelled]))
        for job in [j for j in w.jobs if j.index in w.cancelled]:
            drop_cancelled(self.reporter, jobs, job)
        self.slots.shrink_to(len([x for x in workers if x.jobs]))
        drop_cancelled(self.reporter, jobs, running)

    def _dispatch(self, pending, workers) -> None:
        busy = [w for w in workers if w.jobs]
        while pending and self.slots.try_grow(len(busy)):
            idle = next((w for w in workers if not w.jobs), None)
            started = self._start(pending.popleft(), idle, workers)
            if started is None:
                self.slots.shrink_to(len(busy))
                return
            busy.append(started)
        # Every slot is taken: a worker that can hold jobs gets them on its
        # stdin, so that it starts the next as it replies instead of
        # waiting for us to read the reply and answer (the module doc).
        for w in busy:
            while (pending and w.holds and not w.cancelled
                   and may_hold(w.jobs, pending[0], len(pending), len(busy))):
                job = pending.popleft()
                try:
                    w.give(job)
                except OSError:
                    pending.appendleft(job)  # it died: _collect hears of it
                    break

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

    def _wait(self, busy, wake_fd, want_token: bool, feed=None) -> set[int]:
        """Sleeps until a worker, the linker, the jobserver or a signal has
        news; returns the descriptors that have it."""
        poller = select.poll()
        poller.register(wake_fd, select.POLLIN)
        if feed is not None:
            poller.register(feed.fileno(), select.POLLIN)
        for w in busy:
            poller.register(w.proc.stdout.fileno(), select.POLLIN)
        token_fd = self.slots.token_fd()
        if want_token and token_fd is not None:
            poller.register(token_fd, select.POLLIN)
        ready = {fd for fd, _ in poller.poll()}
        if wake_fd in ready:
            try:
                while os.read(wake_fd, 64):
                    pass
            except BlockingIOError:
                pass
        return ready

    def _collect(self, workers, pending, jobs, ready: set[int] | None) -> None:
        """Every reply there is from the workers in ready (None: all), and
        every complete one a read brought before."""
        for w in [w for w in workers if w.jobs and (ready is None or w.out in ready
                                                    or b"\n" in w.buffer)]:
            while w in workers and w.jobs:
                ended, reply = w.read_reply()
                if reply is None and not ended:
                    break
                self._reply(w, ended, reply, workers, pending, jobs)
                if b"\n" not in w.buffer:
                    break  # one read a turn: the next poll says when there is more

    def _reply(self, w: _Worker, ended: bool, reply, workers, pending, jobs) -> None:
        """w's running job ended: with reply, or (ended) with the worker."""
        job = w.jobs.popleft()
        stderr = w.take_stderr(reply)
        if ended:
            workers.remove(w)
            w.reap(grace=_EXIT_GRACE)  # one that closed its stdout and lives on is killed
            for queued in [j for j in w.jobs if j.index in w.cancelled]:
                drop_cancelled(self.reporter, jobs, queued)
            w.jobs.clear()
        elif w.jobs:
            # It started the job waiting on its stdin as it replied; that
            # job runs to its end even if this one failed, as any busy
            # worker's does.
            if w.jobs[0].index in w.cancelled:
                self._retire(w, workers, pending, jobs)
            else:
                self.reporter.started(w.jobs[0], w.jobs[0].command, at=_reply_time(reply))
        elif pending and reply.get("ok") and not (self.failure or self._signal):
            # The worker gets its next job before we check and report this
            # one: it idles only while we read its reply, not while we stat
            # the object and tell the linker. Its slot (and jobserver
            # token) goes on to the next job; a failure found below still
            # stops it, as it stops every busy one.
            self._start(pending.popleft(), w, workers)
        self.slots.shrink_to(len([x for x in workers if x.jobs]))
        if self.failure:
            return
        result = JobResult(job, 1, returncode=0, stderr=stderr, ended_at=_reply_time(reply))
        if ended:
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
