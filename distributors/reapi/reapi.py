#!/usr/bin/python3
"""Run the DTLTO backend jobs of a manifest on a Remote Execution API (REAPI
v2) service: BuildBuddy, EngFlow, Buildbarn, NativeLink, Google RBE, Bazel's
remote worker.

Each job becomes an action: its command, and an input root holding its
module, index shard and imported modules (plus common inputs, and the
compiler with --ship-compiler). The action cache is asked first; otherwise
only the blobs the server lacks are uploaded, the action executes, and its
outputs are downloaded, checked against their digests and written to the
paths the linker expects.

The linker streams jobs to reapi.py as their index shards are ready
(docs/manifest.md): each job's action is planned and submitted as its
record arrives. A job the linker cancels is dropped if no thread has taken
it yet; one in flight has its calls cancelled (and the server is asked to
cancel its operation, where it implements that), and its outputs are never
written, however late its result comes.
"""
# dtlto-stream-protocol: 1   (the linker streams jobs to us: docs/manifest.md)

# Debian's /usr/bin/python3 on purpose: python3-grpcio and python3-protobuf
# are installed for it.

import argparse
import os
import select
import shlex
import signal
import sys
import threading
from concurrent.futures import FIRST_COMPLETED, CancelledError, ThreadPoolExecutor, wait

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "utils", "dtlto"))
sys.path.insert(0, HERE)

from dtltodist import cli, paths  # noqa: E402
from dtltodist.events import JobFeed  # noqa: E402
from dtltodist.report import (EXIT_JOB_FAILED, EXIT_OK, EXIT_USAGE,  # noqa: E402
                              Reporter, exit_code_for_signal, plural)
from dtltodist.manifest import dispatch_order  # noqa: E402
from dtltodist.runner import (JobResult, check_all_outputs, drop_cancelled,  # noqa: E402
                              take_feed)
from reapilib import credentials, stubs  # noqa: E402
from reapilib.action import PlanError, Planner, Settings  # noqa: E402
from reapilib.client import (BadConfig, Endpoint, JobCancel, Session, Stopped,  # noqa: E402
                             parse_endpoint)
from reapilib.jobs import JobFailed, JobRunner, Pool  # noqa: E402
from reapilib.tree import show  # noqa: E402

PROG = "reapi.py"
VERSION = "0.1.0"
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

EPILOG = """\
Use it from the linker (each option of ours is one --thinlto-distributor-arg):
  ld.lld --thinlto-distributor=distributors/reapi/reapi.py \\
         --thinlto-distributor-arg=--endpoint=grpcs://remote.example.com:443 \\
         --thinlto-distributor-arg=--credentials-file=$HOME/.config/reapi.hdr \\
         --thinlto-remote-compiler=/usr/lib/llvm-22/bin/clang ...

Endpoints: grpc://HOST:PORT (plain), grpcs://HOST:PORT (TLS), HOST:PORT
(TLS, as in Bazel), unix:PATH. Give several to spread jobs over them; a
job whose endpoint fails is retried on another one. Paths in the manifest
must be relative for bitcode (objects, archives, -o): README.md explains how
files are laid out in the input root and why.

The protocol stubs are generated at build time; see --stubs-dir.
"""


def name_value(text: str) -> tuple[str, str]:
    name, sep, value = cli.utf8_text(text).partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {cli.shown_value(text)}")
    return name, value


