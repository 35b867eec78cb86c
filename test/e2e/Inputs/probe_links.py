"""For bench-probe.test: the probe record of a gen30 ours-native link,
checked against the program's tree (which archives are thin)."""
import json
import os
import re
import sys

results = json.load(open(sys.argv[1]))
prog = results["programs"]["gen30"]
summary = prog["probes"]["ours-native"][0]
record = json.load(open(summary["record"]))


def archive_kind(name):
    with open(os.path.join(prog["cwd"], "lib", name), "rb") as f:
        return "thin" if f.read(8) == b"!<thin>\n" else "regular"


members = {"thin": [], "regular": []}
for job in record["jobs"]:
    m = re.search(r"(lib[^/]*\.a)\(", job["module"])
    if m:
        members[archive_kind(m.group(1))].append(job)

thin = members["thin"]
print("thin members:", len(thin))
print("linker_links:", summary["linker_links"])
print("thin members made:", sorted({j["module_made"] for j in thin}))
print("regular members and how made:", len(members["regular"]),
      sorted({j["module_made"] for j in members["regular"]}))
print("program's own modules made:",
      sorted({str(j["module_made"]) for j in record["jobs"]
              if j not in thin and j not in members["regular"]}))
jobs = len(record["jobs"])
own = 1 + (1 if summary["side_file_bytes"] else 0) + len(record["common_inputs"])
# A shard and an object per job, each copy and link, the manifest, the side
# file and dtlto-backend's configuration.
print("files: shards, written copies, links and the link's own files add up:",
      summary["linker_files"] == 2 * jobs + len(members["regular"]) + len(thin) + own)
