"""A fake compiler for distributor tests, and a reader of what it recorded.

As a job (manifests put it in common.args after the python interpreter):
  fakejob.py MODULE -fthinlto-index=SHARD -o OUT [options]
It writes OUT (unless told otherwise) and, with --mark DIR, leaves markers
named after OUT's file name: start.NAME when it starts, pid.NAME with its
pid, conc.NAME with how many jobs were running once its --wait-for was
met (itself included), ready.NAME once its --wait-for and --child are
done, and end.NAME when it finishes normally. Markers are files, each
written whole (a reader never sees one half-written), and --wait-for waits
as long as it takes (600 s is a hang guard: then it leaves timeout.NAME),
so tests never depend on timing.

  fakejob.py summary DIR   prints the max concurrency and who started/ended.
"""

import argparse
import os
import signal
import subprocess
import sys
import time


def markers(directory):
    """The markers written whole, sorted."""
    return sorted(n for n in os.listdir(directory) if not n.endswith(".part"))


def count(directory, prefix):
    return len([n for n in markers(directory) if n.startswith(prefix)])


def touch(path, text=""):
    with open(path + ".part", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(path + ".part", path)


def wait_for(path, limit=600.0):
    # Bounded so a broken distributor fails the test instead of hanging it.
    deadline = time.monotonic() + limit
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def run_job(argv):
    p = argparse.ArgumentParser()
    p.add_argument("module")
    p.add_argument("-fthinlto-index", dest="shard")
    p.add_argument("-o", dest="out", required=True)
    p.add_argument("--mark", metavar="DIR")
    p.add_argument("--wait-for", metavar="PATH")
    p.add_argument("--hold", type=float, default=0.0)
    p.add_argument("--child", action="store_true",
                   help="start a long-sleeping child in our process group")
    p.add_argument("--stdout", default="")
    p.add_argument("--stderr", default="")
    p.add_argument("--exit", type=int, default=0, help="fail with this code, writing nothing")
    p.add_argument("--temp", action="store_true",
                   help="like a compiler, keep OUT.tmp while running and remove "
                        "it when stopped by SIGTERM (never on SIGKILL)")
    p.add_argument("--no-output", action="store_true")
    p.add_argument("--empty-output", action="store_true")
    a = p.parse_args(argv)
    name = os.path.basename(a.out)
    mark = (lambda kind: os.path.join(a.mark, f"{kind}.{name}")) if a.mark else None
    if mark:
        touch(mark("start"))
        touch(mark("pid"), f"{os.getpid()}\n")
    if a.temp:
        touch(a.out + ".tmp")

        def on_term(signo, frame):
            os.remove(a.out + ".tmp")
            os._exit(128 + signo)
        signal.signal(signal.SIGTERM, on_term)
    if a.wait_for and not wait_for(a.wait_for) and mark:
        touch(mark("timeout"))
    if mark:
        touch(mark("conc"), f"{count(a.mark, 'start.') - count(a.mark, 'end.')}\n")
    if a.child:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        touch(mark("pid") + ".child", f"{child.pid}\n")
    if mark:
        touch(mark("ready"))  # done waiting and spawning
    time.sleep(a.hold)
    sys.stdout.write(a.stdout and a.stdout + "\n")
    sys.stderr.write(a.stderr and a.stderr + "\n")
    if a.exit:
        return a.exit
    if not a.no_output:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write("" if a.empty_output else f"object of {a.module}\n")
    if mark:
        touch(mark("end"))
    return 0


def summary(directory):
    names = markers(directory)
    def of(kind):
        return " ".join(n[len(kind) + 1:] for n in names if n.startswith(kind + ".")) or "(none)"
    conc = [int(open(os.path.join(directory, n)).read()) for n in names if n.startswith("conc.")]
    print(f"max-concurrency: {max(conc, default=0)}")
    print(f"started: {of('start')}")
    print(f"finished: {of('end')}")
    print(f"timeouts: {of('timeout')}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["summary"]:
        summary(sys.argv[2])
    else:
        sys.exit(run_job(sys.argv[1:]))
