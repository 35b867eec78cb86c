#!/usr/bin/env python3
"""Run the DTLTO backend jobs of a manifest on Incredibuild, under ib_console.

Incredibuild farms out processes that a build starts, when its profile
says they may run remotely. So this writes a profile marking the compiler
remote-able (AllowRemote) and the runner's Python interceptable
(AllowIntercept), and runs, as the one command of one ib_console
invocation, dtlto's local.py with many jobs at once: every compile is a
child process that Incredibuild can send to a helper.
"""

import os
import shlex
import shutil
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.realpath(__file__))
UTILS = os.path.join(HERE, "..", "..", "utils", "dtlto")
sys.path.insert(0, UTILS)

from dtltodist import batch, cli  # noqa: E402
from dtltodist.cmdline import windows_join  # noqa: E402

PROG = "incredibuild.py"
PROFILE_NAME = "ib_profile.xml"
LOCAL_PY = os.path.normpath(os.path.join(UTILS, "local.py"))
DEFAULT_JOBS = 200  # jobs wait on helpers, not on local cores

EPILOG = f"""\
Use it from the linker:
  ld.lld --thinlto-distributor=distributors/incredibuild/incredibuild.py \\
         --thinlto-remote-compiler=/usr/lib/llvm-22/bin/clang ...

It runs
  ib_console /command=<python> <local.py> --jobs N --quiet <manifest>
             /profile=<dir>/{PROFILE_NAME} [--ib-arg ...]
where the /command= value is one command line (POSIX shell quoting here,
Windows quoting on Windows). make's jobserver is not passed on: the jobs
run on helpers, not on the cores make shares out.
"""


def parse_args(argv=None):
    parser = cli.make_parser(PROG, __doc__, EPILOG)
    g = parser.add_argument_group("Incredibuild options")
    g.add_argument("--ib-console", default="ib_console", metavar="PATH",
                   help="the ib_console executable (default: ib_console, found in PATH)")
    g.add_argument("-j", "--jobs", type=cli.positive_int, default=DEFAULT_JOBS, metavar="N",
                   help="jobs started at once under ib_console (default: %(default)s)")
    g.add_argument("--profile", metavar="FILE",
                   help="use this Incredibuild profile instead of the one "
                        "incredibuild.py writes")
    g.add_argument("--ib-arg", action="append", default=[], metavar="ARG",
                   help="one more ib_console argument, appended, e.g. /title=... "
                        "(repeatable)")
    batch.add_options(parser)
    return parser.parse_args(argv)


def tool_name(path: str) -> str:
    """A program as profiles name it: its file name without ".exe"."""
    name = os.path.basename(path.replace("\\", "/"))
    return name[:-4] if name.lower().endswith(".exe") else name


def tool_names(program: str) -> list[str]:
    """The names a program may run under: as given, and its real file's name
    (/usr/bin/clang-22 is a link to .../bin/clang)."""
    names = [tool_name(program)]
    found = program if os.sep in program else shutil.which(program)
    if found and os.path.exists(found):
        real = tool_name(os.path.realpath(found))
        if real not in names:
            names.append(real)
    return names


def profile_xml(compiler: str, python: str) -> str:
    """The profile: the compiler may run remotely, Python's children are watched."""
    tools: dict[str, dict[str, str]] = {}
    for name in tool_names(compiler):
        tools.setdefault(name, {})["AllowRemote"] = "true"
    for name in tool_names(python):
        tools.setdefault(name, {})["AllowIntercept"] = "true"
    root = ET.Element("Profile", FormatVersion="1")
    root.append(ET.Comment(" written by dtlto's incredibuild.py: DTLTO backend "
                           "compiles may run on helpers "))
    element = ET.SubElement(root, "Tools")
    for name, attributes in tools.items():
        ET.SubElement(element, "Tool", Filename=name, **attributes)
    ET.indent(root)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n' +
            ET.tostring(root, encoding="unicode") + "\n")


def runner_command(m, args, python: str) -> list[str]:
    """The one command ib_console runs: local.py with all jobs of the manifest."""
    argv = [python, LOCAL_PY, "--jobs", str(args.jobs), "--quiet"]
    if args.verbose:
        argv.append("--verbose")
    argv.append(os.path.abspath(m.path))
    return argv


def make_plan(m, directory: str, args, python: str = sys.executable,
              windows: bool = os.name == "nt") -> batch.Plan:
    if args.profile:
        profile = batch.read_user_file(args.profile, "--profile")
    else:
        profile = profile_xml(m.compiler, python)
    inner = runner_command(m, args, python)
    try:
        command = windows_join(inner) if windows else shlex.join(inner)
    except ValueError as e:
        raise batch.PlanError(str(e)) from None
    argv = [args.ib_console, f"/command={command}",
            f"/profile={os.path.join(directory, PROFILE_NAME)}"] + args.ib_arg
    # local.py would share make's job slots; on a farm they do not limit us.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS")}
    return batch.Plan(
        argv=argv,
        job_commands=[shlex.join(job.command) for job in m.jobs],
        where=f"Incredibuild ({args.jobs} at once under {os.path.basename(args.ib_console)})",
        files={PROFILE_NAME: profile},
        env=env,
        hint="install Incredibuild and put ib_console in PATH, or give --ib-console")


def main() -> int:
    args = parse_args()
    return batch.run(PROG, args, "incredibuild", lambda m, d: make_plan(m, d, args))


if __name__ == "__main__":
    sys.exit(main())
