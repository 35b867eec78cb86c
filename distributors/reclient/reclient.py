#!/usr/bin/env python3
"""Run the DTLTO backend jobs of a manifest through reclient's rewrapper.

Each job becomes one `rewrapper ... -- <compile command>` process, run in
parallel by the dtltodist runner; reproxy (started beforehand by reclient's
bootstrap) executes it on the REAPI service, locally, or both.
"""

import os
import re
import shlex
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)),
                                "..", "..", "utils", "dtlto"))

from dtltodist import batch, cli, paths  # noqa: E402
from dtltodist.report import EXIT_USAGE, Reporter, size_text, usage_error  # noqa: E402
from dtltodist.runner import Runner, Slots  # noqa: E402

PROG = "reclient.py"

STRATEGIES = ("remote", "remote_local_fallback", "racing", "local")
REMOTE_JOBS = 64  # default slots when jobs run remotely: rewrapper mostly waits

# rewrapper exits with the command's own exit code, or with one of the codes
# of the remote-apis-sdks for failures of its own. Only a remote error is
# worth another try; a local error (bad input, reproxy refused the request),
# a timeout or an interruption would just happen again.
REMOTE_ERROR_EXIT = 45
# Messages of a lost connection to reproxy or of reproxy to the service; a
# gRPC status in rewrapper's own output, never something clang prints.
TRANSIENT_MESSAGE = re.compile(
    rb"rpc error: code = (Unavailable|Aborted|ResourceExhausted)"
    rb"|connection reset by peer|transport is closing")

# Flags we set ourselves: a --rewrapper-arg may not set them a second time.
OWN_FLAGS = {"server_address", "exec_root", "labels", "platform", "exec_strategy",
             "exec_timeout", "inputs", "input_list_paths", "toolchain_inputs",
             "output_files", "output_list_paths"}
# Flag names that carry credentials. Command lines are printed (--dry-run,
# --verbose, a failing job), so credentials stay in reproxy's configuration
# or environment and never pass through here.
SECRET_FLAG = re.compile(r"cred|token|secret|passw|auth|key|cert|tls", re.IGNORECASE)
GO_DURATION = re.compile(r"([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+")

EPILOG = """\
Use it from the linker, with reproxy already running (reclient's bootstrap):
  ld.lld --thinlto-distributor=distributors/reclient/reclient.py \\
         --thinlto-remote-compiler=/usr/bin/clang-22 \\
         --thinlto-distributor-arg=--platform=container-image=docker://IMAGE ...

Every job runs as
  rewrapper -server_address=ADDR -exec_root=ROOT -labels=type=tool
            [-platform=K=V,...] -exec_strategy=S -exec_timeout=D
            -inputs=A,B,... | -input_list_paths=FILE
            [-toolchain_inputs=COMPILER] -output_files=O | -output_list_paths=FILE
            [--rewrapper-arg ...] -- <compiler and arguments>
in the linker's working directory. Inputs and outputs are given relative to
ROOT; absolute paths of the job's files in the command are made relative to
the working directory so they resolve on the remote machine too.

A job is retried (--retries times at most) only when rewrapper reports a
remote execution error (exit code 45) or a lost connection (gRPC Unavailable,
Aborted or ResourceExhausted, "connection reset by peer", "transport is
closing"); never for a compiler error, a local error (35), a timeout or an
interruption.
"""


class SetupError(Exception):
    """Options and manifest do not fit together. str() is one line."""


