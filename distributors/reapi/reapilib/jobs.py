"""Running one job: action cache first, then execution, with bounded retries.

For each attempt:
  1. Ask the action cache of every endpoint that answers (they may be
     separate clusters with separate caches), the one that is least busy
     first; a successful cached result whose outputs all download is the
     job's result, and nothing runs.
  2. Otherwise pick the least busy endpoint that can execute and is not in
     back-off, preferring another one than the attempt before; upload what
     its CAS lacks; execute; download and check the outputs.
A transient failure (see client.py) puts the endpoint in back-off (0.5 s,
doubling up to 30 s, reset by a success) and tries again, at most
`retries` more times. A compiler error or a refused result ends the job.
"""

import threading
import time
from dataclasses import dataclass

from .action import Plan
from .client import Endpoint, RemoteError, Session, Stopped
from .outputs import MISSING_OUTPUT, fetch
from .tree import EMPTY, show

BACKOFF_FIRST = 0.5
BACKOFF_MAX = 30.0


@dataclass
class Outcome:
    endpoint: Endpoint
    cached: bool
    attempts: int
    stdout: bytes = b""
    stderr: bytes = b""
    worker: str = ""  # the server's name for the worker that ran it, if it says

    @property
    def where(self) -> str:
        """'grpc://10.0.0.2:8980', or with the server's worker name
        'grpc://10.0.0.2:8980 (worker w1)'."""
        return self.endpoint.name + (f" (worker {self.worker})" if self.worker else "")


class JobFailed(Exception):
    """The job's final failure. exit_code is set for a compiler error."""

    def __init__(self, message: str, attempts: int, endpoint: Endpoint | None = None,
                 exit_code: int | None = None, stdout=b"", stderr=b""):
        super().__init__(message)
        self.attempts = attempts
        self.endpoint = endpoint
        self.exit_code = exit_code
        self.stdout = stdout
        self.stderr = stderr


class Pool:
    """Which endpoint runs the next action: least busy, not in back-off."""

    def __init__(self, endpoints: list[Endpoint], stopping):
        self.endpoints = endpoints
        self.stopping = stopping  # () -> whether the run stops or the caller's job is cancelled
        self.cond = threading.Condition()

    def by_load(self) -> list[Endpoint]:
        """Endpoints not in back-off, least busy first."""
        now = time.monotonic()
        with self.cond:
            up = [e for e in self.endpoints if e.down_until <= now]
            return sorted(up, key=lambda e: (e.running, e.index))

    def acquire(self, avoid: Endpoint | None) -> Endpoint:
        with self.cond:
            while True:
                if self.stopping():
                    raise Stopped()
                able = [e for e in self.endpoints if not e.known or e.exec_enabled]
                if not able:
                    raise RemoteError("no endpoint can execute actions (their "
                                      "capabilities say execution is disabled)")
                now = time.monotonic()
                up = [e for e in able if e.down_until <= now]
                if avoid is not None and len(up) > 1:
                    up = [e for e in up if e is not avoid]
                if up:
                    # Least busy; among equals the one given the fewest
                    # actions so far, so that short jobs spread too.
                    e = min(up, key=lambda e: (e.running, e.dispatched, e.index))
                    e.running += 1
                    e.dispatched += 1
                    return e
                # In slices, so that a stopping run is noticed soon.
                self.cond.wait(min(0.2, min(e.down_until for e in able) - now))

    def release(self, e: Endpoint) -> None:
        with self.cond:
            e.running -= 1
            self.cond.notify_all()

    def failed(self, e: Endpoint) -> None:
        with self.cond:
            now = time.monotonic()
            if e.down_until > now:
                return  # calls that were under way when it went down: same outage
            e.failures += 1
            e.down_until = now + min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** (e.failures - 1))

    def succeeded(self, e: Endpoint) -> None:
        with self.cond:
            e.failures = 0


def _quiet(*args) -> None:
    pass


