#!/usr/bin/env python3
"""Our DTLTO on the linkers LLVM gives no DTLTO, each against the same
linker's in-process ThinLTO, on lua (Debian's lua5.4 source package, as
bench/run.py builds it):

  gold, bfd, mold   lua's recorded link (bench/run.py's build), with
                    Debian's LLVMgold.so; DTLTO through the preload library
                    (-plugin-opt=-thinlto-distributor=...)
  mingw             lua (interpreter and library) compiled for
                    x86_64-w64-mingw32; stock ld.lld -m i386pep in-process
                    against our ld.lld; the smoke test runs under wine
  wasm              lua's core (no interpreter: no setjmp in WASI's libc, so
                    errors trap) for wasm32-wasi, a reactor module; stock
                    wasm-ld in-process against our wasm-ld
  macho             the 16 of lua's core modules that build for
                    x86_64-apple-macos13 without a macOS SDK (WASI's libc
                    headers stand in), a dylib; stock ld64.lld in-process
                    against our ld64.lld

Three modes: in-process ThinLTO, DTLTO with clang jobs, DTLTO with
dtlto-backend jobs (batch workers), both through utils/dtlto/local.py. Every
DTLTO output is compared with the in-process one, byte for byte. Runs of the
modes alternate; wall and CPU time (the whole process tree) are medians with
[min-max].
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True

from benchlib import BenchError, add_cache_option  # noqa: E402
from benchlib.measure import run_link  # noqa: E402
from benchlib.prepare import prepare, tools as build_tools  # noqa: E402
from benchlib.programs import PROGRAMS  # noqa: E402
from benchlib.util import clean_env, log  # noqa: E402

SRC_ROOT = os.path.dirname(HERE)
LLVM_BIN = "/usr/lib/llvm-22/bin"
LLVMGOLD = "/usr/lib/llvm-22/lib/LLVMgold.so"
GNU = {"gold": "/usr/bin/ld.gold", "bfd": "/usr/bin/ld.bfd", "mold": "/usr/bin/mold"}
# lua's core without setjmp (WASI's libc has none): an error traps.
NO_SETJMP = ["-DLUAI_THROW(L,c)=__builtin_trap()", "-DLUAI_TRY(L,c,a)=a",
             "-Dluai_jmpbuf=int", "-DLUA_TMPNAMBUFSIZE=32", "-Dlua_tmpnam(b,e)=(e=1)",
             "-D_WASI_EMULATED_SIGNAL", "-D_WASI_EMULATED_PROCESS_CLOCKS"]


def compile_lua(a, tree, target, kind, flags):
    """Compile lua's sources for target into a directory of the cache (once);
    kind "program" is the interpreter and the library, "core" the library's
    modules that compile. Returns the object paths."""
    out = os.path.join(a.cache, "linkers", f"lua-{target}")
    stamp = os.path.join(out, "objects.txt")
    if os.path.exists(stamp):
        with open(stamp) as f:
            return f.read().split()
    os.makedirs(out, exist_ok=True)
    src = os.path.join(tree, "src")
    skip = {"luac.c"} | ({"lua.c"} if kind == "core" else set())
    objs = []
    for name in sorted(os.listdir(src)):
        if not name.endswith(".c") or name in skip:
            continue
        obj = os.path.join(out, name[:-2] + ".o")
        r = subprocess.run([a.clang, f"--target={target}", "-O2", "-flto=thin", "-c",
                            os.path.join(src, name), "-o", obj] + flags,
                           capture_output=True, text=True, env=clean_env())
        if r.returncode == 0:
            objs.append(obj)
        elif kind == "program":
            raise BenchError(f"lua's {name} does not compile for {target}: "
                             + r.stderr.strip().splitlines()[-1])
    if not objs:
        raise BenchError(f"none of lua's sources compiles for {target}")
    with open(stamp, "w") as f:
        f.write("\n".join(objs) + "\n")
    return objs


def preload_wrapper(a, linker):
    path = os.path.join(a.out, f"preload-{os.path.basename(linker)}")
    with open(path, "w") as f:
        f.write(f'#!/bin/sh\nLD_PRELOAD={a.preload} exec {linker} "$@"\n')
    os.chmod(path, 0o755)
    return path


def linking(prog, args, extra=()):
    """The command that links into the file it is given."""
    return lambda out: [prog] + list(args) + ["-o", out] + list(extra)


def cases(a, lua):
    """(name, cwd, in-process command, DTLTO command (a function of the
    remote compiler), output name, smoke) each; a command is a function of
    the output path. The lambdas bind the variables they use as defaults:
    later cases rebind the same names (the wasm DTLTO link once ran with
    the Mach-O case's arguments)."""
    dist = [a.python, a.local_py, f"--jobs={a.jobs}"]
    args = list(lua["args"])
    out_at = args.index("-o") + 1
    found = []
    def gnu_link(prog, extra):
        def make(out):
            v = list(args)
            v[out_at] = out
            return [prog, "-plugin", LLVMGOLD, f"-plugin-opt=jobs={a.jobs}"] + v + extra
        return make
    opts = [f"-plugin-opt=-thinlto-distributor={dist[0]}"]
    opts += [f"-plugin-opt=-thinlto-distributor-arg={d}" for d in dist[1:]]
    for name, linker in GNU.items():
        if name in a.linkers:
            wrapper = preload_wrapper(a, linker)
            found.append((name, lua["cwd"], gnu_link(linker, []),
                          lambda cc, w=wrapper: gnu_link(
                              w, opts + [f"-plugin-opt=-thinlto-remote-compiler={cc}"]),
                          "lua", "native"))
    tree = lua["tree"]
    if "mingw" in a.linkers:
        objs = compile_lua(a, tree, "x86_64-w64-mingw32", "program", [])
        driver = [a.clang, "--target=x86_64-w64-mingw32", "-flto=thin", "-fuse-ld=lld",
                  "-Wl,--no-insert-timestamp", f"-Wl,--thinlto-jobs={a.jobs}"] + objs
        found.append(("mingw", a.out, linking(driver[0], driver[1:]),
                      lambda cc, driver=driver: linking(driver[0], driver[1:],
                                         [f"--ld-path={a.bin}/ld.lld",
                                          f"-fthinlto-distributor={dist[1]}",
                                          f"-Xthinlto-distributor={dist[2]}",
                                          f"-Wl,--thinlto-remote-compiler={cc}"]),
                      "lua.exe", "wine"))
    plain = [f"--thinlto-distributor={dist[0]}"] + \
        [f"--thinlto-distributor-arg={d}" for d in dist[1:]]
    if "wasm" in a.linkers:
        # Debian's wasi-libc is under the older triple's name.
        objs = compile_lua(a, tree, "wasm32-wasi", "core", NO_SETJMP + ["-Wno-deprecated"])
        link = ["--no-entry", "--export-all", "--allow-undefined",
                f"--thinlto-jobs={a.jobs}"] + objs
        found.append(("wasm", a.out, linking(os.path.join(LLVM_BIN, "wasm-ld"), link),
                      lambda cc, link=link: linking(f"{a.bin}/wasm-ld", link,
                                                    plain + [f"--thinlto-remote-compiler={cc}"]),
                      "lua.wasm", None))
    if "macho" in a.linkers:
        resource = subprocess.run([a.clang, "-print-resource-dir"], capture_output=True,
                                  text=True).stdout.strip()
        headers = ["-nostdinc", "-isystem", os.path.join(resource, "include"),
                   "-isystem", "/usr/include/wasm32-wasi"]
        stub = os.path.join(a.cache, "linkers", "stub")
        os.makedirs(stub, exist_ok=True)
        with open(os.path.join(stub, "setjmp.h"), "w") as f:
            f.write("typedef int jmp_buf[1];\n")
        objs = compile_lua(a, tree, "x86_64-apple-macos13", "core",
                           ["-isystem", stub] + headers + NO_SETJMP)
        link = ["-arch", "x86_64", "-platform_version", "macos", "13.0", "13.0", "-dylib",
                "-undefined", "dynamic_lookup", "-install_name", "@rpath/liblua.dylib",
                f"--thinlto-jobs={a.jobs}"] + objs
        found.append(("macho", a.out, linking(os.path.join(LLVM_BIN, "ld64.lld"), link),
                      lambda cc, link=link: linking(f"{a.bin}/ld64.lld", link,
                                                    plain + [f"--thinlto-remote-compiler={cc}"]),
                      "liblua.dylib", None))
    return found


def smoke(kind, path, workdir):
    if kind is None:
        return "-"
    lua = PROGRAMS["lua"]
    script = os.path.join(workdir, "smoke.lua")
    with open(script, "w") as f:
        f.write(lua.SCRIPT)
    argv = ([path, script] if kind == "native" else
            ["/usr/lib/wine/wine64", path, "smoke.lua"])
    env = dict(os.environ, WINEDEBUG="-all")
    r = subprocess.run(argv, cwd=workdir, capture_output=True, text=True, env=env)
    return "pass" if r.stdout.replace("\r", "") == lua.expected() else "FAIL"


def stats(values):
    return (f"{statistics.median(values):.2f} "
            f"[{min(values):.2f}-{max(values):.2f}]")


def main(argv=None):
    p = argparse.ArgumentParser(prog="bench/linkers.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--linkers", default="gold,bfd,mold,mingw,wasm,macho",
                   help="comma-separated (default: %(default)s)")
    p.add_argument("--runs", type=int, default=5, help="timed runs per mode (default: 5)")
    p.add_argument("--jobs", type=int, default=2,
                   help="ThinLTO threads, and distributor jobs (default: 2)")
    add_cache_option(p)
    p.add_argument("--out", help="where the links go (default: CACHE/linkers/out)")
    p.add_argument("--bin", default=os.path.join(SRC_ROOT, "build", "bin"),
                   help="our build's bin directory (default: %(default)s)")
    p.add_argument("--preload", default=os.path.join(SRC_ROOT, "build", "lib",
                                                     "libdtlto-preload.so"))
    p.add_argument("--clang", default=os.path.join(LLVM_BIN, "clang"))
    p.add_argument("--python", default="/usr/bin/python3")
    p.add_argument("--local-py", default=os.path.join(SRC_ROOT, "utils", "dtlto", "local.py"))
    a = p.parse_args(argv)
    a.linkers = [x for x in a.linkers.split(",") if x]
    unknown = set(a.linkers) - set(GNU) - {"mingw", "wasm", "macho"}
    if unknown or a.runs < 1 or a.jobs < 1:
        p.error(f"unknown linkers {sorted(unknown)}" if unknown else
                "--runs and --jobs must be at least 1")
    a.out = os.path.abspath(a.out or os.path.join(a.cache, "linkers", "out"))
    os.makedirs(a.out, exist_ok=True)
    try:
        tools = build_tools(a.clang, os.path.join(LLVM_BIN, "ld.lld"))
        lua = prepare("lua", a.cache, tools)
        native = os.path.join(a.bin, "dtlto-backend")
        rows = []
        for name, cwd, inproc, dtlto, output, kind in cases(a, lua):
            log(f"{name}: {a.runs} runs per mode, alternating")
            modes = {"inproc": inproc, "clang": dtlto(a.clang), "native": dtlto(native)}
            times = {m: [] for m in modes}
            outs = {}
            for i in range(a.runs + 1):  # the first round is a warm-up
                for mode, make in modes.items():
                    d = os.path.join(a.out, name, mode)
                    shutil.rmtree(d, ignore_errors=True)
                    os.makedirs(d)
                    out = os.path.join(d, output)
                    r = run_link(make(out), cwd, clean_env({"DTLTO_LOCAL_JOBS": "0"}),
                                 os.path.join(d, "stdout"), os.path.join(d, "stderr"))
                    if r["returncode"] != 0:
                        with open(os.path.join(d, "stderr")) as f:
                            raise BenchError(f"{name} {mode} link failed: {f.read()[-500:]}")
                    if i:
                        times[mode].append(r)
                    outs[mode] = out

            def same(mode):
                with open(outs["inproc"], "rb") as f, open(outs[mode], "rb") as g:
                    return "identical" if f.read() == g.read() else "DIFFERS"

            def ratio(mode, key):
                return (statistics.median(r[key] for r in times[mode]) /
                        statistics.median(r[key] for r in times["inproc"]))
            wall = {m: [r["wall"] for r in times[m]] for m in times}
            rows.append(
                f"| {name} | {stats(wall['inproc'])} | {stats(wall['clang'])} "
                f"| {stats(wall['native'])} "
                f"| {ratio('clang', 'wall'):.2f}x / {ratio('clang', 'cpu'):.2f}x "
                f"| {ratio('native', 'wall'):.2f}x / {ratio('native', 'cpu'):.2f}x "
                f"| {same('clang')}, {same('native')} "
                f"| {smoke(kind, outs['native'], os.path.dirname(outs['native']))} |")
        print("| linker | in-process wall s | DTLTO, clang jobs, wall s "
              "| DTLTO, dtlto-backend, wall s | clang / in-process wall / CPU "
              "| dtlto-backend / in-process wall / CPU | output (clang, dtlto-backend) "
              "| smoke |")
        print("|---|---|---|---|---|---|---|---|")
        print("\n".join(rows))
    except BenchError as e:
        print(f"bench/linkers.py: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
