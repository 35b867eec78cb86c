"""The REAPI client: endpoints, the CAS, the action cache, execution.

One Session per run, shared by the job threads. Every call goes through
Session, which adds the request metadata every REAPI server expects (Bazel's
worker refuses calls without it) and the user's credential headers, keeps
the byte counters, classifies failures, and can cancel everything in flight
when the run stops (first failure, Ctrl-C), or one job's calls when the
linker cancels that job (a JobCancel, see Session.job).

What counts as transient, and is retried elsewhere: UNAVAILABLE (the server
is unreachable, the connection was reset, the worker went away; but not a
TLS handshake or certificate failure, which is a setup error), ABORTED and
RESOURCE_EXHAUSTED, a stream cut by the network, a corrupt download, and
blobs the server lost (FAILED_PRECONDITION/NOT_FOUND: upload again). A
compiler error is an ActionResult with a non-zero exit code, never an RPC
error, and is never retried.
"""

import contextlib
import hashlib
import threading
import uuid

from .tree import EMPTY, Blob, Digest, show

REQUEST_METADATA_KEY = "build.bazel.remote.execution.v2.requestmetadata-bin"
# gRPC's default receive limit; servers that say nothing get this much.
DEFAULT_BATCH_LIMIT = 4 << 20
# Room for the request's own fields around each blob in a batch.
PER_BLOB_OVERHEAD = 256
BYTESTREAM_CHUNK = 1 << 20
FIND_MISSING_CHUNK = 4096
SCHEMES = ("grpc://", "grpcs://", "unix:")


class RemoteError(Exception):
    """A failed remote operation. str() is one line for the user."""

    def __init__(self, message: str, transient: bool = False, lost_blobs: bool = False,
                 code: str = ""):
        super().__init__(message)
        self.transient = transient
        self.lost_blobs = lost_blobs  # the server misses blobs it had or should have
        self.code = code


class Stopped(Exception):
    """The run is stopping; the call was cancelled on purpose."""


class JobCancel:
    """One job's cancellation, for the job's thread and the main thread.

    The main thread's Session.cancel_job() sets it and cancels the job's
    calls in flight; from then on each call of the job raises Stopped, and
    Session.committing() refuses to write its outputs: after cancel_job()
    returns, nothing of the job is written any more.
    """

    def __init__(self):
        self.lock = threading.Lock()
        self.cancelled = False
        self.committed = False  # its outputs are written: too late to cancel
        self.calls = set()
        self.operation: tuple | None = None  # (endpoint, name) of its Execute


class BadConfig(Exception):
    """A bad endpoint or TLS option. str() is one line."""


def parse_endpoint(url: str) -> tuple[str, bool, str]:
    """(gRPC target, use TLS, name to show) for an --endpoint value."""
    if url.startswith("grpcs://"):
        target, secure = url[len("grpcs://"):], True
    elif url.startswith("grpc://"):
        target, secure = url[len("grpc://"):], False
    elif url.startswith("unix:"):
        return url, False, url
    elif "://" in url:
        raise BadConfig(f'--endpoint "{url}": unknown scheme; use grpc://HOST:PORT, '
                        "grpcs://HOST:PORT or unix:PATH")
    else:
        # As in Bazel: no scheme means TLS.
        target, secure = url, True
    target = target.rstrip("/")
    host, sep, port = target.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise BadConfig(f'--endpoint "{url}": expected HOST:PORT after the scheme')
    return target, secure, url


class Endpoint:
    def __init__(self, g, url: str, index: int, tls: dict, channel_options: list):
        self.url = url
        self.index = index
        target, self.secure, self.name = parse_endpoint(url)
        grpc = g.grpc
        if self.secure:
            creds = grpc.ssl_channel_credentials(
                root_certificates=tls.get("ca"), private_key=tls.get("key"),
                certificate_chain=tls.get("cert"))
            self.channel = grpc.secure_channel(target, creds, options=channel_options)
        else:
            self.channel = grpc.insecure_channel(target, options=channel_options)
        self.cas = g.re_grpc.ContentAddressableStorageStub(self.channel)
        self.ac = g.re_grpc.ActionCacheStub(self.channel)
        self.exec = g.re_grpc.ExecutionStub(self.channel)
        self.caps = g.re_grpc.CapabilitiesStub(self.channel)
        self.bytestream = g.bs_grpc.ByteStreamStub(self.channel)
        self.lock = threading.Lock()
        self.present: set[Digest] = set()  # blobs we know the CAS has
        self.inflight: dict[Digest, threading.Event] = {}
        self.known = False  # capabilities read
        self.exec_enabled = True
        self.batch_limit = DEFAULT_BATCH_LIMIT
        self.down_until = 0.0
        self.failures = 0
        self.running = 0
        self.dispatched = 0
        self.executed = 0
        self.cache_hits = 0

    def close(self):
        self.channel.close()


