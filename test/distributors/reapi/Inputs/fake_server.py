"""A deliberately hostile REAPI server, for the one thing a real worker will
not do: return results that try to write outside the job's outputs.

  fake_server.py --socket PATH --stubs DIR --mode-file FILE

Serves Capabilities, CAS (every blob "present", uploads accepted), the
action cache, Execution, ByteStream.Read and Operations.CancelOperation
(logged; a hung Execute then ends its stream with CANCELLED) on a Unix
socket. What the
action cache or Execute returns depends on the first line of FILE, read at
each call: "<where> <what>" with where "cache" (a poisoned action cache
entry) or "exec" (a malicious executor), and what one of

  good        the declared output, honestly (the control case)
  dotdot      an output named "../escaped.o"
  absolute    an output named "<dir of FILE>/absolute-escape.o"
  symlink     the declared output as a symlink to /etc/passwd
  undeclared  the declared output plus "undeclared.o"
  directory   an output directory
  missing     no output at all
  corrupt     the declared output, but ByteStream sends other bytes
  hang        (exec only) never finishes, until the client cancels
  plant       (exec only; the line goes on with LINK TARGET) first makes
              LINK a symlink to TARGET, as if planted after the client
              checked its outputs, then answers as "good"
Everything it serves is logged to FILE.log, one line per call.
"""

import argparse
import hashlib
import os
import sys
import time
from concurrent import futures

CONTENT = b"\x7fELF pretend object\n"
EVIL = b"#!/bin/sh\necho owned\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--socket", required=True)
    p.add_argument("--stubs", required=True)
    p.add_argument("--mode-file", required=True)
    args = p.parse_args()
    sys.path.insert(0, args.stubs)
    import grpc
    from build.bazel.remote.execution.v2 import remote_execution_pb2 as re
    from build.bazel.remote.execution.v2 import remote_execution_pb2_grpc as re_grpc
    from google.bytestream import bytestream_pb2 as bs
    from google.bytestream import bytestream_pb2_grpc as bs_grpc
    from google.longrunning import operations_pb2 as ops
    from google.longrunning import operations_pb2_grpc as ops_grpc
    from google.protobuf import empty_pb2
    import threading
    cancelled_ops = set()
    cancelled_cond = threading.Condition()

    def digest(data):
        return re.Digest(hash=hashlib.sha256(data).hexdigest(), size_bytes=len(data))

    blobs = {digest(CONTENT).hash: CONTENT, digest(EVIL).hash: EVIL}
    logf = open(args.mode_file + ".log", "a", buffering=1)

    def mode():
        with open(args.mode_file) as f:
            return f.readline().split()

    def result(what):
        r = re.ActionResult(exit_code=0)
        out = ".dtlto-reapi/object.o"
        if what == "good":
            r.output_files.add(path=out, digest=digest(CONTENT))
        elif what == "dotdot":
            r.output_files.add(path=out, digest=digest(CONTENT))
            r.output_files.add(path="../escaped.o", digest=digest(EVIL))
        elif what == "absolute":
            target = os.path.join(os.path.dirname(os.path.abspath(args.mode_file)),
                                  "absolute-escape.o")
            r.output_files.add(path=target, digest=digest(EVIL))
        elif what == "symlink":
            r.output_file_symlinks.add(path=out, target="/etc/passwd")
        elif what == "undeclared":
            r.output_files.add(path=out, digest=digest(CONTENT))
            r.output_files.add(path="undeclared.o", digest=digest(EVIL))
        elif what == "directory":
            r.output_directories.add(path=".dtlto-reapi", tree_digest=digest(b"tree"))
        elif what == "missing":
            pass
        elif what == "corrupt":
            r.output_files.add(path=out, digest=re.Digest(
                hash=hashlib.sha256(b"something else").hexdigest(), size_bytes=len(CONTENT)))
        return r

    class Caps(re_grpc.CapabilitiesServicer):
        def GetCapabilities(self, request, context):
            logf.write("GetCapabilities\n")
            return re.ServerCapabilities(
                cache_capabilities=re.CacheCapabilities(
                    digest_function=[re.DigestFunction.SHA256],
                    max_batch_total_size_bytes=4 << 20),
                execution_capabilities=re.ExecutionCapabilities(
                    digest_function=re.DigestFunction.SHA256, exec_enabled=True))

    class Cas(re_grpc.ContentAddressableStorageServicer):
        def FindMissingBlobs(self, request, context):
            logf.write(f"FindMissingBlobs {len(request.blob_digests)}\n")
            return re.FindMissingBlobsResponse()

        def BatchUpdateBlobs(self, request, context):
            logf.write(f"BatchUpdateBlobs {len(request.requests)}\n")
            resp = re.BatchUpdateBlobsResponse()
            for r in request.requests:
                resp.responses.add(digest=r.digest)
            return resp

    class Cache(re_grpc.ActionCacheServicer):
        def GetActionResult(self, request, context):
            where, what, *_ = mode()
            logf.write(f"GetActionResult -> {what if where == 'cache' else 'NOT_FOUND'}\n")
            if where != "cache":
                context.abort(grpc.StatusCode.NOT_FOUND, "not in the cache")
            return result(what)

    class Exec(re_grpc.ExecutionServicer):
        def Execute(self, request, context):
            where, what, *rest = mode()
            logf.write(f"Execute -> {what}\n")
            if what == "plant":
                os.symlink(rest[1], rest[0])
                what = "good"
            if what == "hang":
                yield ops.Operation(name="op-1")
                while context.is_active():
                    with cancelled_cond:
                        if "op-1" in cancelled_ops:
                            logf.write("Execute of op-1 ends: operation cancelled\n")
                            context.abort(grpc.StatusCode.CANCELLED, "operation cancelled")
                        cancelled_cond.wait(0.05)
                logf.write("Execute cancelled by the client\n")
                return
            op = ops.Operation(name="op-1", done=True)
            op.response.Pack(re.ExecuteResponse(result=result(what)))
            yield op

    class Operations(ops_grpc.OperationsServicer):
        def CancelOperation(self, request, context):
            logf.write(f"CancelOperation {request.name}\n")
            with cancelled_cond:
                cancelled_ops.add(request.name)
                cancelled_cond.notify_all()
            return empty_pb2.Empty()

    class ByteStream(bs_grpc.ByteStreamServicer):
        def Read(self, request, context):
            h = request.resource_name.split("/")[-2]
            logf.write(f"Read {h[:12]}\n")
            yield bs.ReadResponse(data=blobs.get(h, CONTENT))

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    re_grpc.add_CapabilitiesServicer_to_server(Caps(), server)
    re_grpc.add_ContentAddressableStorageServicer_to_server(Cas(), server)
    re_grpc.add_ActionCacheServicer_to_server(Cache(), server)
    re_grpc.add_ExecutionServicer_to_server(Exec(), server)
    bs_grpc.add_ByteStreamServicer_to_server(ByteStream(), server)
    ops_grpc.add_OperationsServicer_to_server(Operations(), server)
    server.add_insecure_port(f"unix:{args.socket}")
    server.start()
    # Lives as long as the test needs it; the test kills it, and it stops by
    # itself after five minutes at most.
    time.sleep(300)
    server.stop(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
