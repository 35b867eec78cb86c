#!/usr/bin/env python3
"""Self-test of the benchmark harness's measuring parts, without downloads.

Checks, on processes and files made here, that the harness measures what it
claims: the linker's own peak RSS apart from its children's, the peak RSS of
the process tree, CPU time including children, the --time-trace phase split,
the section-level comparison of two programs, CPython's smoke test with an
interpreter linked outside its build tree, and farm.py's delay relay. Prints one 'ok:' line per
check and exits non-zero on the first wrong figure.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True

from benchlib import elfdiff, trace  # noqa: E402
from benchlib.measure import run_link  # noqa: E402

MIB = 1024 * 1024

# A parent that holds 120 MiB and a child that holds 260 MiB and burns CPU
# while the parent waits: the "linker" and its "distributor". The child
# holds its memory until the sampler has seen the whole tree at its peak
# (the file named by $SELFTEST_RELEASE appears), however slowly the sampler
# was scheduled; 120 s is a hang guard only.
TREE = r"""
import subprocess, sys, time
held = bytearray(120 * 1024 * 1024)
held[::4096] = b"x" * len(held[::4096])
child = '''
import os, time
big = bytearray(260 * 1024 * 1024)
big[::4096] = b"y" * len(big[::4096])
end = time.process_time() + 0.4
while time.process_time() < end:
    pass
time.sleep(0.3)
give_up = time.monotonic() + 120
while not os.path.exists(os.environ["SELFTEST_RELEASE"]) and time.monotonic() < give_up:
    time.sleep(0.01)
'''
subprocess.run([sys.executable, "-c", child], check=True)
"""


def measure_tree(tmp, sample_ms, **kw):
    """run_link on TREE, releasing it once the sampler saw both processes
    holding their memory."""
    release = os.path.join(tmp, "release")
    if os.path.exists(release):
        os.remove(release)

    def on_sample(sampler):
        if sampler.processes_seen >= 1 and sampler.peak_bytes >= 380 * MIB \
                and sampler.root_hwm_kib * 1024 >= 120 * MIB:
            open(release, "w").close()
    return run_link([sys.executable, "-c", TREE], tmp,
                    dict(os.environ, SELFTEST_RELEASE=release), os.path.join(tmp, "o"),
                    os.path.join(tmp, "e"), sample_ms=sample_ms, on_sample=on_sample, **kw)


def check(cond, what):
    if not cond:
        print(f"FAIL: {what}")
        sys.exit(1)
    print(f"ok: {what}")


def test_measure(tmp, sample_ms):
    r = measure_tree(tmp, sample_ms)
    check(r["returncode"] == 0, "the measured process tree ran")
    check(r["rss_method"] == "ptrace exit stop", "linker peak RSS read at its exit")
    check(120 * MIB <= r["linker_peak_rss"] < 200 * MIB,
          f"linker peak RSS is its own, not its child's "
          f"({r['linker_peak_rss'] / MIB:.0f} MiB)")
    check(r["tree_peak_rss"] >= 380 * MIB,
          f"tree peak RSS adds parent and child ({r['tree_peak_rss'] / MIB:.0f} MiB)")
    check(r["largest_process_rss"] >= 260 * MIB,
          "wait4 reports the largest process of the tree")
    check(r["cpu"] >= 0.4, f"CPU time includes the child's ({r['cpu']:.2f} s)")
    check(r["wall"] >= 0.7, f"wall time covers the whole tree ({r['wall']:.2f} s)")
    check(r["processes"] >= 2, "the sampler saw the child")
    r = measure_tree(tmp, sample_ms, use_ptrace=False)
    check(r["rss_method"] == "sampled VmHWM"
          and 120 * MIB <= r["linker_peak_rss"] < 200 * MIB,
          "without ptrace the linker peak RSS is sampled")
    r = run_link([sys.executable, "-c", "import sys; sys.exit(3)"], tmp,
                 dict(os.environ), os.path.join(tmp, "o"), os.path.join(tmp, "e"))
    check(r["returncode"] == 3, "a failing link's exit code is kept")


def test_trace(tmp):
    def ev(name, ts, dur, tid=1):
        return {"ph": "X", "name": name, "ts": ts, "dur": dur, "tid": tid, "pid": 1}
    events = [ev("ExecuteLinker", 0, 10_000_000), ev("LTO", 1_000_000, 8_000_000),
              ev("Serialize bitcode input for DTLTO", 1_200_000, 100_000),
              ev("DTLTO write index shards", 3_000_000, 500_000),
              ev("Emit DTLTO JSON", 3_500_000, 500_000),
              ev("Execute DTLTO distributor", 4_000_000, 4_000_000),
              ev("Add DTLTO files to the link", 8_000_000, 900_000),
              ev("Total LTO", 0, 8_000_000, tid=9)]
    path = os.path.join(tmp, "t.json")
    with open(path, "w") as f:
        json.dump({"traceEvents": events}, f)
    p = trace.phases(path)
    want = {"inputs": 1.0, "thin_link": 2.0, "shards": 1.0, "distributor": 4.0,
            "after": 1.0, "final_link": 1.0, "total": 10.0, "input_prep": 0.1,
            "engine": 2.1}
    check(all(abs(p[k] - v) < 1e-9 for k, v in want.items()),
          f"time-trace phases split at scope boundaries ({p})")


def test_elfdiff(tmp):
    a = shutil.which("true") or "/bin/true"
    b = shutil.which("false") or "/bin/false"
    check(elfdiff.compare(a, a)["identical"], "a program is identical to itself")
    r = elfdiff.compare(a, b)
    check(not r["identical"] and r["sections"], "two programs differ by section")
    check(elfdiff.summary(r).startswith("differs: "),
          f"the difference is summarised ({elfdiff.summary(r)})")


# A stand-in for CPython's build-tree interpreter: like the real one it
# finds its library only through pybuilddir.txt in its own directory, and it
# answers the smoke test's -c line as the real one does.
FAKE_PYTHON = """#!/bin/sh
[ -f "$(dirname "$0")/pybuilddir.txt" ] || { echo "no Lib/ next to $0" >&2; exit 1; }
[ "$2" = -c ] && printf '%s\\n' '(3, 11) [["a", [1, 2]], ["b", 1]] <x> <y>'
exit 0
"""


def test_python_smoke(tmp):
    # bench/run.py --link-dir links CPython outside its build tree; the smoke
    # test still runs the interpreter from there (a copy it then removes).
    from benchlib.programs import Python, SmokeFailure
    tree, elsewhere = os.path.join(tmp, "pytree"), os.path.join(tmp, "links")
    os.makedirs(tree)
    os.makedirs(elsewhere)
    open(os.path.join(tree, "pybuilddir.txt"), "w").write("build/lib\n")
    for d in (tree, elsewhere):
        with open(os.path.join(d, "python"), "w") as f:
            f.write(FAKE_PYTHON)
        os.chmod(os.path.join(d, "python"), 0o755)
    before = sorted(os.listdir(tree))
    for where, d in (("in its tree", tree), ("linked elsewhere", elsewhere)):
        try:
            Python().smoke(os.path.join(d, "python"), tree, tmp)
            ok = ""
        except SmokeFailure as e:
            ok = f": {e}"
        check(not ok, f"CPython's smoke test runs an interpreter {where}{ok}")
    check(sorted(os.listdir(tree)) == before, "the smoke test leaves the tree as it was")


def test_relay():
    # delayrelay.py, farm.py's network delay: every byte both ways, in order,
    # and each side's end of stream passed on.
    import socket
    import subprocess
    import threading
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def echo():
        conn, _ = server.accept()
        with conn:
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                conn.sendall(data[::-1])
            conn.shutdown(socket.SHUT_WR)

    t = threading.Thread(target=echo, daemon=True)
    t.start()
    payload = bytes(range(256)) * 4096  # 1 MiB
    relay = os.path.join(HERE, "benchlib", "delayrelay.py")
    done = subprocess.run([sys.executable, relay, "127.0.0.1", str(port), "2"],
                          input=payload, capture_output=True, timeout=120)
    t.join(timeout=60)
    server.close()
    # The echo reverses each chunk it got: compare as multisets of bytes and
    # by length, which the chunking cannot change.
    check(done.returncode == 0 and len(done.stdout) == len(payload)
          and sorted(done.stdout) == sorted(payload),
          "the delay relay passes every byte both ways and ends when both sides end")

    # --listen, the REAPI endpoints' stand-in: the same, through a port of
    # its own, for two connections in turn.
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    with socket.create_server(("127.0.0.1", 0)) as probe_port:
        lport = probe_port.getsockname()[1]
    proc = subprocess.Popen([sys.executable, relay, "--listen", str(lport), "127.0.0.1",
                             str(port), "2"])
    try:
        # --wait's own connection reaches the server too: taken and dropped.
        waited = subprocess.run([sys.executable, relay, "--wait", str(lport)],
                                capture_output=True, text=True, timeout=60)
        check(waited.returncode == 0, "--wait returns once the relay listens"
              + (f": {waited.stderr.strip()}" if waited.stderr.strip() else ""))
        server.accept()[0].close()
        for n in range(2):
            t = threading.Thread(target=echo, daemon=True)
            t.start()
            client = socket.create_connection(("127.0.0.1", lport))
            got = bytearray()
            with client:
                sender = threading.Thread(
                    target=lambda: (client.sendall(payload), client.shutdown(socket.SHUT_WR)),
                    daemon=True)
                sender.start()
                while chunk := client.recv(65536):
                    got += chunk
                sender.join()
            t.join(timeout=60)
            check(len(got) == len(payload) and sorted(got) == sorted(payload),
                  f"the listening relay passes every byte of connection {n + 1} both ways")
    finally:
        proc.kill()
        proc.wait()
        server.close()


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sample-ms", type=float, default=20,
                   help="sampling interval to test (default: %(default)s)")
    args = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="dtlto-bench-selftest-")
    try:
        test_measure(tmp, args.sample_ms)
        test_trace(tmp)
        test_elfdiff(tmp)
        test_python_smoke(tmp)
        test_relay()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
