"""Builds a tiny generated program with bench/benchlib/generate.py into a
cache directory, links it with the given ld.lld in-process, and prints what
the build recorded (the census and the run are up to the test).

usage: gen_tiny.py SRCROOT CACHE CLANG LD_LLD MODULES LINK
LINK becomes a symbolic link to the program's tree (lit's shell has no $()).
"""
import json
import os
import subprocess
import sys

src_root, cache, clang, ld_lld, modules, link = sys.argv[1:7]
sys.path.insert(0, os.path.join(src_root, "bench"))
sys.dont_write_bytecode = True
from benchlib import generate  # noqa: E402

bindir = os.path.dirname(os.path.realpath(clang))
tools = {"clang": clang, "llvm-ar": os.path.join(bindir, "llvm-ar")}
spec = generate.Spec(int(modules))
info = generate.prepare(spec, cache, tools)
tree = info["tree"]
args = info["args"]
subprocess.run([ld_lld] + args, cwd=info["cwd"], check=True)
kinds = {}
for a in args:
    if a.endswith(".a"):
        with open(os.path.join(info["cwd"], a), "rb") as f:
            magic = f.read(8)
        kinds["thin" if magic == b"!<thin>\n" else "regular"] = \
            kinds.get("thin" if magic == b"!<thin>\n" else "regular", 0) + 1
objects = sum(1 for a in args if a.endswith(".o") and a.startswith("obj/"))
print(f"modules {spec.modules} groups of {spec.group}")
print(f"plain objects {objects}, regular archives {kinds.get('regular', 0)}, "
      f"thin archives {kinds.get('thin', 0)}")
if os.path.lexists(link):
    os.remove(link)
os.symlink(tree, link)
print("tree " + os.path.relpath(tree, cache))
with open(os.path.join(tree, generate.STAMP)) as f:
    print("compiled " + str(json.load(f)["compiled"]))
from benchlib import census  # noqa: E402
samples, n = census.census(ld_lld, os.path.join(bindir, "llvm-dis"), info["cwd"], args)
print(f"census modules {n}, functions {sum(samples['functions'])}, "
      f"calls into other modules {sum(samples['external_calls'])}")
