"""REAPI test fixture: Bazel's remote workers on hosts of their own.

  fixture.py run --build-dir B [--hide S]... --record R [--workers N]
                 [--worker-jobs N] [--tls] -- CMD...
      Builds Bazel's RemoteWorker from Debian's bazel-bootstrap-source once
      (classes cached under B/distributors/reapi/worker), then:
        - moves itself into a new, private network namespace holding a
          bridge 10.231.0.1/24 and nothing else: no address of the machine
          is reachable from here, and nothing we create is visible outside;
        - starts N workers, each in its own network, mount, pid and UTS
          namespaces (hostname wI, address 10.231.0.(I+1), port 8980) with
          B and every S covered by an empty tmpfs, so files reach a worker only
          through the REAPI;
        - runs CMD in that network with $REAPI_W1.. (endpoint URLs),
          $REAPI_PID1.. (a process in each worker's namespaces),
          $REAPI_STATE (a directory the workers can see too, for test
          helpers) and $REAPI_CTL (see ctl) in its environment;
        - tears everything down, however CMD ends (try/finally, and on
          SIGINT/SIGTERM/SIGHUP): CMD's process group, the workers and their
          namespaces, the state directory. The namespaces are anonymous and
          die with their last process; every child is also bound to us by
          PR_SET_PDEATHSIG, so even a SIGKILL of the fixture leaves nothing.
      Exits with CMD's exit code. R records what was created, for check-clean.

  fixture.py ctl {kill|stop|start|start-cache-only} I
      From inside CMD: SIGKILL worker I's server process (a lost worker),
      stop it, or start it again on the same CAS directory (cache-only: no
      --work_path, so it serves the CAS and action cache but cannot execute).

  fixture.py check-clean --record R
      Verifies that nothing R lists is left: no process, no network
      namespace, no state directory, no mount.

Needs root, unshare/nsenter (util-linux), ip (iproute2), java and javac
(default-jdk-headless), bazel-bootstrap-source, bazel-bootstrap-data, and
for --tls openssl and libnetty-tcnative-jni.
"""

import argparse
import ctypes
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "Inputs"))
import procfs  # noqa: E402

WORKER_SRC = ("/usr/src/bazel-bootstrap/src/tools/remote/src/main/java/com/google/"
              "devtools/build/remote/worker")
SERVER_JAR = "/usr/share/bazel/A-server.jar"
TCNATIVE = "/usr/lib/x86_64-linux-gnu/jni/libnetty-tcnative.so"
MAIN_CLASS = "com.google.devtools.build.remote.worker.RemoteWorker"
SUBNET = "10.231.0"
PORT = 8980
# The environment variable that marks the processes of one fixture.
MARK = "DTLTO_REAPI_FIXTURE"
CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1
libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent():
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def sh(*argv, check=True, quiet=False):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({r.returncode}): {r.stdout.strip()}")
    return r.stdout


def log(msg):
    print(f"fixture: {msg}", flush=True)


# --- the worker's classes, built once per build directory ------------------

