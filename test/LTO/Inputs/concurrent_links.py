"""Many DTLTO links at once, as on a build machine; one line per check.

  concurrent_links.py --clang CLANG --ld LD --local-py LOCAL --python PY
                      --sources DIR [--links N] [--tokens N] WORKDIR

Builds examples/wordstat (C and C++, a regular and a thin archive) into
bitcode, links it once alone, then:
  1. N links at once, all run by one `make -j TOKENS` (so they and their
     local.py distributors share one jobserver), all with one ThinLTO cache;
     every job's compiler is a wrapper that logs its start and end, so the
     most jobs that ran at once can be counted against the jobserver's
     limit;
  2. N links at once into one output directory, each its own output.
Every output must be the lone link's program, byte for byte; the cache must
serve a later link whole, with the same program, and hold no unfinished
entry; nothing but the outputs may be left in the output directories.
"""
import argparse
import filecmp
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    for opt in ("--clang", "--ld", "--local-py", "--python", "--sources"):
        p.add_argument(opt, required=True)
    p.add_argument("--links", type=int, default=8)
    p.add_argument("--tokens", type=int, default=3,
                   help="make -j: the jobserver's limit on jobs at once")
    p.add_argument("workdir")
    a = p.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    os.chdir(a.workdir)
    src = a.sources
    clangxx = a.clang + "++"
    objs = []
    for rel in ("main.cpp", "counter.cpp", "tokenize.c", "hash/fnv1a.c", "hash/crc32.c",
                "fmt/number.c", "fmt/table.c"):
        obj = os.path.basename(rel).rsplit(".", 1)[0] + ".o"
        cc = clangxx if rel.endswith(".cpp") else a.clang
        subprocess.run([cc, "-flto=thin", "-O2", "-I", os.path.join(src, "include"), "-c",
                        os.path.join(src, rel), "-o", obj], check=True)
        objs.append(obj)
    ar = os.path.join(os.path.dirname(os.path.realpath(a.clang)), "llvm-ar")
    subprocess.run([ar, "rcs", "libhash.a", "fnv1a.o", "crc32.o"], check=True)
    subprocess.run([ar, "rcs", "--thin", "libfmt.a", "number.o", "table.o"], check=True)
    inputs = ["main.o", "counter.o", "tokenize.o", "libhash.a", "libfmt.a"]

    # Every job's compiler: log "start"/"end" lines (each one write, in
    # append mode: whole lines), then run clang.
    log = os.path.abspath("jobs.log")
    wrapper = os.path.abspath("cc-logged")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\necho "start $$" >> {log}\n"{a.clang}" "$@"\ncode=$?\n'
                f'echo "end $$" >> {log}\nexit $code\n')
    os.chmod(wrapper, 0o755)

    def link_argv(out, cache=None):
        argv = [clangxx, "-flto=thin", "-O2", f"--ld-path={a.ld}"] + inputs + \
            ["-o", out, f"-Wl,--thinlto-distributor={a.python}",
             f"-Wl,--thinlto-distributor-arg={a.local_py}",
             "-Wl,--thinlto-distributor-arg=--quiet",
             f"-Wl,--thinlto-remote-compiler={wrapper}"]
        return argv + ([f"-Wl,--thinlto-cache-dir={cache}"] if cache else [])

    os.makedirs("alone")
    subprocess.run(link_argv("alone/wordstat"), check=True, stdin=subprocess.DEVNULL)
    reference = "alone/wordstat"

    # 1. N links under one make -j TOKENS, one cache.
    cache = os.path.abspath("cache")
    os.remove(log)
    with open("Makefile", "w") as f:
        names = [f"out{i}/wordstat" for i in range(a.links)]
        f.write("all: " + " ".join(names) + "\n")
        for name in names:
            # "+": make hands the recipe its jobserver, as for a sub-make.
            cmd = " ".join(f"'{w}'" for w in link_argv(name, cache))
            f.write(f"{name}:\n\t+@mkdir -p $(dir $@) && {cmd}\n")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    r = subprocess.run(["make", f"-j{a.tokens}", "-s"], env=env, capture_output=True, text=True)
    ok = r.returncode == 0 and all(filecmp.cmp(n, reference, shallow=False) for n in names)
    print(f"{a.links} links under make -j{a.tokens}, one cache: "
          f"{'all identical to the lone link' if ok else 'FAILED'}")
    if r.returncode:
        print(r.stderr[-3000:])
    running = most = starts = 0
    with open(log) as f:
        for line in f:
            running += 1 if line.startswith("start") else -1
            starts += line.startswith("start")
            most = max(most, running)
    print(f"  jobs run: {starts}; most at once: {most}, "
          f"{'within' if most <= a.tokens else 'OVER'} the jobserver's {a.tokens}")
    left = sorted(n for i in range(a.links) for n in os.listdir(f"out{i}") if n != "wordstat")
    unfinished = [n for n in os.listdir(cache) if not n.startswith("llvmcache")]
    print(f"  left beside the outputs: {left or 'nothing'}; unfinished cache entries: "
          f"{unfinished or 'none'}")
    # The cache serves a later link whole, with the same program (every
    # entry it uses is checked against its digest and like a fresh object).
    os.makedirs("again")
    r = subprocess.run(link_argv("again/wordstat", cache), capture_output=True, text=True,
                       env=dict(os.environ, DTLTO_VERBOSE="1"))
    whole = re.search(r"ThinLTO jobs: all from the cache", r.stderr)
    same = r.returncode == 0 and filecmp.cmp("again/wordstat", reference, shallow=False)
    print(f"  a later link: {'all from the cache' if whole else 'NOT from the cache'}, "
          f"{'identical' if same else 'DIFFERENT'}")

    # 2. N links at once into one directory, each its own output.
    os.makedirs("shared")
    procs = [subprocess.Popen(link_argv(f"shared/wordstat{i}"), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for i in range(a.links)]
    errors = [e for p in procs for e in [p.communicate()[1]] if p.returncode]
    outs = [f"shared/wordstat{i}" for i in range(a.links)]
    ok = not errors and all(filecmp.cmp(o, reference, shallow=False) for o in outs)
    left = sorted(set(os.listdir("shared")) - {os.path.basename(o) for o in outs})
    print(f"{a.links} links at once into one directory: "
          f"{'all identical to the lone link' if ok else 'FAILED'}, left {left or 'nothing'}")
    for e in errors[:2]:
        print(e[-2000:])
    shutil.rmtree(cache)


if __name__ == "__main__":
    main()
