#!/usr/bin/env python3
"""Run the DTLTO backend jobs of a manifest on FASTBuild workers, through fbuild.

Writes each job as one bundle (docs/bundle.md) and a .bff in which
dtlto-backend is a compiler with .SimpleDistributionMode: FASTBuild sends
a job's one input file, the bundle, unmodified to a worker together with
the compiler's tool manifest, and runs dtlto-backend on it there. Then it
runs `fbuild -dist` on that .bff and moves every object that came back,
once checked, into place.
"""

import os
import re
import shlex
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)),
                                "..", "..", "utils", "dtlto"))

from dtltodist import batch, bundle, cli, paths, transfer  # noqa: E402

PROG = "fastbuild.py"
BFF_NAME = "fbuild.bff"
TARGET = "dtlto-jobs"  # the ObjectList fbuild is asked to build
COMPILER = "dtlto-backend"  # the Compiler() alias
OBJECTS = "objects"  # where fbuild leaves the objects, in the work directory

EPILOG = f"""\
Use it from the linker:
  ld.lld --thinlto-distributor=distributors/fastbuild/fastbuild.py \\
         --thinlto-remote-compiler=/path/to/dtlto-backend ...

It runs, in a work directory next to the manifest that holds the .bff, the
bundles and fbuild's database and temporary files (FASTBUILD_TEMP_PATH):
  fbuild -config <dir>/{BFF_NAME} -dist -noprogress -nostoponerror -quiet
         [-forceremote] [--fbuild-arg ...] {TARGET}
In the .bff dtlto-backend is Compiler('{COMPILER}') with .CompilerFamily
'custom', .SimpleDistributionMode and .AllowCaching false (FASTBuild caches
no 'custom' compiles; the linker's ThinLTO cache still applies), and every
bundle is an input of ObjectList('{TARGET}'), compiled as
  dtlto-backend -c "%1" -o "%2"
here or on a worker, which gets dtlto-backend (and --extra-file files)
from the tool manifest. dtlto-backend holds LLVM itself; the workers need
the system libraries it loads (libz3, libxml2, libffi, libedit: Debian's
libllvm22 brings them all); with clang as the
remote compiler the bundle runs that clang, at the path the manifest
names, on the worker. With dtlto-backend as the remote compiler the
objects are byte-identical to in-process ThinLTO.

Workers come from --worker (the .bff's Settings .Workers), else
FASTBUILD_WORKERS, else FASTBUILD_BROKERAGE_PATH, as fbuild takes them;
FASTBuild itself decides what runs where, and retries what a worker lost.
"""


def parse_args(argv=None):
    parser = cli.make_parser(PROG, __doc__, EPILOG)
    g = parser.add_argument_group("FASTBuild options")
    g.add_argument("--fbuild", default="fbuild", metavar="PATH",
                   help="the fbuild executable (default: fbuild, found in PATH)")
    g.add_argument("--backend", metavar="PATH",
                   help="the dtlto-backend FASTBuild sends to the workers (default: "
                        "the manifest's compiler when it is dtlto-backend, else "
                        "dtlto-backend in PATH)")
    g.add_argument("--extra-file", action="append", default=[], metavar="PATH",
                   help="one more file the workers get with dtlto-backend, in the "
                        "compiler's .ExtraFiles (repeatable)")
    g.add_argument("--worker", action="append", default=[], metavar="HOST",
                   help="a worker, listed in the .bff's Settings .Workers "
                        "(repeatable; default: FASTBuild's own discovery)")
    g.add_argument("--force-remote", action="store_true",
                   help="run no job here (fbuild -forceremote)")
    g.add_argument("--fbuild-arg", action="append", default=[], metavar="ARG",
                   help="one more fbuild argument, e.g. -distverbose (repeatable)")
    batch.add_options(parser)
    return parser.parse_args(argv)


