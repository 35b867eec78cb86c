#!/usr/bin/env python3
"""Run the DTLTO backend jobs of a manifest on an existing icecream farm."""
# dtlto-stream-protocol: 1   (the linker streams jobs to us: docs/manifest.md)

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)),
                                "..", "..", "utils", "dtlto"))

from dtltodist import bundle, cli, paths, selfcontained, transfer  # noqa: E402
from dtltodist.events import JobFeed  # noqa: E402
from dtltodist.report import EXIT_OK, Reporter, usage_error  # noqa: E402
from dtltodist.runner import JobResult, Runner, Slots  # noqa: E402

PROG = "icecream.py"
# icecream sends only compilers whose name says gcc, clang or cc, and iceccd
# runs the environment's /usr/bin/clang for a name with "clang", else its
# /usr/bin/gcc. A name with "clang" would make icecc ask the local compiler
# for its default target; a gcc-like name asks nothing. So ours is "gcc":
# icecc-create-env's compiler-wrapper argument puts dtlto-backend there.
FARM_NAME = "dtlto-backend-gcc"
# What icecc says when it gives up on the remote host and compiles the job
# here itself (client/main.cpp: a client_error or a remote_error).
ICECC_FELL_BACK = re.compile(rb"got exception |local build forced by remote exception")

EPILOG = """\
Each job is one icecream compile of one file: the job as a bundle
(docs/bundle.md: its module, its index shard, the modules it imports, the
files every job needs), run through the local iceccd and its scheduler as
  icecc dtlto-backend-gcc -c <bundle>.i -o <object>
(icecream distributes only compilers named like gcc, clang or cc). iceccd
runs the environment's /usr/bin/gcc, which is our dtlto-backend, in the
chroot of the job's environment,
which icecream.py builds once with icecc-create-env (the clang, dtlto-backend
and the libraries they load) and keeps in --env-cache; it says where. With
dtlto-backend as the remote compiler the objects are byte-identical to
in-process ThinLTO; with clang the bundle runs that clang, which is in the
environment at the path the manifest names. Nothing of ours is installed
on the farm.

icecream decides where each job runs, and runs it here when the farm
cannot (with the dtlto-backend given by --backend), e.g. when it loses the
host. A job whose object comes back empty or damaged runs again
(--retries), the last time here (ICECC=no); a compiler error is never
retried. The summary says how many jobs ran on the farm and how many here.

With --self-contained, for a farm that should get plain clang only, each
job's import step runs here (the manifest's clang, -O0 -emit-llvm
-save-temps=obj keeps the imported module) and the farm compiles that
module alone, in an environment of plain clang (icecc-create-env --clang,
no dtlto-backend):
  icecc <clang> <common args> --language=ir -c <module>.i -o <object>
That is clang's per-module pipeline, not ThinLTO's backend: the program
is correct, and objects may differ from in-process ThinLTO's. A link that
needs what only the backend reading the index shard does (CFI,
whole-program devirtualization, memprof) or files besides the modules (a
sample profile) is refused, saying why, and its jobs run here.

The linker streams jobs to icecream.py as their index shards are ready
(docs/manifest.md): each goes to icecc at once, while a slot (--jobs) is
free. A job the linker cancels is dropped if it has not started; a running
one's icecc is killed, and its object, which comes back to a private
directory, is never moved into place. --self-contained must read every
job's index shard before it knows whether the link can go at all, so it
takes the linker's whole stream first and then runs the jobs as a one-shot
manifest's.

Use it from the linker:
  ld.lld --thinlto-distributor=icecream.py \\
         --thinlto-remote-compiler=/path/to/dtlto-backend ...
"""