def _code_name(code) -> str:
    return getattr(code, "name", str(code))


class Session:
    def __init__(self, g, endpoints: list[Endpoint], instance: str, headers: list,
                 target: str, rpc_timeout: float, max_batch: int | None, version: str):
        self.g = g
        self.re = g.re
        self.endpoints = endpoints
        self.instance = instance
        self.headers = headers
        self.target = target
        self.rpc_timeout = rpc_timeout
        self.max_batch = max_batch
        self.version = version
        self.invocation = str(uuid.uuid4())
        self.stop = threading.Event()
        self._calls = set()
        self._lock = threading.Lock()
        self._job = threading.local()  # .cancel: the JobCancel of this thread's job
        self.bytes_up = 0
        self.bytes_down = 0
        self.bytestream_uploads = 0

    # --- calls, metadata, cancellation -----------------------------------

    def metadata(self, action: Digest | None = None) -> list:
        re = self.re
        md = re.RequestMetadata(
            tool_details=re.ToolDetails(tool_name="dtlto-reapi", tool_version=self.version),
            action_id=action[0] if action else "",
            tool_invocation_id=self.invocation,
            action_mnemonic="ThinLTOBackend",
            target_id=self.target)
        return [(REQUEST_METADATA_KEY, md.SerializeToString())] + self.headers

    @contextlib.contextmanager
    def job(self, cancel: JobCancel):
        """The calls made in this block, on this thread, are cancel's job's."""
        self._job.cancel = cancel
        try:
            yield
        finally:
            self._job.cancel = None

    def _cancel(self) -> JobCancel | None:
        return getattr(self._job, "cancel", None)

    def stopping(self) -> bool:
        """Is the run stopping, or this thread's job cancelled?"""
        cancel = self._cancel()
        return self.stop.is_set() or (cancel is not None and cancel.cancelled)

    def _track(self, call):
        cancel = self._cancel()
        with self._lock:
            if self.stopping():
                call.cancel()
                raise Stopped()
            self._calls.add(call)
        if cancel is not None:
            with cancel.lock:
                if cancel.cancelled:
                    call.cancel()
                    raise Stopped()
                cancel.calls.add(call)

    def _untrack(self, call):
        with self._lock:
            self._calls.discard(call)
        cancel = self._cancel()
        if cancel is not None:
            with cancel.lock:
                cancel.calls.discard(call)

    def cancel_all(self) -> None:
        self.stop.set()
        with self._lock:
            calls = list(self._calls)
        for call in calls:
            call.cancel()

    def cancel_job(self, cancel: JobCancel) -> bool:
        """The linker cancelled a job (main thread): its calls in flight are
        cancelled, its outputs will not be written, and a server that
        implements google.longrunning.Operations is asked to cancel its
        action (without waiting for the answer). False when it is too late:
        the job has written its outputs."""
        with cancel.lock:
            if cancel.committed:
                return False
            cancel.cancelled = True
            calls = list(cancel.calls)
            operation = cancel.operation
        for call in calls:
            call.cancel()
        if operation is not None:
            ep, name = operation
            try:
                ops = self.g.ops_grpc.OperationsStub(ep.channel)
                future = ops.CancelOperation.future(self.g.ops.CancelOperationRequest(name=name),
                                                    metadata=self.metadata(),
                                                    timeout=self.rpc_timeout)
                # UNIMPLEMENTED (Bazel's worker) or any other answer: nothing to do.
                future.add_done_callback(lambda f: f.exception())
            except Exception:  # noqa: BLE001 - an optional courtesy to the server
                pass
        return True

    @contextlib.contextmanager
    def committing(self):
        """Around writing a job's outputs to their final paths: raises
        Stopped, before anything is written, once the job is cancelled,
        and keeps cancel_job() waiting until the writes are done."""
        cancel = self._cancel()
        if cancel is None:
            if self.stop.is_set():
                raise Stopped()
            yield
            return
        with cancel.lock:
            if cancel.cancelled or self.stop.is_set():
                raise Stopped()
            yield
            cancel.committed = True

    def error(self, e, ep: Endpoint, what: str) -> Exception:
        """Turn a grpc.RpcError into RemoteError (or Stopped)."""
        grpc = self.g.grpc
        code = e.code() if hasattr(e, "code") else None
        details = (e.details() if hasattr(e, "details") else str(e)) or ""
        if self.stopping() and code == grpc.StatusCode.CANCELLED:
            return Stopped()
        return classify(_code_name(code), details, f"{what} on {ep.name}")

    def unary(self, ep: Endpoint, what: str, method, request, action=None, timeout=None):
        grpc = self.g.grpc
        if self.stopping():
            raise Stopped()
        future = method.future(request, metadata=self.metadata(action),
                               timeout=timeout or self.rpc_timeout)
        self._track(future)
        try:
            return future.result()
        except grpc.FutureCancelledError:
            raise Stopped() from None
        except grpc.RpcError as e:
            raise self.error(e, ep, what) from None
        finally:
            self._untrack(future)

    def stream(self, ep: Endpoint, what: str, method, request, action=None, timeout=None):
        """Iterate over a server-streaming call."""
        grpc = self.g.grpc
        if self.stopping():
            raise Stopped()
        call = method(request, metadata=self.metadata(action), timeout=timeout)
        self._track(call)
        try:
            yield from call
        except grpc.RpcError as e:
            raise self.error(e, ep, what) from None
        finally:
            call.cancel()  # no-op when it completed; frees it when we stop early
            self._untrack(call)

    # --- capabilities ------------------------------------------------------

    def capabilities(self, ep: Endpoint) -> None:
        """Read what the endpoint can do, once it answers."""
        if ep.known:
            return
        re = self.re
        try:
            caps = self.unary(ep, "GetCapabilities", ep.caps.GetCapabilities,
                              re.GetCapabilitiesRequest(instance_name=self.instance))
        except RemoteError as e:
            if e.code != "UNIMPLEMENTED":
                raise
            caps = None  # a server without Capabilities: assume the defaults
        if caps is not None:
            sha256 = re.DigestFunction.SHA256
            cc = caps.cache_capabilities
            # Named digest_function in the v2.0 protos Debian has, digest_functions later.
            offered = getattr(cc, "digest_functions", None) or getattr(cc, "digest_function", [])
            if offered and sha256 not in offered:
                raise RemoteError(f"{ep.name} does not offer SHA-256 digests, "
                                  "the only digest function we use")
            ep.exec_enabled = (caps.HasField("execution_capabilities")
                               and caps.execution_capabilities.exec_enabled)
            if cc.max_batch_total_size_bytes:
                ep.batch_limit = min(ep.batch_limit, cc.max_batch_total_size_bytes)
        if self.max_batch:
            ep.batch_limit = min(ep.batch_limit, self.max_batch)
        ep.known = True

    # --- the CAS -------------------------------------------------------------

    def _resource(self, rest: str) -> str:
        return f"{self.instance}/{rest}" if self.instance else rest

    def _pb_digest(self, d: Digest):
        return self.re.Digest(hash=d[0], size_bytes=d[1])

    def find_missing(self, ep: Endpoint, digests: list[Digest], action=None) -> set[Digest]:
        re = self.re
        missing = set()
        for i in range(0, len(digests), FIND_MISSING_CHUNK):
            part = digests[i:i + FIND_MISSING_CHUNK]
            resp = self.unary(ep, "FindMissingBlobs", ep.cas.FindMissingBlobs,
                              re.FindMissingBlobsRequest(
                                  instance_name=self.instance,
                                  blob_digests=[self._pb_digest(d) for d in part]),
                              action)
            missing.update((d.hash, d.size_bytes) for d in resp.missing_blob_digests)
        return missing

    def upload(self, ep: Endpoint, blobs: list[Blob], action=None, note=None) -> None:
        budget = ep.batch_limit - 1024
        small = [b for b in blobs if b.digest[1] + PER_BLOB_OVERHEAD <= budget]
        large = [b for b in blobs if b.digest[1] + PER_BLOB_OVERHEAD > budget]
        batch, used = [], 0
        for blob in small + [None]:
            if blob is None or (batch and used + blob.digest[1] + PER_BLOB_OVERHEAD > budget):
                if batch:
                    self._batch_update(ep, batch, action)
                batch, used = [], 0
            if blob is not None:
                batch.append(blob)
                used += blob.digest[1] + PER_BLOB_OVERHEAD
        for blob in large:
            self._bytestream_write(ep, blob, action)
            if note:
                note(f"uploaded {show(blob.digest)} to {ep.name} through ByteStream")

    def _batch_update(self, ep, blobs, action):
        re = self.re
        try:
            requests = [re.BatchUpdateBlobsRequest.Request(
                digest=self._pb_digest(b.digest), data=b.read()) for b in blobs]
        except OSError as e:
            raise RemoteError(str(e)) from None
        resp = self.unary(ep, "BatchUpdateBlobs", ep.cas.BatchUpdateBlobs,
                          re.BatchUpdateBlobsRequest(instance_name=self.instance,
                                                     requests=requests), action)
        for r in resp.responses:
            if r.status.code != 0:
                raise classify(_status_name(r.status.code), r.status.message,
                               f"uploading {r.digest.hash}/{r.digest.size_bytes} to {ep.name}")
        with self._lock:
            self.bytes_up += sum(b.digest[1] for b in blobs)

    def _bytestream_write(self, ep, blob: Blob, action):
        bs = self.g.bs
        grpc = self.g.grpc
        resource = self._resource(f"uploads/{uuid.uuid4()}/blobs/{blob.digest[0]}/{blob.digest[1]}")
        problem = []

        def requests():
            offset = 0
            pending = None
            try:
                for chunk in blob.chunks(BYTESTREAM_CHUNK):
                    if pending is not None:
                        yield pending
                    pending = bs.WriteRequest(resource_name=resource if offset == 0 else "",
                                              write_offset=offset, data=chunk)
                    offset += len(chunk)
            except OSError as e:
                problem.append(str(e))
                return
            pending.finish_write = True
            yield pending

        if self.stopping():
            raise Stopped()
        timeout = self.rpc_timeout + blob.digest[1] / (1 << 20)
        future = ep.bytestream.Write.future(requests(), metadata=self.metadata(action),
                                            timeout=timeout)
        self._track(future)
        try:
            resp = future.result()
        except grpc.FutureCancelledError:
            raise Stopped() from None
        except grpc.RpcError as e:
            if problem:
                raise RemoteError(problem[0]) from None
            raise self.error(e, ep, "ByteStream.Write") from None
        finally:
            self._untrack(future)
        if problem:
            raise RemoteError(problem[0])
        if resp.committed_size not in (blob.digest[1], -1):
            raise RemoteError(f"{ep.name} committed {resp.committed_size} of "
                              f"{blob.digest[1]} bytes of {show(blob.digest)}", transient=True)
        with self._lock:
            self.bytes_up += blob.digest[1]
            self.bytestream_uploads += 1

    def ensure(self, ep: Endpoint, blobs: dict[Digest, Blob], action=None, note=None) -> int:
        """Make sure the endpoint's CAS has every blob; upload only what it
        lacks, each blob once even when several jobs need it at the same
        time. Returns the number of blobs uploaded."""
        mine, theirs = [], []
        with ep.lock:
            for d in blobs:
                if d == EMPTY or d in ep.present:
                    continue  # the empty blob is always there, by the spec
                if d in ep.inflight:
                    theirs.append(ep.inflight[d])
                else:
                    ep.inflight[d] = threading.Event()
                    mine.append(d)
        uploaded = 0
        try:
            if mine:
                missing = self.find_missing(ep, mine, action)
                todo = [blobs[d] for d in mine if d in missing]
                self.upload(ep, todo, action, note)
                uploaded = len(todo)
                with ep.lock:
                    ep.present.update(mine)
        finally:
            with ep.lock:
                for d in mine:
                    ep.inflight.pop(d).set()
        for event in theirs:
            while not event.wait(0.2):
                if self.stopping():
                    raise Stopped()
        with ep.lock:
            lost = [d for d in blobs if d != EMPTY and d not in ep.present]
        if lost:  # another job's upload failed: do it ourselves
            uploaded += self.ensure(ep, {d: blobs[d] for d in lost}, action, note)
        return uploaded

    def forget(self, ep: Endpoint, blobs) -> None:
        """The server lost blobs: check them all again next time."""
        with ep.lock:
            ep.present.difference_update(blobs)

    def read(self, ep: Endpoint, d: Digest, sink, action=None) -> None:
        """Stream a blob into sink(bytes), then check its size and SHA-256."""
        if d == EMPTY:
            return
        bs = self.g.bs
        h = hashlib.sha256()
        n = 0
        req = bs.ReadRequest(resource_name=self._resource(f"blobs/{d[0]}/{d[1]}"))
        timeout = self.rpc_timeout + d[1] / (1 << 20)
        for resp in self.stream(ep, "ByteStream.Read", ep.bytestream.Read, req, action, timeout):
            h.update(resp.data)
            n += len(resp.data)
            if n > d[1]:
                break
            sink(resp.data)
        with self._lock:
            self.bytes_down += n
        if (h.hexdigest(), n) != d:
            raise RemoteError(f"download of {show(d)} from {ep.name} does not match its "
                              f"digest (got {n} bytes, sha256 {h.hexdigest()[:16]}...)",
                              transient=True)

    def read_bytes(self, ep: Endpoint, d: Digest, action=None) -> bytes:
        parts = []
        self.read(ep, d, parts.append, action)
        return b"".join(parts)

    # --- action cache and execution ---------------------------------------

    def cached_result(self, ep: Endpoint, action: Digest):
        """The action cache's successful result for the action, or None."""
        re = self.re
        try:
            result = self.unary(ep, "GetActionResult", ep.ac.GetActionResult,
                                re.GetActionResultRequest(
                                    instance_name=self.instance,
                                    action_digest=self._pb_digest(action),
                                    inline_stdout=True, inline_stderr=True), action)
        except RemoteError as e:
            if e.code == "NOT_FOUND":
                return None
            raise
        # Only a success is worth reusing; a failure is run again.
        return result if result.exit_code == 0 else None

    def execute(self, ep: Endpoint, action: Digest, skip_cache_lookup: bool, timeout=None):
        """Run the action; return its ExecuteResponse (status OK)."""
        re = self.re
        request = re.ExecuteRequest(instance_name=self.instance,
                                    action_digest=self._pb_digest(action),
                                    skip_cache_lookup=skip_cache_lookup)
        name = ""
        cancel = self._cancel()
        try:
            for op in self.stream(ep, "Execute", ep.exec.Execute, request, action, timeout):
                if op.name and op.name != name and cancel is not None:
                    with cancel.lock:
                        cancel.operation = ep, op.name
                name = op.name or name
                if op.done:
                    return self._finished(ep, op)
        except RemoteError as e:
            if not (e.transient and name) or self.stopping():
                raise
            first = e
        else:
            first = RemoteError(f"Execute on {ep.name}: the stream ended before the "
                                "action finished", transient=True)
            if not name:
                raise first
        # The stream broke but the operation may still be running: ask for it
        # by name once before giving the action up on this endpoint.
        try:
            for op in self.stream(ep, "WaitExecution", ep.exec.WaitExecution,
                                  re.WaitExecutionRequest(name=name), action, timeout):
                if op.done:
                    return self._finished(ep, op)
        except RemoteError:
            pass
        raise first

    def _finished(self, ep: Endpoint, op):
        re = self.re
        if op.HasField("error") and op.error.code != 0:
            raise _status_error(op.error, f"Execute on {ep.name}")
        resp = re.ExecuteResponse()
        if not op.response.Unpack(resp):
            raise RemoteError(f"Execute on {ep.name}: the operation's response is not "
                              "an ExecuteResponse")
        if resp.status.code != 0:
            raise _status_error(resp.status, f"Execute on {ep.name}")
        return resp