def build_worker(build_dir: str) -> str:
    """Compile RemoteWorker against A-server.jar; return the cache dir."""
    cache = os.path.join(build_dir, "distributors", "reapi", "worker")
    os.makedirs(cache, exist_ok=True)
    stamp = os.path.join(cache, "classes", ".complete")
    with open(os.path.join(cache, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel tests compile it once
        if not os.path.exists(stamp):
            classes = os.path.join(cache, "classes")
            shutil.rmtree(classes, ignore_errors=True)
            sources = sorted(os.path.join(d, f) for d, _, files in os.walk(WORKER_SRC)
                             for f in files if f.endswith(".java"))
            t0 = time.monotonic()
            sh("javac", "-nowarn", "-XDsuppressNotes", "-d", classes, "-cp", SERVER_JAR,
               *sources)
            open(stamp, "w").close()
            log(f"compiled Bazel's RemoteWorker ({len(sources)} sources, "
                f"{time.monotonic() - t0:.1f} s)")
    return os.path.join(cache, "classes")


# --- TLS material ---------------------------------------------------------

def make_tls(d: str, workers: int) -> None:
    os.makedirs(d)
    # The workers, and the fixture's own address for helpers such as a proxy.
    sans = ",".join(f"IP:{SUBNET}.{i}" for i in range(1, workers + 2)) + \
        ",IP:127.0.0.1,DNS:localhost"

    def ossl(*a):
        sh("openssl", *a)
    ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
         "/CN=dtlto test CA", "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.crt")
    for name, ext in (("server", f"subjectAltName={sans}"),
                      ("client", "extendedKeyUsage=clientAuth")):
        ossl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN=dtlto test {name}",
             "-keyout", f"{d}/{name}.key", "-out", f"{d}/{name}.csr")
        with open(f"{d}/{name}.ext", "w") as f:
            f.write(ext + "\n")
        ossl("x509", "-req", "-in", f"{d}/{name}.csr", "-CA", f"{d}/ca.crt", "-CAkey",
             f"{d}/ca.key", "-CAcreateserial", "-days", "2", "-out", f"{d}/{name}.crt",
             "-extfile", f"{d}/{name}.ext")
    # A second CA the servers do not trust, for tests of a wrong client cert.
    ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
         "/CN=dtlto other CA", "-keyout", f"{d}/other.key", "-out", f"{d}/other.crt")


# --- the fixture ---------------------------------------------------------

