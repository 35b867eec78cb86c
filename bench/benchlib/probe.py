#!/usr/bin/env python3
"""What each DTLTO job needs: a distributor wrapper for the harness's probe
links (one per distributed mode, untimed).

The linker runs it as its distributor:
  probe.py --record OUT.json --since T -- <real distributor...> <manifest>
It reads the manifest (and our engine's side file) while every input is
there, measures each job's inputs, runs the real distributor, measures each
job's object, and writes OUT.json; it exits with the real distributor's
exit code.

Per job: the bytes of its module, its index shard, the modules it imports
from, the link's common inputs (dtlto-backend's configuration and combined
index, a sample profile) and its object; which of those files the linker
wrote for this link (modified at or after T, the time the harness started
the link: shards, copies of archive members, dtlto-backend's files) and
which were already there (the program's own bitcode). A name the linker
made as a hard link to a file that was there (a thin-archive member's
copy name) is a file the link made, but no bytes it wrote: its contents
keep their old modification time, while the link changed the inode's
change time and link count. Per link: the manifest's and side file's
size, how many files the linker made (hard links included) and how many
bytes it wrote. With the real distributor's --timings, each job's start and end.
"""

import json
import os
import subprocess
import sys


def _size(path, since, written, linked):
    """(size, made) of path: made is "written" when the linker wrote it in
    this link (recorded in written, path -> size), "linked" when it made it
    a hard link to a file that was there before (recorded in linked), else
    None."""
    try:
        st = os.stat(path)
    except OSError:
        return 0, None
    if st.st_mtime >= since:
        written[os.path.realpath(path)] = st.st_size
        return st.st_size, "written"
    if st.st_nlink > 1 and st.st_ctime >= since:
        linked.add(os.path.realpath(path))
        return st.st_size, "linked"
    return st.st_size, None


def measure_inputs(manifest_path, since):
    """The manifest's jobs with their input sizes, before they run."""
    with open(manifest_path) as f:
        m = json.load(f)
    written, linked = {}, set()
    common = [{"path": p, "bytes": _size(p, since, written, linked)[0]}
              for p in m["common"]["inputs"]]
    common_bytes = sum(c["bytes"] for c in common)
    jobs = []
    for job in m["jobs"]:
        inputs = job["inputs"]
        sizes, made = zip(*(_size(p, since, written, linked) for p in inputs))
        fresh = [how == "written" for how in made]
        jobs.append({
            "module": inputs[0],
            "module_bytes": sizes[0],
            "shard_bytes": sizes[1],
            "imports": len(inputs) - 2,
            "import_bytes": sum(sizes[2:]),
            # Copies of archive members (the module or a module imported
            # from): written by the linker, unlike the program's own files.
            # A thin member's hard-linked name writes no bytes.
            "copy_bytes": sum(s for s, w, i in zip(sizes, fresh, range(len(sizes)))
                              if w and i != 1),
            # How the job's own module got the name the manifest gives it:
            # "written" (a copy), "linked" (a thin member's hard link), or
            # None (the program's own file).
            "module_made": made[0],
            "common_bytes": common_bytes,
            "needs_bytes": sum(sizes) + common_bytes,
            "object": job["outputs"][0],
        })
    side = manifest_path[:-len(".json")] + ".dtlto.json" \
        if manifest_path.endswith(".json") else manifest_path + ".dtlto.json"
    link = {
        "manifest_bytes": os.path.getsize(manifest_path),
        "side_file_bytes": os.path.getsize(side) if os.path.exists(side) else 0,
        "common_inputs": common,
    }
    link["linker_links"] = len(linked)
    link["linker_files"] = (len(written) + len(linked) + 1
                            + (1 if link["side_file_bytes"] else 0))
    link["linker_bytes"] = (sum(written.values()) + link["manifest_bytes"]
                            + link["side_file_bytes"])
    return link, jobs


def _stats(values):
    v = sorted(values)
    if not v:
        return {"mean": 0, "median": 0, "max": 0, "total": 0}
    return {"mean": sum(v) / len(v), "median": v[len(v) // 2], "max": v[-1],
            "total": sum(v)}


PER_JOB = ("needs_bytes", "module_bytes", "shard_bytes", "import_bytes", "imports",
           "copy_bytes", "common_bytes", "object_bytes", "seconds")


def summary(record, path):
    """What results.json keeps of a probe record: per-job statistics and
    the per-link figures; the record itself stays at path."""
    jobs = record["jobs"]
    out = {k: v for k, v in record.items() if k not in ("jobs", "common_inputs")}
    out["record"] = path
    out["job_count"] = len(jobs)
    out["per_job"] = {k: _stats([j[k] for j in jobs if k in j]) for k in PER_JOB}
    return out


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    record, since, timings = None, 0.0, None
    while argv and argv[0] != "--":
        opt = argv.pop(0)
        if opt == "--record":
            record = argv.pop(0)
        elif opt == "--since":
            since = float(argv.pop(0))
        elif opt == "--timings":
            timings = argv.pop(0)
        else:
            print(f"probe.py: error: unknown option {opt}", file=sys.stderr)
            return 2
    real = argv[1:]
    if not record or len(real) < 2:
        print("probe.py: error: usage: probe.py --record OUT --since T -- "
              "DISTRIBUTOR... MANIFEST", file=sys.stderr)
        return 2
    manifest = real[-1]
    link, jobs = measure_inputs(manifest, since)
    rc = subprocess.call(real)
    objects = 0
    for job in jobs:
        try:
            job["object_bytes"] = os.path.getsize(job["object"])
        except OSError:
            job["object_bytes"] = 0
        objects += job["object_bytes"]
    link["linker_files"] += len(jobs)  # the objects come back as files too
    link["object_bytes"] = objects
    if timings and os.path.exists(timings):
        with open(timings) as f:
            t = json.load(f)
        for entry in t["jobs"]:
            if 0 <= entry["index"] < len(jobs) and entry["end"] is not None:
                jobs[entry["index"]]["start"] = entry["start"]
                jobs[entry["index"]]["seconds"] = entry["end"] - entry["start"]
        link["distributor_wall"] = t["wall"]
        os.remove(timings)
    link["returncode"] = rc
    link["jobs"] = jobs
    with open(record + ".tmp", "w") as f:
        json.dump(link, f)
    os.replace(record + ".tmp", record)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
