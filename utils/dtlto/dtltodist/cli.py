"""Command line shared by every distributor.

The linker runs `<distributor> <distributor args...> <manifest.json>`, so
each distributor takes its own options followed by one positional manifest.
A distributor script builds its parser with make_parser(), adds its own
options, and hands the parsed arguments to run():

    parser = cli.make_parser("ssh.py", "Run DTLTO jobs on SSH hosts.")
    parser.add_argument("--host", action="append", required=True)
    args = parser.parse_args()
    sys.exit(cli.run("ssh.py", args, slots, command=lambda job: [...]))
"""

import argparse
import shlex
import sys
from collections.abc import Callable

from . import manifest as manifest_mod
from .events import JobFeed
from .manifest import Job, Manifest
from .report import EXIT_OK, Reporter, usage_error
from .runner import RetryHook, Runner, Slots, never_retry

EXIT_CODES_HELP = """\
exit codes:
  0    every job succeeded and every declared output exists
  1    a job failed or did not write a declared output
  2    bad manifest or command line (one-line error on stderr)
  128+N  stopped by signal N (130 for SIGINT, 143 for SIGTERM); all jobs killed
"""


class ArgumentParser(argparse.ArgumentParser):
    """argparse, with usage errors on one line: `<prog>: error: <what>`, like
    every other error of ours (argparse would print the usage first)."""

    def error(self, message: str):
        sys.exit(usage_error(self.prog, f"{message} (see {self.prog} --help)"))


def shown_value(text: str) -> str:
    """An option's value for an error message: quoted, and cut when long."""
    return repr(text if len(text) <= 60 else text[:40] + "...")


# Counts and limits: far past what any distributor can use, and well within
# what int() converts.
MAX_INT_DIGITS = 18


def _digits(text: str, what: str) -> int:
    # ASCII digits only: int() would also take " 3", "+3", "1_000" and "٣".
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"expected {what}, got {shown_value(text)}")
    if len(text) > MAX_INT_DIGITS:
        raise argparse.ArgumentTypeError(f"{shown_value(text)} is too large")
    return int(text)


def utf8_text(text: str) -> str:
    """argparse type for a value that goes on the wire as a string (gRPC
    metadata and channel options, protobuf fields): it must be UTF-8, not
    bytes that only the command line could carry."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(
            f"{shown_value(text)} is not valid UTF-8") from None
    return text


def positive_int(text: str) -> int:
    """argparse type for counts such as --jobs."""
    value = _digits(text, "a positive integer")
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {shown_value(text)}")
    return value


def non_negative_int(text: str) -> int:
    """argparse type for counts that may be 0, such as --retries."""
    return _digits(text, "0 or a positive integer")


# Durations: more than eleven days is no timeout anyone means, and longer
# ones overflow what gRPC and protobuf durations take (milliseconds in a C int).
MAX_SECONDS = 1_000_000


def positive_float(text: str) -> float:
    """argparse type for durations in seconds: above 0, at most MAX_SECONDS."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value <= MAX_SECONDS:  # also false for NaN
        raise argparse.ArgumentTypeError(
            f"expected a positive number of seconds up to {MAX_SECONDS}, "
            f"got {shown_value(text)}")
    return value


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """The options every distributor has, spelled the same everywhere."""
    group = parser.add_argument_group("common distributor options")
    group.add_argument("--quiet", action="store_true",
                       help="no summary line at the end (errors are still printed)")
    group.add_argument("--progress", action="store_true",
                       help="report each finished job on stderr even when it is not "
                            "a terminal (on a terminal a live status line is shown anyway)")
    group.add_argument("--verbose", action="store_true",
                       help="print each command as it starts, and jobserver notes")
    group.add_argument("--dry-run", action="store_true",
                       help="print the command of every job, one per line, "
                            "shell-quoted, and exit 0 without running anything")
    group.add_argument("--timings", metavar="FILE",
                       help="write when each job started and ended (JSON, seconds "
                            "since the run began) to FILE at the end")


def make_parser(prog: str, description: str, epilog: str = "") -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog=prog, description=description,
        epilog=(epilog + "\n" if epilog else "") + EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("manifest",
                        help="the JSON job manifest; the linker appends its path last")
    add_common_options(parser)
    return parser


def load_or_exit(prog: str, path: str) -> Manifest:
    """The manifest at path, or a one-line error and exit code 2."""
    try:
        return manifest_mod.load(path)
    except manifest_mod.ManifestError as e:
        sys.exit(usage_error(prog, str(e)))


def run(prog: str, args: argparse.Namespace, slots: Slots,
        command: Callable[[Job], list[str]] = lambda job: job.command,
        retry: RetryHook = never_retry, reporter: Reporter | None = None) -> int:
    """Load args.manifest, then dry-run or run every job; return the exit code.

    command(job) gives the argv to start for a job (a remote engine wraps the
    compile command in its client), retry(job, result) whether to try again.
    """
    m = load_or_exit(prog, args.manifest)
    if args.dry_run:
        for job in m.jobs:
            print(shlex.join(command(job)))
        slots.close()
        return EXIT_OK
    reporter = reporter or Reporter.for_args(prog, args)
    return Runner(reporter, slots, command=command, retry=retry).run(
        m.jobs, JobFeed.from_environment(m))
