#!/usr/bin/env python3
"""Run the DTLTO backend jobs of a manifest on SN-DBS, through dbsbuild.

Writes an SN-DBS build script (one job per backend compile, each listing its
input files) and a tool template for the compiler, runs
`dbsbuild -q -p PROJECT -s SCRIPT -templates DIR -k`, then checks that every
job left its object.
"""

import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)),
                                "..", "..", "utils", "dtlto"))

from dtltodist import batch, cli, paths  # noqa: E402
from dtltodist.cmdline import windows_join  # noqa: E402

PROG = "sn-dbs.py"
SCRIPT_NAME = "sn-dbs-script.json"
TEMPLATE_DIR = "templates"
TEMPLATE_SUFFIX = ".sn-dbs-tool.ini"

EPILOG = """\
Use it from the linker (on Windows, where SN-DBS runs):
  lld-link ... /thinlto-distributor:python.exe ^
           /thinlto-distributor-arg:distributors\\sn-dbs\\sn-dbs.py ^
           /thinlto-distributor-arg:--project=MyGame ^
           /thinlto-remote-compiler:C:\\LLVM\\bin\\clang.exe

Paths in the build script are absolute, in the form of the machine that
runs sn-dbs.py (C:\\... on Windows); commands are Windows command lines.
--emit-only DIR writes the script and template into DIR and prints the
dbsbuild command, for inspection with a manifest kept by --save-temps.
"""


def parse_args(argv=None):
    parser = cli.make_parser(PROG, __doc__, EPILOG)
    g = parser.add_argument_group("SN-DBS options")
    g.add_argument("--dbsbuild", default="dbsbuild", metavar="PATH",
                   help="the dbsbuild executable (default: dbsbuild, found in PATH)")
    g.add_argument("--project", default="dtlto", metavar="NAME",
                   help="the SN-DBS project the jobs are run under (default: %(default)s)")
    g.add_argument("--tool-file", action="append", default=[], metavar="PATH",
                   help="one more file the compiler needs on the helpers, listed in the "
                        "tool template (repeatable)")
    g.add_argument("--tool-template", metavar="FILE",
                   help="use this tool template for the compiler instead of the one "
                        "sn-dbs.py writes")
    g.add_argument("--dbsbuild-arg", action="append", default=[], metavar="ARG",
                   help="one more dbsbuild argument, appended (repeatable)")
    batch.add_options(parser)
    return parser.parse_args(argv)


def _absolute(path: str, cwd: str, pathmod) -> str:
    return paths.absolute(path, cwd, pathmod)


def compiler_path(m, cwd: str, pathmod, which=shutil.which) -> str:
    """The compiler's absolute path: the template must name the file itself."""
    compiler = m.compiler
    if pathmod.basename(compiler) == compiler:  # a bare name: PATH decides
        found = which(compiler)
        if not found:
            raise batch.PlanError(f'the compiler "{compiler}" is not in PATH; SN-DBS\'s '
                                  "tool template needs its full path "
                                  "(give --thinlto-remote-compiler a full path)")
        compiler = found
    return _absolute(compiler, cwd, pathmod)


def build_script(m, compiler: str, cwd: str, template_dir: str, pathmod=os.path,
                 echo=False) -> dict:
    """The SN-DBS build script for the manifest, as JSON-ready data.

    compiler is common.args[0] made absolute: SN-DBS finds the tool template
    by the program's file name, and the template names that very file.
    """
    jobs = []
    for job in m.jobs:
        # Absolute, without duplicates (Windows file names ignore case).
        files = {}
        for p in m.common_inputs + job.inputs:
            full = _absolute(p, cwd, pathmod)
            files.setdefault(pathmod.normcase(full), full)
        try:
            command = windows_join([compiler] + job.command[1:])
        except ValueError as e:
            raise batch.PlanError(f"jobs[{job.index}]: {e}") from None
        jobs.append({
            "id": f"dtlto-{job.index}",
            "title": f"{job.module} -> {job.object}",
            "command": command,
            "working_directory": cwd,
            "dependencies": [],
            "run_locally": False,
            "explicit_input_files": [{"filename": f} for f in files.values()],
            "tool_template_directories": [template_dir],
            "echo": echo,
        })
    return {"jobs": jobs}


def tool_template(compiler: str, tool_files: list[str], outputs: list[str], pathmod) -> str:
    """The `<exe>.sn-dbs-tool.ini` text that tells SN-DBS how to remote the compiler."""
    for value in [compiler] + tool_files:
        if "\n" in value or "\r" in value:
            raise batch.PlanError(f'"{value}" cannot be written into a tool template')
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # bytes from the command line, not UTF-8
            raise batch.PlanError(f'"{value}" is not valid UTF-8, which a tool template '
                                  "cannot hold") from None
    patterns = sorted({"*" + (pathmod.splitext(o)[1] or pathmod.basename(o)) for o in outputs})
    lines = [
        "; SN-DBS tool template for the DTLTO backend compiler, written by sn-dbs.py.",
        "; Every job lists its input files in the build script",
        "; (explicit_input_files), so no dependency scanning is needed.",
        "[tool]",
        "family=dtlto-thinlto-backend",
        "",
        "[files]",
        f"main={compiler}",
    ]
    lines += [f"file{i:02d}={f}" for i, f in enumerate(tool_files, 1)]
    lines += ["", "[output-file-patterns]"]
    lines += [f"outputfile{i:02d}={p}" for i, p in enumerate(patterns, 1)]
    return "\r\n".join(lines) + "\r\n"


def make_plan(m, directory: str, args, cwd: str | None = None, pathmod=os.path,
              which=shutil.which) -> batch.Plan:
    """Script, template and dbsbuild command for the manifest.

    directory is where the files go (absolute, in pathmod's form); cwd and
    pathmod are the working directory and path flavour of the machine that
    runs dbsbuild (ours, unless a test says otherwise).
    """
    cwd = cwd or os.getcwd()
    compiler = compiler_path(m, cwd, pathmod, which)
    template_dir = pathmod.join(directory, TEMPLATE_DIR)
    script_path = pathmod.join(directory, SCRIPT_NAME)
    script = build_script(m, compiler, cwd, template_dir, pathmod, echo=args.verbose)
    if args.tool_template:
        template = batch.read_user_file(args.tool_template, "--tool-template")
    else:
        tool_files = [_absolute(f, cwd, pathmod) for f in args.tool_file]
        template = tool_template(compiler, tool_files,
                                 [o for job in m.jobs for o in job.outputs], pathmod)
    template_name = pathmod.basename(compiler) + TEMPLATE_SUFFIX
    argv = [args.dbsbuild, "-q", "-p", args.project, "-s", script_path,
            "-templates", template_dir, "-k"] + args.dbsbuild_arg
    return batch.Plan(
        argv=argv,
        job_commands=[job["command"] for job in script["jobs"]],
        where=f"SN-DBS (project {args.project})",
        files={SCRIPT_NAME: json.dumps(script, indent=2, ensure_ascii=True) + "\n",
               f"{TEMPLATE_DIR}/{template_name}": template},
        hint="install SN-DBS and put dbsbuild in PATH, or give --dbsbuild")


def main() -> int:
    args = parse_args()
    return batch.run(PROG, args, "sn-dbs", lambda m, d: make_plan(m, d, args))


if __name__ == "__main__":
    sys.exit(main())
