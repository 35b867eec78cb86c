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
    "fork_server": str (optional),
    "input_bytes": [int, ...] (one per job, in manifest order) }
load() reads it when it is there: Job.input_bytes, Manifest.batch_arg and
Manifest.fork_server come from it, and dispatch_order() starts the largest
jobs first.
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
    fork_server: str = ""  # the fork server library (forkserver.py), if any
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
    one, and check that no output is in the way on disk; raise
    ManifestError."""
    m = parse(_read_json(path), path)
    side = side_file_path(path)
    if os.path.lexists(side):
        m = _with_side_file(m, _read_json(side), side)
    _check_outputs_on_disk(m)
    return m


# Integers in a manifest are job counts and byte counts; far longer digit
# strings are damage, and Python refuses to convert them past 4300 digits.
MAX_INT_DIGITS = 20


def _read_json(path: str):
    text = _read_text(path)
    try:
        data = json.loads(text, object_pairs_hook=_reject_duplicate_keys,
                          parse_int=_parse_int, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise ManifestError(
            f"{path}: not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})"
        ) from None
    except _DuplicateKey as e:
        raise ManifestError(f"{path}: duplicate key {e} in a JSON object") from None
    except _BadNumber as e:
        raise ManifestError(f"{path}: not valid JSON: {e}") from None
    except RecursionError:
        raise ManifestError(f"{path}: JSON nested too deeply") from None
    # A \uD800-style escape decodes to a lone surrogate, which no file name,
    # argument or output stream can carry: find it now, not in a crash later.
    if "\\u" in text:
        where = _lone_surrogate(data)
        if where is not None:
            raise ManifestError(f"{path}: {where or 'top level'}: contains an unpaired "
                                "UTF-16 surrogate escape, which is not a character")
    return data


class _BadNumber(Exception):
    pass


def _parse_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise _BadNumber(f"a number of {digits} digits is too large")
    return int(text)


def _reject_constant(name: str):
    # Python's json reads NaN and Infinity, which JSON does not have.
    raise _BadNumber(f"{name} is not a JSON value")


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _lone_surrogate(data):
    """The JSON path of the first string or key holding a lone surrogate,
    or None. Iterative: the data may be nested as deep as json allows."""
    stack = [(data, "")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, str):
            if _has_surrogate(value):
                return where
        elif isinstance(value, dict):
            for key in value:
                if _has_surrogate(key):
                    return where
            stack.extend((item, _member(where, key))
                         for key, item in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((value[i], f"{where}[{i}]") for i in reversed(range(len(value))))
    return None


def _member(where: str, key: str) -> str:
    """The JSON path of where's member key, on one line whatever the key."""
    if key.isascii() and key.replace("_", "").replace("-", "").isalnum():
        return f"{where}.{key}" if where else key
    return f"{where}[{json.dumps(key)}]"