def make_parser() -> argparse.ArgumentParser:
    p = cli.make_parser(PROG, __doc__, EPILOG)
    g = p.add_argument_group("where jobs run")
    g.add_argument("--endpoint", action="append", default=[], metavar="URL", type=cli.utf8_text,
                   help="REAPI server; repeat it to use several (required unless --dry-run)")
    g.add_argument("--instance-name", default="", metavar="NAME", type=cli.utf8_text,
                   help="REAPI instance name (default: empty)")
    g.add_argument("-j", "--jobs", type=cli.positive_int, metavar="N",
                   help="at most N actions in flight (default: 16 per endpoint)")
    g.add_argument("--retries", type=cli.non_negative_int, default=3, metavar="N",
                   help="retry a job at most N times after a transient failure "
                        "(unreachable server, reset connection, lost worker); "
                        "a compiler error is never retried (default: 3)")
    g.add_argument("--rpc-timeout", type=cli.positive_float, default=120.0, metavar="SECONDS",
                   help="deadline of each CAS and action cache call, plus one second "
                        "per MiB for large transfers (default: 120)")
    g.add_argument("--max-batch-bytes", type=cli.positive_int, metavar="N",
                   help="largest batched upload; bigger blobs go through ByteStream "
                        "(default: what the server allows, at most 4 MiB)")
    g.add_argument("--keepalive", type=cli.positive_float, metavar="SECONDS",
                   help="send HTTP/2 pings every SECONDS while calls are open, to notice "
                        "a dead connection (the server must allow it; default: off)")

    g = p.add_argument_group("the actions")
    g.add_argument("--platform", action="append", type=name_value, default=[],
                   metavar="NAME=VALUE",
                   help="platform property for the action (e.g. OSFamily=Linux, "
                        "container-image=docker://...); repeatable")
    g.add_argument("--env", action="append", type=name_value, default=[],
                   metavar="NAME=VALUE",
                   help="environment variable of the remote command (default: none); "
                        "repeatable")
    g.add_argument("--action-timeout", type=cli.positive_float, metavar="SECONDS",
                   help="the server kills an action running longer than this")
    g.add_argument("--ship-compiler", action="store_true",
                   help="upload the compiler (common.args[0]) and the shared libraries "
                        "it loads through $ORIGIN, and run that copy remotely")
    g.add_argument("--ship", action="append", default=[], metavar="FILE",
                   help="with --ship-compiler: one more file to put in the shipped "
                        "toolchain at its own absolute path; repeatable")
    g.add_argument("--skip-cache-lookup", action="store_true",
                   help="do not ask the action cache; run every action")

    g = p.add_argument_group("security")
    g.add_argument("--tls-ca-cert", metavar="FILE",
                   help="PEM root certificates to trust (default: the system's)")
    g.add_argument("--tls-client-cert", metavar="FILE",
                   help="PEM client certificate chain, for servers that require one")
    g.add_argument("--tls-client-key", metavar="FILE", help="PEM key of --tls-client-cert")
    g.add_argument("--tls-server-name", metavar="NAME", type=cli.utf8_text,
                   help="name to check the server certificate against (default: the host)")
    g.add_argument("--credentials-file", action="append", default=[], metavar="FILE",
                   help="file of 'name: value' header lines sent with every call "
                        "(e.g. 'authorization: Bearer ...'); never printed or logged")
    g.add_argument("--credentials-env", action="append", default=[], metavar="HEADER=VAR",
                   type=cli.utf8_text,
                   help="send header HEADER with the value of environment variable VAR")

    g = p.add_argument_group("setup")
    g.add_argument("--stubs-dir", metavar="DIR",
                   help="generated protocol stubs (default: $DTLTO_REAPI_STUBS, else "
                        "build/distributors/reapi/gen in this checkout)")
    return p


def human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return ""


