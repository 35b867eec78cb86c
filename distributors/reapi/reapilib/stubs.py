"""Debian's gRPC and the REAPI protocol stubs generated at build time.

The stubs are never committed: distributors/reapi/CMakeLists.txt generates
them into <build>/distributors/reapi/gen. They are looked for, in order:

  1. the directory given with --stubs-dir
  2. $DTLTO_REAPI_STUBS
  3. build/distributors/reapi/gen in the checkout this script belongs to
     (the build directory the README's quick start uses)

load() returns a namespace with the grpc module and the message and service
modules, or raises StubsError whose text says what to install or build.
"""

import importlib
import os
import sys
import types

ENV_VAR = "DTLTO_REAPI_STUBS"
RUNTIME_PACKAGES = "python3-grpcio python3-protobuf"
BUILD_PACKAGES = ("protobuf-compiler protobuf-compiler-grpc libprotobuf-dev "
                  "bazel-bootstrap-source")
_MARKER = os.path.join("build", "bazel", "remote", "execution", "v2",
                       "remote_execution_pb2.py")


class StubsError(Exception):
    """The stubs or gRPC cannot be loaded. str() says what to do."""


def default_dir() -> str:
    here = os.path.dirname(os.path.realpath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "..", "build",
                                         "distributors", "reapi", "gen"))


def candidates(option: str | None) -> list[tuple[str, str]]:
    """(directory, where the name came from), in the order searched."""
    if option:
        return [(option, "--stubs-dir")]
    if os.environ.get(ENV_VAR):
        return [(os.environ[ENV_VAR], f"${ENV_VAR}")]
    return [(default_dir(), "the default build directory")]


def find(option: str | None) -> str:
    for directory, source in candidates(option):
        if os.path.isfile(os.path.join(directory, _MARKER)):
            return directory
        raise StubsError(
            f"REAPI protocol stubs not found in {directory} ({source}). They are "
            f"generated at build time: install the Debian packages {BUILD_PACKAGES}, "
            f"then build (cmake -S . -B build -G Ninja && ninja -C build "
            f"dtlto-reapi-stubs), or point --stubs-dir or ${ENV_VAR} at the "
            f"generated directory")
    raise AssertionError("unreachable")


def load(option: str | None = None) -> types.SimpleNamespace:
    directory = find(option)
    # gRPC's C core logs handshake failures and the like on stderr by itself;
    # we report every error once, in our own words.
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    try:
        grpc = importlib.import_module("grpc")
        importlib.import_module("google.protobuf")
    except ImportError as e:
        raise StubsError(
            f"cannot import {e.name or 'grpc'}: install the Debian packages "
            f"{RUNTIME_PACKAGES} and run reapi.py with Debian's /usr/bin/python3 "
            f"(this is {sys.executable})") from None
    sys.path.insert(0, directory)
    try:
        re_pb2 = importlib.import_module(
            "build.bazel.remote.execution.v2.remote_execution_pb2")
        return types.SimpleNamespace(
            grpc=grpc,
            re=re_pb2,
            re_grpc=importlib.import_module(
                "build.bazel.remote.execution.v2.remote_execution_pb2_grpc"),
            bs=importlib.import_module("google.bytestream.bytestream_pb2"),
            bs_grpc=importlib.import_module("google.bytestream.bytestream_pb2_grpc"),
            status=importlib.import_module("google.rpc.status_pb2"),
            ops=importlib.import_module("google.longrunning.operations_pb2"),
            ops_grpc=importlib.import_module("google.longrunning.operations_pb2_grpc"),
            duration=importlib.import_module("google.protobuf.duration_pb2"),
            directory=directory)
    except ImportError as e:
        raise StubsError(f"the REAPI stubs in {directory} do not load ({e}); "
                         "rebuild them: ninja -C build dtlto-reapi-stubs") from None
