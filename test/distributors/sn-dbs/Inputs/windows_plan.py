"""Print what sn-dbs.py makes for a Windows machine, as JSON, for a golden test.

sn-dbs.py's make_plan() takes the path flavour and working directory of the
machine that runs dbsbuild; here they are ntpath and C:\\Users\\Dev Ops\\...,
with a manifest as lld-link writes it on Windows. Then every job's command
is split back by winargv.py and compared with the manifest, and a few
thousand random argument lists make the round trip through the quoting.

  windows_plan.py SRCROOT
"""

import importlib.util
import json
import ntpath
import os
import random
import sys

here = os.path.dirname(os.path.abspath(__file__))
srcroot = sys.argv[1]
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(srcroot, "utils", "dtlto"))
from winargv import split  # noqa: E402
from dtltodist import manifest  # noqa: E402
from dtltodist.cmdline import windows_join  # noqa: E402

spec = importlib.util.spec_from_file_location(
    "sn_dbs", os.path.join(srcroot, "distributors", "sn-dbs", "sn-dbs.py"))
sn_dbs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sn_dbs)

DATA = {
    "common": {
        "linker_output": r"out\game.exe",
        "args": ["clang", "-c", "--target=x86_64-pc-windows-msvc", "-O2",
                 r"-fprofile-sample-use=C:\prof\a b.prof", r"-Xclang=C:\dir with space" "\\"],
        "inputs": [r"C:\prof\a b.prof"]},
    "jobs": [
        {"args": [r"obj\main.obj", r"-fthinlto-index=out\main.1.42.native.o.thinlto.bc",
                  "-o", r"out\main.1.42.native.o"],
         "inputs": [r"obj\main.obj", r"out\main.1.42.native.o.thinlto.bc",
                    r"..\libs\Ünï cödé.obj", r"D:\ext\lib (x86)\q'$x%PATH%.obj",
                    "obj/fwd/slash.obj", r"OBJ\Main.obj", r"\\server\share\net.obj"],
         "outputs": [r"out\main.1.42.native.o"]},
        {"args": [r"..\libs\Ünï cödé.obj", r"-fthinlto-index=out\Ünï cödé.2.42.native.o.thinlto.bc",
                  "-o", r"out\Ünï cödé.2.42.native.o"],
         "inputs": [r"..\libs\Ünï cödé.obj", r"out\Ünï cödé.2.42.native.o.thinlto.bc"],
         "outputs": [r"out\Ünï cödé.2.42.native.o"]}]}

m = manifest.parse(DATA, r"out\game.42.dist-file.json")
args = sn_dbs.parse_args(["--project", "Game (x64)", "--tool-file", r"..\tools\extra.dll",
                          "unused.json"])
cwd = r"C:\Users\Dev Ops\build (x64)"
plan = sn_dbs.make_plan(m, cwd + r"\out\game.42.dist-file.sn-dbs", args, cwd=cwd,
                        pathmod=ntpath,
                        which=lambda name: r"C:\Program Files\LLVM\bin\clang.exe")
print(json.dumps({"argv": plan.argv, "where": plan.where, "job_commands": plan.job_commands},
                 indent=2, ensure_ascii=False))
for name, text in plan.files.items():
    print(f"--- {name}")
    print(text.replace("\r\n", "\n"), end="")

print("--- round trip")
script = json.loads(plan.files["sn-dbs-script.json"])
for job, entry in zip(m.jobs, script["jobs"]):
    want = [r"C:\Program Files\LLVM\bin\clang.exe"] + job.command[1:]
    print(f"job {job.index}: {'ok' if split(entry['command']) == want else 'MISMATCH'}")
rng = random.Random(6)
alphabet = 'a Z\t"\\é$&%\'()^|<>!;,='
bad = 0
for _ in range(3000):
    program = "".join(rng.choice(alphabet.replace('"', "")) for _ in range(rng.randint(1, 5)))
    argv = [program] + ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 7)))
                        for _ in range(rng.randint(0, 4))]
    if split(windows_join(argv)) != argv:
        bad += 1
        if bad < 5:
            print(f"MISMATCH {argv!r} -> {windows_join(argv)!r}")
print(f"random argument lists that did not survive: {bad} of 3000")
