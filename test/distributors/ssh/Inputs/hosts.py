"""SSH test hosts: sshd in network namespaces of its own.

  hosts.py run [--hosts N] [--hide DIR]... [--stall-compiler CLANG]
               [--record R] -- CMD...
      Creates, with `ip netns`, a client namespace holding a bridge
      10.231.1.1/24 and N host namespaces hI, each joined to the bridge by
      a veth pair with address 10.231.1.(I+1); no address outside
      10.231.1.0/24 is used and nothing is reachable from the machine's own
      network. In each host namespace an sshd (fresh ed25519 host key, one
      client key authorised for root) runs as a host of its own: pid,
      mount and UTS namespaces, hostname hI, every --hide DIR covered by
      an empty tmpfs (root's home too: no dotfiles of the machine run
      there), so files reach it only through ssh. CMD then runs in
      the client namespace with FARM_STATE (a directory the hosts see too),
      FARM_H1..FARM_HN (root@address), FARM_KEY, FARM_KNOWN_HOSTS and
      FARM_SSH_CONFIG (an empty ssh configuration, so the user's own never
      applies). With --stall-compiler, FARM_STALL_CC names a compiler whose
      first run hangs after writing its host's name to a marker; the
      harness then kills that host (sshd and every session), as a host
      lost in the middle of a job. Everything is torn down however CMD
      ends; exits with CMD's status.

  hosts.py missing        what this machine lacks (nothing if ready)
  hosts.py check-clean R  succeeds when nothing recorded in R is left
"""

import os
import pwd
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sandbox  # noqa: E402

TOOLS = sandbox.BASE_TOOLS + (("/usr/sbin/sshd", "openssh-server"), ("ssh", "openssh-client"),
                              ("ssh-keygen", "openssh-client"), ("python3", "python3"),
                              ("pgrep", "procps"), ("timeout", "coreutils"))
SUBNET = "10.231.1"

SSHD_CONFIG = """\
ListenAddress {address}
Port 22
HostKey {key}
PidFile none
AuthorizedKeysFile {authorized}
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
"""


def keygen(path: str) -> str:
    sandbox.sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "dtlto-test", "-f", path)
    with open(path + ".pub") as f:
        return f.read().strip()


def start(sb: sandbox.Sandbox, args) -> dict:
    client = sb.add_netns(f"dtlto-ssh-{os.getpid()}")
    sandbox.sh("ip", "-n", client, "link", "add", "br0", "type", "bridge")
    sandbox.sh("ip", "-n", client, "addr", "add", f"{SUBNET}.1/24", "dev", "br0")
    sandbox.sh("ip", "-n", client, "link", "set", "br0", "up")
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation
    client_key = keygen(sb.path("client_key"))
    with open(sb.path("authorized_keys"), "w") as f:
        f.write(client_key + "\n")
    with open(sb.path("ssh_config"), "w") as f:
        f.write("# empty: the tests must not depend on the user's ~/.ssh/config\n")
    env = dict(os.environ, FARM_STATE=sb.state, FARM_KEY=sb.path("client_key"),
               FARM_KNOWN_HOSTS=sb.path("known_hosts"), FARM_SSH_CONFIG=sb.path("ssh_config"))
    known = []
    for i in range(1, args.count + 1):
        name, address = f"h{i}", f"{SUBNET}.{i + 1}"
        ns = sb.add_netns(f"dtlto-ssh-{os.getpid()}-{name}")
        sandbox.sh("ip", "-n", client, "link", "add", f"v{i}", "type", "veth",
                   "peer", "name", "eth0", "netns", ns)
        sandbox.sh("ip", "-n", client, "link", "set", f"v{i}", "master", "br0", "up")
        sandbox.sh("ip", "-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
        sandbox.sh("ip", "-n", ns, "link", "set", "eth0", "up")
        os.makedirs(sb.path(name))
        host_key = keygen(sb.path(name, "host_key"))
        known.append(f"{address} {' '.join(host_key.split()[:2])}")
        conf = sb.path(name, "sshd_config")
        with open(conf, "w") as f:
            f.write(SSHD_CONFIG.format(address=address, key=sb.path(name, "host_key"),
                                       authorized=sb.path("authorized_keys")))
        # root's home hidden too: a login shell there must not run the
        # machine's dotfiles (a pyenv rehash waits on a lock shared with
        # every other shell, and a host killed mid-rehash leaves it taken).
        sb.spawn(name, ["/usr/sbin/sshd", "-D", "-e", "-f", conf], netns=ns,
                 host=name, hide=args.hide + [pwd.getpwuid(0).pw_dir])
        env[f"FARM_H{i}"] = f"root@{address}"
    with open(sb.path("known_hosts"), "w") as f:
        f.write("\n".join(known) + "\n")
    for i in range(1, args.count + 1):
        sb.wait_for_log(f"h{i}", "Server listening")
    return env, client


HARNESS = sandbox.Harness("hosts.py", __doc__, TOOLS, "--hosts", start,
                          host=lambda i: f"h{i}",
                          logs=lambda args: [f"h{i}" for i in range(1, args.count + 1)])

if __name__ == "__main__":
    sys.exit(HARNESS.main())
