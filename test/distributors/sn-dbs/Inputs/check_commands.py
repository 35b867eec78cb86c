"""Check that each job's "command" in an SN-DBS build script splits back into
the manifest's common.args + job.args (by winargv.py's Windows rules).

  check_commands.py MANIFEST SCRIPT
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from winargv import split  # noqa: E402

with open(sys.argv[1], encoding="utf-8") as f:
    manifest = json.load(f)
with open(sys.argv[2], encoding="utf-8") as f:
    script = json.load(f)
for i, (job, entry) in enumerate(zip(manifest["jobs"], script["jobs"])):
    want = manifest["common"]["args"] + job["args"]
    got = split(entry["command"])
    if got == want:
        print(f"job {i}: command splits back into its {len(want)} arguments")
    else:
        print(f"job {i}: MISMATCH\n  want {want}\n  got  {got}")
if len(manifest["jobs"]) != len(script["jobs"]):
    print(f"MISMATCH: {len(manifest['jobs'])} jobs, {len(script['jobs'])} in the script")