def parse_args(argv=None):
    parser = cli.make_parser(PROG, __doc__, EPILOG)
    g = parser.add_argument_group("reclient options")
    g.add_argument("--rewrapper", default="rewrapper", metavar="PATH",
                   help="the rewrapper executable (default: rewrapper, found in PATH)")
    g.add_argument("--server-address", metavar="ADDR",
                   default=os.environ.get("RBE_server_address"),
                   help="reproxy's address, e.g. unix:///tmp/reproxy.sock "
                        "(default: $RBE_server_address)")
    g.add_argument("--exec-root", metavar="DIR",
                   help="the directory that holds every input, output and the working "
                        "directory (default: the deepest such directory)")
    g.add_argument("--platform", action="append", default=[], metavar="KEY=VALUE",
                   help="a remote platform property, e.g. container-image=docker://... or "
                        "OSFamily=Linux (repeatable; default: reproxy's)")
    g.add_argument("--exec-strategy", choices=STRATEGIES, default="remote_local_fallback",
                   help="where jobs run (default: %(default)s)")
    g.add_argument("--exec-timeout", default="30m", metavar="DURATION",
                   help="rewrapper's time limit per job, a Go duration such as 90s or "
                        "20m (default: %(default)s)")
    g.add_argument("--ship-compiler", action="store_true",
                   help="send the compiler with each job as -toolchain_inputs (it must lie "
                        "in the exec root); otherwise the remote image must have it at "
                        "the same path")
    g.add_argument("--retries", type=cli.non_negative_int, default=2, metavar="N",
                   help="retries per job after a transient rewrapper failure (default: 2)")
    g.add_argument("-j", "--jobs", type=cli.positive_int, metavar="N",
                   help=f"rewrapper processes at once (default: {REMOTE_JOBS}; with "
                        "--exec-strategy=local the number of CPUs)")
    g.add_argument("--input-list-threshold", type=cli.positive_int, default=8000,
                   metavar="CHARS",
                   help="pass a job's inputs in a list file (-input_list_paths) when "
                        "-inputs would be longer than this (default: %(default)s); "
                        "paths with a comma always go into a list file")
    g.add_argument("--rewrapper-arg", action="append", default=[], metavar="ARG",
                   help="one more rewrapper flag, e.g. -canonicalize_working_dir=true "
                        "(repeatable; not for credentials, which belong to reproxy)")
    args = parser.parse_args(argv)
    for prop in args.platform:
        key, eq, value = prop.partition("=")
        if not key or not eq or "," in prop:
            parser.error(f"--platform: expected KEY=VALUE without commas, got '{prop}'")
    if not GO_DURATION.fullmatch(args.exec_timeout):
        parser.error(f"--exec-timeout: expected a Go duration such as 90s or 20m, "
                     f"got '{args.exec_timeout}'")
    for arg in args.rewrapper_arg:
        name = arg.lstrip("-").split("=", 1)[0]
        if not arg.startswith("-") or not name:
            parser.error(f"--rewrapper-arg: expected a rewrapper flag such as "
                         f"-name=value, got '{arg}'")
        if SECRET_FLAG.search(name):
            # Name the flag, never its value.
            parser.error(f"--rewrapper-arg: refusing -{name}: credentials belong in "
                         "reproxy's configuration or environment, not on rewrapper "
                         "command lines, which are printed")
        if name in OWN_FLAGS:
            parser.error(f"--rewrapper-arg: -{name} is set by {PROG}; use its own option")
    if not args.server_address:
        parser.error("no reproxy address: give --server-address or set "
                     "RBE_server_address (reproxy is started by reclient's bootstrap)")
    return args


def working_directory() -> str:
    """Our working directory as rewrapper sees it (Go's os.Getwd: $PWD if it is ours)."""
    pwd = os.environ.get("PWD")
    if pwd and os.path.isabs(pwd):
        try:
            if os.path.samefile(pwd, "."):
                return os.path.normpath(pwd)
        except OSError:
            pass
    return os.getcwd()


def find_compiler(compiler: str) -> str:
    """The compiler's absolute path, as execvp would find it."""
    if os.sep in compiler:
        return paths.absolute(compiler)
    found = shutil.which(compiler)
    if not found:
        raise SetupError(f'cannot ship the compiler "{compiler}": not found in PATH')
    return paths.absolute(found)


