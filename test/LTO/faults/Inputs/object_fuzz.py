"""Damaged objects from a farm, thousands of them: what the link does.

  object_fuzz.py --ld LD --clang CLANG --local-py LOCAL --sources DIR
                 [--seed S] [--count N] [--timeout SEC] [--crafted] WORKDIR

Links a three-module program (one module in an archive) once cleanly, then
N times with a distributor (this script, as `object_fuzz.py serve`) that
hands back the clean objects with one of them damaged: truncated, bit flips
in the ELF header, in the section header table or anywhere, garbage in the
symbol names, another target's object, another module's, a huge file. Every
link runs with the local fallback on and is classified:

  refused        the engine found the damage; the job was compiled in the
                 linker and the program is the clean one
  harmless       accepted, and the program is the clean one anyway (the
                 damage is in bytes the link does not use)
  undetected     accepted, and the program differs: damage inside code or
                 data bytes, which no check can tell from good code without
                 a digest made where the object was compiled
  link failed    the linker stopped with an error (no crash)
  CRASHED/HUNG   the linker died by a signal or ran past --timeout: never
                 allowed

The seed makes a run repeatable; the last line sums up.

--crafted first makes one damage of each kind the engine's structure check
looks for (one field of one ELF structure made wrong: the file's type, a
section's alignment, type or flags, a mergeable section's piece size or last string, an .eh_frame
length or CIE pointer, a relocation's offset or symbol, where the locals end,
a symbol's binding, name, section or value) and prints, for each, the verdict and the engine's
warning.
"""
import argparse
import collections
import filecmp
import json
import os
import random
import shutil
import signal
import subprocess
import sys

HERE = os.path.abspath(__file__)
KINDS = ("truncate", "header-flip", "section-table-flip", "any-flip", "symbol-names",
         "other-target", "other-module", "huge", "empty", "zero-page")


CRAFTED = ("not-relocatable", "linked-file-section", "bad-alignment", "huge-alignment", "unknown-section-type", "thread-local-code",
           "merge-pieces", "unterminated-string", "eh-frame-length", "cie-pointer",
           "relocation-offset", "relocation-symbol", "locals-end", "symbol-binding",
           "symbol-name", "symbol-section", "symbol-value")


def u(b, off, size):
    return int.from_bytes(b[off:off + size], "little")


def put(b, off, size, value):
    b[off:off + size] = value.to_bytes(size, "little")


def sections(b):
    """(offset of its header, name, type, offset, size, link, entsize) of each
    section of a little-endian ELF64 object."""
    shoff, shentsize, shnum, shstrndx = u(b, 0x28, 8), u(b, 0x3a, 2), u(b, 0x3c, 2), u(b, 0x3e, 2)
    heads = [shoff + i * shentsize for i in range(shnum)]
    names = u(b, heads[shstrndx] + 0x18, 8)
    out = []
    for h in heads:
        n = names + u(b, h, 4)
        out.append((h, bytes(b[n:b.index(0, n)]).decode(), u(b, h + 4, 4), u(b, h + 0x18, 8),
                    u(b, h + 0x20, 8), u(b, h + 0x28, 4), u(b, h + 0x38, 8)))
    return out


