"""Print what incredibuild.py makes on Windows, for a golden test.

make_plan() with windows=True and a Windows Python: the /command= value
must be a Windows command line that splits back (by the sn-dbs tests'
independent winargv.py) into the runner's arguments, and the profile must
name the programs without ".exe".

  windows_plan.py SRCROOT MANIFEST
"""

import importlib.util
import os
import sys

srcroot, manifest_path = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(srcroot, "test", "distributors", "sn-dbs", "Inputs"))
sys.path.insert(0, os.path.join(srcroot, "utils", "dtlto"))
from winargv import split  # noqa: E402
from dtltodist import manifest  # noqa: E402

spec = importlib.util.spec_from_file_location(
    "incredibuild", os.path.join(srcroot, "distributors", "incredibuild", "incredibuild.py"))
ib = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ib)

python = r"C:\Program Files\Python 3.11\python.exe"
m = manifest.load(manifest_path)
args = ib.parse_args(["--jobs", "64", "--ib-arg=/title=DTLTO (game)", manifest_path])
plan = ib.make_plan(m, "/work dir/x.incredibuild", args, python=python, windows=True)
for arg in plan.argv:
    print(f"argv: {arg}")
command = plan.argv[1][len("/command="):]
want = [python, ib.LOCAL_PY, "--jobs", "64", "--quiet", os.path.abspath(manifest_path)]
print("command splits back:", "yes" if split(command) == want else f"NO: {split(command)}")
print(plan.files[ib.PROFILE_NAME], end="")