def parse_args():
    parser = cli.make_parser(PROG, __doc__, EPILOG)
    g = parser.add_argument_group("icecream")
    g.add_argument("-j", "--jobs", type=cli.positive_int, default=16, metavar="N",
                   help="jobs in flight at once (default 16)")
    g.add_argument("--icecc", default="icecc", metavar="PATH",
                   help="the icecream client (default: icecc in PATH)")
    g.add_argument("--backend", metavar="PATH",
                   help="dtlto-backend here, which goes into the environment (default: "
                        "the manifest's compiler when it is dtlto-backend, else "
                        "dtlto-backend in PATH)")
    g.add_argument("--clang", metavar="PATH",
                   help="the clang icecc-create-env packs (default: the manifest's "
                        "compiler when it is clang, else clang-22 in PATH)")
    g.add_argument("--env", metavar="TARBALL",
                   help="use this environment tarball instead of building one (it must "
                        "have dtlto-backend as /usr/bin/gcc)")
    g.add_argument("--env-cache", metavar="DIR",
                   help="where built environments are kept (default "
                        "$XDG_CACHE_HOME/dtlto/icecream, or ~/.cache/dtlto/icecream)")
    g.add_argument("--self-contained", action="store_true",
                   help="the import step here, one module per job to the farm in an "
                        "environment of plain clang (objects may differ from in-process "
                        "ThinLTO's; links that need the index shard run here)")
    g.add_argument("--retries", type=cli.non_negative_int, default=2, metavar="N",
                   help="run a job whose object came back spoiled again up to N times, "
                        "the last time here (default 2)")
    return parser.parse_args()


def find_tools(args, m) -> tuple[str | None, str]:
    """(dtlto-backend, clang) here, as absolute paths (no dtlto-backend
    with --self-contained); ValueError naming what is missing."""
    backend = None if args.self_contained else bundle.farm_backend(m, args.backend)
    clang = args.clang or (m.compiler if not bundle.is_backend(m.compiler)
                           else shutil.which("clang-22") or shutil.which("clang"))
    if not clang or not os.path.isfile(clang) or not os.access(clang, os.X_OK):
        raise ValueError("cannot find the clang to put into the environment: give --clang PATH")
    return backend, os.path.abspath(clang)


def env_key(files: list[str]) -> str:
    """Names an environment after what it is built from: a new build of
    dtlto-backend or an upgraded clang makes a new one."""
    h = hashlib.sha256()
    for path in files:
        real = os.path.realpath(path)
        st = os.stat(real)
        h.update(json.dumps([path, real, st.st_size, st.st_mtime_ns]).encode())
    return h.hexdigest()[:16]


def build_env(rep: Reporter, cache: str, backend: str | None, clang: str,
              aliases: list[str]) -> str:
    """The environment tarball for these tools, built unless cached. The
    clang is its /usr/bin/clang, and is found at each of aliases too (the
    manifest's path for it, which the bundles run); without backend, an
    environment of plain clang (--self-contained)."""
    if backend:
        key = env_key([backend, clang] + aliases)
        final = os.path.join(cache, f"dtlto-{key}.tar")
    else:
        final = os.path.join(cache, f"dtlto-clang-{env_key([clang] + aliases)}.tar")
    if os.path.exists(final):
        rep.note(f"icecream environment: {final} (cached)")
        return final
    os.makedirs(cache, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".build-", dir=cache)
    try:
        # The second argument of --clang is the wrapper that becomes the
        # environment's /usr/bin/gcc (and g++): dtlto-backend, with the
        # libraries it loads.
        argv = ["icecc-create-env", "--clang", clang] + ([backend] if backend else []) + \
            ["--compression", "none"]
        done = subprocess.run(argv, cwd=work, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True)
        made = [f for f in os.listdir(work) if f.endswith(".tar")]
        if done.returncode or len(made) != 1:
            tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
            raise OSError(f"icecc-create-env failed (exit code {done.returncode}): "
                          + " / ".join(tail))
        tar_path = os.path.join(work, made[0])
        # icecc-create-env adds a file once, under one name; the bundles run
        # clang by the manifest's path.
        with tarfile.open(tar_path, "a") as tar:
            have = set(tar.getnames())
            for alias in aliases:
                name = alias.lstrip("/")
                if name not in have:
                    link = tarfile.TarInfo(name)
                    link.type, link.linkname = tarfile.SYMTYPE, "/usr/bin/clang"
                    tar.addfile(link)
        os.replace(tar_path, final)  # whole or not at all: another link may race us
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rep.note(f"icecream environment: {final} (built)")
    return final