def bff_string(text: str, what: str) -> str:
    """text as a .bff string literal: '^' escapes '^', '$' and the quote."""
    if "\n" in text or "\r" in text:
        raise batch.PlanError(f"{what} \"{text}\" has a line break, which a .bff string "
                              "cannot hold")
    if not utf8(text):
        raise batch.PlanError(f"{what} \"{text}\" is not UTF-8, which a .bff file is")
    return "'" + re.sub(r"([\^$'])", r"^\1", text) + "'"


def bff_path(path: str, what: str) -> str:
    """An absolute path as a .bff string. FASTBuild reads '\\' in a path as
    '/', so a path with one would name another file."""
    if "\\" in path:
        raise batch.PlanError(f"{what} \"{path}\" has a '\\', which FASTBuild reads as '/'")
    return bff_string(path, what)


def bff_array(items: list[str], indent: str) -> str:
    if len(items) == 1:
        return "{ " + items[0] + " }"
    inner = indent + "    "
    return "{\n" + ",\n".join(inner + item for item in items) + "\n" + indent + "}"


def bff_text(backend: str, extra_files: list[str], workers: list[str],
             bundles: list[str], objects: str) -> str:
    """The .bff: dtlto-backend as a compiler that FASTBuild distributes in
    simple mode, and one ObjectList with every bundle as an input."""
    lines = [
        "// DTLTO backend jobs for FASTBuild, written by dtlto's fastbuild.py.",
        "// Each input is one job's bundle (docs/bundle.md): the one file that",
        "// .SimpleDistributionMode sends unmodified to a worker, with the tool",
        "// manifest of the compiler, dtlto-backend, which runs the bundle there.",
        "",
    ]
    if workers:
        lines += ["Settings", "{",
                  "    .Workers = " + bff_array([bff_string(w, "--worker") for w in workers],
                                                "    "),
                  "}", ""]
    lines += [f"Compiler( '{COMPILER}' )", "{",
              "    .Executable = " + bff_path(backend, "dtlto-backend")]
    if extra_files:
        lines.append("    .ExtraFiles = " + bff_array(
            [bff_path(f, "--extra-file") for f in extra_files], "    "))
    lines += ["    .CompilerFamily = 'custom'",
              "    .SimpleDistributionMode = true",
              "    .AllowCaching = false",
              "}", "",
              f"ObjectList( '{TARGET}' )", "{",
              f"    .Compiler = '{COMPILER}'",
              "    .CompilerOptions = '-c \"%1\" -o \"%2\"'",
              "    .CompilerInputFiles = " + bff_array(
                  [bff_path(b, "the bundle") for b in bundles], "    "),
              "    .CompilerOutputPath = " + bff_path(objects + "/", "the object directory"),
              "    .CompilerOutputExtension = '.o'",
              "}", ""]
    return "\n".join(lines)


def command_safe(path: str) -> bool:
    """Can path stand for %1 or %2 in a command FASTBuild runs here? It
    splits the command at spaces outside '"' and reads '\\"' as '"', and
    reads '\\' in a path as '/'; and the .bff that names it is UTF-8."""
    return not any(c in path for c in '"\\\n\r') and utf8(path)


def utf8(text: str) -> bool:
    """False for a path or argument holding bytes that are not UTF-8
    (os.fsdecode made them lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def work_directory(m) -> str:
    """Next to the manifest, as for every batch engine, unless FASTBuild
    could not name files there (see command_safe): then a new directory
    in the system's temporary directory."""
    directory = batch.work_directory(m.path, "fastbuild")
    if command_safe(directory):
        return directory
    return os.path.join(tempfile.gettempdir(), f"dtlto-fastbuild-{os.getpid()}")


def workers_text(args) -> str:
    if args.worker:
        return f"{len(args.worker)} listed worker" + ("s" if len(args.worker) > 1 else "")
    for var in ("FASTBUILD_WORKERS", "FASTBUILD_BROKERAGE_PATH"):
        if os.environ.get(var, "").strip():
            return f"workers from {var}"
    return "no workers known"