class Main:
    def __init__(self, args):
        self.args = args
        self.reporter = Reporter.for_args(PROG, args)
        self.out_lock = threading.Lock()
        self.signo = 0

    def fail_setup(self, message: str) -> int:
        self.reporter.error(message)
        return EXIT_USAGE

    def note(self, message: str) -> None:
        """A verbose note from any thread."""
        if self.args.verbose:
            with self.out_lock:
                self.reporter.verbose_note(message)

    def run(self) -> int:
        args = self.args
        if not args.endpoint and not args.dry_run:
            return self.fail_setup("no --endpoint given: say which REAPI server runs the jobs")
        if args.ship and not args.ship_compiler:
            return self.fail_setup("--ship needs --ship-compiler")
        if bool(args.tls_client_cert) != bool(args.tls_client_key):
            return self.fail_setup("--tls-client-cert and --tls-client-key go together")
        try:
            for url in args.endpoint:
                parse_endpoint(url)
        except BadConfig as e:
            return self.fail_setup(str(e))
        manifest = cli.load_or_exit(PROG, args.manifest)
        try:
            g = stubs.load(args.stubs_dir)
        except stubs.StubsError as e:
            return self.fail_setup(str(e))
        env_names = [n for n, _ in args.env]
        if len(set(env_names)) != len(env_names):
            return self.fail_setup("--env names the same variable twice")
        settings = Settings(platform=args.platform, env=args.env,
                            timeout=args.action_timeout, ship_compiler=args.ship_compiler,
                            ship=args.ship)
        planner = Planner(g.re, manifest, settings)
        try:
            plans = [planner.plan(job) for job in manifest.jobs]
        except PlanError as e:
            return self.fail_setup(str(e))

        if args.dry_run:
            self.print_plans(plans)
            return EXIT_OK
        try:
            headers = self.read_credentials()
            tls = self.read_tls()
        except (credentials.CredentialsError, OSError) as e:
            return self.fail_setup(str(e))
        return self.execute(g, manifest, planner, plans, headers, tls,
                            JobFeed.from_environment(manifest))

    def read_credentials(self) -> list[tuple[str, str]]:
        headers = []
        for path in self.args.credentials_file:
            found, shared = credentials.from_file(path)
            if shared:
                self.reporter.note(f"warning: other users can read {path}; "
                                   f"chmod 600 it")
            headers += found
        for spec in self.args.credentials_env:
            headers.append(credentials.from_env(spec))
        return headers

    def read_tls(self) -> dict:
        tls = {}
        for key, path in (("ca", self.args.tls_ca_cert), ("cert", self.args.tls_client_cert),
                          ("key", self.args.tls_client_key)):
            if path:
                try:
                    with paths.open_input(path) as f:
                        tls[key] = f.read()
                except OSError as e:
                    raise OSError(f"cannot read {path}: {e.strerror}") from None
        return tls

    def print_plans(self, plans) -> None:
        for plan in plans:
            job = plan.job
            print(f"job {job.index} ({job.module} -> {job.object}): action "
                  f"{show(plan.action)}, working directory "
                  f"{shlex.quote(plan.working_directory or '.')}, "
                  f"{plural(plan.input_files, 'input file')} ({human_bytes(plan.input_bytes)})")
            print(f"  {shlex.join(plan.argv)}")
            if self.args.verbose:
                for path, f in plan.tree.files():
                    print(f"  input: {shlex.quote(path)} {show(f.blob.digest)}")
                for remote, local in sorted(plan.outputs.items()):
                    print(f"  output: {shlex.quote(remote)} -> {shlex.quote(local)}")
        sys.stdout.flush()

    def execute(self, g, manifest, planner, plans, headers, tls, feed) -> int:
        args = self.args
        options = [("grpc.max_receive_message_length", 64 << 20),
                   ("grpc.max_send_message_length", 64 << 20),
                   ("grpc.primary_user_agent", f"dtlto-reapi/{VERSION}")]
        if args.tls_server_name:
            options.append(("grpc.ssl_target_name_override", args.tls_server_name))
        if args.keepalive:
            options += [("grpc.keepalive_time_ms", int(args.keepalive * 1000)),
                        ("grpc.keepalive_timeout_ms", 20000),
                        ("grpc.http2.max_pings_without_data", 0)]
        endpoints = [Endpoint(g, url, i, tls, options) for i, url in enumerate(args.endpoint)]
        if headers:
            for ep in endpoints:
                if not ep.secure and not ep.url.startswith("unix:"):
                    self.reporter.note(f"warning: credentials go unencrypted to {ep.name} "
                                       "(use grpcs://)")
        session = Session(g, endpoints, args.instance_name, headers,
                          target=manifest.linker_output, rpc_timeout=args.rpc_timeout,
                          max_batch=args.max_batch_bytes, version=VERSION)
        pool = Pool(endpoints, session.stopping)
        # The Execute stream gets a deadline only when the action has one.
        exec_timeout = (args.action_timeout + args.rpc_timeout) if args.action_timeout else None
        runner = JobRunner(session, pool, args.retries, args.skip_cache_lookup,
                           exec_timeout=exec_timeout, note=self.note,
                           started=self.started, retrying=self.retrying)
        jobs = args.jobs or 16 * len(endpoints)
        try:
            return self.supervise(session, runner, planner, plans, endpoints, jobs, feed)
        finally:
            for ep in endpoints:
                ep.close()

    def supervise(self, session, runner, planner, plans, endpoints, width, feed) -> int:
        """Every job's action, up to width at once; streaming (feed), also
        the jobs the linker sends while others run, until its end."""
        rep = self.reporter
        rep.begin(len(plans))
        jobs = [plan.job for plan in plans]
        failure = None  # (job, its action or None, JobFailed)
        old = {s: signal.signal(s, self.on_signal) for s in STOP_SIGNALS}
        # Streaming, jobs keep coming: as many threads as actions may be in flight.
        pool = ThreadPoolExecutor(max_workers=max(1, width if feed else min(width, len(plans))))
        futures = {}  # future -> (plan, JobCancel)
        pending = set()

        def submit(plan):
            cancel = JobCancel()
            future = pool.submit(self.run_job, session, runner, plan, cancel)
            futures[future] = (plan, cancel)
            pending.add(future)

        def more() -> bool:
            return feed is not None and not feed.ended and failure is None and not self.signo

        def listening() -> bool:
            # After the end record cancels may still come, until the linker
            # closes the channel.
            return feed is not None and not feed.closed and failure is None and not self.signo

        try:
            by_job = {plan.job.index: plan for plan in plans}
            for job in dispatch_order(jobs):
                submit(by_job[job.index])
            while pending or more():
                if listening():
                    with self.out_lock:
                        new, cancels = take_feed(feed, rep, jobs)
                    for job in new:
                        try:
                            submit(planner.plan(job))
                        except PlanError as e:
                            failure = failure or (job, None, JobFailed(str(e), 0))
                            self.stop_all(session, pending)
                    for job_id in cancels:
                        self.cancel(session, futures, pending, jobs, job_id)
                    # The feed is read again within 50 ms, or at once when it has more.
                    select.select([feed.fileno()] if listening() else [], [], [], 0.05)
                    done, pending = wait(pending, timeout=0)
                else:
                    done, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
                for f in done:
                    plan, _ = futures[f]
                    try:
                        outcome = f.result()
                    except (Stopped, CancelledError):
                        continue
                    except JobFailed as e:
                        if failure is None and not self.signo:
                            failure = (plan.job, plan.action, e)
                            self.stop_all(session, pending)
                        continue
                    except Exception as e:  # a bug: still one line, still stop
                        if failure is None and not self.signo:
                            failure = (plan.job, plan.action, JobFailed(
                                f"internal error: {type(e).__name__}: {e}", 1))
                            self.stop_all(session, pending)
                        continue
                    with self.out_lock:
                        rep.finished(JobResult(plan.job, outcome.attempts, 0, outcome.stdout,
                                               outcome.stderr, where=outcome.where))
                if self.signo and not session.stop.is_set():
                    self.stop_all(session, pending)
        finally:
            self.stop_all(session, [])
            pool.shutdown(wait=True, cancel_futures=True)
            for s, handler in old.items():
                signal.signal(s, handler)

        if self.signo:
            rep.error(f"interrupted by {signal.Signals(self.signo).name}; cancelled "
                      f"the remote work in flight")
            return exit_code_for_signal(self.signo)
        where = self.describe(session, runner, endpoints)
        if failure:
            job, action, e = failure
            result = JobResult(job, e.attempts, e.exit_code, e.stdout, e.stderr,
                               problem="" if e.exit_code is not None else f"failed: {e}",
                               where=e.endpoint.name if e.endpoint is not None else "")
            rep.failed(result, job.command)
            if e.endpoint is not None:
                rep.note(f"job {job.index}: action {show(action)} on {e.endpoint.name}")
            rep.summary(where, failed=1)
            return EXIT_JOB_FAILED
        return check_all_outputs(rep, jobs, where)

    @staticmethod
    def run_job(session, runner, plan, cancel):
        """One job, on a pool thread; its calls can be cancelled as one."""
        with session.job(cancel):
            return runner.run(plan)

    def cancel(self, session, futures, pending, jobs, job_id) -> None:
        """The linker cancelled job_id: a job not started is dropped, one in
        flight stops (its outputs are never written: Session.cancel_job).
        One that has written its outputs already is reported done."""
        for f in [f for f in pending if futures[f][0].job.index == job_id]:
            plan, cancel = futures[f]
            if f.cancel() or session.cancel_job(cancel):
                pending.discard(f)
                with self.out_lock:
                    drop_cancelled(self.reporter, jobs, plan.job)

    def started(self, plan, ep, attempt: int) -> None:
        """An attempt went to an endpoint (a job thread)."""
        self.reporter.started(plan.job, worker=ep.name, attempt=attempt)

    def retrying(self, plan, error, attempt: int, ep) -> None:
        """An attempt failed and the job runs again (a job thread)."""
        self.reporter.events.failed(plan.job.index, str(error), retry=True,
                                    worker=ep.name if ep is not None else None,
                                    attempt=attempt)

    def on_signal(self, signo, frame):
        self.signo = self.signo or signo

    @staticmethod
    def stop_all(session, pending) -> None:
        session.cancel_all()
        for f in pending:
            f.cancel()

    @staticmethod
    def describe(session, runner, endpoints) -> str:
        """'2 endpoints (a: 3 run, b: 1 run + 1 cached), 1 from the action
        cache, 1 retry, 12.0 KiB up, 3.0 KiB down'."""
        def counts(ep):
            return f"{ep.executed} run" + (f" + {ep.cache_hits} cached" if ep.cache_hits else "")

        if len(endpoints) == 1:
            head = f"{endpoints[0].name} ({counts(endpoints[0])})"
        else:
            head = (f"{len(endpoints)} endpoints ("
                    + ", ".join(f"{ep.name}: {counts(ep)}" for ep in endpoints) + ")")
        hits = sum(ep.cache_hits for ep in endpoints)
        retries = runner.retried
        return (f"{head}, {hits} from the action cache, "
                f"{retries} {'retry' if retries == 1 else 'retries'}, "
                f"{human_bytes(session.bytes_up)} up, {human_bytes(session.bytes_down)} down")


def main() -> int:
    args = make_parser().parse_args()
    return Main(args).run()


if __name__ == "__main__":
    sys.exit(main())
