"""A gRPC front end that demands a credentials header, as hosted REAPI
services do, in front of a real worker (which has no such check itself).

  authproxy.py --listen HOST:PORT --cert C --key K --upstream HOST:PORT \
      --upstream-ca CA --upstream-cert C --upstream-key K \
      --token-file FILE --log FILE --stubs DIR

Serves TLS. Every call must carry "authorization: Bearer <token>" (the
token is the content of --token-file); calls without it, or with another
value, end with UNAUTHENTICATED. Accepted calls are forwarded byte for byte
(no decoding) to the upstream worker over TLS with a client certificate,
with the other metadata, such as REAPI's request metadata, passed along.
The log counts accepted and refused calls and never holds a header value.
It stops by itself after ten minutes at most.
"""

import argparse
import os
import sys
import threading
import time
from concurrent import futures

# Calls whose responses, or requests, are streams; all others are unary.
SERVER_STREAMING = {"Execute", "WaitExecution", "Read", "GetTree"}
CLIENT_STREAMING = {"Write"}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    for name in ("listen", "cert", "key", "upstream", "upstream-ca", "upstream-cert",
                 "upstream-key", "token-file", "log", "stubs"):
        p.add_argument(f"--{name}", required=True)
    args = p.parse_args()
    sys.path.insert(0, args.stubs)
    import grpc

    def read(path):
        with open(path, "rb") as f:
            return f.read()

    expected = "Bearer " + read(args.token_file).decode().strip()
    upstream = grpc.secure_channel(args.upstream, grpc.ssl_channel_credentials(
        read(args.upstream_ca), read(args.upstream_key), read(args.upstream_cert)))
    counts = {"accepted": 0, "refused (no credentials)": 0, "refused (wrong credentials)": 0}
    lock = threading.Lock()

    def write_log():
        # Whole or not at all: the test reads it while calls still come in.
        with open(args.log + ".part", "w") as f:
            for k, v in counts.items():
                f.write(f"{k}: {v}\n")
        os.replace(args.log + ".part", args.log)

    def admit(context):
        md = context.invocation_metadata()
        given = [v for k, v in md if k == "authorization"]
        verdict = ("accepted" if given == [expected] else
                   "refused (no credentials)" if not given else "refused (wrong credentials)")
        with lock:
            counts[verdict] += 1
            write_log()
        if verdict != "accepted":
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "credentials required")
        return [(k, v) for k, v in md if k not in ("authorization", "user-agent")]

    class Forward(grpc.GenericRpcHandler):
        def service(self, details):
            method = details.method
            name = method.rsplit("/", 1)[-1]

            def relay(call_upstream):
                def handler(request, context):
                    md = admit(context)
                    try:
                        return call_upstream(request, md)
                    except grpc.RpcError as e:
                        context.abort(e.code(), e.details())
                return handler

            if name in SERVER_STREAMING:
                def stream(request, context):
                    md = admit(context)
                    try:
                        yield from upstream.unary_stream(method)(request, metadata=md)
                    except grpc.RpcError as e:
                        context.abort(e.code(), e.details())
                return grpc.unary_stream_rpc_method_handler(stream)
            if name in CLIENT_STREAMING:
                return grpc.stream_unary_rpc_method_handler(relay(
                    lambda it, md: upstream.stream_unary(method)(it, metadata=md)))
            return grpc.unary_unary_rpc_method_handler(relay(
                lambda req, md: upstream.unary_unary(method)(req, metadata=md)))

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16),
                         handlers=[Forward()])
    server.add_secure_port(args.listen, grpc.ssl_server_credentials(
        [(read(args.key), read(args.cert))]))
    server.start()
    write_log()
    time.sleep(600)
    server.stop(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
