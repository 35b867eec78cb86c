"""A distributor that does everything wrong, for fuzz.test to show that
fuzz_manifests.py notices: it reads the manifest without checking it (a
traceback on bad JSON, a wait forever on a FIFO), writes every output it
finds (through symlinks, over inputs), says it started a job, leaves a
temporary file, and then refuses on two lines with exit code 2.

  fuzz_broken.py MANIFEST
"""

import json
import os
import sys

with open(sys.argv[-1]) as f:
    manifest = json.load(f)
for job in manifest.get("jobs", []) if isinstance(manifest, dict) else []:
    for out in job.get("outputs", []) if isinstance(job, dict) else []:
        try:
            with open(out, "w") as f:
                f.write("written through\n")
        except (OSError, TypeError, ValueError):
            pass
with open(os.environ["FUZZ_CONTACT"], "a") as f:
    f.write("fuzz_broken.py\n")
with open(os.path.join(os.environ["TMPDIR"], "left-behind"), "w") as f:
    f.write("a temporary file never removed\n")
print("fuzz_broken.py: error: refused\nfor no reason", file=sys.stderr)
sys.exit(2)
