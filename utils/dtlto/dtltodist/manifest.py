"""The DTLTO job manifest: the one place in Python that knows its schema.

The linker writes a JSON file and appends its path to the distributor's
command line. Every distributor loads it with load() and gets plain
dataclasses back, or a ManifestError whose text is one line naming the file
and the JSON path of the problem (e.g. "jobs[3].outputs[0]").

Schema (LLVM 22):
  { "common": { "linker_output": str, "args": [str, ...], "inputs": [str, ...] },
    "jobs": [ { "args": [str, ...], "inputs": [str, ...], "outputs": [str, ...] } ] }

Reserved positions: common.args[0] is the compiler, a job's inputs[0] its
bitcode module, inputs[1] its index shard and outputs[0] its native object.
Keys we do not know (extra per-job fields a future engine might add) are
kept in .extra, unvalidated, and otherwise ignored.

Our engine also writes a side file next to the manifest, which the manifest
does not name (so distributors written for LLVM never see it): the manifest's
path with ".json" replaced by ".dtlto.json" (docs/manifest.md).
  { "engine": "dtlto", "version": str, "jobs": N, "batch_arg": str (optional),
    "input_bytes": [int, ...] (one per job, in manifest order) }
load() reads it when it is there: Job.input_bytes and Manifest.batch_arg
come from it, and dispatch_order() starts the largest jobs first.
"""

import dataclasses
import json
import os
import stat
from dataclasses import dataclass, field

# A manifest for 100k jobs is a few tens of MiB; anything far larger is not a
# manifest, and reading it would only exhaust memory.
MAX_MANIFEST_BYTES = 256 * 1024 * 1024


class ManifestError(Exception):
    """A manifest that cannot be used. str() is one line for the user."""


@dataclass(frozen=True)
class Job:
    index: int
    args: list[str]
    inputs: list[str]
    outputs: list[str]
    command: list[str]  # common.args + args: what a local run executes
    extra: dict = field(default_factory=dict)
    input_bytes: int | None = None  # from the side file

    @property
    def module(self) -> str:
        return self.inputs[0]

    @property
    def shard(self) -> str:
        return self.inputs[1]

    @property
    def object(self) -> str:
        return self.outputs[0]


@dataclass(frozen=True)
class Manifest:
    path: str
    linker_output: str
    common_args: list[str]
    common_inputs: list[str]
    jobs: list[Job]
    extra: dict = field(default_factory=dict)
    side_file: str | None = None  # the side file read, if any
    engine: str = ""  # which engine wrote it ("dtlto"), from the side file
    batch_arg: str = ""  # starts a batch worker (dtlto-backend --batch)
    streaming: bool = False  # the jobs come on the job channel (events.JobFeed)

    @property
    def compiler(self) -> str:
        return self.common_args[0]


def side_file_path(manifest_path: str) -> str:
    """Where our engine puts the side file of the manifest at manifest_path."""
    base = manifest_path[:-len(".json")] if manifest_path.endswith(".json") else manifest_path
    return base + ".dtlto.json"


def dispatch_order(jobs: list[Job]) -> list[Job]:
    """The order to start jobs in: largest input first when the side file
    gave every job's size (an in-order greedy dispatch then balances the
    load across slots), else manifest order. Ties keep manifest order."""
    if not jobs or any(job.input_bytes is None for job in jobs):
        return list(jobs)
    return sorted(jobs, key=lambda job: -job.input_bytes)


def load(path: str) -> Manifest:
    """Read and validate the manifest at path, and its side file if there is
    one; raise ManifestError."""
    m = parse(_read_json(path), path)
    side = side_file_path(path)
    if not os.path.lexists(side):
        return m
    return _with_side_file(m, _read_json(side), side)


