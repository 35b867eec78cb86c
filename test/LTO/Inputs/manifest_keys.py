"""manifest_keys.py MANIFEST: print the keys of a DTLTO manifest, level by
level, then what its side file (MANIFEST with .json -> .dtlto.json) holds,
so a test can check that the manifest has exactly LLVM 22's keys."""
import json
import os
import sys


def main():
    path = sys.argv[1]
    with open(path) as f:
        m = json.load(f)
    print("top:", " ".join(sorted(m)))
    print("common:", " ".join(sorted(m["common"])))
    for i, job in enumerate(m["jobs"]):
        print(f"job {i}:", " ".join(sorted(job)))
    side = path[:-len(".json")] + ".dtlto.json"
    try:
        with open(side) as f:
            s = json.load(f)
    except FileNotFoundError:
        print("side file: none")
        return
    parts = []
    known = ("batch_arg", "engine", "fork_server", "input_bytes", "jobs", "version")
    for key in known:
        value = s.get(key, "absent")
        if key == "fork_server" and value != "absent":
            value = os.path.basename(value)  # where the build is, not what it is
        parts.append(f"{key}={len(value) if isinstance(value, list) else value}")
    extra = sorted(set(s) - set(known))
    print("side file:", " ".join(parts), *(f"unknown={k}" for k in extra))


if __name__ == "__main__":
    main()
