"""DTLTO on one linker, case by case; one line per case.

  linker_matrix.py --linker NAME --how ours|preload --tools DIR WORKDIR

Links the program in multi/ (compute.c, and an archive of lib1.c, lib2.c and
unused.c; main.c for linkers that make executables) with the linker NAME:
wasm (wasm-ld), macho (ld64.lld), mingw (ld.lld -m i386pep, through clang),
gold, bfd, mold (through clang, with LLVMgold.so). --how ours runs our
executable with LLD's DTLTO options; --how preload runs Debian's stock
linker with the preload library and the options spelled as that linker
takes LLVM options (-mllvm -thinlto-..., -Xlink=/thinlto-...:,
-plugin-opt=-thinlto-...).

Every link's output is compared with the stock linker's in-process ThinLTO
link, byte for byte, and run where this machine can (node for wasm, wine for
MinGW, natively for gold, bfd and mold; Mach-O is inspected with llvm-nm).
After every link the output directory must hold exactly what it should. The
local fallback is on only where a case says so (DTLTO_LOCAL_FALLBACK): a
job that fails must fail its case.

Every command runs in a session of its own, with a hang guard: one that has
not ended after HANG_LIMIT seconds (a link or a program that hangs, or
anything it started that holds its output open) is reported with the
processes of its session, which are then killed; the case fails, and the
test ends instead of hanging. A program run for its output (run_program) is
waited for alone, its output read from a file: wine's server and device
processes outlive it by seconds, and are stopped when the matrix ends.
"""
import argparse
import atexit
import filecmp
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "Inputs"))
import procfs  # noqa: E402

SOURCES = os.path.join(HERE, "multi")
FAULTDIST = os.path.normpath(os.path.join(HERE, "..", "..", "LTO", "faults", "Inputs",
                                          "faultdist.py"))
EXPECTED = "compute=1320"
HANG_LIMIT = 300


def end_hung(argv, proc, limit=None):
    """Kills every process of proc's session (it was started with one of its
    own) and reaps proc; prints, and returns, what hung and what was still
    running."""
    running = [(pid, row.args) for pid, row in sorted(procfs.snapshot().items())
               if row.session == proc.pid]
    for pid, _ in running:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    proc.communicate()
    held = "\n".join(f"  {pid} {args}" for pid, args in running) or "  (none left)"
    said = (f"HUNG: '{' '.join(argv)}' had not ended after {limit or HANG_LIMIT} s; "
            f"its session then held:\n{held}")
    print(said, flush=True)
    return said


def run_bounded(argv, **kw):
    """subprocess.run(argv, **kw) in a session of its own; a command still
    running after HANG_LIMIT seconds is killed with its whole session and
    returns -SIGKILL (whatever its first process had returned: a link whose
    descendants hold its output has not ended), its output saying what hung."""
    proc = subprocess.Popen(argv, start_new_session=True, **kw)
    try:
        out, err = proc.communicate(timeout=HANG_LIMIT)
    except subprocess.TimeoutExpired:
        said = end_hung(argv, proc)
        return subprocess.CompletedProcess(argv, -signal.SIGKILL, said, said)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def run_program(argv, env=None):
    """Runs a program for its output, as run_bounded does, but waits for the
    program alone: its output goes through a file, not a pipe. wine leaves
    its server and device processes running for a while after the program
    has exited, and they hold whatever output they were started with (a
    pipe would keep its reader waiting as long as they live)."""
    with tempfile.TemporaryFile("w+") as out:
        # stderr is not its output (wine says there that it made a prefix).
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.DEVNULL, text=True, env=env,
                                start_new_session=True)
        try:
            proc.wait(timeout=HANG_LIMIT)
        except subprocess.TimeoutExpired:
            return end_hung(argv, proc)
        out.seek(0)
        return out.read()


