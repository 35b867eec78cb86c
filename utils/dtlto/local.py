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
from dtltodist.forkserver import ForkServer  # noqa: E402
from dtltodist.report import Reporter  # noqa: E402
from dtltodist.runner import Runner, Slots, local_cpus  # noqa: E402

PROG = "local.py"

EPILOG = """\
Use it from the linker:
  ld.lld --thinlto-distributor=local.py --thinlto-remote-compiler=clang \\
         --thinlto-distributor-arg=--jobs=8 ...

When the compiler can run many jobs in one process (dtlto-backend, which
the engine marks in the manifest), local.py keeps one such worker per slot
for the whole link instead of starting a process per job. Any other
compiler (clang) it starts once, with the fork server the engine names in
the manifest preloaded, and forks that process for each job: the jobs skip
the compiler's start, which is most of a small job's CPU.

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
    forking = parser.add_mutually_exclusive_group()
    forking.add_argument("--fork-server", metavar="LIB",
                         help="the fork server library (libdtlto-forkserver.so) when "
                              "the manifest names none: a link by another engine, "
                              "such as LLVM's own")
    forking.add_argument("--no-fork-server", action="store_true",
                         help="start each job's compiler afresh instead of forking "
                              "it from one started compiler (the fork server)")
    args = parser.parse_args()
    reporter = Reporter.for_args(PROG, args)
    server, note = jobserver.from_environment()
    reporter.verbose_note(note)
    # With a jobserver make decides how wide we go; --jobs still caps it.
    slots = Slots(args.jobs or (None if server else default_jobs()), server)
    if args.dry_run:
        return cli.run(PROG, args, slots, reporter=reporter)
    m = cli.load_or_exit(PROG, args.manifest)
    feed = JobFeed.from_environment(m)
    if m.batch_arg and not args.no_batch:
        return workers.BatchRunner(reporter, slots, m).run(m.jobs, feed)
    forks = None
    library = m.fork_server or args.fork_server
    if library and not args.no_fork_server:
        forks, why = ForkServer.start(m.compiler, os.path.abspath(library))
        reporter.verbose_note(f"fork server: {m.compiler} (pid {forks.proc.pid}) forks "
                              "each job" if forks else f"no fork server: {why}")
    try:
        return Runner(reporter, slots, fork_server=forks).run(m.jobs, feed)
    finally:
        if forks:
            reporter.verbose_note(f"fork server: {forks.forked} jobs forked"
                                  + (f"; {forks.lost}" if forks.lost else ""))
            forks.close()


if __name__ == "__main__":
    sys.exit(main())