def _read_json(path: str):
    text = _read_text(path)
    try:
        return json.loads(text, object_pairs_hook=_reject_duplicate_keys)
    except json.JSONDecodeError as e:
        raise ManifestError(
            f"{path}: not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})"
        ) from None
    except _DuplicateKey as e:
        raise ManifestError(f"{path}: duplicate key {e} in a JSON object") from None
    except RecursionError:
        raise ManifestError(f"{path}: JSON nested too deeply") from None


def _with_side_file(m: Manifest, data, path: str) -> Manifest:
    c = _Checker(path)
    c.object(data, "")
    engine = c.key(data, "engine", "", str)
    count = data.get("jobs")
    if isinstance(count, bool) or count != len(m.jobs):
        raise c.error("jobs", f"says {json.dumps(count)} jobs, but {m.path} has "
                      f"{len(m.jobs)}: they are not of one link (remove the stale file)")
    batch = data.get("batch_arg", "")
    if not isinstance(batch, str) or "\0" in batch:
        raise c.error("batch_arg", "expected a string without NUL characters")
    sizes = c.key(data, "input_bytes", "", list)
    if len(sizes) != len(m.jobs):
        raise c.error("input_bytes", f"has {len(sizes)} items for {len(m.jobs)} jobs")
    for i, size in enumerate(sizes):
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise c.error(f"input_bytes[{i}]", f"expected a byte count, got {_json_type(size)}")
    stream = data.get("stream", 0)
    if stream not in (0, 1) or isinstance(stream, bool):
        raise c.error("stream", f"expected 0 or 1, got {json.dumps(stream)}")
    jobs = [dataclasses.replace(job, input_bytes=size) for job, size in zip(m.jobs, sizes)]
    return dataclasses.replace(m, jobs=jobs, side_file=path, engine=engine, batch_arg=batch,
                               streaming=stream == 1)


def parse(data, path: str = "<manifest>") -> Manifest:
    """Validate already-decoded JSON data; path is only used in messages."""
    c = _Checker(path)
    c.object(data, "")
    common = c.key(data, "common", "", dict)
    linker_output = c.path_string(c.key(common, "linker_output", "common", str),
                                  "common.linker_output")
    common_args = c.string_list(common, "args", "common", at_least=1)
    if not common_args[0]:
        raise c.error("common.args[0]", "the compiler path is empty (the linker was "
                      "given no remote compiler: pass --thinlto-remote-compiler=<clang>, "
                      "or link through clang -fthinlto-distributor=, which passes itself)")
    common_inputs = c.path_list(common, "inputs", "common", at_least=0)

    raw_jobs = c.key(data, "jobs", "", list)
    jobs = []
    for i, raw in enumerate(raw_jobs):
        where = f"jobs[{i}]"
        c.object(raw, where)
        args = c.string_list(raw, "args", where, at_least=1)
        # inputs[0] and inputs[1] (module and shard) and outputs[0] (object)
        # are reserved positions, so they must be there.
        inputs = c.path_list(raw, "inputs", where, at_least=2)
        outputs = c.path_list(raw, "outputs", where, at_least=1)
        jobs.append(Job(index=i, args=args, inputs=inputs, outputs=outputs,
                        command=common_args + args,
                        extra=_unknown_keys(raw, ("args", "inputs", "outputs"))))

    _check_outputs_are_distinct(c, common_inputs, jobs)
    return Manifest(path=path, linker_output=linker_output,
                    common_args=common_args, common_inputs=common_inputs,
                    jobs=jobs, extra=_unknown_keys(data, ("common", "jobs")))


def _read_text(path: str) -> str:
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise ManifestError(f"{path}: not a regular file")
            if st.st_size > MAX_MANIFEST_BYTES:
                raise ManifestError(
                    f"{path}: {st.st_size} bytes is larger than the "
                    f"{MAX_MANIFEST_BYTES >> 20} MiB limit for a manifest")
            # Read one byte past the limit so a file that grows while we read
            # it is still caught.
            raw = f.read(MAX_MANIFEST_BYTES + 1)
    except OSError as e:
        raise ManifestError(f"{path}: cannot read manifest: {e.strerror}") from None
    if len(raw) > MAX_MANIFEST_BYTES:
        raise ManifestError(f"{path}: larger than the "
                            f"{MAX_MANIFEST_BYTES >> 20} MiB limit for a manifest")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ManifestError(f"{path}: not UTF-8 (invalid byte at offset {e.start})") from None