class Linker:
    """How to compile for, link with and run the output of one linker."""

    def __init__(self, a):
        self.a = a
        t = a.tools
        self.clang = os.path.join(t["llvm"], "clang")
        self.name = a.linker
        self.target = {"wasm": "wasm32-unknown-unknown", "macho": "x86_64-apple-macos13",
                       "mingw": "x86_64-w64-mingw32"}.get(self.name, "x86_64-pc-linux-gnu")
        self.stock = {"wasm": os.path.join(t["llvm"], "wasm-ld"),
                      "macho": os.path.join(t["llvm"], "ld64.lld"),
                      "mingw": os.path.join(t["llvm"], "ld.lld"),
                      "gold": "/usr/bin/ld.gold", "bfd": "/usr/bin/ld.bfd",
                      "mold": "/usr/bin/mold"}[self.name]
        self.ours = {"wasm": "wasm-ld", "macho": "ld64.lld", "mingw": "ld.lld"}.get(self.name)
        self.output = {"wasm": "prog.wasm", "macho": "prog.dylib",
                       "mingw": "prog.exe"}.get(self.name, "prog")

    def through_clang(self):
        return self.name not in ("wasm", "macho")

    def sources(self):
        return ["compute", "lib1", "lib2", "unused"] + (["main"] if self.through_clang() else [])

    # The DTLTO options, spelled for this linker and way.
    def dtlto(self, distributor, dist_args, compiler):
        pairs = [("thinlto-distributor", distributor)]
        pairs += [("thinlto-distributor-arg", d) for d in dist_args]
        if compiler:
            pairs.append(("thinlto-remote-compiler", compiler))
        if self.a.how == "ours":
            return [f"--{k}={v}" for k, v in pairs]
        if self.name in ("wasm", "macho"):
            return [w for k, v in pairs for w in ("-mllvm", f"-{k}={v}")]
        if self.name == "mingw":
            return [f"-Xlink=/{k}:{v}" for k, v in pairs]
        return [f"-plugin-opt=-{k}={v}" for k, v in pairs]

    def cache(self, d):
        return {"macho": ["-cache_path_lto", d], "gold": [f"-plugin-opt=cache-dir={d}"],
                "bfd": [f"-plugin-opt=cache-dir={d}"],
                "mold": [f"-plugin-opt=cache-dir={d}"]}.get(self.name, [f"--thinlto-cache-dir={d}"])

    def save_temps(self):
        return {"macho": ["-save-temps"], "mingw": ["-Xlink=/lldsavetemps"]}.get(
            self.name, ["-plugin-opt=save-temps"] if self.through_clang() else ["--save-temps"])

    def program(self, dtlto):
        """The linker to run: the stock one in-process, else ours or the stock
        one with the preload library (a wrapper, so that nothing else the
        link starts gets it)."""
        if dtlto and self.a.how == "ours":
            return os.path.join(self.a.tools["bin"], self.ours)
        if not dtlto:
            return self.stock
        wrapper = os.path.abspath(f"preload-{os.path.basename(self.stock)}")
        if not os.path.exists(wrapper):
            with open(wrapper, "w") as f:
                f.write(f'#!/bin/sh\nLD_PRELOAD={self.a.tools["preload"]} exec {self.stock} "$@"\n')
            os.chmod(wrapper, 0o755)
        # clang names the linker by --ld-path; keep the linker's own name for
        # LLD, which picks its flavour from it.
        if self.name == "mingw":
            named = os.path.abspath("preload-bin/ld.lld")
            os.makedirs(os.path.dirname(named), exist_ok=True)
            if not os.path.exists(named):
                os.symlink(wrapper, named)
            return named
        return wrapper

    def command(self, outdir, inputs, extra, dtlto):
        out = os.path.join(outdir, self.output)
        prog = self.program(dtlto)
        if self.name == "wasm":
            argv = [prog, "--no-entry"] + inputs + ["-o", out] + extra
        elif self.name == "macho":
            argv = [prog, "-arch", "x86_64", "-platform_version", "macos", "13.0", "13.0",
                    "-dylib", "-undefined", "dynamic_lookup", "-install_name", "@rpath/prog.dylib"]
            argv += inputs + ["-o", out] + extra
        else:
            argv = [self.clang, f"--target={self.target}", "-flto=thin", f"--ld-path={prog}"]
            if self.name != "mingw":
                argv.append(f"-fuse-ld={self.name}")
            else:
                argv += ["-fuse-ld=lld", "-Wl,--no-insert-timestamp"]
            argv += inputs + ["-o", out] + [w for e in extra for w in ("-Xlinker", e)]
        return argv

    def link(self, outdir, inputs, extra, dtlto, env=None):
        """Runs the link; its .stderr holds everything it printed (ld.bfd
        prints the plugin's warnings on stdout)."""
        r = run_bounded(self.command(outdir, inputs, extra, dtlto), stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, text=True, env=dict(os.environ, **(env or {})))
        r.stderr = r.stdout
        return r

    def run_output(self, path):
        if self.name == "wasm":
            js = ("const fs=require('fs');WebAssembly.instantiate(fs.readFileSync(process.argv[1]))"
                  ".then(m=>console.log('compute=' + m.instance.exports.compute()))")
            out = run_program(["node", "-e", js, path])
        elif self.name == "macho":
            r = subprocess.run([os.path.join(self.a.tools["llvm"], "llvm-nm"), path],
                               capture_output=True, text=True)
            syms = {l.split()[-1] for l in r.stdout.splitlines() if " T " in l}
            ok = {"_compute", "_scale", "_offset"} <= syms or {"_compute"} <= syms
            return EXPECTED if ok and "_never_used" not in syms else f"symbols {sorted(syms)}"
        elif self.name == "mingw":
            out = run_program([self.a.tools["wine"], path], env=self.wine_env())
        else:
            out = run_program([path])
        return out.strip().replace("\r", "")

    def wine_env(self):
        return dict(os.environ, WINEDEBUG="-all", WINEPREFIX=self.a.tools["wineprefix"])

    def end_wine(self):
        """Stops the wine server of the prefix and what it runs, so that
        nothing of the test outlives it."""
        server = os.path.join(os.path.dirname(self.a.tools["wine"]), "wineserver64")
        if self.name == "mingw" and os.path.exists(server):
            run_program([server, "-k"], env=self.wine_env())


