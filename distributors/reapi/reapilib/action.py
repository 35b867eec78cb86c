"""A manifest job as a REAPI Action: command, input root and outputs.

Layout of the input root (see README.md, "How files are laid out"):

- The root is the deepest directory holding the linker's working directory
  and every input the job reads at its own path (dtltodist.paths
  common_root); the Command's working_directory is the linker's working
  directory relative to it, so every relative path in the job's command
  means on the worker what it means here.
- Bitcode inputs (the module and the modules it imports) stay at the very
  paths the manifest names: the index shard records them, so they cannot be
  renamed. They must therefore be relative; an absolute one is an error.
- The index shard and the native object get fixed names in a reserved
  directory under the working directory, .dtlto-reapi/index.thinlto.bc and
  .dtlto-reapi/object.o: the linker puts its process id into their names,
  and a name that changes with every link would make every action new, so
  the action cache could never answer a second identical link.
- Absolute common inputs (a sample profile) go to .dtlto-reapi/abs/<path>,
  and the arguments naming them are rewritten to match.
- With --ship-compiler the compiler and the libraries it loads through
  $ORIGIN go to .dtlto-reapi/toolchain/<their absolute path>, and the
  command runs that copy.
"""

import os
from dataclasses import dataclass, field

from dtltodist import paths
from dtltodist.manifest import Job, Manifest

from . import elfdeps
from .tree import Blob, Digest, FileDigests, InputTree, TreeError, digest_bytes

RESERVED = ".dtlto-reapi"
SHARD_NAME = f"{RESERVED}/index.thinlto.bc"
OBJECT_NAME = f"{RESERVED}/object.o"
TOOLCHAIN_DIR = f"{RESERVED}/toolchain"
ABSOLUTE_DIR = f"{RESERVED}/abs"


class PlanError(Exception):
    """A job that cannot become an action. str() is one line for the user."""


@dataclass
class Settings:
    platform: list[tuple[str, str]] = field(default_factory=list)
    env: list[tuple[str, str]] = field(default_factory=list)
    timeout: float | None = None
    ship_compiler: bool = False
    ship: list[str] = field(default_factory=list)


@dataclass
class Plan:
    job: Job
    argv: list[str]
    working_directory: str
    outputs: dict[str, str]  # path the server returns (relative to the working dir) -> local path
    action: Digest
    blobs: dict[Digest, Blob]  # everything the action needs in the CAS
    tree: InputTree
    input_files: int
    input_bytes: int


def _join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


def _names_path(arg: str, path: str) -> bool:
    return arg == path or (arg.startswith("-") and arg.partition("=")[2] == path)


