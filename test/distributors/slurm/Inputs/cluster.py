"""Slurm test cluster: munged, slurmctld and N slurmd nodes, all our own.

  cluster.py run [--nodes N] [--hide DIR]... [--stall-compiler CLANG]
                 [--record R] -- CMD...
      Starts, in a network namespace of its own (loopback only, so fixed
      ports never meet anything else on the machine):
        - munged with a fresh key, its socket in the state directory;
        - slurmctld with a generated slurm.conf (cluster "dtltotest",
          partition "dtlto" of nodes node1..nodeN, 2 CPUs each);
        - one `slurmd -N nodeK` per node (Debian builds slurmd with
          multiple-slurmd support; each node has its own Port=), each as a
          host of its own: pid, mount and UTS namespaces, every --hide DIR
          covered by an empty tmpfs, so with --hide the nodes cannot see
          the build tree and files reach them only through srun.
      Then runs CMD in that network namespace with SLURM_CONF set, and
      FARM_STATE (a directory the nodes see too). With --stall-compiler,
      FARM_STALL_CC names a compiler whose first run hangs after writing
      its node's name to a marker: the harness then kills that node (slurmd
      and everything it started), as a node lost in the middle of a job.
      Everything is torn down however CMD ends; exits with CMD's status.

  cluster.py missing
      Prints what this machine lacks to run a cluster (nothing if ready).

  cluster.py check-clean R
      Succeeds when nothing the run recorded in R is left.
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "ssh", "Inputs"))
import sandbox  # noqa: E402

TOOLS = sandbox.BASE_TOOLS + (("munged", "munge"), ("slurmctld", "slurmctld"),
                              ("slurmd", "slurmd"), ("/usr/sbin/slurmstepd", "slurmd"),
                              ("srun", "slurm-client"), ("sinfo", "slurm-client"),
                              ("scancel", "slurm-client"), ("python3", "python3"))
CTLD_PORT = 6817
NODE_PORT = 6900


def slurm_conf(sb: sandbox.Sandbox, nodes: int) -> str:
    s = sb.path
    lines = [
        "ClusterName=dtltotest",
        "SlurmctldHost=localhost(127.0.0.1)",
        f"SlurmctldPort={CTLD_PORT}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={s('munge.sock')}",
        f"StateSaveLocation={s('ctld')}",
        f"SlurmdSpoolDir={s('spool', '%n')}",
        f"SlurmctldPidFile={s('slurmctld.pid')}",
        f"SlurmdPidFile={s('slurmd-%n.pid')}",
        f"SlurmctldLogFile={s('slurmctld.log')}",
        f"SlurmdLogFile={s('slurmd-%n.log')}",
        # Plugins that need nothing from the host (no cgroups, no database).
        "ProctrackType=proctrack/pgid",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "MpiDefault=none",
        "SwitchType=switch/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        "SchedulerType=sched/builtin",
        "SlurmdParameters=config_overrides",
        "ReturnToService=2",
        # A lost node is noticed in seconds, not minutes.
        "SlurmdTimeout=5",
        "MessageTimeout=5",
        # A cancelled job's SIGTERM cleanup (the job side removes its
        # directory) gets all the time a busy machine may take before the
        # SIGKILL; a job that exits at once waits for nothing.
        "KillWait=60",
        "MinJobAge=2",
    ]
    names = [f"node{i}" for i in range(1, nodes + 1)]
    for i, name in enumerate(names):
        lines.append(f"NodeName={name} NodeHostname=localhost NodeAddr=127.0.0.1 "
                     f"Port={NODE_PORT + i} CPUs=2 RealMemory=1000 State=UNKNOWN")
    lines.append(f"PartitionName=dtlto Nodes={','.join(names)} Default=YES "
                 "MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def start(sb: sandbox.Sandbox, args):
    netns = sb.add_netns(f"dtlto-slurm-{os.getpid()}")
    # Slurm resolves "127.0.0.1" with AI_ADDRCONFIG, which finds nothing
    # where loopback is the only interface: give the namespace one more,
    # with a private address nothing outside it can reach.
    sandbox.sh("ip", "-n", netns, "link", "add", "v0", "type", "veth", "peer", "name", "v1")
    sandbox.sh("ip", "-n", netns, "addr", "add", "10.231.2.1/24", "dev", "v0")
    sandbox.sh("ip", "-n", netns, "link", "set", "v0", "up")
    os.makedirs(sb.path("key"), mode=0o700)
    for d in ("ctld", "spool"):
        os.makedirs(sb.path(d))
    with open(sb.path("key", "munge.key"), "wb") as f:
        f.write(os.urandom(1024))
    os.chmod(sb.path("key", "munge.key"), 0o600)
    sb.spawn("munged", ["munged", "--foreground", f"--key-file={sb.path('key', 'munge.key')}",
                        f"--socket={sb.path('munge.sock')}",
                        f"--pid-file={sb.path('munged.pid')}",
                        f"--seed-file={sb.path('key', 'seed')}",
                        f"--log-file={sb.path('munged-file.log')}"], netns=netns)
    sb.wait_for_log("munged", "Created socket")
    conf = sb.path("slurm.conf")
    with open(conf, "w") as f:
        f.write(slurm_conf(sb, args.count))
    env = dict(os.environ, SLURM_CONF=conf)
    sb.spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", conf], netns=netns, env=env)
    sb.wait_for_log("slurmctld", "Running as primary controller")
    for i in range(1, args.count + 1):
        node = f"node{i}"
        os.makedirs(sb.path("spool", node))
        sb.spawn(node, ["slurmd", "-D", "-N", node, "-f", conf], netns=netns,
                 host=node, hide=args.hide, env=env)
    wait_idle(sb, netns, env, args.count)
    return env, netns


def wait_idle(sb, netns, env, nodes, timeout=60):
    deadline = time.monotonic() + timeout
    out = ""
    while time.monotonic() < deadline:
        dead = [name for name, proc in sb.procs.items() if proc.poll() is not None]
        if dead:
            raise RuntimeError(f"{dead[0]} exited while starting:\n" + sb.log_tail(dead[0]))
        done = subprocess.run(sandbox.netns_prefix(netns) + ["sinfo", "--Node", "--noheader",
                               "--format=%N %t"], env=env, capture_output=True, text=True)
        out = done.stdout + done.stderr
        states = dict(line.split() for line in done.stdout.splitlines() if line.strip())
        if len(states) == nodes and all(s == "idle" for s in states.values()):
            return
        time.sleep(0.2)
    raise RuntimeError(f"the nodes did not become idle: {out}\n" + sb.log_tail("slurmctld"))


HARNESS = sandbox.Harness("cluster.py", __doc__, TOOLS, "--nodes", start,
                          host=lambda i: f"node{i}", logs=lambda args: ["slurmctld"])

if __name__ == "__main__":
    sys.exit(HARNESS.main())