def craft(data: bytes, kind: str) -> bytes:
    """One field of one structure made wrong, as a flipped bit might."""
    b = bytearray(data)
    secs = sections(b)
    by_name = {s[1]: s for s in secs}
    text = next(s for s in secs if s[1].startswith(".text") and s[4])
    comment = by_name[".comment"]  # SHF_MERGE | SHF_STRINGS, in pieces of 1 byte
    if kind == "not-relocatable":
        put(b, 0x10, 2, 3)  # ET_DYN
    elif kind == "linked-file-section":
        rela = next(s for s in secs if s[2] == 4)
        put(b, rela[0] + 4, 4, 5)  # SHT_HASH
    elif kind == "bad-alignment":
        put(b, text[0] + 0x30, 8, 24)
    elif kind == "huge-alignment":
        put(b, text[0] + 0x30, 8, 1 << 35)
    elif kind == "unknown-section-type":
        put(b, text[0] + 4, 4, 0x80000001)
    elif kind == "thread-local-code":
        put(b, text[0] + 8, 8, u(b, text[0] + 8, 8) | 0x400)  # SHF_TLS
    elif kind == "merge-pieces":
        put(b, comment[0] + 0x38, 8, comment[4] + 1)
    elif kind == "unterminated-string":
        b[comment[3] + comment[4] - 1] = ord("x")
    elif kind in ("eh-frame-length", "cie-pointer"):
        eh = by_name[".eh_frame"]
        if kind == "eh-frame-length":
            put(b, eh[3], 4, eh[4])
        else:
            fde = eh[3] + 4 + u(b, eh[3], 4)  # the record after the first CIE
            put(b, fde + 4, 4, u(b, fde + 4, 4) + 8)
    elif kind.startswith("relocation"):
        rela = next(s for s in secs if s[2] == 4 and s[4])  # SHT_RELA
        if kind == "relocation-offset":
            target = secs[u(b, rela[0] + 0x2c, 4)]
            put(b, rela[3], 8, target[4] + 16)
        else:
            put(b, rela[3] + 12, 4, 100000)  # the symbol half of r_info
    else:
        symtab = by_name[".symtab"]
        last = symtab[3] + symtab[4] - symtab[6]
        if kind == "locals-end":
            put(b, symtab[0] + 0x2c, 4, symtab[4] // symtab[6] + 1)
        elif kind == "symbol-binding":
            b[last + 4] = (3 << 4) | (b[last + 4] & 0xf)
        elif kind == "symbol-name":
            put(b, last, 4, secs[symtab[5]][4] + 100)
        elif kind == "symbol-section":
            put(b, last + 6, 2, len(secs) + 5)
        else:
            put(b, last + 8, 8, 1 << 35)
    return bytes(b)


def mutate(data: bytes, kind: str, rng: random.Random, spare: dict) -> bytes:
    if kind in CRAFTED:
        return craft(data, kind)
    b = bytearray(data)
    if kind == "truncate":
        return bytes(b[:rng.randrange(0, len(b))])
    if kind == "empty":
        return b""
    if kind == "header-flip":
        i = rng.randrange(0, 64)
    elif kind == "section-table-flip":
        shoff = int.from_bytes(b[0x28:0x30], "little")
        shsize = int.from_bytes(b[0x3c:0x3e], "little") * int.from_bytes(b[0x3a:0x3c], "little")
        if not shoff or shoff + shsize > len(b):
            shoff, shsize = 64, len(b) - 64
        i = shoff + rng.randrange(0, max(1, shsize))
    elif kind == "any-flip":
        i = rng.randrange(0, len(b))
    elif kind == "symbol-names":
        # Somewhere in the string tables (the last quarter of a small object
        # holds .strtab): bytes that are no names.
        start = len(b) * 3 // 4
        for _ in range(8):
            b[rng.randrange(start, len(b))] = rng.randrange(1, 256)
        return bytes(b)
    elif kind == "zero-page":
        start = rng.randrange(0, len(b))
        b[start:start + 4096] = bytes(min(4096, len(b) - start))
        return bytes(b)
    elif kind == "other-target":
        return spare["aarch64"]
    elif kind == "other-module":
        return spare["other"]
    elif kind == "huge":
        return data + bytes(64 << 20)
    b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def serve(argv):
    """The distributor: the clean objects, one damaged as the plan says."""
    plan_path, manifest = argv[0], argv[-1]
    with open(plan_path) as f:
        plan = json.load(f)
    with open(manifest) as f:
        m = json.load(f)
    rng = random.Random(plan["seed"])
    modules = [job["inputs"][0] for job in m["jobs"]]
    victim = plan["job"] % len(modules)
    for i, job in enumerate(m["jobs"]):
        with open(plan["clean"][os.path.basename(modules[i])], "rb") as f:
            data = f.read()
        if i == victim:
            other = plan["clean"][os.path.basename(modules[(i + 1) % len(modules)])]
            with open(other, "rb") as f, open(plan["aarch64"], "rb") as g:
                spare = {"other": f.read(), "aarch64": g.read()}
            data = mutate(data, plan["kind"], rng, spare)
        with open(job["outputs"][0], "wb") as f:
            f.write(data)
    return 0


def main():
    if sys.argv[1:2] == ["serve"]:
        sys.exit(serve(sys.argv[2:]))
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    for opt in ("--ld", "--clang", "--local-py", "--sources"):
        p.add_argument(opt, required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--count", type=int, default=100)
    p.add_argument("--timeout", type=float, default=120, help="a hang guard per link")
    p.add_argument("--show", type=int, default=3, help="links of each bad class to show")
    p.add_argument("--crafted", action="store_true",
                   help="first, one link for each damage the structure check looks for")
    p.add_argument("workdir")
    a = p.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    os.chdir(a.workdir)
    for name in ("hub", "m1", "m2"):
        subprocess.run([a.clang, "-flto=thin", "-O2", "-c",
                        os.path.join(a.sources, name + ".c"), "-o", name + ".o"], check=True)
    ar = os.path.join(os.path.dirname(os.path.realpath(a.clang)), "llvm-ar")
    subprocess.run([ar, "rc", "lib.a", "m2.o"], check=True)
    subprocess.run([a.clang, "--target=aarch64-linux-gnu", "-c", "-x", "c", "-", "-o",
                    "aarch64.o"], input=b"int wrong_target(void) { return 1; }\n", check=True)

    def link(out, dist, fallback="1"):
        argv = [a.ld, "hub.o", "m1.o", "lib.a", "-e", "main", "-o", out,
                f"--thinlto-remote-compiler={a.clang}", f"--thinlto-distributor={sys.executable}"]
        argv += [f"--thinlto-distributor-arg={d}" for d in dist]
        return subprocess.run(argv, capture_output=True, text=True, timeout=a.timeout,
                              env=dict(os.environ, DTLTO_LOCAL_FALLBACK=fallback))

    # The clean program, and the clean objects by module file name, kept by
    # --save-temps.
    os.makedirs("clean")
    r = link("clean/prog", [a.local_py, "--quiet"], fallback="0")
    if r.returncode:
        sys.exit("the clean link failed:\n" + r.stderr)
    os.makedirs("kept")
    subprocess.run([a.ld, "hub.o", "m1.o", "lib.a", "-e", "main", "-o", "kept/prog",
                    "--save-temps", f"--thinlto-remote-compiler={a.clang}",
                    f"--thinlto-distributor={sys.executable}",
                    f"--thinlto-distributor-arg={a.local_py}",
                    "--thinlto-distributor-arg=--quiet"], check=True)
    with open(next(os.path.join("kept", n) for n in os.listdir("kept")
                   if n.endswith(".dist-file.json"))) as f:
        kept = json.load(f)
    clean = {os.path.basename(j["inputs"][0]): os.path.abspath(j["outputs"][0])
             for j in kept["jobs"]}

    def run_one(n, kind, seed, job):
        """One link with one damaged object: its verdict, its messages, and
        whether it left files beside its output."""
        plan = {"seed": seed, "kind": kind, "job": job,
                "clean": clean, "aarch64": os.path.abspath("aarch64.o")}
        with open("plan.json", "w") as f:
            json.dump(plan, f)
        out = f"links/{n}"
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        try:
            r = link(f"{out}/prog", [HERE, "serve", os.path.abspath("plan.json")])
        except subprocess.TimeoutExpired:
            verdict, stderr = "CRASHED/HUNG", "timed out"
        else:
            stderr = r.stderr
            same = r.returncode == 0 and filecmp.cmp(f"{out}/prog", "clean/prog", shallow=False)
            if r.returncode < 0 or r.returncode > 128:
                verdict = "CRASHED/HUNG"
            elif r.returncode:
                verdict = "link failed"
            elif "compiled it in the linker instead" in r.stderr:
                verdict = "refused" if same else "REFUSED BUT DIFFERENT"
            else:
                verdict = "harmless" if same else "undetected"
        left = [x for x in os.listdir(out) if x != "prog"]
        shutil.rmtree(out)
        return verdict, stderr, bool(left)

    if a.crafted:
        for kind in CRAFTED:
            verdict, stderr, left = run_one(kind, kind, 0, 0)
            why = [ln for ln in stderr.splitlines() if "bad object" in ln]
            print(f"crafted {kind}: {verdict}{', LEFT FILES' if left else ''}: "
                  f"{why[0] if why else stderr.strip()[-800:]}")

    rng = random.Random(a.seed)
    counts = collections.Counter()
    by_kind = collections.defaultdict(collections.Counter)
    shown = collections.Counter()
    for n in range(a.count):
        kind = KINDS[n % len(KINDS)]
        seed, job = rng.randrange(1 << 30), rng.randrange(3)
        verdict, stderr, left = run_one(n, kind, seed, job)
        counts[verdict] += 1
        by_kind[kind][verdict] += 1
        if verdict not in ("refused", "harmless", "undetected") and shown[verdict] < a.show:
            shown[verdict] += 1
            print(f"{verdict}: link {n}, " + json.dumps({"seed": seed, "kind": kind, "job": job}) + ":")
            print(stderr[-1500:])
        if left:
            counts["LEFT FILES"] += 1
    for kind in KINDS:
        print(f"{kind}: " + ", ".join(f"{v} {c}" for v, c in sorted(by_kind[kind].items())))
    order = ("refused", "harmless", "undetected", "link failed", "REFUSED BUT DIFFERENT",
             "CRASHED/HUNG", "LEFT FILES")
    print(f"mutations: {a.count} (seed {a.seed}); " +
          "; ".join(f"{v}: {counts[v]}" for v in order))


if __name__ == "__main__":
    main()