class Planner:
    def __init__(self, re, manifest: Manifest, settings: Settings, cwd: str | None = None):
        self.re = re
        self.manifest = manifest
        self.settings = settings
        self.cwd = paths.absolute(".", cwd)
        self.digests = FileDigests()
        self._toolchain = None

    def blob(self, path: str, where: str) -> Blob:
        try:
            return self.digests.blob(path)
        except OSError as e:
            raise PlanError(f'cannot read {where} "{path}": {e.strerror}') from None

    def toolchain(self) -> list[tuple[str, str, bool]]:
        """(file to read, absolute path it stands for, executable) to ship."""
        if self._toolchain is None:
            compiler = self.manifest.compiler
            if not os.path.isfile(compiler):
                raise PlanError(f'--ship-compiler: the compiler "{compiler}" '
                                "(common.args[0]) is not a file here")
            files = [(src, dst, i == 0 or os.access(src, os.X_OK))
                     for i, (src, dst) in enumerate(elfdeps.toolchain_files(compiler))]
            for extra in self.settings.ship:
                if not os.path.isfile(extra):
                    raise PlanError(f'--ship: "{extra}" is not a file')
                files.append((os.path.realpath(extra), paths.absolute(extra),
                              os.access(extra, os.X_OK)))
            self._toolchain = files
        return self._toolchain

    def plan(self, job: Job) -> Plan:
        try:
            return self._plan(job)
        except (PlanError, TreeError, paths.UnsafePathError) as e:
            raise PlanError(f"job {job.index} ({job.module}): {e}") from None

    def _plan(self, job: Job) -> Plan:
        re = self.re
        args = job.command
        tail = args[1:]
        canon_shard = any(_names_path(a, job.shard) for a in tail)
        canon_object = any(_names_path(a, job.object) for a in tail)

        # Files that stay at their own relative path.
        bitcode = [p for i, p in enumerate(job.inputs) if i != 1 or not canon_shard]
        for p in bitcode:
            if os.path.isabs(p):
                raise PlanError(
                    f'input "{p}" is an absolute path: the index shards name bitcode '
                    "files as the linker saw them, and a remote worker has no such "
                    "path. Link with relative paths to the objects and archives "
                    "(and a relative -o)")
        common_rel = [p for p in self.manifest.common_inputs if not os.path.isabs(p)]
        common_abs = [p for p in self.manifest.common_inputs if os.path.isabs(p)]
        outputs_kept = [p for i, p in enumerate(job.outputs) if i != 0 or not canon_object]
        for p in outputs_kept:
            if os.path.isabs(p) or os.path.normpath(p).startswith(".."):
                raise PlanError(f'output "{p}" is not below the working directory, '
                                "and the command does not name it where it could be renamed")

        root = paths.common_root(bitcode + common_rel, self.cwd)
        wd = paths.rebase(self.cwd, root)
        wd = "" if wd == "." else wd
        reserved = _join(wd, RESERVED)

        tree = InputTree()
        tree.add_dir(wd, "the working directory")

        def place(p: str, blob: Blob, origin: str, executable=False):
            loc = paths.rebase(p, root, self.cwd)
            if loc == reserved or loc.startswith(reserved + "/"):
                raise PlanError(f'"{p}" is inside {RESERVED}/, which the REAPI '
                                "distributor reserves for its own files")
            # The kernel resolves "a/../b" through "a", so "a" must exist there too.
            walk = wd.split("/") if wd else []
            for part in p.split("/")[:-1]:
                if part == "..":
                    tree.add_dir("/".join(walk), origin)
                    walk.pop()
                elif part not in ("", "."):
                    walk.append(part)
            tree.add_file(loc, blob, executable, origin)

        for i, p in enumerate(job.inputs):
            if i == 1 and canon_shard:
                continue
            place(p, self.blob(p, f"jobs[{job.index}].inputs[{i}]"), p)
        for p in common_rel:
            place(p, self.blob(p, "common input"), p)

        pathmap = {}
        if canon_shard:
            tree.add_file(_join(wd, SHARD_NAME), self.blob(job.shard, "index shard"),
                          origin=job.shard)
            pathmap[job.shard] = SHARD_NAME
        for p in common_abs:
            name = _join(ABSOLUTE_DIR, os.path.normpath(p).lstrip("/"))
            tree.add_file(_join(wd, name), self.blob(p, "common input"), origin=p)
            pathmap[p] = name

        argv0 = args[0]
        if self.settings.ship_compiler:
            files = self.toolchain()
            for src, dst, executable in files:
                name = _join(TOOLCHAIN_DIR, dst.lstrip("/"))
                blob = self.blob(src, "toolchain file")
                tree.add_file(_join(wd, name), blob, executable, src)
                # REAPI says a relative argv[0] is resolved against the input
                # root, Bazel's worker resolves it against the working
                # directory: have the toolchain at both when they differ.
                if wd:
                    tree.add_file(name, blob, executable, src)
            argv0 = _join(TOOLCHAIN_DIR, files[0][1].lstrip("/"))
        elif "/" in argv0 and not os.path.isabs(argv0):
            raise PlanError(f'the compiler "{argv0}" is a relative path, which means '
                            "nothing on a worker: give the linker an absolute "
                            "--thinlto-remote-compiler, or ship it with --ship-compiler")

        outputs = {}
        if canon_object:
            pathmap[job.object] = OBJECT_NAME
            outputs[OBJECT_NAME] = job.object
        for p in outputs_kept:
            remote = os.path.normpath(p)
            if remote == RESERVED or remote.startswith(RESERVED + "/"):
                raise PlanError(f'output "{p}" is inside {RESERVED}/, which the REAPI '
                                "distributor reserves for its own files")
            outputs[remote] = p

        def mapped(a: str) -> str:
            if a in pathmap:
                return pathmap[a]
            if a.startswith("-") and "=" in a:
                key, _, value = a.partition("=")
                if value in pathmap:
                    return f"{key}={pathmap[value]}"
            return a

        argv = [argv0] + [mapped(a) for a in tail]

        command = re.Command(arguments=argv, working_directory=wd)
        for name, value in sorted(self.settings.env):
            command.environment_variables.add(name=name, value=value)
        # output_files for v2.0 servers (Bazel's worker), output_paths for
        # v2.1 and later, which then ignore output_files.
        command.output_files.extend(sorted(outputs))
        command.output_paths.extend(sorted(outputs))
        platform = re.Platform()
        for name, value in sorted(self.settings.platform):
            platform.properties.add(name=name, value=value)
        command.platform.CopyFrom(platform)

        root_digest, blobs = tree.build(re)
        command_data = command.SerializeToString(deterministic=True)
        command_digest = digest_bytes(command_data)
        blobs[command_digest] = Blob(command_digest, data=command_data)

        action = re.Action(
            command_digest=re.Digest(hash=command_digest[0], size_bytes=command_digest[1]),
            input_root_digest=re.Digest(hash=root_digest[0], size_bytes=root_digest[1]),
            platform=platform)
        if self.settings.timeout:
            action.timeout.FromNanoseconds(int(self.settings.timeout * 1e9))
        action_data = action.SerializeToString(deterministic=True)
        action_digest = digest_bytes(action_data)
        blobs[action_digest] = Blob(action_digest, data=action_data)

        files = list(tree.files())
        return Plan(job=job, argv=argv, working_directory=wd, outputs=outputs,
                    action=action_digest, blobs=blobs, tree=tree,
                    input_files=len(files),
                    input_bytes=sum(f.blob.digest[1] for _, f in files))
