"""The linker's two channels (docs/manifest.md): events to it, jobs from it.

The one place in Python that knows their lines.

  Events    what happened to each job, written to DTLTO_EVENTS_FD as one
            JSON object per line: accepted, started (on a worker), done,
            failed, cancelled. Without the variable (a linker that opens no
            channel, or a run by hand) every call does nothing. Reporter
            owns one, so every distributor reports what it reports to the
            user.
  JobFeed   streaming: job records, cancels and the end, read from
            DTLTO_JOBS_FD without blocking; each record becomes a
            manifest.Job (checked as a manifest's job is) whose index is the
            id the engine gave it.

A distributor streams when its script has the line
`dtlto-stream-protocol: 1` near the top and uses JobFeed.from_environment;
the engine then gives it a manifest without jobs.
"""

import contextlib
import dataclasses
import json
import os
import threading
import time

from . import manifest as manifest_mod
from .manifest import Job, Manifest, ManifestError

EVENTS_VAR = "DTLTO_EVENTS_FD"
JOBS_VAR = "DTLTO_JOBS_FD"
MAX_LINE = 64 * 1024


def _fd_from(var: str, environ) -> int | None:
    text = environ.get(var, "")
    if not text.isdigit() or not text.isascii():
        return None
    fd = int(text)
    try:
        os.fstat(fd)
    except OSError:
        return None
    return fd


class Events:
    """Events for the linker; see the module doc. Never raises: a linker
    that stopped listening is no reason to fail a job."""

    def __init__(self, environ=None):
        environ = os.environ if environ is None else environ
        self._fd = _fd_from(EVENTS_VAR, environ)
        # Jobs whose last word is said (done, cancelled, a final failed).
        # A job thread may still report "started" after the main thread
        # cancelled that job; such a late event is dropped here, so each
        # job's events end with its final one whatever the threads do.
        self._closed: set[int] = set()
        self._lock = threading.Lock()
        self._batching = 0  # batch() depth
        self._batched: list[bytes] = []
        if self._fd is not None:
            # Ours alone: the jobs we start must not hold the pipe open.
            os.set_inheritable(self._fd, False)

    @property
    def enabled(self) -> bool:
        return self._fd is not None

    def _emit(self, job_id: int, event: str, final: bool = False,
              t: float | None = None, **fields) -> None:
        with self._lock:
            if self._fd is None or job_id in self._closed:
                return
            if final:
                self._closed.add(job_id)
            self._write(job_id, event, fields, t)

    @contextlib.contextmanager
    def batch(self):
        """The events emitted inside go out at its end, in one write: a
        distributor's turn that reports three jobs wakes the linker once.
        Only for code that does not block inside (the linker would wait)."""
        with self._lock:
            self._batching += 1
        try:
            yield
        finally:
            with self._lock:
                self._batching -= 1
                if not self._batching and self._batched:
                    self._send(b"".join(self._batched))
                    self._batched.clear()

    def _write(self, job_id: int, event: str, fields: dict, t: float | None) -> None:
        record = {"id": job_id, "event": event,
                  "t": round(time.time() if t is None else t, 6)}
        record.update({k: v for k, v in fields.items() if v is not None})
        line = (json.dumps(record, ensure_ascii=True) + "\n").encode()
        if len(line) > MAX_LINE:
            record.pop("reason", None)
            line = (json.dumps(record, ensure_ascii=True) + "\n").encode()
        if self._batching:
            self._batched.append(line)
        else:
            self._send(line)

    def _send(self, data: bytes) -> None:
        try:
            # Under the lock, whole lines: lines from one process never
            # interleave (a pipe write of up to PIPE_BUF bytes is atomic,
            # and longer ones come from this process alone).
            while data:
                data = data[os.write(self._fd, data):]
        except OSError:
            self._fd = None  # the linker is gone, or closed the channel

    def accepted(self, job_id: int) -> None:
        self._emit(job_id, "accepted")

    def started(self, job_id: int, worker: str | None = None,
                queue_s: float | None = None, upload_s: float | None = None,
                attempt: int | None = None, t: float | None = None) -> None:
        """t (here and in done): when it happened, time.time(), if not
        now: a batch worker's replies come in groups (workers.py), and the
        linker times its jobs (hedging) by the events' times."""
        self._emit(job_id, "started", t=t, worker=worker, queue_s=_secs(queue_s),
                   upload_s=_secs(upload_s), attempt=attempt)

    def done(self, job_id: int, worker: str | None = None,
             compile_s: float | None = None, download_s: float | None = None,
             attempt: int | None = None, t: float | None = None) -> None:
        self._emit(job_id, "done", final=True, t=t, worker=worker, compile_s=_secs(compile_s),
                   download_s=_secs(download_s), attempt=attempt)

    def failed(self, job_id: int, reason: str, retry: bool,
               worker: str | None = None, attempt: int | None = None) -> None:
        self._emit(job_id, "failed", final=not retry, reason=" ".join(reason.split())[:4096],
                   retry=retry, worker=worker, attempt=attempt)

    def cancelled(self, job_id: int) -> None:
        self._emit(job_id, "cancelled", final=True)


