"""manifest_keys.py MANIFEST: print the keys of a DTLTO manifest, level by
level, then what its side file (MANIFEST with .json -> .dtlto.json) holds,
so a test can check that the manifest has exactly LLVM 22's keys."""
import json
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
    for key in ("batch_arg", "engine", "input_bytes", "jobs", "version"):
        value = s.get(key, "absent")
        parts.append(f"{key}={len(value) if isinstance(value, list) else value}")
    extra = sorted(set(s) - {"batch_arg", "engine", "input_bytes", "jobs", "version"})
    print("side file:", " ".join(parts), *(f"unknown={k}" for k in extra))


if __name__ == "__main__":
    main()
