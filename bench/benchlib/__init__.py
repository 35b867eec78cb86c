"""Benchmark harness of dtlto: real Debian programs linked in several modes.

Modules, one concept each:
  sources   Debian source packages: deb-src entry, download, unpack
  programs  per-program build recipe, link capture and smoke test
  modes     the link modes, compared side by side (add a mode there)
  measure   running one link: wall, CPU, linker and process-tree peak RSS
  trace     --time-trace phase split
  elfdiff   comparing linked programs section by section
  report    statistics, Markdown table and JSON
"""


import argparse
import os

# Where bench/run.py downloads sources and builds programs, and where every
# other script finds them: $DTLTO_BENCH_CACHE, or this.
DEFAULT_CACHE = "/var/cache/dtlto-bench"


def default_cache():
    return os.environ.get("DTLTO_BENCH_CACHE", DEFAULT_CACHE)


def add_cache_option(parser):
    """--cache, spelled and defaulted the same in every script."""
    parser.add_argument("--cache", metavar="DIR", default=default_cache(),
                        help="bench/run.py's cache of sources and builds "
                             "($DTLTO_BENCH_CACHE, default: %(default)s)")


def doc_parser(doc):
    """The command line of a script whose doc says its use: the first line
    is the description, the rest shows under --help as written."""
    return argparse.ArgumentParser(description=doc.split("\n")[0],
                                   formatter_class=argparse.RawDescriptionHelpFormatter,
                                   epilog=doc.split("\n", 2)[2])


class BenchError(Exception):
    """A problem the harness reports as one line and stops on."""
