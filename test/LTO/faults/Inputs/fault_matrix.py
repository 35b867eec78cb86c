"""Runs the fault-injection matrix and prints one line per case.

  fault_matrix.py --ld LD --clang CLANG --local-py LOCAL --sources DIR WORKDIR

For every fault of faultdist.py, links a three-module program (one module
in an archive) twice: with the local fallback (the default for users) the link must
succeed and give the program of a clean link, byte for byte; with
-mllvm -dtlto-local-fallback=false it must fail with exactly one error line
and no output file. After every link the output directory must hold nothing
but the program. The last line counts faults, good links and files left
behind.
"""
import argparse
import filecmp
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "Inputs"))
import procfs  # noqa: E402

PIDS = "late-writers"  # in WORKDIR: faultdist.py's late writers' pids

CASES = [
    # (name, faultdist arguments, extra linker arguments)
    ("exit", ["--fault=exit"], []),
    ("crash", ["--fault=crash"], []),
    ("hang", ["--fault=hang"], ["-mllvm=-dtlto-distributor-timeout=2"]),
    ("missing", ["--fault=missing:0"], []),
    ("empty", ["--fault=empty:1"], []),
    ("truncated", ["--fault=truncated:0"], []),
    ("wrong-target", ["--fault=wrong-target:2"], []),
    ("other-module", ["--fault=other-module:0"], []),
    ("late", ["--fault=late:1"], []),
    ("half-written", ["--fault=half-written:1"], []),
    ("all-missing", ["--fault=missing:0", "--fault=missing:1",
                     "--fault=missing:2"], []),
]


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def left_behind(outdir, expect):
    # A late writer the linker did not stop writes once the linker is gone:
    # wait until every such writer has died (or written) before looking.
    writers = [int(n) for n in os.listdir(PIDS)]
    if not procfs.wait_until(lambda: not any(procfs.alive(p) for p in writers), 120,
                             step=0.02):  # a hang guard only
        sys.exit(f"late writers {writers} still running after 120 s")
    for n in os.listdir(PIDS):
        os.remove(os.path.join(PIDS, n))
    return sorted(set(os.listdir(outdir)) - set(expect))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ld", required=True)
    p.add_argument("--clang", required=True)
    p.add_argument("--local-py", required=True)
    p.add_argument("--sources", required=True)
    p.add_argument("workdir")
    a = p.parse_args()

    os.makedirs(a.workdir, exist_ok=True)
    os.chdir(a.workdir)
    os.makedirs(PIDS, exist_ok=True)
    for m in ("hub", "m1", "m2"):
        run([a.clang, "-flto=thin", "-O2", "-c",
             os.path.join(a.sources, m + ".c"), "-o", m + ".o"], check=True)
    run(["llvm-ar", "rc", "lib.a", "m2.o"], check=True)

    def link(outdir, dist_args, extra):
        os.makedirs(outdir, exist_ok=True)
        # Through clang, for a program that runs (C runtime, libc).
        ld_args = ["--thinlto-remote-compiler=" + a.clang,
                   "--thinlto-distributor=" + sys.executable,
                   "--thinlto-distributor-arg=" + os.path.join(HERE, "faultdist.py"),
                   "--thinlto-distributor-arg=--local-py=" + a.local_py,
                   "--thinlto-distributor-arg=--pid-dir=" + os.path.abspath(PIDS)]
        ld_args += ["--thinlto-distributor-arg=" + d for d in dist_args] + extra
        return run([a.clang, "--ld-path=" + a.ld, "hub.o", "m1.o", "lib.a",
                    "-o", os.path.join(outdir, "prog")] +
                   ["-Wl," + arg for arg in ld_args])

    clean = link("clean", [], ["-mllvm=-dtlto-local-fallback=false"])
    if clean.returncode != 0:
        sys.exit("the clean link failed:\n" + clean.stderr)

    tried = linked = failed_cleanly = stray = 0
    for name, dist_args, extra in CASES:
        tried += 1
        # With the local fallback: the same program as a clean link.
        out = os.path.join("on", name)
        r = link(out, dist_args, extra + ["-mllvm=-dtlto-local-fallback=true"])
        prog = os.path.join(out, "prog")
        ok = (r.returncode == 0 and os.path.exists(prog)
              and filecmp.cmp(prog, "clean/prog", shallow=False)
              and run([prog]).returncode == 0)
        warned = any(l.startswith("ld.lld: warning: ") for l in r.stderr.splitlines())
        left = left_behind(out, ["prog"])
        stray += len(left)
        linked += ok and warned
        print(f"{name} fallback=on: {'linked, identical' if ok else 'FAILED'}"
              f"{', warned' if warned else ', NO WARNING'}, left {left or 0}")
        if not ok:
            print(r.stderr)
        # Warnings about several jobs come in manifest order, however the
        # threads that checked the objects were scheduled.
        jobs = [m[1] for l in r.stderr.splitlines()
                if l.startswith("ld.lld: warning: ")
                and (m := re.search(r"DTLTO job for '([^']*)'", l))]
        if len(jobs) > 1:
            print(f"  warned about, in order: {' '.join(jobs)}")

        # Without it: one clear error from the linker (clang adds its own
        # "linker command failed" line), nothing left.
        out = os.path.join("off", name)
        r = link(out, dist_args, extra + ["-mllvm=-dtlto-local-fallback=false"])
        errors = [l for l in r.stderr.splitlines() if l.startswith("ld.lld: error:")]
        left = left_behind(out, [])
        stray += len(left)
        ok = r.returncode != 0 and len(errors) == 1
        failed_cleanly += ok
        print(f"{name} fallback=off: {'one error' if ok else 'FAILED'}, "
              f"left {left or 0}")
        if errors:
            print(f"  {errors[0]}")
    print(f"faults tried: {tried}; links that succeeded: {linked}/{tried}; "
          f"clean failures: {failed_cleanly}/{tried}; files left behind: {stray}")


if __name__ == "__main__":
    main()
