"""Engines that take every job at once and run them all themselves.

SN-DBS (dbsbuild runs a build script) and Incredibuild (ib_console runs one
command and farms out the processes it starts) are handed the whole manifest
in one go; there is no process of ours per job to watch. Such an engine's
script only says how to turn the manifest into the engine's files and
command (a Plan); this module does the rest the same way for each:

  --emit-only DIR  write the engine's files into DIR, print the command, stop
  --dry-run        print the command and every job's command, write nothing
  otherwise        write the files into a work directory next to the
                   manifest, run the command under runner.supervise()
                   (progress counted from the outputs that appear), remove
                   the directory, check every output and name every job
                   that left none, and print the summary line.

An engine that exits non-zero fails the run even when every output exists:
we cannot tell a complete object from one its failure left behind.

An engine whose jobs read more than the plan's text files, or that leaves
each job's output in a place of its own (FASTBuild: one bundle in, its
object in the engine's output directory), gives three more things:
prepare(directory) writes the rest (also for --emit-only), staged names
where the engine leaves each job's object (progress watches those), and
collect(job, path) checks that object and moves it into place once the
engine has ended, whatever its exit code (the linker checks every object
again and uses those that pass).
"""

import os
import shlex
import shutil
import signal
from dataclasses import dataclass, field
from collections.abc import Callable

from . import cli, paths
from .manifest import Job, Manifest
from .report import (EXIT_JOB_FAILED, EXIT_OK, EXIT_USAGE, Reporter, exit_code_for_signal,
                     plural, size_text, usage_error)
from .runner import JobResult, check_outputs, output_problem, supervise

# Failing jobs named one per line, up to this many: a farm that failed
# everything should not bury its own message under 10000 lines.
MAX_NAMED_FAILURES = 20


class PlanError(Exception):
    """The engine's files or command cannot be made. str() is one line."""


@dataclass
class Plan:
    argv: list[str]  # the engine command
    job_commands: list[str]  # what each job runs, as the engine gets it (--dry-run)
    where: str  # where the jobs run, for the summary: "SN-DBS (project x)"
    files: dict[str, str] = field(default_factory=dict)  # name in the directory -> text
    env: dict | None = None  # the engine's environment (None: ours)
    hint: str = ""  # what to do when the engine cannot be found
    cwd: str | None = None  # the engine's working directory (None: ours)
    stdout_to_stderr: bool = False  # the engine prints on stdout what belongs on stderr
    prepare: Callable[[str], None] | None = None  # (directory): the rest of its files; OSError
    staged: dict[int, str] = field(default_factory=dict)  # job index -> where its object lands
    collect: Callable[[Job, str], str] | None = None  # (job, staged path) -> problem, or ''
    # Printed when the engine is about to run (after every check that may
    # refuse the run, so that a refusal stays one line).
    warning: str = ""


# make_plan(manifest, directory) -> Plan; directory is absolute and is where
# plan.files will be written (so the command and files may name them).
MakePlan = Callable[[Manifest, str], Plan]


