"""icecream test farm: Debian's icecc-scheduler and iceccd, unchanged.

  icecc_farm.py run [--hosts N] [--hide DIR]... [--record R] -- CMD...
      Creates a client namespace holding a bridge 10.231.3.1/24, where
      icecc-scheduler and the client's own iceccd run (-m 0: it compiles
      nothing itself, so every job must go to a host), and N host
      namespaces hI joined to it (address 10.231.3.(I+1); nothing outside
      10.231.3.0/24), each running iceccd as a host of its own (pid, mount
      and UTS namespaces, hostname hI, every --hide DIR covered by an empty
      tmpfs), 2 slots, its environments in FARM_STATE/hI/envs. Nothing of
      ours is installed on the hosts: the jobs bring their environment.
      Every daemon talks to its clients on its own socket
      (ICECC_TEST_SOCKET) and logs to FARM_STATE/<name>.log (-vvv). The
      hosts share this machine's CPUs, and iceccd reports a host whose
      CPUs are busy (here: other tests running) as loaded, which the
      scheduler then gives no job: each host sees the /proc/stat of an
      idle machine instead (a file bind-mounted over it), as a build host
      of its own would.
      CMD runs in the client namespace with FARM_STATE and the client
      daemon's ICECC_TEST_SOCKET. Everything is torn down however CMD
      ends.

      With --stall-watch, while CMD runs: the first host whose environment
      has a job waiting at a dtlto-stall.<pid> marker (see doctor, stall)
      is killed, daemon and all ("harness: killing hI while it runs a
      job"); jobs waiting on the other hosts get a dtlto-go file next to
      their marker, and go on.

  icecc_farm.py doctor STATE HOST PROGRAM [--keep-real]
      Makes HOST (h1, h2, ...) of the running farm whose state directory
      is STATE a broken host: every environment installed there (by a job
      that ran on it) gets PROGRAM (Inputs/fake_gcc.c built) as its
      /usr/bin/gcc, the compiler iceccd runs for our jobs; --keep-real
      keeps the real one as /usr/bin/gcc.real. Each environment also gets
      an empty, world-writable /dtlto-calls.log, where the fake compiler
      appends a line per call: the count of compiles that really ran on
      HOST, which iceccd's own log does not always give (see faults.test).
      Prints how many environments.

  icecc_farm.py jobs STATE [--wait SECONDS]
      The jobs the scheduler of the running farm whose state directory is
      STATE has seen end, from its log: how many ended on the hosts (hI),
      how many elsewhere, how many with a non-zero status, and how many
      hosts ran any. A host tells the scheduler that a job ended after the
      client has its object, so it first waits (default 60 s) until every
      job the scheduler was asked for has ended, and says which have not
      if some never do. One process writes the scheduler's log, a whole
      line a record; iceccd's logs are shared by the daemon and its job
      processes, whose records interleave and have gone missing there.
  icecc_farm.py missing        what this machine lacks (nothing if ready)
  icecc_farm.py check-clean R  succeeds when nothing recorded in R is left
"""

import glob
import os
import pwd
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "ssh", "Inputs"))
import sandbox  # noqa: E402

TOOLS = sandbox.BASE_TOOLS + (("icecc", "icecc"), ("iceccd", "icecc"),
                              ("icecc-scheduler", "icecc"), ("icecc-create-env", "icecc"),
                              ("python3", "python3"),
                              # clang -static for Inputs/fake_gcc.c (the chroot has no shell)
                              ("/usr/lib/x86_64-linux-gnu/libc.a", "libc6-dev"))
SUBNET = "10.231.3"
NETNAME = "dtltotest"


def iceccd(sb, name, slots, extra=()):
    # iceccd started as root runs as the icecc user (with CAP_SYS_CHROOT
    # only): its socket and environments are that user's.
    os.makedirs(sb.path(name, "envs"), exist_ok=True)
    user = pwd.getpwnam("icecc")
    for d in (sb.path(name), sb.path(name, "envs")):
        os.chown(d, user.pw_uid, user.pw_gid)
    env = dict(os.environ, ICECC_TEST_SOCKET=sb.path(name, "socket"))
    argv = ["iceccd", "-n", NETNAME, "-s", f"{SUBNET}.1", "-m", str(slots), "-N", name,
            "-b", sb.path(name, "envs"), "-vvv"] + list(extra)
    return argv, env