def _shown_json(value) -> str:
    """A JSON value for a message: one line, cut when long."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:40] + "..."


def _quoted(text: str) -> str:
    """text in double quotes for a message, on one line whatever it holds."""
    return json.dumps(text, ensure_ascii=False)


def _with_side_file(m: Manifest, data, path: str) -> Manifest:
    c = _Checker(path)
    c.object(data, "")
    engine = c.text(c.key(data, "engine", "", str), "engine")
    if "version" in data:
        c.text(c.key(data, "version", "", str), "version")
    count = c.key(data, "jobs", "", int)
    if _is_bool(count):
        raise c.error("jobs", "expected a job count, got a boolean")
    if count != len(m.jobs):
        raise c.error("jobs", f"says {count} jobs, but {m.path} has "
                      f"{len(m.jobs)}: they are not of one link (remove the stale file)")
    batch = c.text(c.key(data, "batch_arg", "", str), "batch_arg") \
        if "batch_arg" in data else ""
    fork_server = c.text(c.key(data, "fork_server", "", str), "fork_server") \
        if "fork_server" in data else ""
    sizes = c.key(data, "input_bytes", "", list)
    if len(sizes) != len(m.jobs):
        raise c.error("input_bytes", f"has {len(sizes)} items for {len(m.jobs)} jobs")
    for i, size in enumerate(sizes):
        if not isinstance(size, int) or _is_bool(size):
            raise c.error(f"input_bytes[{i}]", f"expected a byte count, got {_json_type(size)}")
        if size < 0:
            raise c.error(f"input_bytes[{i}]", f"expected a byte count, got {size}")
    stream = data.get("stream", 0)
    if not isinstance(stream, int) or _is_bool(stream) or stream not in (0, 1):
        raise c.error("stream", f"expected 0 or 1, got {_shown_json(stream)}")
    jobs = [dataclasses.replace(job, input_bytes=size) for job, size in zip(m.jobs, sizes)]
    return dataclasses.replace(m, jobs=jobs, side_file=path, engine=engine, batch_arg=batch,
                               fork_server=fork_server, streaming=stream == 1)


def parse(data, path: str = "<manifest>", key=None) -> Manifest:
    """Validate already-decoded JSON data; path is only used in messages.
    key: the caller's _absolute_key(), to compare paths with (a stream
    parses each record as a manifest, and need not ask for the working
    directory each time)."""
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

    _check_outputs_are_distinct(c, common_inputs, jobs, key or _absolute_key())
    return Manifest(path=path, linker_output=linker_output,
                    common_args=common_args, common_inputs=common_inputs,
                    jobs=jobs, extra=_unknown_keys(data, ("common", "jobs")))


def _read_text(path: str) -> str:
    try:
        # Non-blocking: opening a FIFO for reading would otherwise wait for a
        # writer forever, before fstat could tell it is no regular file.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        with open(fd, "rb") as f:
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


_TYPE_NAMES = {dict: "an object", list: "a list", str: "a string", int: "an integer"}


def _is_bool(value) -> bool:
    return isinstance(value, bool)


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
            if "\0" in item:  # inline, not self.text(): 100k jobs have a million strings
                self.text(item, f"{sub}[{i}]")
        return list(items)

    def path_list(self, obj: dict, name: str, where: str, at_least: int) -> list[str]:
        items = self.string_list(obj, name, where, at_least)  # NULs checked there
        for i, item in enumerate(items):
            if not item:
                raise self.error(f"{where}.{name}[{i}]", "empty path")
        return items

    def path_string(self, value: str, where: str) -> str:
        if not value:
            raise self.error(where, "empty path")
        return self.text(value, where)

    def text(self, value: str, where: str) -> str:
        # execve() and open() cannot take a NUL byte.
        if "\0" in value:
            raise self.error(where, "contains a NUL character")
        return value


def _check_outputs_are_distinct(c: _Checker, common_inputs, jobs, key):
    # Jobs run in parallel: two jobs writing one file, or a job overwriting a
    # file another job reads, would race. Compare absolute, normalized paths
    # so that "./a.o", "d/../a.o" and "$PWD/a.o" are the same file.
    inputs = {}
    for i, p in enumerate(common_inputs):
        inputs.setdefault(key(p), f"common.inputs[{i}]")
    for job in jobs:
        for i, p in enumerate(job.inputs):
            inputs.setdefault(key(p), f"jobs[{job.index}].inputs[{i}]")
    outputs = {}
    for job in jobs:
        for i, p in enumerate(job.outputs):
            where = f"jobs[{job.index}].outputs[{i}]"
            k = key(p)
            if k in outputs:
                raise c.error(where, f"output {_quoted(p)} is also {outputs[k]}")
            if k in inputs:
                raise c.error(where, f"output {_quoted(p)} is also the input {inputs[k]}")
            outputs[k] = where


def _absolute_key():
    """A function giving a path's absolute, normalised form, against our
    working directory; memoised, since a module is an input of every job
    that imports it (and os.path.join is slow for 100k jobs)."""
    cwd = os.getcwd()
    known = {}

    def key(p: str) -> str:
        k = known.get(p)
        if k is None:
            k = known[p] = os.path.normpath(p if p.startswith("/") else cwd + "/" + p)
        return k
    return key


def _our_files(m: Manifest, key) -> tuple[dict, dict]:
    """The manifest and its side file, by absolute name and by inode: no
    output may be either."""
    ours, our_names = {}, {}
    for name, p in (("the manifest", m.path), ("the side file", side_file_path(m.path))):
        our_names[key(p)] = name
        try:
            st = os.stat(p)
            ours[(st.st_dev, st.st_ino)] = name
        except OSError:
            pass
    return our_names, ours


def _check_outputs_on_disk(m: Manifest, c: "_Checker | None" = None,
                           where_of=lambda job: f"jobs[{job.index}]",
                           key=None, our_files=None) -> None:
    """Refuse outputs that are in the way: a job, or a distributor bringing
    an object back, would write through a symlink (anywhere it points), into
    a FIFO (and wait forever), or over the manifest; an existing output may
    only be a regular file (a stale object of an earlier link), and not one
    that is also an input (a hard link). Files that do not exist yet, or
    cannot be looked at, are the jobs' business. c and where_of(job) name
    the file and the job in messages. A caller checking job after job
    passes its key (_absolute_key) and _our_files, made once."""
    c = c or _Checker(m.path)
    key = key or _absolute_key()
    our_names, ours = our_files or _our_files(m, key)
    existing = []
    for job in m.jobs:
        for i, p in enumerate(job.outputs):
            where = f"{where_of(job)}.outputs[{i}]".lstrip(".")
            # By name too: "sub/../m.json" is the manifest once sub exists.
            name = our_names.get(key(p))
            if name:
                raise c.error(where, f"output {_quoted(p)} is {name}")
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                try:
                    target = os.readlink(p)
                except OSError:
                    target = "?"
                raise c.error(where, f"output {_quoted(p)} is a symlink (to {_quoted(target)}), "
                              "which a job would write through; remove it")
            if stat.S_ISDIR(st.st_mode):
                raise c.error(where, f"output {_quoted(p)} is a directory")
            if not stat.S_ISREG(st.st_mode):
                raise c.error(where, f"output {_quoted(p)} exists and is not a regular file")
            if (st.st_dev, st.st_ino) in ours:
                raise c.error(where, f"output {_quoted(p)} is {ours[(st.st_dev, st.st_ino)]}")
            existing.append(((st.st_dev, st.st_ino), where, p))
    if not existing:
        return
    # Rare (a relink over stale objects): only then look at the inputs.
    by_inode = {ino: (where, p) for ino, where, p in existing}
    named = [(f"common.inputs[{i}]", p) for i, p in enumerate(m.common_inputs)]
    named += [(f"{where_of(job)}.inputs[{i}]".lstrip("."), p)
              for job in m.jobs for i, p in enumerate(job.inputs)]
    for input_where, p in named:
        try:
            st = os.stat(p)
        except OSError:
            continue
        hit = by_inode.get((st.st_dev, st.st_ino))
        if hit:
            raise c.error(hit[0], f"output {_quoted(hit[1])} is the same file as the input "
                          f"{input_where} {_quoted(p)}")


class StreamedJobs:
    """The manifest's rules for jobs that arrive one at a time, as job
    records on the linker's job channel (events.JobFeed): each record is
    parsed as a one-job manifest, and check() then holds it to what load()
    checks across a whole manifest: no output that an earlier job also
    writes or reads, no input that an earlier job writes, and no output in
    the way on disk (a symlink, directory, FIFO, hard link to an input, the
    manifest or its side file)."""

    def __init__(self, m: Manifest):
        self.m = m
        self.key = _absolute_key()  # parse() of each record uses it too
        self._our_files = _our_files(m, self.key)
        self._inputs = {}  # absolute path -> what reads it
        self._outputs = {}  # absolute path -> what writes it
        for i, p in enumerate(m.common_inputs):
            self._inputs.setdefault(self.key(p), f"the manifest's common.inputs[{i}]")

    def check(self, job: Job, name: str) -> None:
        """ManifestError, naming the record (name), if job breaks a rule;
        else remember its files for the records to come."""
        c = _Checker(name)
        key = self.key
        for i, p in enumerate(job.inputs):
            other = self._outputs.get(key(p))
            if other:
                raise c.error(f"inputs[{i}]", f"input {_quoted(p)} is the output of {other}")
        for i, p in enumerate(job.outputs):
            k = key(p)
            if k in self._outputs:
                raise c.error(f"outputs[{i}]", f"output {_quoted(p)} is also the output "
                              f"of {self._outputs[k]}")
            if k in self._inputs:
                raise c.error(f"outputs[{i}]", f"output {_quoted(p)} is also an input of "
                              f"{self._inputs[k]}")
        _check_outputs_on_disk(dataclasses.replace(self.m, jobs=[job]), c, lambda job: "",
                               key, self._our_files)
        for p in job.inputs:
            self._inputs.setdefault(key(p), name)
        for p in job.outputs:
            self._outputs[key(p)] = name