class Fixture:
    def __init__(self, args):
        self.args = args
        self.state = tempfile.mkdtemp(prefix="dtlto-reapi-fx-", dir="/tmp")
        self.workers = {}  # index -> Popen of unshare
        self.record = {"state": self.state, "fixture_pid": os.getpid(), "pids": [],
                       "netns": [], "clean": False}
        # Every process we start inherits this mark; stray and leftover
        # processes are found by it. Not by network namespace: the kernel
        # reuses a dead namespace's id, and another test's processes could
        # then be taken for ours (and killed).
        os.environ[MARK] = self.state
        self.command = None
        self.generation = 0

    def save(self):
        with open(self.args.record, "w") as f:
            json.dump(self.record, f)

    def url(self, i: int) -> str:
        scheme = "grpcs" if self.args.tls else "grpc"
        return f"{scheme}://{SUBNET}.{i + 1}:{PORT}"

    def setup_network(self):
        if libc.unshare(CLONE_NEWNET) != 0:
            raise RuntimeError(f"unshare(CLONE_NEWNET): {os.strerror(ctypes.get_errno())}")
        self.record["netns"].append(procfs.net_namespace())
        self.save()
        sh("ip", "link", "set", "lo", "up")
        sh("ip", "link", "add", "br0", "type", "bridge")
        sh("ip", "addr", "add", f"{SUBNET}.1/24", "dev", "br0")
        sh("ip", "link", "set", "br0", "up")

    def start_worker(self, i: int, cache_only=False):
        args = self.args
        wdir = os.path.join(self.state, f"w{i}")
        cas = os.path.join(wdir, "cas")
        os.makedirs(cas, exist_ok=True)
        # -XX:-UsePerfData: every worker is pid 1 of its namespace, and all
        # would share /tmp/hsperfdata_root/1.
        java = ["java", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-XX:-UsePerfData",
                f"-Djava.library.path={self.state}/lib/jni",
                "-cp", f"{self.state}/lib/classes:{SERVER_JAR}", MAIN_CLASS,
                f"--listen_port={PORT}", f"--cas_path={cas}"]
        if args.worker_jobs:
            java.append(f"--jobs={args.worker_jobs}")
        if not cache_only:
            work = os.path.join(wdir, "work")
            shutil.rmtree(work, ignore_errors=True)
            os.makedirs(work)
            java.append(f"--work_path={work}")
        if args.tls:
            t = os.path.join(self.state, "tls")
            java += [f"--tls_certificate={t}/server.crt", f"--tls_private_key={t}/server.key",
                     f"--tls_ca_certificate={t}/ca.crt"]
        hides = [h for h in args.hide if os.path.isdir(h)]
        r, w = os.pipe()
        logf = open(os.path.join(wdir, "log"), "ab")
        argv = ["unshare", "--net", "--mount", "--uts", "--pid", "--fork", "--kill-child",
                "--mount-proc", "--propagation", "private",
                sys.executable, os.path.join(HERE, "worker_boot.py"), "--ready-fd", str(r),
                "--hostname", f"w{i}"]
        for h in hides:
            argv += ["--hide", h]
        proc = subprocess.Popen(argv + ["--"] + java, pass_fds=[r], stdout=logf,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                preexec_fn=die_with_parent, start_new_session=True)
        os.close(r)
        logf.close()
        self.workers[i] = proc
        self.record["pids"].append(proc.pid)
        self.save()
        try:
            # unshare itself moves into the new network namespace: wait for it.
            ours = procfs.net_namespace()
            procfs.wait_until(lambda: procfs.net_namespace(proc.pid) != ours
                              or proc.poll() is not None, 30)
            netns = procfs.net_namespace(proc.pid)
            if netns in (None, ours):
                raise RuntimeError(f"worker w{i}: unshare did not start")
            self.record["netns"].append(netns)
            self.save()
            # A fresh name: the veth of a worker just stopped lingers until
            # the kernel has finished destroying its namespace.
            self.generation += 1
            veth = f"v{i}g{self.generation}"
            sh("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0",
               "netns", str(proc.pid))
            sh("ip", "link", "set", veth, "master", "br0", "up")
            inside = ["nsenter", "-t", str(proc.pid), "-n", "ip"]
            sh(*inside, "addr", "add", f"{SUBNET}.{i + 1}/24", "dev", "eth0")
            sh(*inside, "link", "set", "eth0", "up")
            sh(*inside, "link", "set", "lo", "up")
            # A restarted worker has a new MAC address: forget the old one.
            sh("ip", "neigh", "flush", "to", f"{SUBNET}.{i + 1}")
        finally:
            os.close(w)  # worker_boot.py goes on
        self.wait_ready(i, proc)
        what = "cache only" if cache_only else "executes"
        log(f"worker w{i} up at {self.url(i)} ({what})")

    def wait_ready(self, i, proc):
        start = time.monotonic()
        while time.monotonic() < start + 90:
            if proc.poll() is not None:
                break
            try:
                socket.create_connection((f"{SUBNET}.{i + 1}", PORT), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        with open(os.path.join(self.state, f"w{i}", "log"), errors="replace") as f:
            tail = f.read()[-3000:]
        status = ("still running" if proc.poll() is None
                  else f"exited with status {proc.returncode}")
        raise RuntimeError(f"worker w{i} did not listen within "
                           f"{time.monotonic() - start:.0f} s ({status}); its log:\n{tail}")

    def server_pid(self, i: int) -> int | None:
        """The worker's own process (pid 1 of its namespace), seen from here."""
        proc = self.workers.get(i)
        if proc is None or proc.poll() is not None:
            return None
        kids = procfs.children(proc.pid)
        return kids[0] if kids else None

    def stop_worker(self, i: int, server_only=False):
        """SIGKILL worker i: only its server process (unshare then ends by
        itself), or its whole process group."""
        server = self.server_pid(i) if server_only else None
        proc = self.workers.pop(i, None)
        if proc is None:
            return
        if server:
            os.kill(server, signal.SIGKILL)
            try:
                proc.wait(timeout=30)
                return
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()

    def control(self, line: str) -> str:
        words = line.split()
        if len(words) != 2 or not words[1].isdigit():
            return "error: expected '<verb> <worker number>'"
        verb, i = words[0], int(words[1])
        if verb == "kill":
            if i not in self.workers:
                return f"error: worker w{i} is not running"
            self.stop_worker(i, server_only=True)
            log(f"worker w{i} killed")
        elif verb == "stop":
            self.stop_worker(i)
            log(f"worker w{i} stopped")
        elif verb in ("start", "start-cache-only"):
            self.stop_worker(i)
            self.start_worker(i, cache_only=verb == "start-cache-only")
        else:
            return f"error: unknown verb {verb}"
        return "ok"

    def run(self) -> int:
        args = self.args
        classes = build_worker(args.build_dir)
        os.makedirs(f"{self.state}/lib/jni")
        shutil.copytree(classes, f"{self.state}/lib/classes")
        if args.tls:
            # netty-tcnative checks its own file name; Debian names it differently.
            shutil.copy(TCNATIVE, f"{self.state}/lib/jni/libnetty_tcnative.so")
            make_tls(os.path.join(self.state, "tls"), args.workers)
        self.setup_network()
        for i in range(1, args.workers + 1):
            self.start_worker(i)

        ctl_path = os.path.join(self.state, "ctl.sock")
        ctl = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ctl.bind(ctl_path)
        ctl.listen(4)
        ctl.settimeout(0.2)
        env = dict(os.environ, REAPI_STATE=self.state, REAPI_CTL=ctl_path)
        for i in range(1, args.workers + 1):
            env[f"REAPI_W{i}"] = self.url(i)
            # In worker I's namespaces (nsenter -t): bench/farmmodel-check.sh
            # shapes what the worker sends back on its own eth0.
            env[f"REAPI_PID{i}"] = str(self.workers[i].pid)
        self.command = subprocess.Popen(args.command, env=env, start_new_session=True,
                                        preexec_fn=die_with_parent)
        self.record["pids"].append(self.command.pid)
        self.save()
        # A command that hangs is reported and ended here, with what it left
        # running, rather than by lit's limit, which names only the test.
        deadline = time.monotonic() + args.deadline
        while self.command.poll() is None:
            if time.monotonic() > deadline:
                running = [cmdline(pid) or str(pid)
                           for pid in stray_processes(self.record)]
                log(f"HUNG: the command still ran after {args.deadline:g} s; "
                    "running then: " + "; ".join(running))
                ctl.close()
                return 124  # teardown kills it and everything it started
            try:
                conn, _ = ctl.accept()
            except socket.timeout:
                continue
            with conn:
                conn.settimeout(None)
                line = conn.makefile().readline()
                try:
                    answer = self.control(line)
                except Exception as e:
                    answer = f"error: {e}"
                conn.sendall((answer + "\n").encode())
        ctl.close()
        return self.command.returncode

    def teardown(self):
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        if self.command is not None and self.command.poll() is None:
            try:
                os.killpg(self.command.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.command.wait()
        if self.command is not None:
            # Anything CMD left running in its process group goes too.
            try:
                os.killpg(self.command.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for i in list(self.workers):
            self.stop_worker(i)
        # Whatever else still lives in our network or uses our state (a
        # helper the command started in a session of its own) goes too.
        for pid in stray_processes(self.record):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        left = leftovers(self.record, ignore_self=True)
        shutil.rmtree(self.state, ignore_errors=True)
        if left:
            log("teardown left behind: " + "; ".join(left))
            return False
        self.record["clean"] = True
        self.save()
        return True


def is_ours(record, pid: int) -> bool:
    """Does process pid carry our mark, or use our state directory?"""
    env, cmd = procfs.environ(pid), procfs.cmdline(pid)
    if env is None or cmd is None:
        return False
    state = record["state"]
    return f"{MARK}={state}".encode() in env or state in "\0".join(cmd)


def cmdline(pid: int) -> str:
    """pid's command line, shortened for a report ("" once it is gone)."""
    words = procfs.cmdline(pid)
    return "" if words is None else f"{pid}: " + " ".join(words)[:200]


def stray_processes(record) -> list[int]:
    me = os.getpid()
    return [pid for pid in procfs.pids() if pid != me and is_ours(record, pid)]


def leftovers(record, ignore_self=False, wait=10.0) -> list[str]:
    """What of the record still exists (waits a little: namespaces die
    asynchronously after their last process)."""
    found = []

    def none_found():
        pids = record["pids"] + ([] if ignore_self else [record["fixture_pid"]])
        now = [f"process {pid}" for pid in pids if procfs.alive(pid)]
        now += [f"process {pid} started by the fixture" for pid in stray_processes(record)
                if procfs.alive(pid)]
        if os.path.exists(record["state"]) and not ignore_self:
            now.append(f"directory {record['state']}")
        if record["state"] in procfs.mountinfo():
            now.append(f"a mount under {record['state']}")
        found[:] = sorted(set(now))
        return not found
    procfs.wait_until(none_found, wait, step=0.2)
    return found


def cmd_run(args) -> int:
    if os.geteuid() != 0:
        print("fixture: needs root (network and mount namespaces)", file=sys.stderr)
        return 2
    fx = Fixture(args)

    def on_signal(signo, frame):
        raise SystemExit(128 + signo)
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    code = 1
    try:
        code = fx.run()
    except RuntimeError as e:
        log(f"error: {e}")
        code = 1
    finally:
        if not fx.teardown():
            code = code or 1
    return code


def cmd_ctl(args) -> int:
    path = os.environ.get("REAPI_CTL")
    if not path:
        print("fixture ctl: $REAPI_CTL is not set (run it under 'fixture.py run')",
              file=sys.stderr)
        return 2
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)
        s.sendall(f"{args.verb} {args.worker}\n".encode())
        answer = s.makefile().readline().strip()
    if answer != "ok":
        print(f"fixture ctl: {answer}", file=sys.stderr)
        return 1
    return 0


def cmd_check_clean(args) -> int:
    with open(args.record) as f:
        record = json.load(f)
    left = leftovers(record)
    if left or not record.get("clean"):
        print("check-clean: left behind: " + ("; ".join(left) or "teardown did not finish"))
        return 1
    print(f"check-clean: nothing left ({len(record['pids'])} processes and "
          f"{len(record['netns'])} network namespaces gone, state directory removed)")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="start workers, run a command among them, clean up")
    r.add_argument("--build-dir", required=True, help="the build directory (hidden, and "
                   "where the worker's classes are cached)")
    r.add_argument("--hide", action="append", default=[],
                   help="another directory the workers must not see (repeatable)")
    r.add_argument("--record", required=True, help="JSON file for check-clean")
    r.add_argument("--workers", type=int, default=2)
    r.add_argument("--worker-jobs", type=int, metavar="N",
                   help="actions each worker runs at once (its --jobs; default: its "
                        "own, the machine's cores)")
    r.add_argument("--tls", action="store_true",
                   help="workers speak TLS only and require a client certificate "
                        "($REAPI_STATE/tls has ca.crt, client.crt, client.key, ...)")
    r.add_argument("--deadline", type=float, default=600, metavar="SECONDS",
                   help="end the command, reported as HUNG, after this long "
                        "(default: %(default)s)")
    r.add_argument("command", nargs=argparse.REMAINDER)
    c = sub.add_parser("ctl", help="control a worker from inside the command")
    c.add_argument("verb", choices=["kill", "stop", "start", "start-cache-only"])
    c.add_argument("worker", type=int)
    k = sub.add_parser("check-clean", help="verify that a run left nothing behind")
    k.add_argument("--record", required=True)
    args = p.parse_args()
    if args.cmd == "run":
        args.command = args.command[1:] if args.command[:1] == ["--"] else args.command
        if not args.command:
            p.error("run: no command after --")
        args.hide = [args.build_dir] + args.hide
        return cmd_run(args)
    if args.cmd == "ctl":
        return cmd_ctl(args)
    return cmd_check_clean(args)


if __name__ == "__main__":
    sys.exit(main())