class JobRunner:
    """Runs jobs (run(), on a job thread). started(plan, endpoint, attempt)
    is called when an attempt goes to an endpoint, retrying(plan, error,
    attempt, endpoint) when one failed and the job runs again: both from
    the job's thread."""

    def __init__(self, session: Session, pool: Pool, retries: int,
                 skip_cache_lookup: bool, exec_timeout: float | None, note,
                 started=_quiet, retrying=_quiet):
        self.session = session
        self.pool = pool
        self.retries = retries
        self.skip_cache_lookup = skip_cache_lookup
        self.exec_timeout = exec_timeout
        self.note = note  # verbose note, thread-safe
        self.started = started
        self.retrying = retrying
        self.lock = threading.Lock()
        self.retried = 0

    def run(self, plan: Plan) -> Outcome:
        job = plan.job
        attempt = 0
        last = None
        while True:
            attempt += 1
            try:
                return self._attempt(plan, attempt, last)
            except RemoteError as e:
                if not e.transient:
                    raise JobFailed(str(e), attempt, getattr(e, "endpoint", None)) from None
                if attempt > self.retries:
                    tries = "1 attempt" if attempt == 1 else f"{attempt} attempts"
                    raise JobFailed(f"{e} (gave up after {tries})", attempt,
                                    getattr(e, "endpoint", None)) from None
                last = getattr(e, "endpoint", None)
                with self.lock:
                    self.retried += 1
                self.retrying(plan, e, attempt, last)
                self.note(f"job {job.index}: {e}; retrying ({attempt} of "
                          f"{self.retries + 1} attempts made)")
            except OSError as e:
                raise JobFailed(f"cannot write its output: {e}", attempt) from None

    def _attempt(self, plan: Plan, attempt: int, last: Endpoint | None) -> Outcome:
        s = self.session
        job = plan.job
        if not self.skip_cache_lookup:
            hit = self._from_cache(plan, attempt)
            if hit:
                return hit
        ep = self.pool.acquire(last)
        self.started(plan, ep, attempt)
        try:
            try:
                s.capabilities(ep)
                if not ep.exec_enabled:
                    raise RemoteError(f"{ep.name} does not execute actions",
                                      transient=True)
                uploaded = s.ensure(ep, plan.blobs, plan.action, self.note)
                self.note(f"job {job.index}: executing action {show(plan.action)} on "
                          f"{ep.name} ({uploaded} blobs uploaded)")
                resp = s.execute(ep, plan.action, self.skip_cache_lookup, self.exec_timeout)
                with ep.lock:
                    if resp.cached_result:
                        ep.cache_hits += 1
                    else:
                        ep.executed += 1
                result = resp.result
                stdout, stderr = self._logs(ep, result, plan)
                if result.exit_code != 0:
                    raise JobFailed(f"failed with exit code {result.exit_code}", attempt,
                                    ep, result.exit_code, stdout, stderr)
                fetch(s, ep, plan, result)
            except RemoteError as e:
                e.endpoint = ep
                if e.lost_blobs:
                    s.forget(ep, plan.blobs)
                elif e.transient:
                    self.pool.failed(ep)
                raise
            self.pool.succeeded(ep)
            meta = getattr(result, "execution_metadata", None)
            return Outcome(ep, resp.cached_result, attempt, stdout, stderr,
                           getattr(meta, "worker", "") or "")
        finally:
            self.pool.release(ep)

    def _from_cache(self, plan: Plan, attempt: int) -> Outcome | None:
        s = self.session
        for ep in self.pool.by_load():
            try:
                s.capabilities(ep)
                result = s.cached_result(ep, plan.action)
                if result is None:
                    continue
                stdout, stderr = self._logs(ep, result, plan)
                fetch(s, ep, plan, result)
            except RemoteError as e:
                if e.code in ("NOT_FOUND", MISSING_OUTPUT):
                    # An entry naming outputs its CAS no longer has, or
                    # without the outputs: not usable, so a miss.
                    self.note(f"job {plan.job.index}: stale cache entry on {ep.name}: {e}")
                    continue
                if not e.transient:
                    e.endpoint = ep
                    raise  # a refused result, bad credentials: say so
                # Unreachable, or a download went wrong: not a cache hit.
                self.pool.failed(ep)
                self.note(f"job {plan.job.index}: no cache answer from {ep.name}: {e}")
                continue
            with ep.lock:
                ep.cache_hits += 1
            self.note(f"job {plan.job.index}: action {show(plan.action)} found in the "
                      f"action cache of {ep.name}")
            return Outcome(ep, True, attempt, stdout, stderr)
        return None

    def _logs(self, ep: Endpoint, result, plan: Plan) -> tuple[bytes, bytes]:
        s = self.session
        out = []
        for raw, digest in ((result.stdout_raw, result.stdout_digest),
                            (result.stderr_raw, result.stderr_digest)):
            d = (digest.hash, digest.size_bytes)
            if raw or not digest.hash or d == EMPTY:
                out.append(raw)
            else:
                out.append(s.read_bytes(ep, d, plan.action))
        return out[0], out[1]
