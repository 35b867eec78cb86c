#!/usr/bin/env python3
"""Run the DTLTO backend jobs of a manifest on this machine, in parallel."""
# dtlto-stream-protocol: 1   (the linker streams jobs to us: docs/manifest.md)

import os
import sys

# Find dtltodist next to this file's real location, so the script works when
# called through a symlink or from any directory.
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))

from dtltodist import cli, jobserver, workers  # noqa: E402
from dtltodist.events import JobFeed  # noqa: E402
from dtltodist.report import Reporter  # noqa: E402
from dtltodist.runner import Slots, local_cpus  # noqa: E402

PROG = "local.py"

EPILOG = """\
Use it from the linker:
  ld.lld --thinlto-distributor=local.py --thinlto-remote-compiler=clang \\
         --thinlto-distributor-arg=--jobs=8 ...

When the compiler can run many jobs in one process (dtlto-backend, which
the engine marks in the manifest), local.py keeps one such worker per slot
for the whole link instead of starting a process per job.

Under GNU make, mark the recipe with '+' so make hands its jobserver to the
link: local.py then runs as many jobs as make has free slots (one it owns,
one more per token), never more than --jobs when that is given. Without a
usable jobserver it runs --jobs jobs at a time.
"""


def default_jobs() -> int:
    return local_cpus()


def main() -> int:
    parser = cli.make_parser(PROG, __doc__, EPILOG)
    parser.add_argument("-j", "--jobs", type=cli.positive_int, metavar="N",
                        help="run at most N jobs at once (default: the number of "
                             f"CPUs this process may use, here {default_jobs()}; "
                             "under a make jobserver: as many as make allows)")
    parser.add_argument("--no-batch", action="store_true",
                        help="start one compiler process per job even when the "
                             "compiler can run many (dtlto-backend --batch)")
    args = parser.parse_args()
    reporter = Reporter.for_args(PROG, args)
    server, note = jobserver.from_environment()
    reporter.verbose_note(note)
    # With a jobserver make decides how wide we go; --jobs still caps it.
    slots = Slots(args.jobs or (None if server else default_jobs()), server)
    if not args.dry_run and not args.no_batch:
        m = cli.load_or_exit(PROG, args.manifest)
        if m.batch_arg:
            return workers.BatchRunner(reporter, slots, m).run(
                m.jobs, JobFeed.from_environment(m))
    return cli.run(PROG, args, slots, reporter=reporter)


if __name__ == "__main__":
    sys.exit(main())
