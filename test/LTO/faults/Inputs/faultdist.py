"""A distributor that fails on purpose, for the fault-injection tests.

  faultdist.py [--fault KIND[:JOB]]... [--local-py PATH] MANIFEST

It runs the jobs with local.py, then breaks what the tests ask for. Whole-run
faults: exit (exit 3 after the jobs ran), crash (SIGKILL itself after the
jobs ran), hang (sleep before running anything, until stopped). Per-job
faults, JOB counting from 0 in manifest order: missing, empty, truncated
(half the object), wrong-target (an AArch64 object), other-module (the
object of the next job), late (the right object, written by a process left in the distributor's group,
once the linker has exited), half-written (no object, and half of it in
<object>.tmp: dtlto-backend's atomic write, killed before its rename).
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "Inputs"))
import procfs  # noqa: E402

JOB_FAULTS = ("missing", "empty", "truncated", "wrong-target", "other-module",
              "late", "half-written")
RUN_FAULTS = ("exit", "crash", "hang")


def parse_fault(text):
    kind, _, job = text.partition(":")
    if kind in RUN_FAULTS and not job:
        return kind, None
    if kind in JOB_FAULTS and job.isdigit():
        return kind, int(job)
    raise argparse.ArgumentTypeError(f"bad fault '{text}'")


def wrong_target_object(compiler, path):
    subprocess.run([compiler, "--target=aarch64-linux-gnu", "-c", "-x", "c",
                    "-", "-o", path], input=b"int wrong_target;\n", check=True)


def write_late(path, data, pid_dir):
    # Stays in the distributor's process group, as a careless distributor's
    # background upload would: the linker must stop it when the distributor
    # exits. If it does not, this writes once the linker (our parent's
    # process) has exited, so the object is late whatever the scheduling,
    # and the fault matrix finds it left behind. Its pid goes to pid_dir, so
    # that the matrix knows when it is gone.
    linker = os.getppid()
    pid = os.fork()
    if pid:
        with open(os.path.join(pid_dir, str(pid)), "w") as f:
            f.write(f"{pid}\n")
        return
    # Bounded, as every wait in the tests: a linker alive after 10 minutes
    # has hung, and the matrix reports that on its own.
    procfs.wait_until(lambda: not procfs.exists(linker), 600, step=0.02)
    with open(path, "wb") as f:
        f.write(data)
    os._exit(0)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fault", type=parse_fault, action="append", default=[])
    parser.add_argument("--local-py", default=os.path.join(
        os.path.dirname(__file__), "..", "..", "..", "..", "utils", "dtlto", "local.py"))
    parser.add_argument("--pid-dir", default=".",
                        help="where the late writer records its pid")
    parser.add_argument("manifest")
    args = parser.parse_args()
    faults = dict((kind, job) for kind, job in args.fault)

    if "hang" in faults:
        time.sleep(3600)
    subprocess.run([sys.executable, args.local_py, "--quiet", args.manifest],
                   check=True)
    with open(args.manifest, encoding="utf-8") as f:
        manifest = json.load(f)
    outputs = [job["outputs"][0] for job in manifest["jobs"]]

    for kind, job in args.fault:
        if job is None:
            continue
        path = outputs[job]
        if kind == "missing":
            os.remove(path)
        elif kind == "empty":
            open(path, "wb").close()
        elif kind == "truncated":
            os.truncate(path, os.path.getsize(path) // 2)
        elif kind == "wrong-target":
            wrong_target_object(manifest["common"]["args"][0], path)
        elif kind == "other-module":
            with open(outputs[(job + 1) % len(outputs)], "rb") as f:
                other = f.read()
            with open(path, "wb") as f:
                f.write(other)
        elif kind == "half-written":
            with open(path, "rb") as f:
                data = f.read()
            os.remove(path)
            with open(path + ".tmp", "wb") as f:
                f.write(data[:len(data) // 2])
        elif kind == "late":
            with open(path, "rb") as f:
                data = f.read()
            os.remove(path)
            write_late(path, data, args.pid_dir)

    if "exit" in faults:
        sys.exit(3)
    if "crash" in faults:
        os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    main()
