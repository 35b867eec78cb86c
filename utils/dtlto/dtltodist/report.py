"""What a distributor tells the user, and the exit codes it ends with.

Everything goes to stderr: the linker's stdout may be a pipe someone parses.
Successful jobs' own output (compiler warnings) is passed through when the
job ends, so lines of parallel jobs never interleave. What the user is told
about each job, the linker is told too, on its event channel (events.py).
"""

import shlex
import socket
import sys
import time

from .events import Events

EXIT_OK = 0
EXIT_JOB_FAILED = 1  # a job failed or left an output missing
EXIT_USAGE = 2  # bad manifest or command line


def exit_code_for_signal(signo: int) -> int:
    return 128 + signo


def plural(count: int, noun: str) -> str:
    """'1 job', '2 jobs'."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def size_text(nbytes: int) -> str:
    """'512 B', '3.4 KiB', '12.0 MiB', '1.5 GiB'."""
    if nbytes < 1024:
        return f"{nbytes} B"
    for unit in ("KiB", "MiB", "GiB"):
        nbytes /= 1024
        if nbytes < 1024 or unit == "GiB":
            return f"{nbytes:.1f} {unit}"


class Reporter:
    def __init__(self, prog: str, quiet=False, progress=False, verbose=False,
                 stream=None, placement=None):
        self.prog = prog
        # placement() -> what the summary says after "N jobs on", in place of
        # the slots: a remote engine's hosts, retries and bytes moved.
        self.placement = placement
        self.quiet = quiet
        self.verbose = verbose
        self.stream = stream or sys.stderr
        # A live line on a terminal; one line per finished job when forced
        # with --progress into a log file.
        self.live = progress or self.stream.isatty()
        self.in_place = self.live and self.stream.isatty()
        self.total = 0
        self.done = 0
        self.start = time.monotonic()
        self._line_shown = False
        self.events = Events()
        # Where jobs run unless an engine says (JobResult.where, started()).
        self.worker = socket.gethostname()
        self._began: dict[int, float] = {}

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def _write(self, text: str) -> None:
        self._clear_line()
        self.stream.write(text)
        self.stream.flush()

    def _clear_line(self) -> None:
        if self._line_shown:
            self.stream.write("\r\x1b[K")
            self._line_shown = False

    def note(self, message: str) -> None:
        self._write(f"{self.prog}: {message}\n")

    def error(self, message: str) -> None:
        self.note(f"error: {message}")

    def verbose_note(self, message: str) -> None:
        if self.verbose:
            self.note(message)

    def begin(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.start = time.monotonic()

    def started(self, job, argv, worker: str | None = None) -> None:
        self._began[job.index] = time.monotonic()
        self.events.started(job.index, worker=worker or self.worker)
        self.verbose_note(f"job {job.index}: {shlex.join(argv)}")

    def _ran_for(self, job) -> float | None:
        began = self._began.pop(job.index, None)
        return None if began is None else time.monotonic() - began

    def retrying(self, result) -> None:
        """A job failed and runs again."""
        self._began.pop(result.job.index, None)
        self.events.failed(result.job.index, result.describe(), retry=True,
                           worker=result.where or self.worker, attempt=result.attempt)
        self.verbose_note(f"job {result.job.index} {result.describe()}; retrying")

    def cancelled(self, job) -> None:
        """The linker no longer needs a job (streaming)."""
        self._began.pop(job.index, None)
        self.events.cancelled(job.index)
        self.verbose_note(f"job {job.index} cancelled by the linker")

    def finished(self, result) -> None:
        """A job succeeded: pass its output on, then show progress."""
        self.events.done(result.job.index, worker=result.where or self.worker,
                         compile_s=self._ran_for(result.job), attempt=result.attempt)
        self.done += 1
        if result.stdout:
            self._clear_line()
            sys.stdout.buffer.write(result.stdout)
            sys.stdout.flush()
        if result.stderr:
            self._clear_line()
            self.stream.flush()
            self.stream.buffer.write(result.stderr)
            self.stream.flush()
        if not self.live:
            return
        status = f"[{self.done}/{self.total}] {self.elapsed():.1f} s"
        if self.in_place:
            self._clear_line()
            self.stream.write(f"{self.prog}: {status}")
            self.stream.flush()
            self._line_shown = True
        else:
            self._write(f"{self.prog}: {status} {result.job.object}\n")

    def failed(self, result, argv) -> None:
        """Everything needed to understand a failure without rerunning it."""
        job = result.job
        self._ran_for(job)
        self.events.failed(job.index, result.describe(), retry=False,
                           worker=result.where or self.worker, attempt=result.attempt)
        self.error(f"job {job.index} ({job.module} -> {job.object}) {result.describe()}")
        self.note(f"command: {shlex.join(argv)}")
        output = result.stderr + result.stdout
        if output:
            self.note(f"output of job {job.index}:")
            self.stream.flush()
            self.stream.buffer.write(output if output.endswith(b"\n") else output + b"\n")
            self.stream.flush()

    def summary(self, slots: str, failed: int) -> None:
        self._clear_line()
        if not self.quiet:
            where = self.placement() if self.placement else slots
            self.note(f"{plural(self.total, 'job')} on {where}, {failed} failed, "
                      f"{self.elapsed():.1f} s")
        self.stream.flush()