def read_user_file(path: str, option: str) -> str:
    """The text of a file the user gave instead of a generated one (a site's
    template or profile), or PlanError naming the option."""
    try:
        with paths.open_input(path) as f:
            return f.read().decode("utf-8")
    except OSError as e:
        raise PlanError(f"cannot read {option} {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise PlanError(f"cannot read {option} {path}: not UTF-8") from None


def add_options(parser) -> None:
    parser.add_argument("--emit-only", metavar="DIR",
                        help="write the engine's files into DIR (created if needed), "
                             "print the engine command on stdout and exit without "
                             "running anything")


def work_directory(manifest_path: str, slug: str) -> str:
    """Where a run keeps the engine's files: next to the manifest, named after it."""
    base = os.path.abspath(manifest_path)
    stem = base[:-len(".json")] if base.endswith(".json") else base
    return f"{stem}.{slug}"


def run(prog: str, args, slug: str, make_plan: MakePlan,
        directory: Callable[[Manifest], str] | None = None) -> int:
    """The main flow of a one-process engine; returns the exit code.
    directory(manifest) is where a run keeps the engine's files (default:
    work_directory(manifest path, slug))."""
    m = cli.load_or_exit(prog, args.manifest)
    if args.emit_only:
        directory = os.path.abspath(args.emit_only)
    else:
        directory = directory(m) if directory else work_directory(m.path, slug)
    try:
        plan = make_plan(m, directory)
    except PlanError as e:
        return usage_error(prog, str(e))
    if args.emit_only:
        try:
            os.makedirs(directory, exist_ok=True)
            _write_files(directory, plan.files)
            if plan.prepare:
                plan.prepare(directory)
        except OSError as e:
            return usage_error(prog, f"cannot write into {directory}: {_why(e, directory)}")
        print(shlex.join(plan.argv))
        return EXIT_OK
    if args.dry_run:
        print(shlex.join(plan.argv))
        for line in plan.job_commands:
            print(line)
        return EXIT_OK
    reporter = Reporter.for_args(prog, args)
    return _Run(reporter, m, plan, directory).run()


def _why(e: OSError, directory: str) -> str:
    """An OSError in words: the file (unless it is directory) and the
    reason, or the message."""
    if e.filename and e.strerror and e.filename != directory:
        return f"{e.filename}: {e.strerror}"
    return e.strerror or str(e)


def _write_files(directory: str, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = os.path.join(directory, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)


class _Run:
    def __init__(self, reporter: Reporter, m: Manifest, plan: Plan, directory: str):
        self.rep = reporter
        self.m = m
        self.plan = plan
        self.directory = directory
        self.tool = os.path.basename(plan.argv[0])
        self.reported: set[int] = set()

    def run(self) -> int:
        rep, m, plan = self.rep, self.m, self.plan
        rep.begin(len(m.jobs))
        inputs = list(m.common_inputs) + [p for job in m.jobs for p in job.inputs]
        where = f"{plan.where}, {size_text(paths.total_size(inputs))} of inputs"
        if not m.jobs:
            rep.summary(where, failed=0)
            return EXIT_OK
        if shutil.which(plan.argv[0]) is None:
            rep.error(f"cannot find {plan.argv[0]}" + (f": {plan.hint}" if plan.hint else ""))
            return EXIT_USAGE
        if plan.warning:
            rep.note(f"warning: {plan.warning}")
        try:
            os.mkdir(self.directory)
        except FileExistsError:
            rep.error(f"{self.directory} exists (left by an earlier run?); remove it")
            return EXIT_USAGE
        except OSError as e:
            rep.error(f"cannot create {self.directory}: {e.strerror}")
            return EXIT_USAGE
        collected: dict[int, str] = {}
        try:
            try:
                _write_files(self.directory, plan.files)
                if plan.prepare:
                    plan.prepare(self.directory)
            except OSError as e:
                rep.error(f"cannot write the files for {self.tool} into {self.directory}: "
                          f"{_why(e, self.directory)}")
                return EXIT_JOB_FAILED
            rep.verbose_note(f"running: {shlex.join(plan.argv)}")
            try:
                outcome = supervise(plan.argv, tick=self._tick, env=plan.env, cwd=plan.cwd,
                                    stdout_to_stderr=plan.stdout_to_stderr)
            except OSError as e:
                rep.error(f"cannot run {plan.argv[0]}: {e.strerror}")
                return EXIT_JOB_FAILED
            if plan.collect and not outcome.stopped_by:
                # Before the directory goes: the objects are in it.
                collected = {job.index: plan.collect(job, plan.staged[job.index])
                             for job in m.jobs}
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)
        if outcome.stopped_by:
            rep.error(f"interrupted by {signal.Signals(outcome.stopped_by).name}; "
                      f"stopped {self.tool}")
            return exit_code_for_signal(outcome.stopped_by)
        return self._check(outcome.returncode, where, collected)

    def _tick(self) -> None:
        # Progress: a job is done when its outputs are there. Only a hint
        # while the engine runs; every output is checked again at the end.
        for job in self.m.jobs:
            if job.index in self.reported:
                continue
            staged = self.plan.staged.get(job.index)
            if not (output_problem(staged) if staged else check_outputs(job)):
                self.reported.add(job.index)
                self.rep.finished(JobResult(job, 1, 0))

    def _check(self, returncode: int, where: str, collected: dict[int, str]) -> int:
        rep = self.rep
        failed = []
        for job in self.m.jobs:
            problem = collected[job.index] if self.plan.collect else check_outputs(job)
            if problem:
                failed.append((job, problem))
            elif job.index not in self.reported:
                self.reported.add(job.index)
                rep.finished(JobResult(job, 1, 0))
        status = JobResult(self.m.jobs[0], 1, returncode).describe()
        if failed:
            rep.error(f"{self.tool} {status}; {len(failed)} of "
                      f"{plural(len(self.m.jobs), 'job')} left no usable output:"
                      if returncode else
                      f"{self.tool} exited 0, but {len(failed)} of "
                      f"{plural(len(self.m.jobs), 'job')} left no usable output:")
            for job, problem in failed[:MAX_NAMED_FAILURES]:
                rep.error(f"job {job.index} ({job.module} -> {job.object}) failed: {problem}")
            if len(failed) > MAX_NAMED_FAILURES:
                rep.error(f"... and {len(failed) - MAX_NAMED_FAILURES} more")
        elif returncode:
            rep.error(f"{self.tool} {status} although every output exists; "
                      "not trusting them")
        rep.summary(where, failed=len(failed))
        return EXIT_JOB_FAILED if failed or returncode else EXIT_OK
