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
from typing import Callable

from . import manifest as manifest_mod
from .events import JobFeed
from .manifest import Job, Manifest
from .report import EXIT_OK, EXIT_USAGE, Reporter
from .runner import RetryHook, Runner, Slots, never_retry

EXIT_CODES_HELP = """\
exit codes:
  0    every job succeeded and every declared output exists
  1    a job failed or did not write a declared output
  2    bad manifest or command line (one-line error on stderr)
  128+N  stopped by signal N (130 for SIGINT, 143 for SIGTERM); all jobs killed
"""


def positive_int(text: str) -> int:
    """argparse type for counts such as --jobs."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
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


def make_parser(prog: str, description: str, epilog: str = "") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
        print(f"{prog}: error: {e}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


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
    reporter = reporter or Reporter(prog, quiet=args.quiet, progress=args.progress,
                                    verbose=args.verbose)
    return Runner(reporter, slots, command=command, retry=retry).run(
        m.jobs, JobFeed.from_environment(m))
