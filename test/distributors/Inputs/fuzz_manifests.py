#!/usr/bin/env python3
"""Fuzz every distributor with hostile manifests, side files and command lines.

Starts from valid manifests (and side files) of a few shapes, as the linker
writes them, applies one mutation each (structure-aware: a key deleted or
duplicated, a wrong JSON type at a schema position, NUL bytes, lone
surrogates, invalid UTF-8, huge strings and lists, deep nesting, truncation,
path traversal, absolute paths, outputs that are symlinks, directories,
FIFOs or the inputs themselves, side files that disagree with the manifest,
non-regular manifest files), or fuzzes a distributor's command line
(unknown options, bad numbers, missing values, odd strings), and runs every
distributor on every mutant in a fresh sandbox directory.

Every mutant is either REFUSE (it breaks the manifest schema or the rules
of docs/local-distributor.md) or EITHER (it may still be a usable manifest,
e.g. an output in a parent directory, as `ld.lld -o ../out/prog` makes, or
refused by one engine only, e.g. an absolute bitcode path for REAPI).

  REFUSE  exit code 2 and exactly one line on stderr, starting with
          "<prog>: error:" and naming the manifest (or the option)
  EITHER  that, or a normal outcome: exit code 0 or 1, and no file written
          but the declared outputs (and the files the job commands name
          after -o, and what an option like --emit-only asks for)

and for every run: no Python traceback, no file created, changed or removed
in the sandbox (after a refusal; a decoy file that symlinked outputs point
at is part of it), nothing left in the distributor's $TMPDIR, no process
started and no connection made after a refusal (the engines' clients are
recording stubs, REAPI's endpoint a listener that counts connections), and
the run ends within the hang guard.

Runs are reproducible: mutant K of seed S is the same on every machine; a
failure prints the seed, the mutant and a command that replays it.

Which mutations are refused and which are legitimate, and why, is in
docs/reliability.md ("Fuzzed manifests and command lines").

The distributors and how to start each are data: DISTRIBUTORS below. To
add one, add an entry there: its script, base options
(with its client pointed at {stubs}/NAME, NAME added to STUB_NAMES), and
its options for argument fuzzing with values it must refuse and values it
may take.
"""

import argparse
import copy
import hashlib
import json
import os
import random
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.realpath(__file__))
SRC_ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
FUZZ_CC = os.path.join(HERE, "fuzz_cc.py")
REFUSE, EITHER = "refuse", "either"
# Paths that lead out of the sandbox lead below this directory, which must
# not exist: anything that writes there fails (and the fuzzer checks it was
# not created).
ABSENT_ROOT = "/dtlto-fuzz-absent"
# Put into manifests when they are written (so that mutants are the same
# bytes wherever the sandbox, Python and the source tree are): the
# sandbox's absolute path, the interpreter, the fake compiler.
BOX = "@BOX@"
PY = "@PY@"
CC = "@CC@"


# ---------------------------------------------------------------------------
# The distributors: how to start each one, and its options for argument
# fuzzing. In `args`, {stubs} is a directory of recording stubs (rewrapper,
# srun, sinfo, scancel, ssh, dbsbuild, ib_console, distcc, icecc, fbuild,
# dtlto-backend, clang: each records its start and fails), {endpoint} a REAPI endpoint that counts the connections made to it.

@dataclass(frozen=True)
class Opt:
    """A command-line option. bad: values that must be refused (exit 2);
    good: values that may be accepted. writes: a good value names a path
    the distributor may write (a directory for --emit-only)."""
    flag: str
    bad: tuple = ()
    good: tuple = ()
    flag_only: bool = False
    writes: bool = False


COUNT_BAD = ("0", "-1", "x", "", "1.5", "0x10", "1e3", " 3", "+3", "9" * 5000, "٣")
COUNT_GOOD = ("1", "3", "007", "100000", "9" * 18)
NONNEG_BAD = ("-1", "x", "", "1.5", "²", " 1", "+1", "9" * 5000)
NONNEG_GOOD = ("0", "1")
FLOAT_BAD = ("0", "-1", "x", "", "nan", "inf", "-inf", "1e999", "1e300", "1000001")
FLOAT_GOOD = ("0.5", "30")
STRING_GOOD = ("x", "", "a b", "a\nb", "-x", "ü", "x" * 5000, b"\xff\xfe")
# Files in every sandbox: a decoy, a FIFO, a file that is not UTF-8.
ODD_FILES = (BOX + "/decoy.txt", BOX + "/fifo", BOX + "/binary.bin")


def flags(*names):
    return tuple(Opt(n, flag_only=True) for n in names)


SHARED_FLAGS = flags("--quiet", "--progress", "--verbose", "--dry-run")


@dataclass(frozen=True)
class Distributor:
    name: str
    script: str  # below the source root
    prog: str  # what its messages start with
    args: tuple = ()  # before the manifest
    options: tuple = ()
    needs: str = ""  # a Python module it needs (checked before the run)
    hidden: bool = False  # only when named: fuzz.test's proof that failures are seen


