"""Self-contained jobs: the import step here, plain clang on the farm.

The opt-in mode of distcc.py and icecream.py (--self-contained) for farms
whose hosts have only plain clang, no dtlto-backend to run a bundle. Each
job's import step runs here: the manifest's clang on the job's module and
index shard with -O0 -emit-llvm -save-temps=obj keeps the module after
promotion, internalization and import (<out>.3.import.bc), which needs
nothing else any more. That module goes to the farm as the job's one file,
X.i (the extension both daemons send as is), and a host compiles it with
  clang <common args> --language=ir -c X.i -o X.o
which runs clang's ordinary per-module pipeline, not ThinLTO's backend: the
program is correct, but objects may differ from in-process ThinLTO's.

What only the backend reading the index shard can do cannot be done that
way, so refusal() says why a link cannot go (CFI, whole-program
devirtualization, memprof; files every job reads, such as a sample
profile, which one file cannot carry) and the distributor runs its jobs
here, as the manifest says.

  refusal(m)            '' when the link's jobs can go, else why not
  run_here(prog, args, m, why)  a refused link's jobs, here
  import_step(m, job, out)  the argv of the import step, writing out
  farm_args(m, job, src, obj)  the farm compile's arguments after clang
  step_command(python, imported, import_argv, then)  one job: import (once),
                        then exec `then`; what Runner starts
  shown(argv)           a step_command for messages
  failed_here(stderr)   whether a step failed in its import step, here
"""

import glob
import json
import os
import subprocess
import sys

if __package__:
    import shlex

    from . import bundle, summary
    from .manifest import Job, Manifest
    from .report import EXIT_OK, Reporter, plural, usage_error as usage_error_exit
    from .runner import Runner, Slots, local_cpus, whole_manifest

IMPORTED = ".3.import.bc"  # what -save-temps=obj keeps after the import step
IMPORT_FAILED = "the import step here failed"  # how a step that failed here says so


def _job_parts(job) -> tuple[list[str], int]:
    """job.args without the module, the -fthinlto-index and the -o pair,
    and where -o was (-1: nowhere)."""
    rest, out, skip = [], -1, False
    for i, arg in enumerate(job.args):
        if skip:
            skip = False
            continue
        if arg == "-o" and i + 1 < len(job.args):
            out, skip = i, True
        elif arg != job.module and not arg.startswith("-fthinlto-index="):
            rest.append(arg)
    return rest, out


def usage_error(m: "Manifest") -> str:
    """Why --self-contained cannot be used with this manifest at all ('' if
    it can): the farm runs plain clang, so the jobs must be clang jobs."""
    if bundle.is_backend(m.compiler):
        return ("--self-contained sends clang compiles to hosts that have only clang, "
                "but the remote compiler is dtlto-backend: link with "
                "--thinlto-remote-compiler=<clang>, or drop --self-contained")
    for job in m.jobs:
        if _job_parts(job)[1] < 0:
            return f"job {job.index} has no -o in its arguments"
    return ""


def refusal(m: "Manifest") -> str:
    """'' when every job of the link can be a self-contained module, else
    why not, in words for the user."""
    if m.common_inputs:
        return ("every job also reads " + ", ".join(m.common_inputs) +
                " (a sample profile or a remapping file), which a self-contained "
                "module cannot carry")
    # By module, not by job id: a streamed job's id is the order its shard
    # was ready in, which depends on the linker's threads.
    for job in sorted(m.jobs, key=lambda j: j.module):
        try:
            found = summary.features(job.shard)
        except (OSError, summary.BitcodeError) as e:
            why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            return f"the index shard {job.shard} of {job.module}'s job cannot be read ({why})"
        if found:
            return (f"the link uses {' and '.join(found)} ({job.module}'s index shard "
                    "has it), which only the ThinLTO backend reading the shard carries out")
    return ""


def start(prog: str, args, m: "Manifest", feed, rep):
    """distcc.py's and icecream.py's first steps: with --self-contained,
    the whole stream is read first (whether the link can go at all depends
    on every job's index shard), then a bad setting is a usage error and a
    refused link runs here. Returns (manifest, feed, exit code or None)."""
    if not args.self_contained:
        return m, feed, None
    if feed:
        m, feed = whole_manifest(m, feed, rep), None
    problem = usage_error(m)
    if problem:
        return m, feed, usage_error_exit(prog, problem)
    refused = refusal(m)
    if refused:
        return m, feed, run_here(prog, args, m, refused)
    return m, feed, None


def run_here(prog: str, args, m: "Manifest", why: str) -> int:
    """Every job of a refused link here, as the manifest says (the real
    ThinLTO backend: objects as in-process ThinLTO's), on this machine's
    CPUs; --dry-run prints them."""
    if args.dry_run:
        print(f"# --self-contained: {why}; its jobs run here")
        for job in m.jobs:
            print(shlex.join(job.command))
        return EXIT_OK
    rep = Reporter(prog, quiet=args.quiet, progress=args.progress, verbose=args.verbose)
    rep.note(f"--self-contained: {why}; its {plural(len(m.jobs), 'job')} run here")
    return Runner(rep, Slots(local_cpus())).run(m.jobs)


def import_step(m: "Manifest", job: "Job", out: str) -> list[str]:
    """The import step of job, here: keeps <out>.3.import.bc."""
    rest, _ = _job_parts(job)
    return (m.common_args + [job.module, f"-fthinlto-index={job.shard}"] + rest +
            ["-O0", "-emit-llvm", "-save-temps=obj", "-o", out])


def farm_args(m: "Manifest", job: "Job", src: str, obj: str) -> list[str]:
    """What follows clang on the farm: the common flags, the job's own
    others, then the imported module as IR."""
    rest, _ = _job_parts(job)
    return m.common_args[1:] + rest + ["--language=ir", "-c", src, "-o", obj]


def step_command(python: str, imported: str, import_argv: list[str],
                 then: list[str]) -> list[str]:
    """argv of one job attempt: this file as a program, which runs the
    import step unless imported exists already, then becomes `then`."""
    return [python, os.path.abspath(__file__), imported, json.dumps(import_argv), *then]


def failed_here(stderr: bytes) -> bool:
    """Did a step_command fail in its import step, here (not on the farm)?"""
    return IMPORT_FAILED.encode() in stderr


def shown(argv: list[str]) -> list[str]:
    """argv for messages: a step_command as its import step, '&&' and the
    rest; any other argv as it is."""
    if len(argv) > 4 and argv[1] == os.path.abspath(__file__):
        return json.loads(argv[3]) + ["&&"] + argv[4:]
    return argv


def _step(argv: list[str]) -> int:
    """The job side of step_command (see there)."""
    imported, import_argv, then = argv[0], json.loads(argv[1]), argv[2:]
    if not os.path.exists(imported):
        out = import_argv[-1]
        code = subprocess.run(import_argv, stdin=subprocess.DEVNULL).returncode
        kept = out + IMPORTED
        try:
            if code == 0:
                if not os.path.isfile(kept):
                    print(f"the import step here left no {kept}", file=sys.stderr)
                    code = 1
                else:
                    os.replace(kept, imported)
        finally:
            for temp in glob.glob(glob.escape(out) + "*"):
                os.unlink(temp)
        if code:
            print(f"{IMPORT_FAILED} (exit code {code}): "
                  + " ".join(import_argv), file=sys.stderr)
            return code
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvp(then[0], then)
    return 127


if __name__ == "__main__":
    sys.exit(_step(sys.argv[1:]))