def listing(d):
    return sorted(os.listdir(d))


def main():
    sys.stdout.reconfigure(line_buffering=True)  # each line as it comes
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--linker", required=True,
                   choices=["wasm", "macho", "mingw", "gold", "bfd", "mold"])
    p.add_argument("--how", required=True, choices=["ours", "preload"])
    p.add_argument("--llvm-tools", required=True, help="LLVM 22's bin directory")
    p.add_argument("--bin", required=True, help="our build's bin directory")
    p.add_argument("--preload", required=True, help="libdtlto-preload.so")
    p.add_argument("--local-py", required=True)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--wine", default="/usr/lib/wine/wine64")
    p.add_argument("--wineprefix", help="a wine prefix of the test's (made on first use)")
    p.add_argument("workdir")
    a = p.parse_args()
    a.tools = {"llvm": a.llvm_tools, "bin": a.bin, "preload": a.preload, "wine": a.wine,
               "wineprefix": os.path.abspath(a.wineprefix or os.path.join(a.workdir, "wine"))}
    L = Linker(a)
    atexit.register(L.end_wine)
    os.makedirs(a.workdir, exist_ok=True)
    os.chdir(a.workdir)

    for s in L.sources():
        subprocess.run([L.clang, f"--target={L.target}", "-O2", "-flto=thin", "-c",
                        os.path.join(SOURCES, s + ".c"), "-o", s + ".o"], check=True)
    members = ["lib1.o", "lib2.o", "unused.o"]
    ar = os.path.join(a.llvm_tools, "llvm-ar")
    subprocess.run([ar, "rc", "libregular.a"] + members, check=True)
    subprocess.run([ar, "rc", "--thin", "libthin.a"] + members, check=True)
    main_o = ["main.o"] if L.through_clang() else []

    def inputs(archive):
        # ld64 pulls archive members only for undefined symbols of loaded
        # objects: compute.o does that here, as for every linker.
        return main_o + ["compute.o", archive]

    local = [a.local_py]
    native = os.path.join(a.bin, "dtlto-backend")

    def fresh(name):
        shutil.rmtree(name, ignore_errors=True)
        os.makedirs(name)
        return name

    def report(case, r, outdir, reference, expect_files):
        out = os.path.join(outdir, L.output)
        ok = r.returncode == 0 and os.path.exists(out)
        same = ok and filecmp.cmp(out, reference, shallow=False)
        ran = L.run_output(out) if ok else "-"
        left = sorted(set(listing(outdir)) - set(expect_files))
        print(f"{case}: {'linked' if ok else 'FAILED'}, "
              f"{'identical' if same else 'DIFFERENT'}, ran: {ran}, left {left or 0}")
        if not ok or not same:
            print(r.stderr[-2000:])
        return r

    # The references: the stock linker's in-process ThinLTO link.
    refs = {}
    for kind in ("regular", "thin"):
        d = fresh(f"inproc-{kind}")
        r = L.link(d, inputs(f"lib{kind}.a"), [], dtlto=False)
        if r.returncode:
            sys.exit(f"the in-process link failed:\n{r.stderr}")
        refs[kind] = os.path.join(d, L.output)
        print(f"in-process {kind} archive: ran: {L.run_output(refs[kind])}")

    verbose = {"DTLTO_VERBOSE": "1"}
    for kind in ("regular", "thin"):
        for compiler, cname in ((L.clang, "clang"), (native, "dtlto-backend")):
            d = fresh(f"{kind}-{cname}")
            r = L.link(d, inputs(f"lib{kind}.a"), L.dtlto(a.python, local, compiler),
                       dtlto=True, env=verbose)
            report(f"{kind} archive, {cname} jobs", r, d, refs[kind], [L.output])
            jobs = re.search(r"dtlto: (\d+) ThinLTO jobs", r.stderr)
            print(f"  jobs: {jobs[1] if jobs else 'none'}")

    # The ThinLTO cache: a second link is served from it, without the
    # distributor; the same program.
    cache = os.path.abspath("cache")
    shutil.rmtree(cache, ignore_errors=True)
    for n in (1, 2):
        d = fresh(f"cache-{n}")
        r = L.link(d, inputs("libregular.a"),
                   L.dtlto(a.python, local, L.clang) + L.cache(cache), dtlto=True, env=verbose)
        report(f"cache, link {n}", r, d, refs["regular"], [L.output])
        summary = re.search(r"dtlto: (\d+) ThinLTO jobs: (all|\d+) from the cache", r.stderr)
        cached = (summary[1] if summary[2] == "all" else summary[2]) if summary else "no summary"
        print(f"  from the cache: {cached}")

    # A job whose object the distributor did not deliver: compiled in the
    # linker (the same program), or, with the fallback off, one clear error
    # and no output.
    fault = [FAULTDIST, "--fault=missing:0", f"--local-py={a.local_py}"]
    d = fresh("fallback")
    r = L.link(d, inputs("libregular.a"), L.dtlto(a.python, fault, L.clang), dtlto=True,
               env={"DTLTO_LOCAL_FALLBACK": "1"})
    report("missing object, fallback", r, d, refs["regular"], [L.output])
    print(f"  warned: {'compiled it in the linker instead' in r.stderr}")
    if 'compiled it in the linker instead' not in r.stderr:
        print(r.stderr[-2000:])
    d = fresh("no-fallback")
    r = L.link(d, inputs("libregular.a"), L.dtlto(a.python, fault, L.clang), dtlto=True,
               env={"DTLTO_LOCAL_FALLBACK": "0"})
    said = [l for l in r.stderr.splitlines() if "DTLTO backend compilation" in l]
    print(f"missing object, no fallback: exit {'non-zero' if r.returncode else 0}, "
          f"error: {said[0].split(': ', 1)[1][:60] if said else 'NONE'}..., "
          f"left {listing(d) or 0}")

    # --save-temps keeps the manifest and its side file.
    d = fresh("save-temps")
    r = L.link(d, inputs("libregular.a"), L.dtlto(a.python, local, L.clang) + L.save_temps(),
               dtlto=True)
    kept = [n for n in listing(d) if n.endswith((".dist-file.json", ".dist-file.dtlto.json"))]
    print(f"save-temps: {'linked' if r.returncode == 0 else 'FAILED'}, kept "
          f"{' '.join(re.sub(r'[0-9]+', 'N', n) for n in kept) or 'nothing'}")

    # Interrupted while the distributor runs: the link stops, the
    # distributor's process group with it, and nothing is left. The linker
    # is the distributor's parent (clang runs it as a child of its own).
    d = fresh("interrupted")
    hang = [FAULTDIST, "--fault=hang"]
    argv = L.command(d, inputs("libregular.a"), L.dtlto(a.python, hang, L.clang), dtlto=True)
    proc = subprocess.Popen(argv,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    distributor = wait_for_process(proc, FAULTDIST)
    if distributor:
        os.kill(distributor[1], signal.SIGTERM)
    try:
        proc.communicate(timeout=120)
        hung = ""
    except subprocess.TimeoutExpired:
        # mold's parent waits on a pipe its child's descendants hold: a
        # distributor left running keeps the link from ever ending.
        hung = " (the link HUNG: stopped after 120 s)"
    running = distributor and procfs.alive(distributor[0])
    print(f"interrupted: {'stopped' if distributor else 'NO DISTRIBUTOR SEEN'}, "
          f"exit {'non-zero' if proc.returncode else 0}, left {listing(d) or 0}, "
          f"distributor {'RUNNING' if running or not distributor else 'gone'}{hung}")
    if hung:
        end_hung(argv, proc, limit=120)
    elif running:
        os.kill(distributor[0], signal.SIGKILL)


def wait_for_process(root, script):
    """(pid, parent pid) of a descendant of root that runs the Python script
    (its first argument; the linker's own command line names it too), once
    there is one; None if root exits first (300 s: a hang guard)."""
    deadline = time.monotonic() + 300
    while root.poll() is None and time.monotonic() < deadline:
        table = procfs.snapshot()
        for pid, row in table.items():
            up = row.ppid
            while up not in (0, 1, root.pid) and up in table:
                up = table[up].ppid
            words = row.args.split()
            if up == root.pid and len(words) > 1 and words[1] == script:
                return pid, row.ppid
        time.sleep(0.05)
    return None


if __name__ == "__main__":
    main()
