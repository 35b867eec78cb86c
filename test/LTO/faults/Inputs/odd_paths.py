"""Links a program whose module, archive and output paths hold leading dashes,
newlines, quotes, '$', parentheses and non-ASCII characters, through local.py.

  odd_paths.py --ld LD --clang CLANG --local-py LOCAL WORKDIR

Prints the program's output, then every file the link left behind that was
not there before (there must be none but the program).
"""
import argparse
import os
import subprocess
import sys

SOURCES = {
    "main": "#include <stdio.h>\nint a(void); int b(void); int c(void); int d(void);\n"
            "int main(void) { printf(\"sum %d\\n\", a() + b() + c() + d()); return 0; }\n",
    "a": "int a(void) { return 1; }\n",
    "b": "int b(void) { return 20; }\n",
    "c": "int c(void) { return 300; }\n",
    "d": "int d(void) { return 4000; }\n",
}

# Where each module goes; a path starting with '-' is given as "./-...".
PLACES = {
    "main": "-dash dir/-main.o",
    "a": "new\nline dir/it's \"a\" $HOME (1).o",
    "b": "ünï cödé/b\n.o",
}
ARCHIVE = "-lib \"$x\"\n(2).a"        # regular archive holding c.o
THIN_DIR = "thin\ndir (é)"
THIN = THIN_DIR + "/-thin.a"           # thin archive holding -d.o
OUTPUT = "-out\ndir $ (x)/-prog\n1"


def run(cmd, **kw):
    subprocess.run(cmd, check=True, **kw)


def listing():
    found = set()
    for root, _, files in os.walk("."):
        for f in files:
            found.add(os.path.normpath(os.path.join(root, f)))
    return found


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ld", required=True)
    p.add_argument("--clang", required=True)
    p.add_argument("--local-py", required=True)
    p.add_argument("workdir")
    a = p.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    os.chdir(a.workdir)

    def dotted(path):
        return "./" + path if path.startswith("-") else path

    for name, text in SOURCES.items():
        with open(name + ".c", "w") as f:
            f.write(text)
    objects = dict(PLACES, c="c.o", d=THIN_DIR + "/-d.o")
    for name, path in objects.items():
        if os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
        run([a.clang, "-flto=thin", "-O2", "-c", name + ".c", "-o", dotted(path)])
    run(["llvm-ar", "rc", dotted(ARCHIVE), "c.o"])
    run(["llvm-ar", "rc", "--thin", "./-thin.a", "./-d.o"], cwd=THIN_DIR)
    os.makedirs(os.path.dirname(OUTPUT), exist_ok=True)

    before = listing()
    inputs = [dotted(PLACES[m]) for m in ("main", "a", "b")]
    inputs += [dotted(ARCHIVE), THIN]
    # In an odd directory, then here: the temporary files of the second link
    # (and the copy of the thin member '-d.o', whose directory is not ASCII)
    # go to the working directory, named with a leading '-'.
    for output in (OUTPUT, "prog2"):
        run([a.clang, "-flto=thin", "--ld-path=" + a.ld, *inputs, "-o", dotted(output),
             "-fthinlto-distributor=" + a.local_py,
             "-Xthinlto-distributor=--quiet"])
        out = subprocess.run([os.path.abspath(output)], capture_output=True,
                             text=True, check=True).stdout
        print(out, end="")
    for path in sorted(listing() - before):
        print("new file:", repr(path))


if __name__ == "__main__":
    main()