def start(sb: sandbox.Sandbox, args):
    client = sb.add_netns(f"dtlto-icecc-{os.getpid()}")
    sandbox.sh("ip", "-n", client, "link", "add", "br0", "type", "bridge")
    sandbox.sh("ip", "-n", client, "addr", "add", f"{SUBNET}.1/24", "dev", "br0")
    sandbox.sh("ip", "-n", client, "link", "set", "br0", "up")
    sb.spawn("scheduler", ["icecc-scheduler", "-n", NETNAME, "-vvv"], netns=client)
    for i in range(1, args.count + 1):
        name = f"h{i}"
        ns = sb.add_netns(f"dtlto-icecc-{os.getpid()}-{name}")
        sandbox.sh("ip", "-n", client, "link", "add", f"v{i}", "type", "veth",
                   "peer", "name", "eth0", "netns", ns)
        sandbox.sh("ip", "-n", client, "link", "set", f"v{i}", "master", "br0", "up")
        sandbox.sh("ip", "-n", ns, "addr", "add", f"{SUBNET}.{i + 1}/24", "dev", "eth0")
        sandbox.sh("ip", "-n", ns, "link", "set", "eth0", "up")
        argv, env = iceccd(sb, name, 2)
        idle = sb.path(name, "proc-stat")
        with open(idle, "w") as f:  # the counters of an idle CPU, never moving
            f.write("cpu  0 0 0 1000000 0 0 0 0 0 0\ncpu0 0 0 0 1000000 0 0 0 0 0 0\n")
        sb.spawn(name, argv, netns=ns, host=name, hide=args.hide, env=env,
                 bind=[(idle, "/proc/stat")])
    argv, env = iceccd(sb, "client", 0, ["--no-remote"])
    sb.spawn("client", argv, netns=client, env=env)
    for name in [f"h{i}" for i in range(1, args.count + 1)] + ["client"]:
        sb.wait_for_log(name, "Connected to scheduler")
    return dict(os.environ, ICECC_TEST_SOCKET=env["ICECC_TEST_SOCKET"]), client


def installed_envs(state: str, host: str) -> list[str]:
    """The environment directories installed on host."""
    return sorted(gcc[:-len("/usr/bin/gcc")] for gcc in
                  glob.glob(os.path.join(state, host, "envs", "target=*", "*", "usr", "bin",
                                         "gcc")))


def doctor(argv: list[str]) -> int:
    keep = "--keep-real" in argv
    state, host, program = [a for a in argv if a != "--keep-real"]
    envs = installed_envs(state, host)
    if not envs:
        print(f"doctor: {host} has no environment installed: run a job on it first",
              file=sys.stderr)
        return 1
    for env in envs:
        gcc = os.path.join(env, "usr", "bin", "gcc")
        if keep and not os.path.exists(gcc + ".real"):
            os.rename(gcc, gcc + ".real")
        shutil.copyfile(program, gcc + ".new")
        os.chmod(gcc + ".new", 0o755)
        os.replace(gcc + ".new", gcc)
        calls = os.path.join(env, "dtlto-calls.log")
        with open(calls, "w"):
            pass
        os.chmod(calls, 0o666)  # iceccd runs the compiler as its own user
    print(f"doctor: {host}: {len(envs)} environment{'s' if len(envs) > 1 else ''}")
    return 0


def scheduler_jobs(state: str):
    """(asked, ended) from the scheduler's log: the ids of the jobs it was
    asked for, and {id: (status, host)} of those that ended."""
    asked, ended = set(), {}
    with open(os.path.join(state, "scheduler.log"), errors="replace") as f:
        for line in f:
            if m := re.search(r": NEW (\d+) ", line):
                asked.add(m[1])
            elif m := re.search(r": END (\d+) status=(\d+) .* server=(\S+)", line):
                ended[m[1]] = (int(m[2]), m[3])
    return asked, ended


def jobs(argv: list[str]) -> int:
    state, wait = argv[0], 60.0
    if argv[1:2] == ["--wait"]:
        wait = float(argv[2])
    deadline = time.monotonic() + wait
    while True:
        asked, ended = scheduler_jobs(state)
        if asked <= ended.keys() or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    on_hosts = [host for _, host in ended.values() if re.fullmatch(r"h\d+", host)]
    print(f"jobs ended on the hosts: {len(on_hosts)}")
    print(f"jobs ended elsewhere: {len(ended) - len(on_hosts)}")
    print(f"failed: {sum(1 for status, _ in ended.values() if status)}")
    print(f"hosts used: {len(set(on_hosts))}")
    if running := sorted(asked - ended.keys(), key=int):
        print(f"still running after {wait:g} s: {' '.join(running)}")
    return 0


class StallWatch:
    """watch() for run_command with --stall-watch (see the module doc)."""

    def __init__(self, sb: sandbox.Sandbox, count: int):
        self.sb, self.count, self.killed = sb, count, None

    def __call__(self):
        for i in range(1, self.count + 1):
            host = f"h{i}"
            markers = glob.glob(self.sb.path(host, "envs", "target=*", "*", "tmp",
                                             "dtlto-stall.*"))
            if not markers or host == self.killed:
                continue
            if self.killed is None:
                self.killed = host
                print(f"harness: killing {host} while it runs a job", file=sys.stderr,
                      flush=True)
                self.sb.kill(host)
                continue
            for marker in markers:
                go = os.path.join(os.path.dirname(marker), "dtlto-go")
                if not os.path.exists(go):
                    with open(go + ".tmp", "w"):
                        pass
                    os.replace(go + ".tmp", go)


HARNESS = sandbox.Harness("icecc_farm.py", __doc__, TOOLS, "--hosts", start,
                          host=lambda i: f"h{i}",
                          logs=lambda args: ["scheduler", "client"] +
                          [f"h{i}" for i in range(1, args.count + 1)],
                          options=lambda r: r.add_argument("--stall-watch",
                                                           action="store_true"),
                          watch=lambda sb, args: StallWatch(sb, args.count)
                          if args.stall_watch else None)

if __name__ == "__main__":
    if sys.argv[1:2] == ["doctor"]:
        sys.exit(doctor(sys.argv[2:]))
    if sys.argv[1:2] == ["jobs"]:
        sys.exit(jobs(sys.argv[2:]))
    sys.exit(HARNESS.main())
