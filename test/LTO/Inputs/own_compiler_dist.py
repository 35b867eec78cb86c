"""own_compiler_dist.py COMPILER MANIFEST: a distributor that picks the
compiler itself, as a site's template would: it runs every job with
COMPILER in place of common.args[0], one after the other, and says what the
manifest named."""
import json
import subprocess
import sys


def main():
    compiler, manifest = sys.argv[1], sys.argv[2]
    with open(manifest) as f:
        m = json.load(f)
    common = m["common"]["args"]
    for job in m["jobs"]:
        subprocess.run([compiler] + common[1:] + job["args"], check=True)
    print(f"own_compiler_dist.py: common.args[0] is {common[0]!r}, "
          f"{len(m['jobs'])} jobs run with {compiler}", file=sys.stderr)


if __name__ == "__main__":
    main()
