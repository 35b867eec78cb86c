"""transfer.test's script: transfer_check.py UTILS TMPDIR, run in TMPDIR/"b d"."""
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "Inputs"))
import procfs  # noqa: E402

sys.path.insert(0, sys.argv[1])
from dtltodist import manifest, paths, transfer  # noqa: E402

top = sys.argv[2]
cwd = os.getcwd()  # <top>/b d
for name, text in (("sub/a.bc", "module a"), ("sub/a.idx", "index a"),
                   ("sub/b.bc", "module b"), ("prof.txt", "profile")):
    with open(name, "w") as f:
        f.write(text)

# Absolute paths on the command line become relative to the mirrored cwd.
m = manifest.parse({
    "common": {"linker_output": "p", "args": ["/usr/bin/true", "-c",
                                              f"-fprofile-sample-use={cwd}/prof.txt"],
               "inputs": [f"{cwd}/prof.txt"]},
    "jobs": [{"args": [f"{cwd}/sub/a.bc", f"-fthinlto-index={cwd}/sub/a.idx", "-o", "sub/a.o"],
              "inputs": [f"{cwd}/sub/a.bc", "sub/a.idx", "sub/b.bc"],
              "outputs": ["sub/a.o"]}]}, "t.json")
job = m.jobs[0]
plan = transfer.plan(m, job)
print("root:", plan.root)
print("cwd:", plan.cwd)
print("args:", plan.args)
print("members:", sorted(name for _, name in plan.inputs))
print("outputs:", list(plan.outputs))


def job_side(p, args):
    """Run the real job side here, with a stand-in compiler."""
    p.args = args
    transfer.write_inputs(p, os.path.join(top, "in.tar"))
    with open(os.path.join(top, "in.tar"), "rb") as stdin:
        done = subprocess.run(transfer.remote_command(sys.executable, "stream",
                                                      [top, "t"], compact=True),
                              stdin=stdin, capture_output=True, cwd="/")
    return done.stdout


copy = [sys.executable, "-c",
        "import sys; open(sys.argv[2], 'w').write('object of ' + sys.argv[1])",
        "sub/a.bc", "sub/a.o"]
status = transfer.read_outputs(job_side(plan, copy), plan)
with open("sub/a.o") as f:
    print(f"round trip: exit {status['exit']} node {status['node']}, sub/a.o = {f.read()}")
os.remove("sub/a.o")

# The object damaged on the way back (the tar's checksums cover headers
# only, so tarfile reads it as well as the good one): the digest the job
# side sent tells, and nothing is written.
data = job_side(plan, copy)
damaged = data.replace(b"object of", b"Object of", 1)
assert damaged != data
try:
    transfer.read_outputs(damaged, plan)
    print("damaged accepted")
except transfer.Damaged as e:
    print(f"damaged: {type(e).__name__} ({e.node}): {e}")
print("written after damage:", os.path.exists("sub/a.o"))

fail = [sys.executable, "-c",
        "import sys; open('sub/a.o', 'w').write('half'); sys.exit(3)"]
status = transfer.read_outputs(job_side(plan, fail), plan)
print(f"failed command: exit {status['exit']}, sub/a.o written: {os.path.exists('sub/a.o')}")


def stream(*members, status=True):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, kind in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = 3
                tar.addfile(info, io.BytesIO(b"obj"))
            elif kind == "device":
                info.type = tarfile.CHRTYPE
                tar.addfile(info)
            elif kind == "hardlink":
                info.type, info.linkname = tarfile.LNKTYPE, "/etc/passwd"
                tar.addfile(info)
            elif kind == "status":
                data = json.dumps({"exit": 0, "node": "n"}).encode()
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


STATUS = (transfer.STATUS_MEMBER, "status")
good = stream(("sub/a.o", "file"), STATUS)
cases = [("empty", b""), ("truncated", good[:700]),
         ("no status", stream(("sub/a.o", "file"))),
         ("after status", stream(STATUS, ("sub/a.o", "file"))),
         ("twice", stream(("sub/a.o", "file"), ("sub/a.o", "file"), STATUS)),
         ("device", stream(("sub/a.o", "device"), STATUS)),
         ("hard link", stream(("sub/a.o", "hardlink"), STATUS)),
         ("no digests", good)]
for what, data in cases:
    try:
        transfer.read_outputs(data, plan)
        print(what, "accepted")
    except (transfer.TransferError, paths.UnsafePathError) as e:
        print(f"{what}: {type(e).__name__}: {e}")

# A symlink planted where the output's directory should be.
shutil.move("sub", "real-sub")
os.symlink(os.path.join(top, "out"), "sub")
try:
    transfer.read_outputs(good, plan)
    print("planted accepted")
except paths.UnsafePathError as e:
    print(f"planted: {type(e).__name__}: {e}")
print("written after refusals:", os.path.exists(os.path.join(top, "out", "a.o")))

bad = manifest.parse({"common": {"linker_output": "p", "args": ["cc"], "inputs": []},
                      "jobs": [{"args": ["x"], "inputs": ["a.bc", "a.idx", "/elsewhere/c.bc"],
                                "outputs": ["a.o"]}]})
try:
    transfer.plan(bad, bad.jobs[0])
except paths.UnsafePathError as e:
    print(f"imports: {type(e).__name__}: {e}")

# The job side killed by SIGKILL (no finally clause runs) while its command
# runs: the kernel kills the command too (PR_SET_PDEATHSIG), although it
# runs in a session of its own.
pidfile = os.path.join(top, "command.pid")
side = subprocess.Popen(transfer.remote_command(
    sys.executable, "shared",
    [cwd, "--", "/bin/sh", "-c", f'echo $$ > "{pidfile}.tmp"; mv "{pidfile}.tmp" "{pidfile}"; '
                                 "exec sleep 120"]), stdout=subprocess.DEVNULL)
deadline = time.monotonic() + 30
while not os.path.exists(pidfile) and time.monotonic() < deadline:
    time.sleep(0.02)
with open(pidfile) as f:
    command_pid = int(f.read())
side.kill()
side.wait()
# A zombie counts as gone (killed, its reaper not ours to wait for).
gone = procfs.wait_until(lambda: not procfs.alive(command_pid),
                         deadline - time.monotonic(), step=0.02)
print("command after the job side was killed:", "gone" if gone else "still running")
if not gone:
    os.kill(command_pid, 9)
