"""Links small programs three ways and compares them byte for byte.

  equivalence.py --ld LD --clang CLANG --backend DTLTO_BACKEND --local-py L
                 [--case NAME]... WORKDIR

For every case (a program and its options), links with in-process ThinLTO,
with DTLTO through local.py and dtlto-backend (batch workers), and with DTLTO
through local.py and clang as the remote compiler, all with --save-temps.
Prints one line per case: whether the programs and every ThinLTO object
(<output>.lto.*.o) are identical to in-process's, and the differing files
when not.
"""
import argparse
import filecmp
import glob
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, "sample.prof")

C_PROGRAM = {"objects": ["weak_a.c", "weak_b.c", "empty.c"], "archive": ["member.c"],
             "thin": ["thin_member.c"]}
CXX_PROGRAM = {"objects": ["shapes.cpp", "square.cpp", "rect.cpp"]}

CASES = {
    # name: (program, compile flags, link flags, extra full-LTO sources)
    "c-O2": (C_PROGRAM, ["-O2"], [], []),
    "c-O3": (C_PROGRAM, ["-O3"], [], []),
    "c-no-pie": (C_PROGRAM, ["-O2", "-fno-pie"], ["-no-pie"], []),
    "c-mllvm": (C_PROGRAM, ["-O2"], ["-Wl,-mllvm,-align-all-functions=6"], []),
    "c-sample-profile": (C_PROGRAM, ["-O2", "-fprofile-sample-use=" + SAMPLE],
                         ["-Wl,--lto-sample-profile=" + SAMPLE], []),
    "c-partitions": (C_PROGRAM, ["-O2"], ["-Wl,--lto-partitions=2"], ["full.c"]),
    "cxx-whole-program-vtables": (CXX_PROGRAM, ["-O2", "-fwhole-program-vtables",
                                                "-fvisibility=hidden", "-fsplit-lto-unit"], [], []),
    "cxx-cfi": (CXX_PROGRAM, ["-O2", "-fsanitize=cfi", "-fvisibility=hidden"], [], []),
}


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"equivalence.py: {' '.join(cmd)} failed:\n{r.stderr}")
    return r


def build_inputs(a, program, cflags, full_sources):
    compiler = a.clang + ("++" if program is CXX_PROGRAM else "")
    inputs = []
    for src in program.get("objects", []):
        obj = os.path.splitext(src)[0] + ".o"
        run([compiler, "-flto=thin", *cflags, "-c", os.path.join(HERE, src), "-o", obj])
        inputs.append(obj)
    for kind, flag in (("archive", []), ("thin", ["--thin"])):
        if program.get(kind):
            objs = []
            for src in program[kind]:
                obj = os.path.splitext(src)[0] + ".o"
                run([compiler, "-flto=thin", *cflags, "-c", os.path.join(HERE, src), "-o", obj])
                objs.append(obj)
            lib = f"lib{kind}.a"
            run(["llvm-ar", "rc", *flag, lib, *objs])
            inputs.append(lib)
    for src in full_sources:
        obj = os.path.splitext(src)[0] + ".full.o"
        run([compiler, "-flto=full", *cflags, "-c", os.path.join(HERE, src), "-o", obj])
        inputs.append(obj)
    return compiler, inputs


def link(a, compiler, inputs, cflags, lflags, outdir, dtlto):
    # Each link in a directory of its own, with its own copy of the inputs:
    # LLD writes --save-temps files next to the modules. The same names in
    # every mode.
    shutil.copytree(".", outdir, ignore=shutil.ignore_patterns(
        "inprocess", "native", "clang"))
    cmd = [compiler, "-flto=thin", *cflags, "--ld-path=" + a.ld, *inputs,
           *lflags, "-o", "prog", "-Wl,--save-temps"]
    if dtlto:
        cmd += ["-fthinlto-distributor=" + a.local_py, "-Xthinlto-distributor=--quiet"]
    if dtlto == "native":
        cmd += ["-Wl,--thinlto-remote-compiler=" + a.backend]
    run(cmd, cwd=outdir)
    return sorted(glob.glob(os.path.join(outdir, "prog.lto.*.o")))


def compare(reference, other):
    """Names of the files (program, then objects) that differ or are missing."""
    ref_dir, other_dir = os.path.dirname(reference[0]), os.path.dirname(other[0])
    names = ["prog"] + [os.path.basename(p) for p in reference]
    differ = []
    for name in names:
        mine = os.path.join(other_dir, name)
        if not os.path.exists(mine) or not filecmp.cmp(os.path.join(ref_dir, name),
                                                       mine, shallow=False):
            differ.append(name)
    return differ


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ld", required=True)
    p.add_argument("--clang", required=True)
    p.add_argument("--backend", required=True)
    p.add_argument("--local-py", required=True)
    p.add_argument("--case", action="append", choices=sorted(CASES))
    p.add_argument("workdir")
    a = p.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True)
    for name in a.case or list(CASES):
        program, cflags, lflags, full = CASES[name]
        case_dir = os.path.join(a.workdir, name)
        os.makedirs(case_dir)
        os.chdir(case_dir)
        compiler, inputs = build_inputs(a, program, cflags, full)
        ref = link(a, compiler, inputs, cflags, lflags, "inprocess", None)
        ref_files = [os.path.join("inprocess", "prog")] + ref
        native = compare(ref, link(a, compiler, inputs, cflags, lflags, "native", "native"))
        clang = compare(ref, link(a, compiler, inputs, cflags, lflags, "clang", "clang"))
        print(f"{name}: {len(ref_files)} files; "
              f"dtlto-backend {'identical' if not native else 'DIFFERENT: ' + ' '.join(native)}; "
              f"clang {'identical' if not clang else 'different: ' + ' '.join(clang)}")


if __name__ == "__main__":
    main()
