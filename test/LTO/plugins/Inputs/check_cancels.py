"""Checks a verbose link's stderr (argv[1]): every job the plugin was given
was cancelled once (its "cancelled job" log line), and the linker's local
slot ran all of them. How many the plugin got depends on how fast the slot
was; that each one it got was cancelled does not."""
import re
import sys

text = open(sys.argv[1]).read()
m = re.search(r"^dtlto: (\d+) ThinLTO jobs: .*?(?:(\d+) given to plugin|no distributor started)"
              r".*; (\d+) run by the linker's", text, re.M)
if not m:
    sys.exit("no summary line:\n" + text)
given = int(m.group(2) or 0)
cancels = len(re.findall(r"cancelled job \d+", text))
if cancels != given or int(m.group(3)) != int(m.group(1)):
    sys.exit(f"{given} jobs given to the plugin, {cancels} cancelled, "
             f"{m.group(3)} of {m.group(1)} run locally:\n{text}")
if "warning" in text:
    sys.exit("a warning:\n" + text)
print(f"ok: {given} given, {cancels} cancelled")
