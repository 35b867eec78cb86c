"""Checks a link of the local plugin with one worker slot (--jobs=1) beside
the linker's own slot, from its stderr (argv[1]: the summary line) and its
link report (argv[2]: the outcome of each job the plugin was given). Every
job the plugin was given ends cancelled or done (or lost: done, but the
linker's own copy was linked first), those its slot holds (the
one its worker runs, and the one queued in the worker's pipe) included,
however slow its worker; and no job fails. How many jobs reached the
plugin, and how many it ran before the linker's slot did, depends on
timing; this does not."""
import json
import re
import sys

text = open(sys.argv[1]).read()
m = re.search(r"^dtlto: (\d+) ThinLTO jobs: 0 from the cache, (\d+) given to plugin", text, re.M)
if not m:
    sys.exit("no summary line:\n" + text)
given = int(m.group(2))
with open(sys.argv[2]) as f:
    report = json.load(f)
outcomes = [e["args"]["outcome"] for e in report["traceEvents"] if e.get("cat") == "attempt"]
open_ = [o for o in outcomes if o not in ("cancelled", "done", "lost")]
if len(outcomes) != given or open_ or "warning" in text:
    sys.exit(f"{given} jobs given to the plugin, attempts {sorted(outcomes)}:\n{text}")
print(f"ok: {given} given, {outcomes.count('cancelled')} cancelled")