class Plan:
    """The rewrapper command of every job, and the list files they name."""

    def __init__(self, m, args, cwd: str):
        self.m = m
        self.args = args
        self.cwd = cwd
        if args.exec_strategy != "local":
            self._check_imports_are_relative()
        self.compiler = find_compiler(m.compiler) if args.ship_compiler else None
        self.root = self._exec_root()
        self.list_dir = self._list_dir()
        self.list_files: dict[str, str] = {}  # absolute path -> content
        # Relative paths with ".." are only safe in the command when the
        # working directory's path has no symlink ("a/.." then means "").
        self.dotdot_ok = os.path.realpath(cwd) == cwd
        self.argvs = [self._argv(job) for job in m.jobs]

    def _check_imports_are_relative(self) -> None:
        # The index shard names the modules a job imports from by the paths
        # the linker saw. Those in the command can be rewritten, those inside
        # the shard cannot: an absolute one does not exist on a remote machine.
        for job in self.m.jobs:
            for i, p in enumerate(job.inputs[2:], 2):
                if os.path.isabs(p):
                    raise SetupError(
                        f'jobs[{job.index}].inputs[{i}] "{p}" is an absolute path: index '
                        "shards name imported modules by the paths the linker saw, which "
                        "do not exist on a remote machine; link with relative paths (run "
                        "the link in the build directory, with a relative -o), or use "
                        "--exec-strategy=local")

    def _labelled_paths(self):
        yield "the working directory", self.cwd
        for i, p in enumerate(self.m.common_inputs):
            yield f"common.inputs[{i}]", p
        for job in self.m.jobs:
            for i, p in enumerate(job.inputs):
                yield f"jobs[{job.index}].inputs[{i}]", p
            for i, p in enumerate(job.outputs):
                yield f"jobs[{job.index}].outputs[{i}]", p
        if self.compiler:
            yield "the compiler", self.compiler

    def _exec_root(self) -> str:
        if self.args.exec_root:
            root = paths.absolute(self.args.exec_root, self.cwd)
            for label, p in self._labelled_paths():
                try:
                    paths.rebase(p, root, self.cwd)
                except paths.UnsafePathError:
                    raise SetupError(
                        f'{label} "{p}" is outside the exec root "{root}": rewrapper can '
                        "only send files below it; give an --exec-root that holds every "
                        "input, output and the working directory") from None
            return root
        root = paths.common_root([p for _, p in self._labelled_paths()], self.cwd)
        if os.path.dirname(root) == root:
            # Refused unless asked for: an exec root of "/" is almost always
            # a stray absolute path, and would mirror the whole machine's layout.
            far = [(label, p) for label, p in self._labelled_paths()
                   if os.path.commonpath([paths.absolute(p, self.cwd), self.cwd]) == root]
            where = (f'the working directory "{self.cwd}" and {far[0][0]} "{far[0][1]}" '
                     "have" if far else f'the working directory is "{root}" and has')
            raise SetupError(
                f'{where} no common directory but "{root}"; give --exec-root (e.g. '
                "the top of the checkout) or move the files of the link under one "
                "directory")
        return root

    def _list_dir(self) -> str:
        # Next to the manifest (with the linker's own temporary files) when
        # its path can go into a comma-separated flag, else at the exec root.
        here = batch.work_directory(self.m.path, "reclient")
        try:
            if "," not in paths.rebase(here, self.root, self.cwd):
                return here
        except paths.UnsafePathError:
            pass
        return os.path.join(self.root, f".dtlto-reclient-{os.getpid()}")

    def _rel(self, path: str) -> str:
        return paths.rebase(path, self.root, self.cwd)

    def _local(self, path: str, program: bool = False) -> str:
        """An absolute path as the command should name it: from the working directory."""
        rel = os.path.relpath(path, self.cwd)
        if rel.split(os.sep)[0] == "..":
            return rel if self.dotdot_ok else path
        # "./" so that "-x.o" stays a file and a program is not looked up in PATH.
        if rel.startswith("-") or (program and os.sep not in rel):
            return "." + os.sep + rel
        return rel

    def _command(self, job) -> list[str]:
        # Files of the job named by absolute paths would not exist on the
        # remote machine, whose exec root lies elsewhere: name them from the
        # working directory, which rewrapper recreates there.
        known = {paths.absolute(p, self.cwd)
                 for p in self.m.common_inputs + job.inputs + job.outputs}

        def local(arg: str) -> str:
            if os.path.isabs(arg) and os.path.normpath(arg) in known:
                return self._local(os.path.normpath(arg))
            flag, eq, value = arg.partition("=")
            if flag.startswith("-") and eq and os.path.isabs(value) \
                    and os.path.normpath(value) in known:
                return flag + "=" + self._local(os.path.normpath(value))
            return arg

        compiler = self.m.compiler
        if self.compiler:
            compiler = self._local(self.compiler, program=True)
        return [compiler] + [local(a) for a in job.command[1:]]

    def _argv(self, job) -> list[str]:
        a = self.args
        inputs = list(dict.fromkeys(self._rel(p) for p in self.m.common_inputs + job.inputs))
        outputs = [self._rel(p) for p in job.outputs]
        argv = [a.rewrapper, f"-server_address={a.server_address}",
                f"-exec_root={self.root}", "-labels=type=tool"]
        if a.platform:
            argv.append("-platform=" + ",".join(a.platform))
        argv += [f"-exec_strategy={a.exec_strategy}", f"-exec_timeout={a.exec_timeout}"]
        argv.append(self._list_flag(job, "inputs", "inputs", "input_list_paths", inputs))
        if self.compiler:
            tool = self._rel(self.compiler)
            if "," in tool:
                raise SetupError(f'the compiler path "{tool}" contains a comma, which '
                                 "-toolchain_inputs cannot carry")
            argv.append(f"-toolchain_inputs={tool}")
        argv.append(self._list_flag(job, "outputs", "output_files", "output_list_paths",
                                    outputs))
        return argv + a.rewrapper_arg + ["--"] + self._command(job)

    def _list_flag(self, job, kind: str, flag: str, list_flag: str, rels: list[str]) -> str:
        """-FLAG=a,b,c, or -LIST_FLAG=FILE with the paths one per line."""
        joined = ",".join(rels)
        if len(joined) <= self.args.input_list_threshold and \
                not any("," in p for p in rels):
            return f"-{flag}={joined}"
        if any("\n" in p for p in rels):
            raise SetupError(f"jobs[{job.index}]: a path with both a comma (or a very long "
                             "list) and a newline cannot be passed to rewrapper")
        path = os.path.join(self.list_dir, f"job{job.index}.{kind}")
        self.list_files[path] = "".join(p + "\n" for p in rels)
        return f"-{list_flag}={self._rel(path)}"

    def write_list_files(self) -> None:
        if self.list_files:
            os.mkdir(self.list_dir)
            for path, text in self.list_files.items():
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)

    def remove_list_files(self) -> None:
        if self.list_files:
            shutil.rmtree(self.list_dir, ignore_errors=True)


