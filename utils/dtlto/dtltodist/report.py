"""What a distributor tells the user, and the exit codes it ends with.

Everything goes to stderr: the linker's stdout may be a pipe someone parses.
Successful jobs' own output (compiler warnings) is passed through when the
job ends, so lines of parallel jobs never interleave. What the user is told
about each job, the linker is told too, on its event channel (events.py).
"""

import json
import os
import shlex
import sys
import time

from .events import Events

# Paths and arguments that are not UTF-8 reach Python as surrogate escapes
# (os.fsdecode). What goes to stdout (--dry-run, validate.py --print) gives
# them back as the bytes they were, whatever the locale: under a strict one
# print() would fail on them. stderr escapes them already.
try:
    sys.stdout.reconfigure(errors="surrogateescape")
except (AttributeError, ValueError):  # not a text stream of our own
    pass

EXIT_OK = 0
EXIT_JOB_FAILED = 1  # a job failed or left an output missing
EXIT_USAGE = 2  # bad manifest or command line


def exit_code_for_signal(signo: int) -> int:
    return 128 + signo


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def one_line(text: str) -> str:
    """text with line breaks and other unprintable characters (controls,
    bidi overrides, undecodable argument bytes) shown as escapes: a message
    stays one line, whatever path or value it quotes."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _ESCAPES.get(c) or
                   (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")
                   for c in text)


def usage_error(prog: str, message: str) -> int:
    """Print the one-line error of a bad manifest or command line; return
    EXIT_USAGE for the caller to exit with."""
    sys.stderr.write(f"{prog}: error: {one_line(message)}\n")
    sys.stderr.flush()
    return EXIT_USAGE


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


def host_name() -> str:
    """This machine's name: os.uname's, which socket.gethostname reads too,
    without importing socket at every start."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket  # Windows
    return socket.gethostname()


def _monotonic_at(at: float | None) -> float:
    """time.monotonic() at the moment time.time() was at; now when at is
    None or not in the past."""
    now = time.monotonic()
    return now if at is None else now - max(0.0, time.time() - at)


class Reporter:
    def __init__(self, prog: str, quiet=False, progress=False, verbose=False,
                 stream=None, placement=None, timings=None):
        self.prog = prog
        # --timings FILE: when each job started and ended (the first start,
        # the last end, over retries), written at the summary. What the farm
        # model (bench/farmmodel.py) replays.
        self.timings_path = timings
        self.times: dict[int, list] = {}
        # placement() -> what the summary says after "N jobs on", in place of
        # the slots: a remote engine's hosts, retries and bytes moved.
        self.placement = placement
        self.quiet = quiet
        self.verbose = verbose
        self.stream = stream or sys.stderr
        # A live line on a terminal; one line per finished job when forced
        # with --progress into a log file. Not when the linker draws its own
        # on the same terminal (DTLTO_ENGINE_PROGRESS, docs/manifest.md).
        self.live = progress or (self.stream.isatty()
                                 and not os.environ.get("DTLTO_ENGINE_PROGRESS"))
        self.in_place = self.live and self.stream.isatty()
        self.total = 0
        self.done = 0
        # Streamed job records that could not be run (runner.take_feed):
        # failed jobs that never started.
        self.refused = 0
        self.start = time.monotonic()
        self._line_shown = False
        self.events = Events()
        # Where jobs run unless an engine says (JobResult.where, started()).
        self.worker = host_name()
        self._began: dict[int, float] = {}

    def elapsed(self, at: float | None = None) -> float:
        """Seconds since the run began: now, or at the time.time() at."""
        return _monotonic_at(at) - self.start

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
        self.note(f"error: {one_line(message)}")

    def verbose_note(self, message: str) -> None:
        if self.verbose:
            self.note(message)

    def begin(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.start = time.monotonic()

    @classmethod
    def for_args(cls, prog: str, args, **kwargs) -> "Reporter":
        """A reporter with the common options' settings (cli.py)."""
        return cls(prog, quiet=args.quiet, progress=args.progress,
                   verbose=args.verbose, timings=getattr(args, "timings", None),
                   **kwargs)

    def started(self, job, argv=None, worker: str | None = None,
                attempt: int | None = None, at: float | None = None) -> None:
        """A job (an attempt of it) began, at the time.time() at if that
        was before now; argv, when there is one, is what runs it.
        --timings keep the first start of each job."""
        self._began[job.index] = _monotonic_at(at)
        if self.timings_path:
            self.times.setdefault(job.index, [self.elapsed(at), None, ""])
        self.events.started(job.index, worker=worker or self.worker, attempt=attempt, t=at)
        if argv is not None:
            self.verbose_note(f"job {job.index}: {shlex.join(argv)}")

    def _ran_for(self, job, ended_at: float | None = None) -> float | None:
        began = self._began.pop(job.index, None)
        return None if began is None else max(0.0, _monotonic_at(ended_at) - began)

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

    def _ended(self, result) -> None:
        if self.timings_path:
            entry = self.times.setdefault(result.job.index, [None, None, ""])
            # Not before its start: a clock that says so is not believed.
            entry[1] = max(self.elapsed(result.ended_at), entry[0] or 0.0)
            entry[2] = getattr(result, "where", "") or ""

    def write_timings(self) -> None:
        """The --timings file: {"jobs": [{"index", "start", "end", "where"}]},
        seconds since the run began, in job order. Written whole, or not at
        all: a half-written file must not pass for a measurement."""
        if not self.timings_path:
            return
        jobs = [{"index": i, "start": t[0], "end": t[1], "where": t[2]}
                for i, t in sorted(self.times.items())]
        data = json.dumps({"tool": self.prog, "wall": self.elapsed(), "jobs": jobs})
        tmp = f"{self.timings_path}.{os.getpid()}.tmp"
        try:
            with open(tmp, "w") as f:
                f.write(data + "\n")
            os.replace(tmp, self.timings_path)
        except OSError as e:
            self.note(f"warning: cannot write the timings file "
                      f"{self.timings_path}: {e.strerror}")

    def finished(self, result) -> None:
        """A job succeeded: pass its output on, then show progress."""
        self._ended(result)
        self.events.done(result.job.index, worker=result.where or self.worker,
                         compile_s=self._ran_for(result.job, result.ended_at),
                         attempt=result.attempt, t=result.ended_at)
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
        self._ended(result)
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
        self.write_timings()
        self._clear_line()
        if not self.quiet:
            where = self.placement() if self.placement else slots
            self.note(f"{plural(self.total, 'job')} on {where}, {failed} failed, "
                      f"{self.elapsed():.1f} s")
        self.stream.flush()
