#!/usr/bin/env python3
"""A stand-in DTLTO distributor for tests: copies files instead of compiling.

It validates the manifest like every distributor, then writes each job's
declared outputs from the --copy files, and can misbehave on purpose
(a missing or empty output, a given exit code) so tests can check how the
linker reacts.
"""

import argparse
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))

from dtltodist import cli, paths  # noqa: E402
from dtltodist.report import EXIT_JOB_FAILED, EXIT_USAGE, usage_error  # noqa: E402

PROG = "mock.py"
UMASK = os.umask(0o22)
os.umask(UMASK)

EPILOG = """\
Order of work: --save-manifest, --record-args, validate the manifest (exit 2
with a one-line error if it is invalid), write the outputs, exit with
--exit-code. Without --copy each output gets one text line naming its job.
Job indexes count from 0 in manifest order.
"""


def fail(message: str, code: int) -> None:
    usage_error(PROG, message)
    sys.exit(code)


def job_index(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(
            f"expected a job index (0, 1, ...), got {cli.shown_value(text)}")
    return value


def main() -> int:
    parser = cli.ArgumentParser(
        prog=PROG, description=__doc__, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("manifest", help="the JSON job manifest (last argument)")
    parser.add_argument("--copy", action="append", default=[], metavar="FILE",
                        help="file to copy to the outputs; repeat it once per job "
                             "(job i gets the i-th), or give it once for all jobs")
    parser.add_argument("--exit-code", type=int, default=0, metavar="N",
                        help="exit with N after writing the outputs (default 0)")
    parser.add_argument("--skip-output", type=job_index, action="append", default=[],
                        metavar="JOB_INDEX", help="leave this job's outputs missing (repeatable)")
    parser.add_argument("--empty-output", type=job_index, action="append", default=[],
                        metavar="JOB_INDEX", help="write this job's outputs empty (repeatable)")
    parser.add_argument("--save-manifest", metavar="PATH",
                        help="copy the manifest to PATH before anything else, so a test "
                             "can read it after the linker has deleted it")
    parser.add_argument("--record-args", metavar="PATH",
                        help="write our arguments (not the program name) to PATH, one per line")
    args = parser.parse_args()

    if args.save_manifest:
        try:
            shutil.copyfile(args.manifest, args.save_manifest)
        except OSError as e:
            fail(f"cannot save manifest to {args.save_manifest}: {e.strerror or e}", EXIT_USAGE)
    if args.record_args:
        try:
            with open(args.record_args, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.writelines(a + "\n" for a in sys.argv[1:])
        except OSError as e:
            fail(f"cannot record the arguments in {args.record_args}: {e.strerror or e}",
                 EXIT_USAGE)

    m = cli.load_or_exit(PROG, args.manifest)
    if len(args.copy) not in (0, 1, len(m.jobs)):
        fail(f"{len(args.copy)} --copy files for {len(m.jobs)} jobs: "
             "give one for all jobs or one per job", EXIT_USAGE)
    for index in args.skip_output + args.empty_output:
        if index >= len(m.jobs):
            fail(f"job index {index} is out of range: the manifest has "
                 f"{len(m.jobs)} jobs", EXIT_USAGE)

    for job in m.jobs:
        if job.index in args.skip_output:
            continue
        for out in job.outputs:
            try:
                write_output(job.index, out, args)
            except OSError as e:
                fail(f"job {job.index}: cannot write {out}: {e.strerror or e}", EXIT_JOB_FAILED)
    return args.exit_code


def write_output(index: int, out: str, args) -> None:
    """Write out whole or not at all, as a compiler does: into a temporary
    file next to it, renamed over it (an old out, even a link, is replaced,
    never written through)."""
    fd, tmp = tempfile.mkstemp(prefix=".mock-", dir=os.path.dirname(out) or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            if index in args.empty_output:
                pass
            elif args.copy:
                with paths.open_input(args.copy[index if len(args.copy) > 1 else 0]) as src:
                    shutil.copyfileobj(src, f)
            else:
                f.write(f"{PROG}: output of job {index}\n".encode())
        os.chmod(tmp, 0o666 & ~UMASK)  # mkstemp made it 0600
        os.replace(tmp, out)
    except BaseException:
        os.unlink(tmp)
        raise


if __name__ == "__main__":
    sys.exit(main())