class _DuplicateKey(Exception):
    pass


def _reject_duplicate_keys(pairs):
    # json keeps the last of two equal keys silently; a manifest with two
    # "jobs" lists is ambiguous, so refuse it.
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKey(json.dumps(key))
        seen[key] = value
    return seen


def _unknown_keys(obj: dict, known) -> dict:
    return {k: v for k, v in obj.items() if k not in known}


_TYPE_NAMES = {dict: "an object", list: "a list", str: "a string"}


def _json_type(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return _TYPE_NAMES.get(type(value), type(value).__name__)


class _Checker:
    """Type checks that raise ManifestError naming the file and JSON path."""

    def __init__(self, path: str):
        self.path = path

    def error(self, where: str, what: str) -> ManifestError:
        return ManifestError(f"{self.path}: {where or 'top level'}: {what}")

    def object(self, value, where: str):
        if not isinstance(value, dict):
            raise self.error(where, f"expected an object, got {_json_type(value)}")

    def key(self, obj: dict, name: str, where: str, kind):
        sub = f"{where}.{name}" if where else name
        if name not in obj:
            raise self.error(where, f'missing key "{name}"')
        value = obj[name]
        if not isinstance(value, kind):
            raise self.error(sub, f"expected {_TYPE_NAMES[kind]}, got {_json_type(value)}")
        return value

    def string_list(self, obj: dict, name: str, where: str, at_least: int) -> list[str]:
        sub = f"{where}.{name}"
        items = self.key(obj, name, where, list)
        if len(items) < at_least:
            need = "must not be empty" if at_least == 1 else f"needs at least {at_least} items"
            raise self.error(sub, f"{need}, has {len(items)}")
        for i, item in enumerate(items):
            if not isinstance(item, str):
                raise self.error(f"{sub}[{i}]", f"expected a string, got {_json_type(item)}")
            # execve() and open() cannot take a NUL byte.
            if "\0" in item:
                raise self.error(f"{sub}[{i}]", "contains a NUL character")
        return list(items)

    def path_list(self, obj: dict, name: str, where: str, at_least: int) -> list[str]:
        items = self.string_list(obj, name, where, at_least)
        for i, item in enumerate(items):
            self.path_string(item, f"{where}.{name}[{i}]")
        return items

    def path_string(self, value: str, where: str) -> str:
        if not value:
            raise self.error(where, "empty path")
        if "\0" in value:
            raise self.error(where, "contains a NUL character")
        return value


def _check_outputs_are_distinct(c: _Checker, common_inputs, jobs):
    # Jobs run in parallel: two jobs writing one file, or a job overwriting a
    # file another job reads, would race. Compare normalized paths so that
    # "./a.o" and "a.o" are the same file.
    inputs = {}
    for i, p in enumerate(common_inputs):
        inputs.setdefault(os.path.normpath(p), f"common.inputs[{i}]")
    for job in jobs:
        for i, p in enumerate(job.inputs):
            inputs.setdefault(os.path.normpath(p), f"jobs[{job.index}].inputs[{i}]")
    outputs = {}
    for job in jobs:
        for i, p in enumerate(job.outputs):
            where = f"jobs[{job.index}].outputs[{i}]"
            key = os.path.normpath(p)
            if key in outputs:
                raise c.error(where, f'output "{p}" is also {outputs[key]}')
            if key in inputs:
                raise c.error(where, f'output "{p}" is also the input {inputs[key]}')
            outputs[key] = where
