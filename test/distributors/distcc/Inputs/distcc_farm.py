"""distcc test farm: Debian's own distccd, unchanged, on hosts of their own.

  distcc_farm.py run [--hosts N] [--hide DIR]... [--backend PATH]
                     [--spoil I:garbage|I:empty] [--stall-compiler CLANG]
                     [--record R] -- CMD...
      Creates a client namespace holding a bridge 10.231.2.1/24 and N host
      namespaces hI joined to it (address 10.231.2.(I+1); nothing outside
      10.231.2.0/24). Each host runs `distccd --no-detach --daemon` as a
      host of its own (pid, mount and UTS namespaces, hostname hI, every
      --hide DIR covered by an empty tmpfs), set up as docs/distributors.md
      tells a farm administrator: dtlto-backend (a copy of --backend) in
      distccd's PATH and in the compiler whitelist (this host's copy of
      /usr/lib/distcc, with a dtlto-backend entry, bind-mounted over it).
      Without --backend the hosts have no dtlto-backend, only Debian's
      compilers (clang-22 among them, in the whitelist). Each host has its
      own TMPDIR (FARM_STATE/hI/tmp) and log (FARM_STATE/hI.log, distccd's
      --log-stderr). --spoil I:garbage makes host I's dtlto-backend write a
      non-object and exit 0, --spoil I:empty an empty object. --stall-compiler: as for hosts.py (the host that runs the
      first job is killed, distccd and all).
      CMD runs in the client namespace with FARM_STATE, FARM_H1..FARM_HN
      (the hosts' addresses) and FARM_HOSTS (all of them, in DISTCC_HOSTS
      syntax, 2 slots each). Everything is torn down however CMD ends.

  distcc_farm.py missing        what this machine lacks (nothing if ready)
  distcc_farm.py check-clean R  succeeds when nothing recorded in R is left
"""

import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "ssh", "Inputs"))
import sandbox  # noqa: E402

TOOLS = sandbox.BASE_TOOLS + (("distcc", "distcc"), ("distccd", "distcc"),
                              ("/usr/lib/distcc", "distcc"), ("python3", "python3"))
SUBNET = "10.231.2"
WHITELIST = "/usr/lib/distcc"

SPOILED = {
    "garbage": "#!/bin/sh\n# A broken farm host: exits 0 with a non-object.\n"
               "while [ $# -gt 1 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n"
               "echo 'not an object' > \"$out\"\n",
    "empty": "#!/bin/sh\n# A broken farm host: exits 0 with an empty object.\n"
             "while [ $# -gt 1 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n"
             ": > \"$out\"\n",
}


def host_setup(sb: sandbox.Sandbox, name: str, backend: str | None,
               spoil: str | None) -> dict:
    """The files of one host: its bin, its whitelist, its TMPDIR; without
    backend a host with Debian's compilers only (plain clang-22)."""
    home = sb.path(name)
    os.makedirs(os.path.join(home, "bin"))
    os.makedirs(os.path.join(home, "tmp"))
    os.chmod(os.path.join(home, "tmp"), 0o1777)
    whitelist = os.path.join(home, "whitelist")
    os.mkdir(whitelist)
    for entry in os.listdir(WHITELIST):
        os.symlink(os.readlink(os.path.join(WHITELIST, entry)), os.path.join(whitelist, entry))
    if backend or spoil:
        program = os.path.join(home, "bin", "dtlto-backend")
        if spoil:
            with open(program, "w") as f:
                f.write(SPOILED[spoil])
        else:
            shutil.copy(backend, program)  # the build tree is hidden from the host
        os.chmod(program, 0o755)
        os.symlink("../../bin/distcc", os.path.join(whitelist, "dtlto-backend"))
    return {"home": home, "whitelist": whitelist}


def start(sb: sandbox.Sandbox, args):
    client = sb.add_netns(f"dtlto-distcc-{os.getpid()}")
    sandbox.sh("ip", "-n", client, "link", "add", "br0", "type", "bridge")
    sandbox.sh("ip", "-n", client, "addr", "add", f"{SUBNET}.1/24", "dev", "br0")
    sandbox.sh("ip", "-n", client, "link", "set", "br0", "up")
    spoil = dict(s.split(":", 1) for s in args.spoil)
    # distccd runs jobs as nobody (Debian has no distcc user here): the
    # --stall-compiler marker is made in the state directory.
    os.chmod(sb.state, 0o1777)
    env = dict(os.environ)
    specs = []
    for i in range(1, args.count + 1):
        name, address = f"h{i}", f"{SUBNET}.{i + 1}"
        ns = sb.add_netns(f"dtlto-distcc-{os.getpid()}-{name}")
        sandbox.sh("ip", "-n", client, "link", "add", f"v{i}", "type", "veth",
                   "peer", "name", "eth0", "netns", ns)
        sandbox.sh("ip", "-n", client, "link", "set", f"v{i}", "master", "br0", "up")
        sandbox.sh("ip", "-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
        sandbox.sh("ip", "-n", ns, "link", "set", "eth0", "up")
        h = host_setup(sb, name, args.backend, spoil.get(str(i)))
        host_env = {"PATH": f"{h['home']}/bin:/usr/bin:/bin", "TMPDIR": f"{h['home']}/tmp",
                    "HOME": h["home"], "LANG": "C"}
        sb.spawn(name, ["distccd", "--daemon", "--no-detach", "--listen", address,
                        "--allow", f"{SUBNET}.0/24", "--port", "3632", "--jobs", "2",
                        "--log-stderr", "--log-level", "info"],
                 netns=ns, host=name, hide=args.hide, env=host_env,
                 bind=[(h["whitelist"], WHITELIST)])
        env[f"FARM_H{i}"] = address
        specs.append(f"{address}/2")
    env["FARM_HOSTS"] = " ".join(specs)
    for i in range(1, args.count + 1):
        sb.wait_for_log(f"h{i}", "listening on")
    return env, client


HARNESS = sandbox.Harness("distcc_farm.py", __doc__, TOOLS, "--hosts", start,
                          host=lambda i: f"h{i}",
                          logs=lambda args: [f"h{i}" for i in range(1, args.count + 1)],
                          options=lambda r: (
                              r.add_argument("--backend"),
                              r.add_argument("--spoil", action="append", default=[])))

if __name__ == "__main__":
    sys.exit(HARNESS.main())