class Icecream:
    def __init__(self, args, m, backend: str):
        self.args, self.m, self.backend = args, m, backend
        self.tally = transfer.Tally("farm")
        self.rep: Reporter | None = None
        self.work = ""
        self.plans: dict[int, transfer.Plan] = {}
        self.attempts: dict[int, int] = {}
        self.spoiled: set[int] = set()
        self.local: set[int] = set()  # jobs whose last try runs here
        self.sent: set[int] = set()  # --self-contained: jobs whose module was counted

    def plan(self, job) -> transfer.Plan:
        if job.index not in self.plans:
            self.plans[job.index] = transfer.plan(self.m, job)
            bundle.header(self.m, job, self.plans[job.index])
        return self.plans[job.index]

    def paths(self, job) -> tuple[str, str]:
        n = self.attempts.get(job.index, 0)
        return (os.path.join(self.work, f"job{job.index}{bundle.SUFFIX}"),
                os.path.join(self.work, f"job{job.index}.{n}.o"))

    def command(self, job) -> list[str]:
        src, obj = self.paths(job)
        if self.args.self_contained:
            return self.self_contained_command(job, src, obj)
        argv = [self.args.icecc, FARM_NAME, "-c", src, "-o", obj]
        # The last try of a job the farm spoiled runs here (ICECC=no: through
        # the local iceccd, which logs it), as icecream itself does when it
        # loses a host.
        tries = self.attempts.get(job.index, 0)
        if tries and tries == self.args.retries:
            self.local.add(job.index)
            return ["env", "ICECC=no"] + argv
        return argv

    def self_contained_command(self, job, src: str, obj: str) -> list[str]:
        """The import step here, then icecc on the imported module (src);
        the last try of a job the farm spoiled is the job itself, here."""
        tries = self.attempts.get(job.index, 0)
        if tries and tries == self.args.retries:
            self.local.add(job.index)
            return job.command
        then = [self.args.icecc, self.m.compiler] + selfcontained.farm_args(self.m, job, src, obj)
        step = selfcontained.import_step(self.m, job, os.path.join(
            self.work, f"job{job.index}.imp.bc"))
        return selfcontained.step_command(sys.executable, src, step, then)

    def stdin(self, job) -> None:
        if self.args.self_contained:
            return None
        src, _ = self.paths(job)
        if not os.path.exists(src):
            try:
                plan = self.plan(job)  # a streamed job is first seen here
            except (paths.UnsafePathError, ValueError) as e:
                raise OSError(f"cannot be sent to icecream: {e}") from None
            self.tally.sent += bundle.write(self.m, job, plan, src)
        return None

    def worker(self, job) -> str:
        """icecream's scheduler picks the host; we learn only whether the
        job ran here after all."""
        return "here" if job.index in self.local else "icecream"

    def collect(self, result: JobResult) -> None:
        job = result.job
        _, obj = self.paths(job)
        self.attempts[job.index] = self.attempts.get(job.index, 0) + 1
        self.spoiled.discard(job.index)
        if result.returncode != 0:
            return
        problem = bundle.object_problem(obj)
        if problem:
            result.returncode, result.problem = None, f"came back with an object that {problem}"
            self.spoiled.add(job.index)
            return
        if job.index in self.local and self.args.self_contained:
            self.tally.where["here"] += 1  # the job itself wrote its object
            return
        self.tally.received += os.path.getsize(obj)
        here = result.job.index in self.local or ICECC_FELL_BACK.search(result.stderr)
        self.tally.where["here" if here else "farm"] += 1
        result.where = "here" if here else "icecream farm"
        if self.args.self_contained and job.index not in self.sent:
            self.sent.add(job.index)
            self.tally.sent += os.path.getsize(self.paths(job)[0])
        try:
            os.replace(obj, job.object)
        except OSError as e:
            result.returncode, result.problem = None, f"cannot write {job.object}: {e.strerror}"

    def retry(self, job, result: JobResult) -> bool:
        if job.index not in self.spoiled or result.attempt > self.args.retries:
            return False
        self.tally.retries += 1
        where = "here" if result.attempt == self.args.retries else "again"
        self.rep.note(f"job {job.index} ({job.module}) {result.describe()}; running it {where} "
                      f"({result.attempt + 1} of {self.args.retries + 1})")
        return True

    def placement(self) -> str:
        """'icecream (3 on the farm, 1 here), 1 retry, 52.0 KiB moved'."""
        done = [f"{self.tally.where[k]} {what}" for k, what in
                (("farm", "on the farm"), ("here", "here")) if self.tally.where[k]]
        return self.tally.describe(f"icecream ({', '.join(done) or 'none done'})")

    def run(self, env_tarball: str, feed: JobFeed | None) -> int:
        self.work = tempfile.mkdtemp(prefix=".dtlto-icecream-",
                                     dir=os.path.dirname(os.path.abspath(self.m.path)))
        if self.backend:
            # icecc runs dtlto-backend here when the farm cannot: the one given.
            bindir = os.path.join(self.work, "bin")
            os.mkdir(bindir)
            os.symlink(self.backend, os.path.join(bindir, FARM_NAME))
            os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
        os.environ["ICECC_VERSION"] = env_tarball
        try:
            return Runner(self.rep, Slots(self.args.jobs), command=self.command,
                          retry=self.retry, stdin=self.stdin, collect=self.collect,
                          shown=lambda job, argv: selfcontained.shown(argv),
                          worker=self.worker).run(self.m.jobs, feed)
        finally:
            shutil.rmtree(self.work, ignore_errors=True)


