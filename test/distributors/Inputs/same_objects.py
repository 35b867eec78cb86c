"""same_objects.py A B: compares the DTLTO objects two links kept with
--save-temps in directories A and B (*.native.o, matched by name with the
link's process id taken out) and prints "identical: N of M", then each
object that differs, and whether it still differs once both copies lose
their debug information (llvm-objcopy --strip-debug, from PATH).
"""

import os
import re
import subprocess
import sys
import tempfile


def objects(directory):
    found = {}
    for name in os.listdir(directory):
        if name.endswith(".native.o"):
            found[re.sub(r"\.\d+\.native\.o$", ".native.o", name)] = os.path.join(directory, name)
    return found


def main():
    a, b = objects(sys.argv[1]), objects(sys.argv[2])
    if sorted(a) != sorted(b) or not a:
        print(f"different objects: {sorted(a)} and {sorted(b)}")
        return 1
    differ = [n for n in sorted(a) if open(a[n], "rb").read() != open(b[n], "rb").read()]
    print(f"identical: {len(a) - len(differ)} of {len(a)}")
    for name in differ:
        print(f"differs: {name} ({where(a[name], b[name])})")
    return 0


def where(x, y):
    with tempfile.TemporaryDirectory() as tmp:
        stripped = []
        for i, path in enumerate((x, y)):
            out = os.path.join(tmp, f"{i}.o")
            subprocess.run(["llvm-objcopy", "--strip-debug", path, out], check=True)
            with open(out, "rb") as f:
                stripped.append(f.read())
    return "only in its debug information" if stripped[0] == stripped[1] else \
        "in its code or data"


if __name__ == "__main__":
    sys.exit(main())