DISTRIBUTORS = (
    Distributor("local", "utils/dtlto/local.py", "local.py", ("--jobs", "2"),
                SHARED_FLAGS + flags("--no-batch") + (
                    Opt("--jobs", COUNT_BAD, COUNT_GOOD), Opt("-j", COUNT_BAD, COUNT_GOOD))),
    Distributor("mock", "utils/dtlto/mock.py", "mock.py", (), (
        Opt("--copy", (), ("a.o", "nonexistent", ".") + ODD_FILES),
        # A nonzero --exit-code is a failure it is told to fake, silently.
        Opt("--exit-code", ("x", "", "1.5", "9" * 5000), ("0",)),
        Opt("--skip-output", ("-1", "x", "", "9" * 5000), ("0", "1", "99")),
        Opt("--empty-output", ("-1", "x", ""), ("0", "99")),
        Opt("--save-manifest", (), ("saved.json", BOX + "/saved.json", "."), writes=True),
        Opt("--record-args", (), ("args.txt", ABSENT_ROOT + "/args.txt", "."), writes=True))),
    Distributor("validate", "utils/dtlto/validate.py", "validate.py", ("--print",),
                flags("--print")),
    Distributor("reapi", "distributors/reapi/reapi.py", "reapi.py",
                ("--endpoint={endpoint}", "--retries=0", "--skip-cache-lookup"),
                SHARED_FLAGS + flags("--ship-compiler", "--skip-cache-lookup") + (
                    Opt("--endpoint", ("", "host", "http://h:1", "grpc://h", "grpc://:5",
                                       "grpc://h:x"), ("{endpoint}",)),
                    Opt("--instance-name", (), STRING_GOOD),
                    Opt("--jobs", COUNT_BAD, COUNT_GOOD),
                    Opt("--retries", NONNEG_BAD, NONNEG_GOOD),
                    Opt("--rpc-timeout", FLOAT_BAD, FLOAT_GOOD),
                    Opt("--max-batch-bytes", COUNT_BAD, COUNT_GOOD),
                    Opt("--keepalive", FLOAT_BAD, FLOAT_GOOD),
                    Opt("--action-timeout", FLOAT_BAD, FLOAT_GOOD),
                    Opt("--platform", ("x", "=v", ""), ("OSFamily=Linux", "k=", "a=b=c")),
                    Opt("--env", ("x", "=v", ""), ("A=1", "B=")),
                    Opt("--ship", (), ("a.o", "nonexistent")),
                    Opt("--tls-ca-cert", (), ("nonexistent", "a.o") + ODD_FILES),
                    Opt("--tls-client-cert", (), ("a.o",) + ODD_FILES),
                    Opt("--tls-server-name", (), STRING_GOOD),
                    Opt("--credentials-file", (), ("nonexistent", "a.o", ".") + ODD_FILES),
                    Opt("--credentials-env", (), ("x", "h=NO_SUCH_VAR", "h=HOME")),
                    Opt("--stubs-dir", (), ("nonexistent", "."))),
                needs="grpc"),
    Distributor("reclient", "distributors/reclient/reclient.py", "reclient.py",
                ("--rewrapper={stubs}/rewrapper", "--server-address=unix:///nonexistent.sock",
                 "--retries=0"),
                SHARED_FLAGS + flags("--ship-compiler") + (
                    Opt("--server-address", ("",), ("unix:///x.sock", "localhost:1")),
                    Opt("--exec-root", (), (BOX, BOX + "/top", "/", "nonexistent")),
                    Opt("--platform", ("x", "a=b,c", "=v", ""), ("k=v", "container-image=x")),
                    Opt("--exec-strategy", ("", "bogus", "REMOTE"),
                        ("remote", "local", "racing", "remote_local_fallback")),
                    Opt("--exec-timeout", ("", "10", "1x", "-1s", "s"), ("90s", "1h2m", "0.5s")),
                    Opt("--retries", NONNEG_BAD, ("0", "3")),
                    Opt("--jobs", COUNT_BAD, COUNT_GOOD),
                    Opt("--input-list-threshold", COUNT_BAD, ("1", "100000")),
                    Opt("--rewrapper-arg", ("x", "-", "-exec_root=/", "-cred_file=x",
                                            "--auth=1", ""),
                        ("-canonicalize_working_dir=true", "-v")))),
    Distributor("slurm", "distributors/slurm/slurm.py", "slurm.py",
                ("--srun={stubs}/srun", "--retries=0"),
                SHARED_FLAGS + (
                    Opt("--mode", ("", "bogus", "Stream"), ("shared", "stream")),
                    Opt("--partition", (), STRING_GOOD), Opt("-p", (), ("build",)),
                    Opt("--account", (), STRING_GOOD), Opt("--time", (), ("10:00", "x")),
                    Opt("--srun-arg", (), ("--qos=high", "-x", "")),
                    Opt("--slots", COUNT_BAD, COUNT_GOOD),
                    Opt("--retries", NONNEG_BAD, NONNEG_GOOD),
                    Opt("--job-name", (), STRING_GOOD),
                    Opt("--remote-python", (), STRING_GOOD),
                    Opt("--remote-dir", (), ("/tmp", "", "rel", "a\nb")))),
    Distributor("slurm-stream", "distributors/slurm/slurm.py", "slurm.py",
                ("--srun={stubs}/srun", "--retries=0", "--mode=stream", "--slots=2"),
                SHARED_FLAGS + (
                    Opt("--remote-dir", (), ("/tmp", "", "rel", "a\nb")),
                    Opt("--slots", COUNT_BAD, COUNT_GOOD))),
    Distributor("ssh", "distributors/ssh/ssh.py", "ssh.py",
                ("--ssh={stubs}/ssh", "--host=127.0.0.2", "--retries=0"),
                SHARED_FLAGS + flags("--no-multiplex") + (
                    Opt("--host", ("", "a b", "h:0", "h:x", "[::1", "@h", "h:", "a\nb"),
                        ("127.0.0.3", "u@127.0.0.4:2", "[::1]:2", "-oProxyCommand=x")),
                    Opt("--hosts-file", ("nonexistent", "."), ("a.o",) + ODD_FILES),
                    Opt("--retries", NONNEG_BAD, NONNEG_GOOD),
                    Opt("--remote-python", (), STRING_GOOD),
                    Opt("--remote-dir", (), ("/tmp", "", "a\nb")),
                    Opt("--identity", (), ("nonexistent",)),
                    Opt("--port", COUNT_BAD, ("22", "65535")),
                    Opt("--ssh-config", (), ("/dev/null",)),
                    Opt("--known-hosts", (), ("/dev/null",)),
                    Opt("--strict-host-key-checking", ("", "maybe"), ("yes", "accept-new")),
                    Opt("--ssh-option", (), ("ProxyJump=x", "", "a b")),
                    Opt("--connect-timeout", COUNT_BAD, ("1", "30")),
                    Opt("--sessions-per-connection", COUNT_BAD, ("1", "10")))),
    Distributor("sn-dbs", "distributors/sn-dbs/sn-dbs.py", "sn-dbs.py",
                ("--dbsbuild={stubs}/dbsbuild",),
                SHARED_FLAGS + (
                    Opt("--project", (), STRING_GOOD),
                    Opt("--tool-file", (), ("a.o", "nonexistent", "a\nb") + ODD_FILES),
                    Opt("--tool-template", ("nonexistent", "."), ("a.o",) + ODD_FILES),
                    Opt("--dbsbuild-arg", (), ("-x", "")),
                    Opt("--emit-only", (), ("emit", BOX + "/emit"), writes=True))),
    Distributor("incredibuild", "distributors/incredibuild/incredibuild.py", "incredibuild.py",
                ("--ib-console={stubs}/ib_console",),
                SHARED_FLAGS + (
                    Opt("--jobs", COUNT_BAD, COUNT_GOOD),
                    Opt("--profile", ("nonexistent", "."), ("a.o",) + ODD_FILES),
                    Opt("--ib-arg", (), ("/title=x", "")),
                    Opt("--emit-only", (), ("emit", BOX + "/emit"), writes=True))),
    Distributor("distcc", "distributors/distcc/distcc.py", "distcc.py",
                ("--distcc={stubs}/distcc", "--hosts=127.0.0.2/2", "--retries=0"),
                SHARED_FLAGS + flags("--self-contained") + (
                    # --hosts adds to the base list: only a bad word is refused, so "" and
                    # a host marked ,down are good.
                    Opt("--hosts", ("h:x", "h/0", "h/", "h/x", "+zeroconf", "-x", "h,bogus",
                                    "h,cpp", "localhost/0", "h h", "@", "h/" + "9" * 5000),
                        ("", "h,down", "127.0.0.3/2", "localhost/1", "u@127.0.0.4/2", "h:3632/4,lzo",
                         "a # comment", "a\nb", "--randomize h")),
                    Opt("--distcc", ("nonexistent",), ("{stubs}/distcc",)),
                    Opt("--farm-compiler", (), STRING_GOOD),
                    Opt("--retries", NONNEG_BAD, NONNEG_GOOD))),
    # --env: a ready environment (any file will do: the stub client never
    # opens it), so that no environment is built in ~/.cache.
    Distributor("icecream", "distributors/icecream/icecream.py", "icecream.py",
                ("--icecc={stubs}/icecc", "--backend={stubs}/dtlto-backend",
                 "--clang={stubs}/clang", "--env=" + BOX + "/decoy.txt", "--retries=0"),
                SHARED_FLAGS + flags("--self-contained") + (
                    Opt("--jobs", COUNT_BAD, COUNT_GOOD), Opt("-j", COUNT_BAD, COUNT_GOOD),
                    Opt("--icecc", ("nonexistent",), ("{stubs}/icecc",)),
                    Opt("--backend", ("nonexistent", ".", BOX + "/decoy.txt"),
                        ("{stubs}/dtlto-backend",)),
                    Opt("--clang", ("nonexistent", ".", BOX + "/decoy.txt"), ("{stubs}/clang",)),
                    Opt("--env", ("nonexistent", ".", BOX + "/fifo"),
                        (BOX + "/decoy.txt", BOX + "/binary.bin")),
                    Opt("--env-cache", (), (BOX + "/cache", "nonexistent")),
                    Opt("--retries", NONNEG_BAD, NONNEG_GOOD))),
    Distributor("fastbuild", "distributors/fastbuild/fastbuild.py", "fastbuild.py",
                ("--fbuild={stubs}/fbuild", "--backend={stubs}/dtlto-backend"),
                SHARED_FLAGS + flags("--force-remote") + (
                    Opt("--fbuild", (), ("{stubs}/fbuild", "nonexistent")),
                    Opt("--backend", ("nonexistent", ".", BOX + "/decoy.txt"),
                        ("{stubs}/dtlto-backend",)),
                    Opt("--extra-file", ("nonexistent", ".", BOX + "/fifo"),
                        (BOX + "/decoy.txt", BOX + "/binary.bin")),
                    Opt("--worker", (), STRING_GOOD),
                    Opt("--fbuild-arg", (), ("-distverbose", "", "-x")),
                    Opt("--emit-only", (), ("emit", BOX + "/emit"), writes=True))),
    Distributor("broken", "test/distributors/Inputs/fuzz_broken.py", "fuzz_broken.py",
                hidden=True),
)

# The clients the distributors start; each is the recording stub.
STUB_NAMES = ("rewrapper", "srun", "sinfo", "scancel", "ssh", "dbsbuild", "ib_console",
              "distcc", "icecc", "fbuild", "dtlto-backend", "clang")
STUB_TEXT = """#!/bin/sh
# A remote engine's client, for the fuzzer: records that it was started and fails.
printf '%s\\n' "$(basename "$0")" >> "${FUZZ_CONTACT:-/dev/null}"
exit 1
"""


# ---------------------------------------------------------------------------
# JSON with room for damage: Raw(bytes) is written verbatim, Pairs an object
# whose keys may repeat.

class Raw:
    def __init__(self, data: bytes):
        self.data = data

    def __repr__(self):
        text = self.data[:40].decode("utf-8", "backslashreplace")
        return f"<raw {text}{'...' if len(self.data) > 40 else ''} ({len(self.data)} bytes)>"


class Pairs(list):
    pass