def main() -> int:
    args = parse_args()
    m = cli.load_or_exit(PROG, args.manifest)
    rep = Reporter.for_args(PROG, args)
    feed = None if args.dry_run else JobFeed.from_environment(m)
    m, feed, code = selfcontained.start(PROG, args, m, feed, rep)
    if code is not None:
        return code
    try:
        backend, clang = find_tools(args, m)
        if not shutil.which(args.icecc):
            raise ValueError(f"cannot find the icecream client --icecc '{args.icecc}' "
                             "(Debian: apt-get install icecc)")
    except ValueError as e:
        return usage_error(PROG, str(e))
    engine = Icecream(args, m, backend)
    for job in m.jobs if not args.self_contained else ():
        try:
            engine.plan(job)
        except (paths.UnsafePathError, ValueError) as e:
            return usage_error(PROG, f"job {job.index} cannot be sent to icecream: {e}")
    if args.env and not os.path.isfile(args.env):
        return usage_error(PROG, f"--env {args.env} is not a file")
    if args.dry_run:
        engine.work = os.path.join(os.path.dirname(os.path.abspath(m.path)),
                                   ".dtlto-icecream-XXXXXX")
        for job in m.jobs:
            print(shlex.join(selfcontained.shown(engine.command(job))))
            if not args.self_contained:
                for line in bundle.describe(m, job, engine.plan(job)):
                    print("  " + line)
        return EXIT_OK
    engine.rep = rep
    rep.placement = engine.placement
    # The manifest's clang, when the bundles run it, at its own path.
    aliases = [] if bundle.is_backend(m.compiler) or args.self_contained else \
        [os.path.abspath(m.compiler)]
    cache = args.env_cache or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dtlto", "icecream")
    try:
        tarball = args.env or build_env(engine.rep, cache, backend, clang, aliases)
    except OSError as e:
        why = f"{e.filename}: {e.strerror}" if e.filename and e.strerror else e.strerror or e
        engine.rep.error(f"cannot build the icecream environment in {cache}: {why}")
        return 1
    return engine.run(tarball, feed)


if __name__ == "__main__":
    sys.exit(main())
