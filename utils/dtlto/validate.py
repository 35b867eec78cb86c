#!/usr/bin/env python3
"""Check a DTLTO job manifest against the schema, print it, or pass it on.

Alone, it validates MANIFEST (and prints it with --print). With
`-- DISTRIBUTOR [ARGS...]` it sits in front of a real distributor: it
validates, optionally prints, then replaces itself with
`DISTRIBUTOR ARGS... MANIFEST`, so the distributor's exit code and signals
are the linker's to see. An invalid manifest never reaches the distributor.
"""

import argparse
import json
import os
import shlex
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))

from dtltodist import cli  # noqa: E402
from dtltodist.manifest import Manifest  # noqa: E402
from dtltodist.report import EXIT_OK, usage_error  # noqa: E402
from dtltodist.runner import exec_program  # noqa: E402

PROG = "validate.py"

USAGE = "validate.py [-h] [--print] [-- DISTRIBUTOR [ARGS...]] MANIFEST"

EPILOG = """\
MANIFEST is always the last argument, as the linker appends it. To check
every manifest of a link and still build:
  ld.lld --thinlto-distributor=validate.py \\
         --thinlto-distributor-arg=-- --thinlto-distributor-arg=local.py ...

--print writes to stdout, one "key: value" per line, lists shell-quoted
(shlex) on one line and "(none)" for an empty list:
  manifest: <path>
  linker_output: <path>
  compiler: <common.args[0]>
  common.args: <all of common.args>
  common.inputs: <list>
  extra.<key>: <compact JSON, sorted keys>     one per unknown top-level key
  jobs: <count>
then, for each job, an empty line and the block:
  job <index>:
    module: <inputs[0]>
    shard: <inputs[1]>
    object: <outputs[0]>
    args: <list>
    inputs: <list>
    outputs: <list>
    extra.<key>: <compact JSON>                one per unknown job key
Unknown keys are listed in sorted order; everything else in the order above.

exit codes: 0 valid; 2 invalid manifest (one-line error on stderr) or a
distributor that cannot be started; otherwise the distributor's own.
"""


def words(items: list[str]) -> str:
    return shlex.join(items) if items else "(none)"


def extra_lines(extra: dict, indent: str) -> list[str]:
    return [f"{indent}extra.{key}: {json.dumps(extra[key], sort_keys=True, ensure_ascii=False)}"
            for key in sorted(extra)]


def describe(m: Manifest) -> list[str]:
    lines = [f"manifest: {m.path}",
             f"linker_output: {m.linker_output}",
             f"compiler: {m.compiler}",
             f"common.args: {words(m.common_args)}",
             f"common.inputs: {words(m.common_inputs)}"]
    lines += extra_lines(m.extra, "")
    if m.side_file:
        lines.append(f"side file: {m.side_file} (engine {m.engine}, "
                     f"batch arg {m.batch_arg or '(none)'})")
    lines.append(f"jobs: {len(m.jobs)}")
    for job in m.jobs:
        lines += ["", f"job {job.index}:",
                  f"  module: {job.module}",
                  f"  shard: {job.shard}",
                  f"  object: {job.object}",
                  f"  args: {words(job.args)}",
                  f"  inputs: {words(job.inputs)}",
                  f"  outputs: {words(job.outputs)}"]
        if job.input_bytes is not None:
            lines.append(f"  input_bytes: {job.input_bytes}")
        lines += extra_lines(job.extra, "  ")
    return lines


def split_command_line(argv: list[str]):
    """(our options + MANIFEST, distributor argv without MANIFEST)."""
    if "--" not in argv:
        return argv, []
    i = argv.index("--")
    rest = argv[i + 1:]
    # MANIFEST is the last word; everything between "--" and it belongs to
    # the distributor, options included.
    return argv[:i] + rest[-1:], rest[:-1]


def main() -> int:
    parser = cli.ArgumentParser(
        prog=PROG, usage=USAGE, description=__doc__, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("manifest", metavar="MANIFEST", help="the JSON job manifest")
    parser.add_argument("--print", action="store_true", dest="print_",
                        help="print the manifest in the format below")
    own, distributor = split_command_line(sys.argv[1:])
    args = parser.parse_args(own)

    m = cli.load_or_exit(PROG, args.manifest)
    if args.print_:
        print("\n".join(describe(m)))
    if not distributor:
        return EXIT_OK
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        exec_program(distributor + [args.manifest])
    except OSError as e:
        return usage_error(PROG, f"cannot run {distributor[0]}: {e.strerror or e}")


if __name__ == "__main__":
    sys.exit(main())