class ReclientReporter(Reporter):
    """The shared reporter, with retries and bytes in the summary line."""

    def __init__(self, args, input_bytes: int):
        super().__init__(PROG, quiet=args.quiet, progress=args.progress,
                         verbose=args.verbose, timings=args.timings)
        self.strategy = args.exec_strategy
        self.input_bytes = input_bytes
        self.retries = 0

    def summary(self, slots: str, failed: int) -> None:
        retries = f"{self.retries} {'retry' if self.retries == 1 else 'retries'}"
        super().summary(f"{slots} through rewrapper ({self.strategy}), {retries}, "
                        f"{size_text(self.input_bytes)} of inputs", failed)


def transient(result) -> str:
    """Why a failed rewrapper run is worth another try, or ''."""
    if result.returncode is None or result.returncode <= 0:
        return ""  # could not start, signalled, or exited 0 without its output
    if result.returncode == REMOTE_ERROR_EXIT:
        return f"rewrapper reported a remote execution error (exit code {REMOTE_ERROR_EXIT})"
    found = TRANSIENT_MESSAGE.search(result.stderr + result.stdout)
    if found:
        return f'rewrapper lost its connection ("{found.group(0).decode()}")'
    return ""


def main() -> int:
    args = parse_args()
    m = cli.load_or_exit(PROG, args.manifest)
    try:
        plan = Plan(m, args, working_directory())
    except (SetupError, paths.UnsafePathError) as e:
        return usage_error(PROG, str(e))
    if args.dry_run:
        for argv in plan.argvs:
            print(shlex.join(argv))
        return 0
    reporter = ReclientReporter(args, paths.total_size(
        m.common_inputs + [p for job in m.jobs for p in job.inputs]))
    if m.jobs and shutil.which(args.rewrapper) is None:
        reporter.error(f"cannot find {args.rewrapper}: install reclient and put rewrapper "
                       "in PATH, or give --rewrapper")
        return EXIT_USAGE

    def retry(job, result) -> bool:
        why = transient(result)
        if not why or result.attempt > args.retries:
            return False
        reporter.retries += 1
        reporter.note(f"job {job.index} ({job.module}): {why}; "
                      f"retry {result.attempt} of {args.retries}")
        return True

    jobs = args.jobs or (len(os.sched_getaffinity(0)) if args.exec_strategy == "local"
                         else REMOTE_JOBS)
    try:
        plan.write_list_files()
    except OSError as e:
        reporter.error(f"cannot write the input lists into {plan.list_dir}: {e.strerror}")
        return EXIT_USAGE
    try:
        return Runner(reporter, Slots(jobs), command=lambda job: plan.argvs[job.index],
                      retry=retry).run(m.jobs)
    finally:
        plan.remove_list_files()


if __name__ == "__main__":
    sys.exit(main())