def make_plan(m, directory: str, args) -> batch.Plan:
    if not utf8(directory):
        raise batch.PlanError(f"FASTBuild cannot name files in {directory}: the name is "
                              "not UTF-8, which a .bff file is")
    if not command_safe(directory):
        raise batch.PlanError(f"FASTBuild cannot name files in {directory}: a '\"' or '\\' "
                              "in a path changes the commands it runs")
    try:
        backend = bundle.farm_backend(m, args.backend)
    except ValueError as e:
        raise batch.PlanError(str(e)) from None
    extra = [paths.absolute(f) for f in args.extra_file]
    for f in extra:
        if not os.path.isfile(f):
            raise batch.PlanError(f"--extra-file {f} is not a file")
    plans = {}
    for job in m.jobs:
        try:
            plans[job.index] = transfer.plan(m, job)
            bundle.header(m, job, plans[job.index])
        except (paths.UnsafePathError, ValueError) as e:
            raise batch.PlanError(f"job {job.index} cannot be sent to FASTBuild: {e}") from None
    bundles = {job.index: os.path.join(directory, f"job{job.index}{bundle.SUFFIX}")
               for job in m.jobs}
    objects = os.path.join(directory, OBJECTS)
    staged = {i: os.path.join(objects, f"job{i}.o") for i in bundles}

    def prepare(where: str) -> None:
        os.makedirs(os.path.join(where, OBJECTS), exist_ok=True)
        os.makedirs(os.path.join(where, "tmp"), exist_ok=True)
        for job in m.jobs:
            bundle.write(m, job, plans[job.index], bundles[job.index])

    def collect(job, path: str) -> str:
        if not os.path.exists(path):
            return "fbuild left no object for it"
        problem = bundle.object_problem(path)
        if problem:
            return f"the object fbuild left for it {problem}"
        try:
            bundle.place(path, job.object)
        except OSError as e:
            return f"cannot write {job.object}: {e.strerror}"
        return ""

    # fbuild runs in the work directory: a path to it must not be relative.
    fbuild = os.path.abspath(args.fbuild) if os.sep in args.fbuild else args.fbuild
    argv = [fbuild, "-config", os.path.join(directory, BFF_NAME), "-dist",
            "-noprogress", "-nostoponerror"]
    argv += ["-distverbose"] if args.verbose else ["-quiet"]
    argv += (["-forceremote"] if args.force_remote else []) + args.fbuild_arg + [TARGET]
    job_commands = []
    for job in m.jobs:
        job_commands.append(shlex.join([backend, "-c", bundles[job.index],
                                        "-o", staged[job.index]]))
        job_commands += ["  " + line for line in bundle.describe(m, job, plans[job.index])]
    return batch.Plan(
        argv=argv,
        job_commands=job_commands,
        where=f"FASTBuild ({workers_text(args)})",
        files={BFF_NAME: bff_text(backend, extra, args.worker,
                                  [bundles[job.index] for job in m.jobs], objects)},
        env=dict(os.environ, FASTBUILD_TEMP_PATH=os.path.join(directory, "tmp") + "/"),
        hint="install FASTBuild and put fbuild in PATH, or give --fbuild",
        cwd=directory,
        stdout_to_stderr=True,
        prepare=prepare,
        staged=staged,
        collect=collect,
        warning="" if workers_text(args) != "no workers known" or args.quiet else
        "no FASTBuild workers known (give --worker, or set FASTBUILD_WORKERS or "
        "FASTBUILD_BROKERAGE_PATH): fbuild runs every job here")


def main() -> int:
    args = parse_args()
    return batch.run(PROG, args, "fastbuild", lambda m, d: make_plan(m, d, args),
                     directory=work_directory)


if __name__ == "__main__":
    sys.exit(main())