def dump_string(s: str) -> bytes:
    try:
        return json.dumps(s, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: as an escape
        return json.dumps(s).encode("ascii")


def dump(v) -> bytes:
    if isinstance(v, Raw):
        return v.data
    if isinstance(v, (dict, Pairs)):
        items = v.items() if isinstance(v, dict) else v
        return b"{" + b", ".join(dump_string(k) + b": " + dump(x) for k, x in items) + b"}"
    if isinstance(v, list):
        return b"[" + b", ".join(dump(x) for x in v) + b"]"
    if isinstance(v, str):
        return dump_string(v)
    return json.dumps(v).encode()


def strict_json_ok(data: bytes) -> bool:
    """Would a strict reader take data (UTF-8, JSON without duplicate keys,
    NaN or huge numbers, and no lone surrogates)? The oracle of byte-level
    mutations: if not, the file must be refused."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False

    def pairs(items):
        keys = [k for k, _ in items]
        if len(set(keys)) != len(keys):
            raise ValueError("duplicate key")
        return dict(items)

    def number(s):
        if len(s.lstrip("-")) > 20:
            raise ValueError("too long")
        return int(s)

    def constant(s):
        raise ValueError(s)
    try:
        value = json.loads(text, object_pairs_hook=pairs, parse_int=number,
                           parse_constant=constant)
    except (ValueError, RecursionError):
        return False
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    except RecursionError:
        return True  # deep but valid: the schema decides
    return True


# ---------------------------------------------------------------------------
# Shapes: valid manifests as the linker writes them. Paths are relative to
# the working directory, BOX/top/mid/work, so "../" up to three times stays
# in the sandbox. Files are created relative to it as well.

WORK = "top/mid/work"


@dataclass
class Shape:
    name: str
    manifest_path: str
    manifest: dict
    side: dict | None
    files: dict  # path (relative to the working directory) -> bytes


def _job(module, shard, obj, imports=()):
    return {"args": [module, f"-fthinlto-index={shard}", "-o", obj],
            "inputs": [module, shard] + list(imports), "outputs": [obj]}


def _side(jobs, batch=None):
    side = {"engine": "dtlto", "version": "0.1.0", "jobs": len(jobs),
            "input_bytes": [100 * (len(jobs) - i) for i in range(len(jobs))]}
    if batch is not None:
        side["batch_arg"] = batch
    return side


def shapes() -> list[Shape]:
    cc = [PY, CC]
    out = []

    jobs = [_job("a.o", "a.1.4242.native.o.thinlto.bc", "a.1.4242.native.o", ["b.o"]),
            _job("b.o", "b.2.4242.native.o.thinlto.bc", "b.2.4242.native.o")]
    out.append(Shape("plain", "prog.4242.dist-file.json",
                     {"common": {"linker_output": "prog",
                                 "args": cc + ["-c", "--target=x86_64-pc-linux-gnu", "-O2"],
                                 "inputs": []},
                      "jobs": jobs}, None,
                     {"a.o": b"BC a", "b.o": b"BC b",
                      "a.1.4242.native.o.thinlto.bc": b"IDX a",
                      "b.2.4242.native.o.thinlto.bc": b"IDX b"}))

    jobs = [_job("src/x.o", "bin/x.1.5151.native.o.thinlto.bc", "bin/x.1.5151.native.o",
                 ["src/y.o", "lib/z.o"]),
            _job("src/y.o", "bin/y.2.5151.native.o.thinlto.bc", "bin/y.2.5151.native.o"),
            _job("lib/z.o", "bin/z.3.5151.native.o.thinlto.bc", "bin/z.3.5151.native.o",
                 ["src/x.o"])]
    out.append(Shape("side", "bin/app.5151.dist-file.json",
                     {"common": {"linker_output": "bin/app",
                                 "args": cc + ["-c", "-O2", "-fprofile-sample-use=prof/p.prof"],
                                 "inputs": ["prof/p.prof"]},
                      "jobs": jobs}, _side(jobs),
                     {"src/x.o": b"BC x", "src/y.o": b"BC y", "lib/z.o": b"BC z",
                      "prof/p.prof": b"profile",
                      "bin/x.1.5151.native.o.thinlto.bc": b"IDX x",
                      "bin/y.2.5151.native.o.thinlto.bc": b"IDX y",
                      "bin/z.3.5151.native.o.thinlto.bc": b"IDX z"}))

    jobs = [_job("m.o", "m.1.6161.native.o.thinlto.bc", "m.1.6161.native.o"),
            _job("n.o", "n.2.6161.native.o.thinlto.bc", "n.2.6161.native.o", ["m.o"])]
    out.append(Shape("batch", "prog.6161.dist-file.json",
                     {"common": {"linker_output": "prog", "args": cc + ["-c"], "inputs": []},
                      "jobs": jobs}, _side(jobs, "--batch"),
                     {"m.o": b"BC m", "n.o": b"BC n",
                      "m.1.6161.native.o.thinlto.bc": b"IDX m",
                      "n.2.6161.native.o.thinlto.bc": b"IDX n"}))

    # ld.lld -o ../../out/prog, a module in ../lib, an absolute sample profile.
    jobs = [_job("../lib/p.o", "../../out/p.1.7171.native.o.thinlto.bc",
                 "../../out/p.1.7171.native.o", ["q.o"]),
            _job("q.o", "../../out/q.2.7171.native.o.thinlto.bc", "../../out/q.2.7171.native.o")]
    out.append(Shape("parent", "../../out/prog.7171.dist-file.json",
                     {"common": {"linker_output": "../../out/prog",
                                 "args": cc + ["-c", f"-fprofile-sample-use={BOX}/top/p.prof"],
                                 "inputs": [f"{BOX}/top/p.prof"]},
                      "jobs": jobs}, _side(jobs),
                     {"../lib/p.o": b"BC p", "q.o": b"BC q", "../../p.prof": b"profile",
                      "../../out/p.1.7171.native.o.thinlto.bc": b"IDX p",
                      "../../out/q.2.7171.native.o.thinlto.bc": b"IDX q"}))

    out.append(Shape("empty", "prog.8181.dist-file.json",
                     {"common": {"linker_output": "prog", "args": cc + ["-c"], "inputs": []},
                      "jobs": []}, _side([]), {}))
    return out


# ---------------------------------------------------------------------------
# The schema, as the fuzzer knows it (independently of dtltodist.manifest).

def role(file: str, path: tuple) -> str:
    """What a position in the manifest or side file is."""
    if file == "side":
        return {(): "side", ("engine",): "text", ("version",): "text-optional",
                ("jobs",): "count", ("batch_arg",): "text-optional",
                ("fork_server",): "text-optional",
                ("input_bytes",): "sizes"}.get(path) or (
            "size" if len(path) == 2 and path[0] == "input_bytes" else "extra")
    n = len(path)
    if n == 0:
        return "top"
    if path == ("common",):
        return "common"
    if path == ("jobs",):
        return "jobs"
    if path[0] == "common" and n >= 2:
        if path[1] == "linker_output" and n == 2:
            return "path"
        if path[1] == "args":
            return "args" if n == 2 else ("compiler" if path[2] == 0 else "arg") if n == 3 \
                else "extra"
        if path[1] == "inputs":
            return "inputs:0" if n == 2 else "path" if n == 3 else "extra"
        return "extra"
    if path[0] == "jobs" and n >= 2:
        if n == 2:
            return "job"
        if path[2] == "args":
            return "args" if n == 3 else "arg" if n == 4 else "extra"
        if path[2] == "inputs":
            return "inputs:2" if n == 3 else "path" if n == 4 else "extra"
        if path[2] == "outputs":
            return "outputs" if n == 3 else "output" if n == 4 else "extra"
    return "extra"


REQUIRED = {"top": {"common", "jobs"}, "common": {"linker_output", "args", "inputs"},
            "job": {"args", "inputs", "outputs"}, "side": {"engine", "jobs", "input_bytes"}}
TYPES = {"top": dict, "common": dict, "job": dict, "side": dict, "jobs": list,
         "args": list, "inputs:0": list, "inputs:2": list, "outputs": list, "sizes": list,
         "path": str, "output": str, "compiler": str, "arg": str, "text": str,
         "text-optional": str, "count": int, "size": int}
STRINGS = ("path", "output", "compiler", "arg", "text", "text-optional")
PATHS = ("path", "output")


def kind_of(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    for t, name in ((int, "int"), (float, "float"), (str, "str"), (list, "list"),
                    (dict, "dict")):
        if isinstance(v, t):
            return name
    return "raw"


def nodes(doc, path=()):
    yield path, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from nodes(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from nodes(v, path + (i,))


def get(doc, path):
    for p in path:
        doc = doc[p]
    return doc


def put(doc, path, value):
    if not path:
        return value
    get(doc, path[:-1])[path[-1]] = value
    return doc


def show_path(path) -> str:
    text = ""
    for p in path:
        text += f"[{p}]" if isinstance(p, int) else (f".{p}" if text else p)
    return text or "top level"


def short(v, limit=60) -> str:
    text = repr(v)
    return text if len(text) <= limit else text[:limit - 15] + "..." + text[-12:]


# ---------------------------------------------------------------------------
# Mutants.

@dataclass
class Mutant:
    kind: str  # "manifest" or "args"
    index: int
    shape: Shape
    op: str
    what: str
    expect: str
    manifest: object  # a document, or bytes
    side: object  # a document, bytes, or None (no side file)
    setup: list = field(default_factory=list)  # (action, path, arg)
    args: list | None = None  # the distributor's options (None: its base options)
    writes: list = field(default_factory=list)  # more paths it may write (and below them)
    has_side: bool = False  # is there a side file (m.side may be null: a JSON null)
    names: tuple = ()  # a refusal's message names one of these (the option at fault)
    manifest_name: str = ""  # instead of the shape's manifest path (same directory)

    def __post_init__(self):
        self.has_side = self.shape.side is not None

    @property
    def manifest_path(self) -> str:
        if not self.manifest_name:
            return self.shape.manifest_path
        return os.path.join(os.path.dirname(self.shape.manifest_path), self.manifest_name)


class Gen:
    """Makes manifest mutant `index` of a seed: the same on every run. With
    every_op, mutant i applies the (i mod n)-th of the n kinds of mutation,
    so that a short run tries each."""

    def __init__(self, seed: str, shape_list: list[Shape], every_op=False):
        self.seed = seed
        self.shapes = shape_list
        self.every_op = every_op

    def mutant(self, index: int) -> Mutant:
        rng = random.Random(f"{self.seed}:manifest:{index}")
        kinds = list(dict.fromkeys(OPS))
        while True:
            shape = rng.choice(self.shapes)
            op = kinds[index % len(kinds)] if self.every_op else rng.choice(OPS)
            m = Mutant("manifest", index, shape, op.__name__.replace("_", "-"), "", EITHER,
                       copy.deepcopy(shape.manifest), copy.deepcopy(shape.side))
            if op(rng, m) is not False:
                return m


# Each op changes m in place and sets what/expect; False: does not apply.

def pick_node(rng, m, want=None, file=None):
    """(file, path, value, role) of a random node, maybe of a wanted role."""
    files = [("manifest", m.manifest)] + ([("side", m.side)] if m.has_side else [])
    if file:
        files = [f for f in files if f[0] == file]
    choices = [(f, p, v, role(f, p)) for f, doc in files for p, v in nodes(doc)]
    if want:
        choices = [c for c in choices if want(c[3], c[1], c[2])]
    return rng.choice(choices) if choices else None


def doc_of(m, file):
    return m.manifest if file == "manifest" else m.side


def set_doc(m, file, doc):
    if file == "manifest":
        m.manifest = doc
    else:
        m.side = doc


def jobs_count(m) -> int | None:
    jobs = m.manifest.get("jobs") if isinstance(m.manifest, dict) else None
    return len(jobs) if isinstance(jobs, list) else None


def side_agrees(m) -> bool:
    """Does the side file (if any) still describe the manifest's jobs?"""
    if not m.has_side:
        return True
    n = jobs_count(m)
    return n is not None and m.side.get("jobs") == n and \
        len(m.side.get("input_bytes", [])) == n


def delete(rng, m):
    c = pick_node(rng, m, lambda r, p, v: bool(p))
    if not c:
        return False
    file, path, value, r = c
    parent = get(doc_of(m, file), path[:-1])
    parent_role = role(file, path[:-1])
    if isinstance(path[-1], str):
        del parent[path[-1]]
        m.expect = REFUSE if path[-1] in REQUIRED.get(parent_role, ()) else EITHER
    else:
        del parent[path[-1]]
        minimum = {"args": 1, "inputs:2": 2, "outputs": 1}.get(parent_role, 0)
        m.expect = REFUSE if len(parent) < minimum or parent_role == "sizes" else EITHER
        if parent_role == "jobs" and not side_agrees(m):
            m.expect = REFUSE
    if file == "manifest" and m.expect == EITHER and collision(m):
        m.expect = REFUSE
    m.what = f"{file} {show_path(path)} deleted"


OTHER_VALUES = (None, True, False, 0, -1, 7, 1.5, 1e308, "", "x", [], ["x"], [1], {}, {"k": "v"})


def retype(rng, m):
    file, path, value, r = pick_node(rng, m)
    others = [v for v in OTHER_VALUES if kind_of(v) != kind_of(value)]
    new = copy.deepcopy(rng.choice(others))
    set_doc(m, file, put(doc_of(m, file), path, new))
    m.expect = EITHER if r == "extra" else REFUSE
    m.what = f"{file} {show_path(path)}: {short(value)} -> {short(new)}"


def empty_string(rng, m):
    c = pick_node(rng, m, lambda r, p, v: r in STRINGS)
    file, path, value, r = c
    put(doc_of(m, file), path, "")
    m.expect = REFUSE if r in PATHS + ("compiler",) else EITHER
    if m.expect == EITHER and file == "manifest" and collision(m):
        m.expect = REFUSE
    m.what = f"{file} {show_path(path)} = \"\""


def empty_list(rng, m):
    c = pick_node(rng, m, lambda r, p, v: isinstance(v, list) and v and r != "extra")
    if not c:
        return False
    file, path, value, r = c
    put(doc_of(m, file), path, [])
    m.expect = {"args": REFUSE, "inputs:2": REFUSE, "outputs": REFUSE, "inputs:0": EITHER,
                "jobs": EITHER, "sizes": REFUSE}[r]
    if not side_agrees(m):
        m.expect = REFUSE
    m.what = f"{file} {show_path(path)} = []"


def insert(text: str, rng, piece: str) -> str:
    at = rng.randrange(len(text) + 1)
    return text[:at] + piece + text[at:]


def nul(rng, m):
    c = pick_node(rng, m, lambda r, p, v: isinstance(v, str))
    file, path, value, r = c
    put(doc_of(m, file), path, insert(value, rng, "\0"))
    m.expect = EITHER if r == "extra" else REFUSE
    m.what = f"{file} {show_path(path)}: a NUL character in {short(value)}"


def nul_in_key(rng, m):
    c = pick_node(rng, m, lambda r, p, v: p and isinstance(p[-1], str))
    file, path, value, r = c
    parent = get(doc_of(m, file), path[:-1])
    new = insert(path[-1], rng, "\0")
    parent[new] = parent.pop(path[-1])
    m.expect = REFUSE if path[-1] in REQUIRED.get(role(file, path[:-1]), ()) else EITHER
    m.what = f"{file} {show_path(path)}: key renamed {new!r}"


def surrogate(rng, m):
    c = pick_node(rng, m, lambda r, p, v: isinstance(v, str))
    file, path, value, r = c
    piece = rng.choice(("\ud800", "\udfff", "\udc80", "\udbff"))
    put(doc_of(m, file), path, insert(value, rng, piece))
    m.expect = REFUSE
    m.what = f"{file} {show_path(path)}: lone surrogate {piece!r} in {short(value)}"


BAD_UTF8 = (b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xe2\x82", b"\x80", b"\xf8\x88\x80\x80\x80")


def bad_utf8(rng, m):
    c = pick_node(rng, m, lambda r, p, v: isinstance(v, str))
    file, path, value, r = c
    raw = dump_string(value)
    at = rng.randrange(1, len(raw))
    bad = rng.choice(BAD_UTF8)
    put(doc_of(m, file), path, Raw(raw[:at] + bad + raw[at:]))
    m.expect = REFUSE
    m.what = f"{file} {show_path(path)}: bytes {bad!r} in {short(value)}"


def control_char(rng, m):
    c = pick_node(rng, m, lambda r, p, v: isinstance(v, str))
    file, path, value, r = c
    raw = dump_string(value)
    at = rng.randrange(1, len(raw))
    bad = rng.choice((b"\x00", b"\x01", b"\n", b"\t", b"\x1f"))
    put(doc_of(m, file), path, Raw(raw[:at] + bad + raw[at:]))
    m.expect = REFUSE  # JSON strings cannot hold raw control characters
    m.what = f"{file} {show_path(path)}: raw byte {bad!r} in {short(value)}"


def huge_string(rng, m):
    c = pick_node(rng, m, lambda r, p, v: isinstance(v, str))
    file, path, value, r = c
    n = rng.choice((256, 4097, 200_000, 3_000_000))
    new = rng.choice(("A" * n, "a/" * (n // 2), value + "x" * n, "é" * n))
    put(doc_of(m, file), path, new)
    m.expect = EITHER
    if file == "manifest" and collision(m):
        m.expect = REFUSE
    m.what = f"{file} {show_path(path)}: a string of {len(new)} characters"


def huge_list(rng, m):
    c = pick_node(rng, m, lambda r, p, v: isinstance(v, list))
    file, path, value, r = c
    n = rng.choice((1000, 20_000)) if r != "outputs" else rng.choice((100, 1000))
    if r == "jobs":
        # Many valid jobs, then one bad one: refused before anything runs.
        template = value[0] if value else _job("a.o", "a.idx", "a.out")
        for i in range(n):
            job = copy.deepcopy(template)
            job["outputs"] = [f"many{i}.o"]
            value.append(job)
        value.append({"args": ["x"], "inputs": ["x"], "outputs": ["y"]})
        m.expect = REFUSE
        m.what = f"{file} {show_path(path)}: {n} more jobs, then one with a single input"
        return
    if r == "sizes":
        value.extend([1] * n)
        m.expect = REFUSE
    elif r == "outputs":
        value.extend(f"extra{i}.o" for i in range(n))
        m.expect = EITHER
    elif r in ("args", "inputs:0", "inputs:2"):
        value.extend((f"-x{i}" if r == "args" else f"more{i}.bc") for i in range(n))
        m.expect = EITHER
    else:
        value.extend(["x"] * n)
        m.expect = EITHER if r == "extra" else REFUSE
    m.what = f"{file} {show_path(path)}: {n} more items"


def deep(rng, m):
    file, path, value, r = pick_node(rng, m)
    depth = rng.choice((50, 900, 5000, 200_000))
    new = Raw(b"[" * depth + b"]" * depth)
    set_doc(m, file, put(doc_of(m, file), path, new))
    m.expect = EITHER if r == "extra" and depth < 1000 else REFUSE
    m.what = f"{file} {show_path(path)}: lists nested {depth} deep"


EXTRA_VALUES = (1, "x", None, [1, 2], {"a": {"b": []}}, "\0", "a\nb", 1e308)


def add_key(rng, m):
    c = pick_node(rng, m, lambda r, p, v: isinstance(v, dict))
    file, path, value, r = c
    key = rng.choice(("dtlto", "priority", "", "\n", "é", "jobs ", "x" * 300))
    if key in value:
        return False
    new = rng.choice(EXTRA_VALUES + (Raw(b"[" * 600 + b"]" * 600),))
    value[key] = copy.deepcopy(new)
    m.expect = EITHER
    m.what = f"{file} {show_path(path)}: unknown key {key!r} = {short(new)}"


def dup_key(rng, m):
    c = pick_node(rng, m, lambda r, p, v: isinstance(v, dict) and v)
    file, path, value, r = c
    pairs = Pairs(value.items())
    k = rng.choice(list(value))
    again = rng.choice((copy.deepcopy(value[k]), None, "x"))
    pairs.insert(rng.randrange(len(pairs) + 1), (k, again))
    set_doc(m, file, put(doc_of(m, file), path, pairs))
    m.expect = REFUSE
    m.what = f"{file} {show_path(path)}: key {k!r} twice"


def number(rng, m):
    file, path, value, r = pick_node(rng, m)
    text = rng.choice((b"9" * 5000, b"-" + b"9" * 30, b"1e400", b"NaN", b"Infinity",
                       b"-Infinity", b"-0", b"1E2", b"2.0", b"0.0", b"00"))
    set_doc(m, file, put(doc_of(m, file), path, Raw(text)))
    if text in (b"NaN", b"Infinity", b"-Infinity", b"00") or len(text) > 20:
        m.expect = REFUSE  # not JSON, or a number no count can be
    elif r == "count":
        m.expect = EITHER if json.loads(text) == jobs_count(m) and \
            isinstance(json.loads(text), int) else REFUSE
    elif r == "size":
        m.expect = EITHER if isinstance(json.loads(text), int) and json.loads(text) >= 0 \
            else REFUSE
    else:
        m.expect = EITHER if r == "extra" else REFUSE
    m.what = f"{file} {show_path(path)}: {short(value)} -> {text[:20].decode()}" + \
        ("..." if len(text) > 20 else "")


def truncate(rng, m):
    file = rng.choice(["manifest"] + (["side"] if m.has_side else []))
    data = dump(doc_of(m, file))
    at = rng.randrange(len(data))
    set_doc(m, file, data[:at])
    m.expect = EITHER if strict_json_ok(data[:at]) else REFUSE
    m.what = f"{file} cut to {at} of {len(data)} bytes"


def flip(rng, m):
    file = rng.choice(["manifest"] + (["side"] if m.has_side else []))
    data = bytearray(dump(doc_of(m, file)))
    at = rng.randrange(len(data))
    old = data[at]
    data[at] = rng.choice((data[at] ^ (1 << rng.randrange(8)), rng.randrange(256)))
    set_doc(m, file, bytes(data))
    m.expect = EITHER if strict_json_ok(bytes(data)) else REFUSE
    m.what = f"{file} byte {at} {old:#04x} -> {data[at]:#04x}"


def whole_file(rng, m):
    file = rng.choice(["manifest"] + (["side"] if m.has_side else []))
    text = dump(doc_of(m, file))
    choice = rng.choice(("bom", "utf16", "empty", "spaces", "list", "string", "null",
                         "number", "two-objects", "comment"))
    data = {"bom": b"\xef\xbb\xbf" + text, "utf16": text.decode().encode("utf-16"),
            "empty": b"", "spaces": b" \n\t ", "list": b"[]", "string": b'"x"',
            "null": b"null", "number": b"1", "two-objects": text + b" {}",
            "comment": b"// manifest\n" + text}[choice]
    set_doc(m, file, data)
    m.expect = REFUSE
    m.what = f"{file}: {choice}"


# Paths: traversal that stays in the sandbox, traversal out of it (below a
# directory that does not exist), absolute paths, and odd names.

def path_value(rng, value: str) -> str:
    base = os.path.basename(value) or "f.o"
    return rng.choice((
        "../" * rng.randint(1, 3) + base,
        "../" * rng.randint(1, 3) + "fresh/" + base,
        "../" * 40 + ABSENT_ROOT.lstrip("/") + "/" + base,
        ABSENT_ROOT + "/" + base,
        f"{BOX}/{WORK}/{value}",
        f"{BOX}/{base}",
        "./" + value, "sub/../" + value, value + "/", value + "/.",
        ".", "..", "/", "./", "../../..",
        "-" + base, " " + base, base + "\n", "a\nb.o", "a\\b.o", "a,b.o", "$HOME/" + base,
        "'\"`;|&" + base, "ü/é.o", "\u202e" + base, base * 60,
        "nonexistent-dir/" + base, "a.o/" + base,
    ))


def path_mutation(rng, m):
    c = pick_node(rng, m, lambda r, p, v: r in PATHS + ("compiler", "arg"), "manifest")
    file, path, value, r = c
    new = path_value(rng, value)
    put(m.manifest, path, new)
    m.what = f"{show_path(path)}: {short(value)} -> {short(new)}"
    m.expect = EITHER
    if collision(m) or (r == "output" and in_the_way(m, new)):
        m.expect = REFUSE


def output_like_input(rng, m):
    """An output spelled as an input, the manifest or the side file."""
    c = pick_node(rng, m, lambda r, p, v: r == "output", "manifest")
    if not c:
        return False
    file, path, value, r = c
    targets = [p for _, p, v, rr in [(None, pp, vv, role("manifest", pp))
                                      for pp, vv in nodes(m.manifest)] if rr == "path"
               for p in [v] if p != m.manifest["common"]["linker_output"]]
    targets += [m.manifest_path]
    if m.has_side:
        targets.append(side_name(m.manifest_path))
    target = rng.choice(targets)
    if target.startswith(BOX):
        rest = target[len(BOX):]
        new = rng.choice((target, f"{BOX}/top/..{rest}", f"{BOX}/.{rest}",
                          os.path.relpath("/BOX" + rest, f"/BOX/{WORK}")))
    else:
        new = rng.choice((target, "./" + target, f"sub/../{target}", f"{BOX}/{WORK}/{target}",
                          abs_norm(target).replace("/BOX", BOX, 1)))
    put(m.manifest, path, new)
    m.expect = REFUSE
    m.what = f"{show_path(path)} -> {short(new)} (also an input, or the manifest)"


def duplicate_output(rng, m):
    """Two outputs that are one file, under odd names (spelled differently)."""
    outs = [(p, v) for p, v in nodes(m.manifest) if role("manifest", p) == "output"]
    if len(outs) < 2:
        return False
    (p1, _), (p2, _) = rng.sample(outs, 2)
    name = rng.choice(("a\nb.o", "tab\there.o", "ü é.o", " lead.o", "-dash.o", "q\"uote.o",
                       "\u202eevil.o", "x" * 200 + ".o"))
    put(m.manifest, p1, name)
    put(m.manifest, p2, rng.choice(("./" + name, "sub/../" + name, f"{BOX}/{WORK}/{name}")))
    m.expect = REFUSE
    m.what = f"{show_path(p1)} and {show_path(p2)}: both {name!r}"


def side_name(manifest_path: str) -> str:
    return manifest_path[:-len(".json")] + ".dtlto.json"


def abs_norm(p: str) -> str:
    return os.path.normpath(os.path.join("/BOX", WORK, p.replace(BOX, "/BOX")))


def collision(m) -> bool:
    """Does an output (as declared) coincide with another output, an input,
    the manifest or its side file? Lexically, after normalization."""
    try:
        common = m.manifest["common"]["inputs"]
        jobs = m.manifest["jobs"]
        inputs = {abs_norm(p) for p in common if isinstance(p, str)}
        outputs = []
        for job in jobs:
            inputs |= {abs_norm(p) for p in job["inputs"] if isinstance(p, str)}
            outputs += [abs_norm(p) for p in job["outputs"] if isinstance(p, str)]
    except (KeyError, TypeError, AttributeError):
        return False
    mine = {abs_norm(m.manifest_path), abs_norm(side_name(m.manifest_path))}
    return len(set(outputs)) != len(outputs) or bool(set(outputs) & (inputs | mine))


def sandbox_dirs(shape: Shape) -> set:
    dirs = {"/BOX", "/BOX/top", "/BOX/top/mid", f"/BOX/{WORK}", "/BOX/decoy-dir", "/"}
    for p in list(shape.files) + [shape.manifest_path]:
        d = os.path.dirname(abs_norm(p))
        while d not in dirs:
            dirs.add(d)
            d = os.path.dirname(d)
    return dirs


def in_the_way(m, p: str) -> bool:
    """Is there a directory (or our own file) where output p would go?"""
    full = abs_norm(p)
    return full in sandbox_dirs(m.shape) or full == "/BOX/top/mid/work"


def output_on_disk(rng, m):
    """Something already where an output goes."""
    c = pick_node(rng, m, lambda r, p, v: r == "output", "manifest")
    if not c:
        return False
    file, path, value, r = c
    what = rng.choice(("symlink-decoy", "symlink-dangling", "symlink-dir", "symlink-manifest",
                       "symlink-input", "symlink-absolute-decoy", "directory", "fifo",
                       "hardlink-input", "hardlink-manifest", "stale-file",
                       "parent-symlink", "parent-file", "parent-missing"))
    m.expect = REFUSE
    if what == "symlink-decoy":
        m.setup.append(("symlink", value, os.path.relpath("/BOX/decoy.txt",
                                                          os.path.dirname(abs_norm(value)))))
    elif what == "symlink-absolute-decoy":
        m.setup.append(("symlink", value, f"{BOX}/decoy.txt"))
    elif what == "symlink-dangling":
        m.setup.append(("symlink", value, "no-such-target"))
    elif what == "symlink-dir":
        m.setup.append(("symlink", value, f"{BOX}/decoy-dir"))
    elif what == "symlink-manifest":
        m.setup.append(("symlink", value, f"{BOX}/{WORK}/{m.manifest_path}"))
    elif what == "symlink-input":
        m.setup.append(("symlink", value, f"{BOX}/{WORK}/{m.manifest['jobs'][0]['inputs'][0]}"))
    elif what == "directory":
        m.setup.append(("mkdir", value, None))
    elif what == "fifo":
        m.setup.append(("fifo", value, None))
    elif what == "hardlink-input":
        m.setup.append(("hardlink", value, m.manifest["jobs"][0]["inputs"][0]))
    elif what == "hardlink-manifest":
        m.setup.append(("hardlink", value, m.manifest_path))
    elif what == "stale-file":
        m.setup.append(("file", value, b"stale object"))
        m.expect = EITHER
    elif what == "parent-symlink":
        # Build directories behind symlinks are normal: the object lands in
        # the directory the link points at.
        new = "lnk/" + os.path.basename(value)
        put(m.manifest, path, new)
        m.setup.append(("symlink", "lnk", f"{BOX}/decoy-dir"))
        m.writes.append(f"{BOX}/decoy-dir/{os.path.basename(value)}")
        m.expect = EITHER
        value = new
    elif what == "parent-file":
        new = m.manifest["jobs"][0]["inputs"][0] + "/" + os.path.basename(value)
        put(m.manifest, path, new)
        m.expect = EITHER
        value = new
    elif what == "parent-missing":
        new = "no-such-dir/" + os.path.basename(value)
        put(m.manifest, path, new)
        m.expect = EITHER
        value = new
    m.what = f"{show_path(path)} {value!r}: {what}"


def input_on_disk(rng, m):
    """An input that is not a plain file: engines that read inputs
    themselves (to hash or ship them) must not hang or crash on it, and a
    symlinked input is normal (an archive member copy, a shared tree)."""
    c = pick_node(rng, m, lambda r, p, v: r == "path" and p[-2] == "inputs"
                  and not v.startswith(BOX), "manifest")
    if not c:
        return False
    file, path, value, r = c
    what = rng.choice(("fifo", "directory", "dev-zero", "dangling", "symlink-decoy",
                       "symlink-loop"))
    m.setup.append(("remove", value, None))
    if what == "fifo":
        m.setup.append(("fifo", value, None))
    elif what == "directory":
        m.setup.append(("mkdir", value, None))
    elif what == "dev-zero":
        m.setup.append(("symlink", value, "/dev/zero"))
    elif what == "dangling":
        m.setup.append(("symlink", value, "no-such-file"))
    elif what == "symlink-decoy":
        m.setup.append(("symlink", value, f"{BOX}/decoy.txt"))
    else:
        m.setup.append(("symlink", value, value))  # a loop: ELOOP
    m.expect = EITHER
    m.what = f"{show_path(path)} {value!r}: {what}"


def manifest_file(rng, m):
    """The manifest or side file is not a plain readable file."""
    file = rng.choice(["manifest"] + (["side"] if m.has_side else []))
    name = m.manifest_path if file == "manifest" else side_name(m.manifest_path)
    what = rng.choice(("fifo", "directory", "missing", "dangling-symlink", "huge",
                       "symlink-to-fifo", "symlink-to-dev-zero", "symlink-ok"))
    m.expect = REFUSE
    if what == "fifo":
        m.setup += [("remove", name, None), ("fifo", name, None)]
    elif what == "directory":
        m.setup += [("remove", name, None), ("mkdir", name, None)]
    elif what == "missing":
        if file == "side":
            m.expect = EITHER  # no side file: a manifest of LLVM's engine
        m.setup.append(("remove", name, None))
    elif what == "dangling-symlink":
        m.setup += [("remove", name, None), ("symlink", name, "no-such-file.json")]
    elif what == "huge":
        m.setup += [("remove", name, None), ("sparse", name, 300 << 20)]
    elif what == "symlink-to-fifo":
        m.setup += [("remove", name, None), ("symlink", name, f"{BOX}/fifo")]
    elif what == "symlink-to-dev-zero":
        m.setup += [("remove", name, None), ("symlink", name, "/dev/zero")]
    elif what == "symlink-ok":
        m.setup += [("rename", name, f"{BOX}/real.json"), ("symlink", name, f"{BOX}/real.json")]
        m.expect = EITHER
    m.what = f"{file} file: {what}"


def manifest_name(rng, m):
    """The manifest (and its side file) under an odd name, as an odd -o
    makes it: not UTF-8 (a surrogate escape here is one byte on disk),
    spaces, a newline, non-ASCII."""
    m.manifest_name = rng.choice(("odd \udcff\udcfe name.json", "a\nb.json", " lead.json",
                                  "é ü.json", "quote'\"$x.json", "\udc80.json",
                                  "x" * 200 + ".json"))
    m.expect = EITHER
    m.what = f"the manifest is named {m.manifest_name!r}"


# The side file's optional strings, as side_disagrees mutates them: the
# mutation's name, the key, the value with a NUL, odd values.
SIDE_TEXT = {
    "batch": ("batch_arg", "--ba\0tch", ("", "--no-such-flag", "-o", "x" * 5000)),
    "fork-server": ("fork_server", "lib\0.so", ("", "no-such-lib.so", "/", "x" * 5000)),
}


def side_disagrees(rng, m):
    """A side file that is not of this manifest's link."""
    n = jobs_count(m)
    what = rng.choice(("count+1", "count-1", "count-huge", "count-string", "count-bool",
                       "count-float", "sizes-short", "sizes-long", "size-negative",
                       "size-bool", "size-float", "size-string", "batch-number",
                       "batch-nul", "engine-missing", "engine-number", "version-number",
                       "added", "removed", "batch-odd", "fork-server-number",
                       "fork-server-nul", "fork-server-odd"))
    if not m.has_side and what != "added":
        what = "added"
    if what == "added":
        m.side, m.has_side = _side(m.manifest["jobs"]), True
        m.side["jobs"] = n + rng.choice((1, -1)) if n else 1
        m.expect = REFUSE
    elif what == "removed":
        m.side, m.has_side = None, False
        m.expect = EITHER
    else:
        s = m.side
        m.expect = REFUSE
        if what == "count+1":
            s["jobs"] = n + 1
        elif what == "count-1":
            s["jobs"] = n - 1
        elif what == "count-huge":
            s["jobs"] = 10 ** 18
        elif what == "count-string":
            s["jobs"] = str(n)
        elif what == "count-bool":
            s["jobs"] = bool(n)
        elif what == "count-float":
            s["jobs"] = float(n)
        elif what == "sizes-short":
            s["input_bytes"] = s["input_bytes"][:-1] if n else [1]
            if not n:
                s["input_bytes"] = [1]
        elif what == "sizes-long":
            s["input_bytes"].append(5)
        elif what.startswith("size-") and not n:
            s["input_bytes"] = [{"size-negative": -1, "size-bool": True, "size-float": 1.5,
                                 "size-string": "1"}[what]]
        elif what.startswith("size-"):
            s["input_bytes"][rng.randrange(n)] = {"size-negative": -1, "size-bool": True,
                                                  "size-float": 1.5, "size-string": "1"}[what]
        elif what.rsplit("-", 1)[0] in SIDE_TEXT:
            name, kind = what.rsplit("-", 1)
            key, with_nul, odd = SIDE_TEXT[name]
            # A number or a NUL is refused; an odd string is the
            # distributor's to use or not (no such flag, no such library:
            # the jobs then run afresh).
            if kind == "odd":
                m.expect = EITHER
            s[key] = {"number": 1, "nul": with_nul}.get(kind) or rng.choice(odd)
        elif what == "engine-missing":
            del s["engine"]
        elif what == "engine-number":
            s["engine"] = 3
        elif what == "version-number":
            s["version"] = 1
    m.what = f"side file: {what}"


OPS = (delete, retype, retype, empty_string, empty_list, nul, nul_in_key, surrogate,
       bad_utf8, control_char, huge_string, huge_list, deep, add_key, dup_key, number,
       truncate, flip, flip, whole_file, path_mutation, path_mutation, path_mutation,
       output_like_input, duplicate_output, output_on_disk, output_on_disk, input_on_disk,
       manifest_file, manifest_name, side_disagrees)


# Command lines.

def arg_mutant(seed: str, d: Distributor, index: int, shape_list: list[Shape]) -> Mutant:
    rng = random.Random(f"{seed}:args:{d.name}:{index}")
    shape = rng.choice([s for s in shape_list if s.name in ("plain", "side", "parent")])
    m = Mutant("args", index, shape, "", "", EITHER, copy.deepcopy(shape.manifest),
               copy.deepcopy(shape.side))
    base = list(d.args)
    manifest = shape.manifest_path
    valued = [o for o in d.options if not o.flag_only]
    op = rng.choice(("unknown", "unknown", "no-manifest", "two-manifests", "missing-value",
                     "value-is-option", "bad-value", "bad-value", "bad-value", "good-value",
                     "good-value", "flag-with-value", "repeated", "empty-arg", "after-manifest",
                     "double-dash", "odd-bytes"))
    if op in ("bad-value",) and not any(o.bad for o in valued):
        op = "unknown"
    if op in ("missing-value", "value-is-option", "good-value", "odd-bytes") and not valued:
        op = "unknown"
    m.op = f"args:{op}"
    args = base + [manifest]
    m.expect = REFUSE
    if op == "unknown":
        extra = rng.choice(("--no-such-option", "--no-such-option=3", "-Z",
                            "--no-such-option=" + "x" * 100_000, b"--\xff"))
        args.insert(rng.randrange(len(args)), extra)
        m.what = f"unknown option {short(extra)}"
        m.names = ("unrecognized arguments", "expected one argument")
    elif op == "no-manifest":
        args = base
        m.what = "no manifest"
        m.names = ("manifest", "MANIFEST")
    elif op == "two-manifests":
        args = base + [manifest, manifest]
        m.what = "the manifest twice"
        m.names = ("unrecognized arguments",)
    elif op == "missing-value":
        o = rng.choice(valued)
        args = base + [manifest, o.flag]
        m.what = f"{o.flag} without its value, last"
        m.names = (o.flag,)
    elif op == "value-is-option":
        o = rng.choice(valued)
        args = base + [o.flag, "--quiet" if d.prog not in ("mock.py", "validate.py")
                       else "--copy", manifest]
        m.what = f"{o.flag} followed by an option"
        m.names = (o.flag,)
    elif op == "bad-value":
        o = rng.choice([o for o in valued if o.bad])
        v = rng.choice(o.bad)
        args = base + (([f"{o.flag}={v}"] if rng.random() < 0.5 or v.startswith("-")
                        else [o.flag, v]) + [manifest])
        m.what = f"{o.flag} {short(v)}"
        m.names = (o.flag,)
    elif op == "good-value":
        o = rng.choice([o for o in valued if o.good])
        v = rng.choice(o.good)
        arg = (o.flag + "=").encode() + v if isinstance(v, bytes) else f"{o.flag}={v}"
        # With --dry-run too, now and then: the value may be printed.
        dry = ["--dry-run"] if rng.random() < 0.3 and any(
            x.flag == "--dry-run" for x in d.options) else []
        args = base + dry + [arg, manifest]
        m.expect = EITHER
        if o.writes and isinstance(v, str):
            m.writes.append(v)
        m.what = f"{' '.join(dry + [o.flag])} {short(v)}"
    elif op == "odd-bytes":
        # Bytes that are not UTF-8, as a command line can carry them: the
        # option may take them or refuse them, and what is printed
        # (--dry-run) must not fail on them.
        o = rng.choice(valued)
        v = rng.choice((b"\xff", b"a\xfe b", b"\xc3\x28", b"\xed\xa0\x80"))
        dry = ["--dry-run"] if rng.random() < 0.5 and any(
            x.flag == "--dry-run" for x in d.options) else []
        args = base + dry + [o.flag.encode() + b"=" + v, manifest]
        if o.writes:
            m.writes.append(os.fsdecode(v))
        m.expect = EITHER
        m.what = f"{' '.join(dry + [o.flag])} {v!r}"
    elif op == "flag-with-value":
        fl = [o for o in d.options if o.flag_only]
        if not fl:
            args = base + ["--no-such-flag=1", manifest]
            m.what = "unknown flag with a value"
        else:
            o = rng.choice(fl)
            args = base + [f"{o.flag}=1", manifest]
            m.what = f"{o.flag}=1 (takes no value)"
            m.names = (o.flag,)
    elif op == "repeated":
        o = rng.choice(d.options) if d.options else None
        if o is None or o.flag_only:
            extra = [o.flag, o.flag] if o else []
        else:
            v = (o.good or ("x",))[0]
            extra = [f"{o.flag}={v}", f"{o.flag}={v}"]
            if o.writes:
                m.writes.append(v)
        args = base + extra + [manifest]
        m.expect = EITHER
        m.what = f"repeated {extra}"
    elif op == "empty-arg":
        args.insert(rng.randrange(len(args) + 1), "")
        m.what = "an empty argument"
    elif op == "after-manifest":
        fl = [o for o in d.options if o.flag_only]
        extra = [rng.choice(fl).flag] if fl else []
        args = base + [manifest] + extra
        m.expect = EITHER
        m.what = f"options after the manifest {extra}"
    elif op == "double-dash":
        args = base + ["--", manifest]
        m.expect = EITHER
        m.what = "-- before the manifest"
    m.args = args
    return m


# ---------------------------------------------------------------------------
# Running one distributor on one mutant.

@dataclass
class Outcome:
    ok: bool
    problems: list
    code: int | None
    stderr: bytes
    seconds: float


class Listener:
    """A REAPI endpoint that takes connections and closes them at once, and
    counts them (one per worker thread: runs are sequential on it)."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.setblocking(False)
        self.url = f"grpc://127.0.0.1:{self.sock.getsockname()[1]}"

    def drain(self) -> int:
        n = 0
        while True:
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return n
            conn.close()
            n += 1


def snapshot(root: str) -> dict:
    """Everything below root: path -> what it is, without following links."""
    seen = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                seen[p] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                seen[p] = ("dir",)
            elif stat.S_ISREG(st.st_mode):
                digest = ""
                if st.st_size <= 1 << 20:
                    with open(p, "rb") as f:
                        digest = hashlib.sha256(f.read()).hexdigest()
                seen[p] = ("file", st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode, digest)
            else:
                seen[p] = ("other", stat.S_IFMT(st.st_mode), st.st_ino)
    return seen


def changes(before: dict, after: dict) -> list[str]:
    out = []
    for p in sorted(set(before) | set(after)):
        if p not in after:
            out.append(f"removed {p}")
        elif p not in before:
            out.append(f"created {p}")
        elif before[p] != after[p]:
            out.append(f"changed {p}")
    return out


def fs_bytes(p) -> bytes:
    return p if isinstance(p, bytes) else os.fsencode(p)


class Runner:
    def __init__(self, python: str, root: str, stubs: str, timeout: float, keep: str | None,
                 reapi_stubs: str | None):
        self.python = python
        self.root = root
        self.stubs = stubs
        self.timeout = timeout
        self.keep = keep
        self.reapi_stubs = reapi_stubs
        self.local = threading.local()

    def listener(self) -> Listener:
        if not hasattr(self.local, "listener"):
            self.local.listener = Listener()
        return self.local.listener

    def prepare(self, run: str, m: Mutant) -> tuple[str, str]:
        box = os.path.join(run, "box")
        work = os.path.join(box, WORK)
        os.makedirs(work)
        os.makedirs(os.path.join(run, "tmp"))
        with open(os.path.join(box, "decoy.txt"), "w") as f:
            f.write("decoy: a symlinked output must never write here\n")
        os.makedirs(os.path.join(box, "decoy-dir"))
        with open(os.path.join(box, "decoy-dir", "keep.txt"), "w") as f:
            f.write("keep\n")
        # For options naming files: a FIFO (nothing may wait on it) and a
        # file that is not UTF-8.
        os.mkfifo(os.path.join(box, "fifo"))
        with open(os.path.join(box, "binary.bin"), "wb") as f:
            f.write(b"\xff\xfe\x00binary\x80\n")

        def at(p):
            return os.path.join(work, p.replace(BOX, box))

        def sub(data: bytes) -> bytes:
            for name, value in ((BOX, box), (PY, self.python), (CC, FUZZ_CC)):
                data = data.replace(name.encode(), json.dumps(value)[1:-1].encode())
            return data

        for p, content in m.shape.files.items():
            os.makedirs(os.path.dirname(at(p)), exist_ok=True)
            with open(at(p), "wb") as f:
                f.write(content)
        mpath = at(m.manifest_path)
        os.makedirs(os.path.dirname(mpath), exist_ok=True)
        for path, doc, present in ((mpath, m.manifest, True),
                                   (at(side_name(m.manifest_path)), m.side, m.has_side)):
            if present:
                with open(path, "wb") as f:
                    f.write(sub(doc if isinstance(doc, bytes) else dump(doc)))
        for action, p, arg in m.setup:
            p = at(p)
            if action == "remove":
                if os.path.lexists(p):
                    os.unlink(p)
            elif action == "symlink":
                os.symlink(arg.replace(BOX, box), p)
            elif action == "mkdir":
                os.mkdir(p)
            elif action == "fifo":
                os.mkfifo(p)
            elif action == "file":
                with open(p, "wb") as f:
                    f.write(arg)
            elif action == "hardlink":
                os.link(at(arg), p)
            elif action == "sparse":
                with open(p, "wb") as f:
                    f.truncate(arg)
            elif action == "rename":
                os.rename(p, arg.replace(BOX, box))
        return box, work

    def allowed_writes(self, m: Mutant, box: str, work: str) -> set:
        """Paths a normal (not refused) run may create or change."""
        names = list(m.writes)
        doc = m.manifest
        if isinstance(doc, bytes):  # a byte-level mutant: what does it say now?
            try:
                doc = json.loads(doc.decode("utf-8", "surrogateescape"))
            except (ValueError, RecursionError):
                doc = {}
        if not isinstance(doc, dict):
            doc = {}
        jobs = doc.get("jobs") if isinstance(doc.get("jobs"), list) else []
        for job in jobs:
            if not isinstance(job, dict):
                continue
            outs = job.get("outputs")
            names += [o for o in outs if isinstance(o, str)] if isinstance(outs, list) else []
            args = job.get("args")
            if isinstance(args, list):
                names += [args[i + 1] for i, a in enumerate(args[:-1])
                          if a == "-o" and isinstance(args[i + 1], str)]
        allowed = set()
        for n in names:
            full = os.path.normpath(os.path.join(work, n.replace(BOX, box)))
            allowed.add(full)
            parent = os.path.dirname(full)
            allowed.add(os.path.join(os.path.realpath(parent), os.path.basename(full)))
        return allowed

    def run(self, d: Distributor, m: Mutant) -> Outcome:
        run = tempfile.mkdtemp(prefix=f"{d.name}.{m.kind}{m.index}.", dir=self.root)
        try:
            return self._run(d, m, run)
        finally:
            if not self.keep or not getattr(self.local, "keep_this", False):
                shutil.rmtree(run, ignore_errors=True)
            else:
                kept = os.path.join(self.keep, os.path.basename(run))
                shutil.move(run, kept)
            self.local.keep_this = False

    def _run(self, d: Distributor, m: Mutant, run: str) -> Outcome:
        box, work = self.prepare(run, m)
        contact = os.path.join(run, "contact.log")
        tmp = os.path.join(run, "tmp")
        listener = self.listener() if "{endpoint}" in " ".join(map(str, d.args)) else None

        def expand(a):
            if isinstance(a, bytes):
                return a
            a = a.replace("{stubs}", self.stubs).replace(BOX, box)
            return a.replace("{endpoint}", listener.url) if listener else a
        args = [expand(a) for a in (m.args if m.args is not None else
                                    list(d.args) + [m.manifest_path])]
        argv = [self.python, os.path.join(SRC_ROOT, d.script)] + args
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("DTLTO_") and k not in ("MAKEFLAGS", "MFLAGS")}
        # PYTHONIOENCODING: stdout as strict as under a UTF-8 locale such as
        # en_US.UTF-8 (here C.UTF-8 would let Python print anything).
        env.update(TMPDIR=tmp, FUZZ_CONTACT=contact, FUZZ_SANDBOX=os.path.realpath(box),
                   PYTHONDONTWRITEBYTECODE="1", PWD=work, PYTHONIOENCODING="utf-8:strict")
        if self.reapi_stubs:
            env["DTLTO_REAPI_STUBS"] = self.reapi_stubs
        if listener:
            listener.drain()
        before = snapshot(box)
        absent_before = os.path.lexists(ABSENT_ROOT)
        start = time.monotonic()
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            proc = subprocess.Popen([fs_bytes(a) for a in argv], cwd=work, env=env,
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    start_new_session=True)
            connections = 0
            hung = False
            while proc.poll() is None:
                if time.monotonic() - start > self.timeout:
                    hung = True
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    break
                if listener:
                    select.select([listener.sock], [], [], 0.05)
                    connections += listener.drain()
                else:
                    try:
                        proc.wait(timeout=0.05)
                    except subprocess.TimeoutExpired:
                        pass
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # what it left running
            except OSError:
                pass
            if listener:
                connections += listener.drain()
            seconds = time.monotonic() - start
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read(), err.read()
        code = None if hung else proc.returncode
        problems = []
        if hung:
            problems.append(f"did not finish within {self.timeout:.0f} s (hang guard)")
        for name, data in (("stdout", stdout), ("stderr", stderr)):
            if b"Traceback (most recent call last)" in data:
                problems.append(f"a Python traceback on {name}")
        prog = d.prog.encode()
        after = snapshot(box)
        changed = changes(before, after)
        leftovers = sorted(os.listdir(tmp))
        if leftovers:
            problems.append(f"left in $TMPDIR: {', '.join(leftovers[:5])}")
        if not absent_before and os.path.lexists(ABSENT_ROOT):
            problems.append(f"created {ABSENT_ROOT}")
        started = []
        if os.path.exists(contact):
            with open(contact, "rb") as f:
                started = f.read().decode("utf-8", "replace").split()
        if connections:
            started.append(f"{connections} connection(s) to the REAPI endpoint")
        if code == 2:
            lines = stderr.count(b"\n") + (1 if stderr and not stderr.endswith(b"\n") else 0)
            if lines != 1:
                problems.append(f"exit code 2 with {lines} lines on stderr, not 1")
            if not stderr.startswith(prog + b": error: "):
                problems.append(f'exit code 2, but stderr does not start with "{d.prog}: error: "')
            if m.expect == REFUSE and m.kind == "manifest" and not self._names_file(stderr, m):
                problems.append("the error does not name the manifest or its side file")
            if m.expect == REFUSE and m.names and \
                    not any(n.encode() in stderr for n in m.names):
                problems.append(f"the error does not name {' or '.join(m.names)}")
            if changed:
                problems.append("refused, but changed the sandbox: " + "; ".join(changed[:5]))
            if started:
                problems.append("refused, but started or contacted: " + " ".join(started[:5]))
        elif not hung:
            if m.expect == REFUSE:
                problems.append(f"exit code {code}, expected 2 (the mutant must be refused)")
            elif code not in (0, 1):
                problems.append(f"exit code {code}, expected 0, 1 or 2")
            if code == 1 and not stderr.startswith(prog + b": "):
                problems.append(f'exit code 1, but stderr does not start with "{d.prog}: "')
            allowed = self.allowed_writes(m, box, work)
            below = [os.path.normpath(os.path.join(work, w.replace(BOX, box))) + os.sep
                     for w in m.writes]
            stray = [c for c in changed
                     if c.split(" ", 1)[1] not in allowed and not self._parent_of(c, allowed)
                     and not any(c.split(" ", 1)[1].startswith(b) for b in below)]
            if stray:
                problems.append("wrote what it should not: " + "; ".join(stray[:5]))
        if problems and self.keep:
            self.local.keep_this = True
            with open(os.path.join(run, "stderr.txt"), "wb") as f:
                f.write(stderr)
            with open(os.path.join(run, "argv.txt"), "w") as f:
                f.write(" ".join(repr(a) for a in argv) + "\n")
        return Outcome(not problems, problems, code, stderr, seconds)

    @staticmethod
    def _parent_of(change: str, allowed: set) -> bool:
        kind, p = change.split(" ", 1)
        return kind == "created" and any(a.startswith(p + os.sep) for a in allowed)

    @staticmethod
    def _names_file(stderr: bytes, m: Mutant) -> bool:
        base = os.fsencode(os.path.basename(m.manifest_path)[:-len(".json")])
        return base in stderr


# ---------------------------------------------------------------------------

def main() -> int:
    p = argparse.ArgumentParser(
        prog="fuzz_manifests.py", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", default="1", help="the seed (any string; default 1)")
    p.add_argument("--manifests", type=int, default=30, metavar="N",
                   help="manifest mutants per distributor (default 30)")
    p.add_argument("--arguments", type=int, default=10, metavar="N",
                   help="command-line mutants per distributor (default 10)")
    p.add_argument("--first", type=int, default=0, metavar="K",
                   help="start at mutant K (to replay one: --first K --manifests 1)")
    p.add_argument("--every-op", action="store_true",
                   help="manifest mutant K applies the (K mod n)-th kind of mutation, so "
                        "that a short run tries every kind (replays need it too)")
    p.add_argument("--distributor", action="append", default=[], metavar="NAME",
                   help="only this distributor (repeatable; default: all): "
                        + ", ".join(d.name for d in DISTRIBUTORS if not d.hidden))
    p.add_argument("--workers", type=int, default=2, metavar="N",
                   help="runs at once (default 2)")
    p.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                   help="hang guard of one run (default 120)")
    p.add_argument("--python", default=sys.executable,
                   help="the interpreter to run the distributors with (default: this one)")
    p.add_argument("--build-dir", default=os.path.join(SRC_ROOT, "build"),
                   help="the build directory, for REAPI's protocol stubs (default: build)")
    p.add_argument("--work-dir", metavar="DIR",
                   help="where the sandboxes are made (default: $TMPDIR)")
    p.add_argument("--keep", metavar="DIR",
                   help="move the sandboxes of failing runs into DIR")
    p.add_argument("--show", action="store_true",
                   help="print every mutant and its outcome, not only failures")
    p.add_argument("--list", action="store_true",
                   help="print the mutants (without running anything) and exit")
    a = p.parse_args()

    chosen = [d for d in DISTRIBUTORS
              if d.name in a.distributor or (not a.distributor and not d.hidden)]
    unknown = set(a.distributor) - {d.name for d in DISTRIBUTORS}
    if unknown:
        p.error(f"unknown distributor {sorted(unknown)[0]}")
    shape_list = shapes()
    gen = Gen(a.seed, shape_list, a.every_op)
    manifest_mutants = [gen.mutant(i) for i in range(a.first, a.first + a.manifests)]
    if a.list:
        for m in manifest_mutants:
            print(f"manifest {m.index} [{m.shape.name}] {m.op} {m.expect}: {m.what}")
        for d in chosen:
            for i in range(a.first, a.first + a.arguments):
                m = arg_mutant(a.seed, d, i, shape_list)
                print(f"{d.name} args {i} [{m.shape.name}] {m.op} {m.expect}: {m.what}")
        return 0

    if os.path.lexists(ABSENT_ROOT):
        p.error(f"{ABSENT_ROOT} exists: the fuzzer needs it absent")
    reapi_stubs = os.path.join(a.build_dir, "distributors", "reapi", "gen")
    for d in chosen:
        if d.needs and subprocess.run([a.python, "-c", f"import {d.needs}"],
                                      capture_output=True).returncode:
            p.error(f"{d.name} needs the Python module {d.needs} under {a.python}")
        if d.name == "reapi" and not os.path.isdir(reapi_stubs):
            p.error(f"reapi needs its protocol stubs in {reapi_stubs} (ninja -C build)")

    if a.work_dir:
        os.makedirs(a.work_dir, exist_ok=True)
    root = tempfile.mkdtemp(prefix="dtlto-fuzz-", dir=a.work_dir)
    stubs = os.path.join(root, "stubs")
    os.mkdir(stubs)
    for name in STUB_NAMES:
        path = os.path.join(stubs, name)
        with open(path, "w") as f:
            f.write(STUB_TEXT)
        os.chmod(path, 0o755)
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
    runner = Runner(a.python, root, stubs, a.timeout, a.keep, reapi_stubs)

    tasks = []
    for d in chosen:
        tasks += [(d, m) for m in manifest_mutants]
        tasks += [(d, arg_mutant(a.seed, d, i, shape_list))
                  for i in range(a.first, a.first + a.arguments)]
    print(f"fuzz: seed {a.seed}: {len(manifest_mutants)} manifests and {a.arguments} "
          f"command lines for each of {len(chosen)} distributors ({len(tasks)} runs)",
          flush=True)
    stats = {d.name: {"manifest": 0, "args": 0, "refuse": 0, "exit2": 0, "exit01": 0,
                      "failed": 0, "seconds": 0.0} for d in chosen}
    lock = threading.Lock()
    failures = []
    started = time.monotonic()

    def one(task):
        d, m = task
        try:
            o = runner.run(d, m)
        except Exception as e:  # the harness's own bug: say so, do not hide it
            o = Outcome(False, [f"harness error: {type(e).__name__}: {e}"], None, b"", 0.0)
        with lock:
            s = stats[d.name]
            s[m.kind] += 1
            s["refuse"] += m.expect == REFUSE
            s["exit2"] += o.code == 2
            s["exit01"] += o.code in (0, 1)
            s["seconds"] += o.seconds
            line = (f"{d.name} {m.kind} {m.index} [{m.shape.name}] {m.op} ({m.expect}): "
                    f"{m.what}")
            if not o.ok:
                s["failed"] += 1
                failures.append((d, m, o))
                print(f"FAIL {line}", flush=True)
                for problem in o.problems:
                    print(f"  {problem}")
                for err_line in o.stderr.decode("utf-8", "backslashreplace").splitlines()[-6:]:
                    print(f"  | {err_line[:300]}")
                which = "--manifests 1 --arguments 0" if m.kind == "manifest" else \
                    "--manifests 0 --arguments 1"
                if a.every_op and m.kind == "manifest":
                    which += " --every-op"
                print(f"  replay: {os.path.relpath(__file__)} --seed {a.seed} --first "
                      f"{m.index} {which} --distributor {d.name} --keep /tmp/fuzz-kept",
                      flush=True)
            elif a.show:
                print(f"ok   {line}: exit {o.code}", flush=True)

    # SIGTERM ends the run like Ctrl-C: the sandboxes are removed.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        with ThreadPoolExecutor(max_workers=max(1, a.workers)) as pool:
            list(pool.map(one, tasks))
    finally:
        shutil.rmtree(root, ignore_errors=True)

    elapsed = time.monotonic() - started
    print(f"{'distributor':14} {'manifests':>9} {'args':>5} {'to refuse':>9} {'exit 2':>6} "
          f"{'exit 0/1':>8} {'failed':>6} {'run s':>7}")
    for d in chosen:
        s = stats[d.name]
        print(f"{d.name:14} {s['manifest']:9} {s['args']:5} {s['refuse']:9} {s['exit2']:6} "
              f"{s['exit01']:8} {s['failed']:6} {s['seconds']:7.1f}")
    print(f"fuzz: seed {a.seed}: {len(tasks)} runs, {len(failures)} failed, "
          f"{elapsed:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