def _secs(value: float | None) -> float | None:
    return None if value is None else round(max(value, 0.0), 6)


class JobFeed:
    """Streaming input from the linker; see the module doc."""

    def __init__(self, m: Manifest, fd: int):
        self._manifest = m
        self._fd = fd
        os.set_blocking(fd, False)
        os.set_inheritable(fd, False)
        self._pending = b""
        # ended: no more jobs (the end record). closed: the channel is at its
        # end of file. Cancels may come after the end record, for jobs still
        # running (a hedged copy won in the linker): read until closed.
        self.ended = False
        self.closed = False
        self.cancelled: set[int] = set()
        # Records that could not be used: (their id, when it could be read,
        # or None; what is wrong).
        self.problems: list[tuple[int | None, str]] = []
        self._ids: set[int] = set()
        self._streamed = manifest_mod.StreamedJobs(m)

    @classmethod
    def from_environment(cls, m: Manifest, environ=None) -> "JobFeed | None":
        """The feed when the linker streams to us: its side file says so and
        the channel is open. None for a whole manifest."""
        environ = os.environ if environ is None else environ
        fd = _fd_from(JOBS_VAR, environ)
        if fd is None or not m.streaming:
            return None
        return cls(m, fd)

    def fileno(self) -> int:
        return self._fd

    def read(self) -> tuple[list[Job], list[int]]:
        """What has arrived: new jobs, and ids the linker cancelled. Sets
        ended at the end record, ended and closed when the linker closed the
        channel."""
        jobs, cancels = [], []
        while not self.closed:
            try:
                chunk = os.read(self._fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                chunk = b""
            if not chunk:
                if self._pending.strip():
                    # The linker writes whole lines: it died writing this one.
                    self.problems.append((None, "a job record cut short by the end of "
                                                "the channel (no end of line)"))
                self._pending = b""
                self.ended = self.closed = True
                break
            self._pending += chunk
            *lines, self._pending = self._pending.split(b"\n")
            for line in lines:
                self._line(line, jobs, cancels)
            if len(self._pending) > MAX_LINE * 16:
                self.problems.append((None, "a job record without an end of line"))
                self._pending = b""
        return jobs, cancels

    def _line(self, line: bytes, jobs: list, cancels: list) -> None:
        if not line.strip():
            return
        try:
            record = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            self.problems.append((None, f"a job record that is not JSON: {line[:80]!r}"))
            return
        if not isinstance(record, dict):
            self.problems.append((None, "a job record that is not a JSON object"))
        elif record.get("end") is True:
            self.ended = True
        elif "cancel" in record:
            job_id = record["cancel"]
            if isinstance(job_id, int) and not isinstance(job_id, bool):
                self.cancelled.add(job_id)
                cancels.append(job_id)
        else:
            job = self._job(record)
            if job is not None:
                jobs.append(job)

    def _job(self, record: dict) -> Job | None:
        job_id = record.get("id")
        if not isinstance(job_id, int) or isinstance(job_id, bool) or job_id < 0 \
                or job_id in self._ids:
            self.problems.append((None, f"a job record with a bad or repeated id: {job_id!r}"))
            return None
        self._ids.add(job_id)
        m = self._manifest
        # Checked by the manifest's own rules, as a one-job manifest.
        fields = {k: record[k] for k in ("args", "inputs", "outputs") if k in record}
        data = {"common": {"linker_output": m.linker_output, "args": m.common_args,
                           "inputs": m.common_inputs},
                "jobs": [fields]}
        name = f"job record {job_id}"
        try:
            parsed = manifest_mod.parse(data, name, key=self._streamed.key).jobs[0]
            job = dataclasses.replace(parsed, index=job_id)
            # And by the rules across jobs and on disk that load() applies
            # to a whole manifest.
            self._streamed.check(job, name)
        except ManifestError as e:
            self.problems.append((job_id, str(e)))
            return None
        size = record.get("input_bytes")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            size = None
        return dataclasses.replace(job, input_bytes=size)