_STATUS_NAMES = {0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT",
                 4: "DEADLINE_EXCEEDED", 5: "NOT_FOUND", 6: "ALREADY_EXISTS",
                 7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED", 9: "FAILED_PRECONDITION",
                 10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED", 13: "INTERNAL",
                 14: "UNAVAILABLE", 15: "DATA_LOSS", 16: "UNAUTHENTICATED"}


def _status_name(code: int) -> str:
    return _STATUS_NAMES.get(code, str(code))


def _status_error(status, what: str) -> RemoteError:
    return classify(_status_name(status.code), status.message, what)


# Words in a gRPC error that mean the transport broke under a call.
_BROKEN_STREAM = ("rst_stream", "stream removed", "socket closed", "connection reset",
                  "broken pipe", "goaway", "eof")
# ... and words that mean TLS is set up wrong: retrying will not help.
_TLS_SETUP = ("handshake", "certificate", "ssl", "tls")


def classify(code: str, details: str, what: str) -> RemoteError:
    text = " ".join(details.split())
    message = f"{what}: {code}" + (f": {text}" if text else "")
    low = text.lower()
    if code == "UNAVAILABLE" and any(w in low for w in _TLS_SETUP):
        return RemoteError(message + " (check --endpoint's scheme and the --tls-* options)",
                           code=code)
    if code in ("UNAVAILABLE", "ABORTED", "RESOURCE_EXHAUSTED"):
        return RemoteError(message, transient=True, code=code)
    if code in ("INTERNAL", "UNKNOWN") and any(w in low for w in _BROKEN_STREAM):
        return RemoteError(message, transient=True, code=code)
    if code in ("FAILED_PRECONDITION", "NOT_FOUND") and what.startswith("Execute"):
        return RemoteError(message, transient=True, lost_blobs=True, code=code)
    if code == "UNAUTHENTICATED":
        message += " (check the --credentials-* options)"
    elif code == "PERMISSION_DENIED":
        message += " (check the credentials and --instance-name)"
    return RemoteError(message, code=code)
