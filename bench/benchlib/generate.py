"""Large generated programs: 1,000 to 30,000 ThinLTO modules whose shape
follows the benchmark's real programs.

A program is drawn, with a seed, from the distributions census.py measured
on lua, zstd, redis, CPython and ninja (shape.json, written by
`bench/scale.py census`): per module, the number of functions and of
variables, the calls into other modules and the references to their
variables, how many modules call into it; per function, its size in IR
instructions and its calls within its module. Function sizes are the
measured ones times a scale (--gen-scale, 0.25 by default; 1 gives the
real sizes). The numbers of functions, variables, calls into other modules
and references to their variables per module are the measured ones times
--gen-module-scale (1 by default): at 1, a 1,000-module program takes about
200 s of CPU to link in-process, so the 10,000 and 30,000-module links this
machine can make in an afternoon need smaller modules (0.1), whose per-job
costs are what a large link is about.

Every module is C: functions of `unsigned f(unsigned x, int d)` that mix x
with straight-line arithmetic (multiply-add, xor-shift, selects, reads of
variables of their own module or of others) and then, while d > 0, add what
their callees return. Each function but the first of a module is called by
an earlier one of its module (so every function is live), the first is the
module's entry, and main calls every entry through a table of function
pointers (a call the thin link does not import) with d = 1, mixing the
results into a checksum it prints. The generator evaluates the same program
itself, so the expected checksum is known without running any compiler.

The modules are compiled with clang -O2 -flto=thin, many files per clang
process, and put into groups: the first group is linked as plain objects,
the others alternately as regular and thin archives. The link is what clang
-fuse-ld=lld would run, read from clang -###. Everything is cached under
CACHE/generated/gen<N>-<key>, where the key hashes what decides the tree's
contents: the sources as written, the compiler and its flags, the archive
layout (content_key). Generating the sources again to find that key is
what a cache hit must not cost, so CACHE/generated/recipes/ maps the hash
of what decides the sources (this file, the shape, the size, seed and
scales, the compiler: Spec.recipe_key) to the tree. An edit of this file
that changes nothing the program is made of (a comment, the harness's
code) costs one generation, not a build. An interrupted build goes on
where it stopped.
"""

import bisect
import concurrent.futures
import functools
import glob
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import time

from . import BenchError, add_cache_option
from .util import clean_env, log

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPE = os.path.join(HERE, "shape.json")
M32 = 0xFFFFFFFF
DEFAULT_SCALE = 0.25
DEFAULT_MODULE_SCALE = 1.0
DEFAULT_SEED = 1
STAMP = "dtlto-bench-build.json"
NAME = re.compile(r"^gen(\d+)$")
# Files per clang process: start-up (about 90 ms) is paid once per batch.
BATCH = 48
# How each module is compiled. No inlining before the link: the shape was
# measured on the real programs' summaries, which are made after their
# inlining, so the generated functions are what those summaries describe.
# (An option of the inliner pass, not an attribute: the backends inline as
# usual.)
COMPILE_FLAGS = ["-O2", "-flto=thin", "-c", "-w", "-mllvm", "-inline-threshold=-100000"]


def add_generator_options(parser):
    """The options of generated programs, for every command that builds them."""
    parser.add_argument("--gen-seed", type=int, default=DEFAULT_SEED, metavar="N",
                        help="seed of the generated programs (default: %(default)s)")
    parser.add_argument("--gen-scale", type=float, default=DEFAULT_SCALE, metavar="S",
                        help="function sizes of the generated programs, times the "
                             "measured ones (default: %(default)s)")
    parser.add_argument("--gen-module-scale", type=float, default=DEFAULT_MODULE_SCALE,
                        metavar="F",
                        help="functions, variables, calls into other modules and "
                             "references to their variables per module, times the "
                             "measured ones (default: %(default)s)")


def generator_options(args):
    return {"seed": args.gen_seed, "scale": args.gen_scale,
            "module_scale": args.gen_module_scale}


def load_shape(path=SHAPE):
    with open(path) as f:
        return json.load(f)


class Distribution:
    """Draws from a distribution given by values at percentiles, linearly
    interpolated between them (the tails end at the measured minimum and
    maximum)."""

    def __init__(self, entry, percentiles):
        pairs = sorted(zip(percentiles, entry["q"]))
        self.p = [p / 100 for p, _ in pairs]
        self.v = [float(v) for _, v in pairs]
        self.mean = entry["mean"]

    def draw(self, rng):
        u = rng.random()
        i = bisect.bisect_right(self.p, u)
        if i >= len(self.p):
            return self.v[-1]
        if i == 0:
            return self.v[0]
        p0, p1, v0, v1 = self.p[i - 1], self.p[i], self.v[i - 1], self.v[i]
        return v0 + (v1 - v0) * (u - p0) / (p1 - p0) if p1 > p0 else v1

    def draw_int(self, rng, low=0, times=1.0):
        return max(low, int(round(self.draw(rng) * times)))


class Spec:
    """What decides a generated program."""

    def __init__(self, modules, seed=DEFAULT_SEED, scale=DEFAULT_SCALE,
                 module_scale=DEFAULT_MODULE_SCALE, shape=None):
        if modules < 1:
            raise BenchError("a generated program needs at least 1 module")
        self.modules = modules
        self.seed = seed
        self.scale = scale
        if module_scale <= 0:
            raise BenchError("--gen-module-scale must be above 0")
        self.module_scale = module_scale
        self.shape = shape or load_shape()
        pooled = self.shape["pooled"]
        pct = self.shape["percentiles"]
        self.dist = {k: Distribution(v, pct) for k, v in pooled.items()}
        # Modules per group (plain objects, or one archive): about eight
        # groups, from 10 to 100 modules each (a library).
        self.group = max(10, min(100, modules // 8))

    def recipe_key(self, clang_version):
        """A hash of what decides the sources: the generator's own source,
        the shape, the size, seed and scales, the compiler. Only a memo of
        which tree they make (see the module's docstring)."""
        h = hashlib.sha256()
        with open(os.path.abspath(__file__), "rb") as f:
            h.update(f.read())
        h.update(json.dumps(self.shape, sort_keys=True).encode())
        h.update(f"{self.modules}:{self.seed}:{self.scale}:{self.module_scale}:"
                 f"{clang_version}".encode())
        return h.hexdigest()[:12]

    def group_of(self, m):
        return m // self.group

    def group_kind(self, g):
        """'objects', 'archive' or 'thin' (a thin archive)."""
        if g == 0:
            return "objects"
        return "archive" if g % 2 else "thin"


class _Weighted:
    """Draws indices in proportion to weights (uniformly when all are 0)."""

    def __init__(self, weights):
        self.cum, acc = [], 0.0
        for w in weights:
            acc += w
            self.cum.append(acc)

    def draw(self, rng):
        n = len(self.cum)
        if not self.cum[-1]:
            return rng.randrange(n)
        return min(n - 1, bisect.bisect_right(self.cum, rng.random() * self.cum[-1]))


class Program:
    """The call graph and variables of a generated program, drawn once;
    function bodies are drawn from their own seeds when written or
    evaluated, so the whole program never sits in memory.

    Calls into other modules go to the functions other modules call, as
    often as in the real programs: each function has a weight drawn from
    the measured calls per function from other modules (most have none, a
    few many), and a module's weight is the sum of its functions'. A module
    calls into a few modules (its calls divided by the measured calls per
    callee module), drawn by weight from its own group (a library) but for
    a share CROSS_GROUP drawn from the whole program: real code calls
    mostly within its component, and each real program is one or a few
    components, so that share is an assumption, not a measurement."""

    CROSS_GROUP = 0.1

    def __init__(self, spec):
        self.spec = spec
        d = spec.dist
        n = spec.modules
        self.functions, self.variables, self.callee = [], [], []
        weights = []
        for m in range(n):
            rng = random.Random(f"{spec.seed}:module:{m}")
            nf = d["functions"].draw_int(rng, low=1, times=spec.module_scale)
            self.functions.append(nf)
            self.variables.append(d["variables"].draw_int(rng, times=spec.module_scale))
            fw = [d["function_callers"].draw(rng) for _ in range(nf)]
            self.callee.append(_Weighted(fw))
            weights.append(sum(fw))
        self.everywhere = _Weighted(weights)
        self.groups = []
        for g in range(0, n, spec.group):
            self.groups.append((g, _Weighted(weights[g:g + spec.group])))
        self.with_variables = [m for m in range(n) if self.variables[m]]

    def callee_module(self, rng, m):
        """A module for m to call into, by weight, other than m."""
        n = self.spec.modules
        start, group = self.groups[self.spec.group_of(m)]
        for _ in range(64):
            if rng.random() < self.CROSS_GROUP or len(group.cum) == 1:
                t = self.everywhere.draw(rng)
            else:
                t = start + group.draw(rng)
            if t != m:
                return t
        return (m + 1) % n

    def module_graph(self, m):
        """(calls, refs) of module m: calls[k] lists (module, function,
        salt) that function k calls, in order; refs[k] lists (module,
        variable, shift) that function k reads besides its own variables."""
        return self._graph(m)

    @functools.lru_cache(maxsize=4096)
    def _graph(self, m):
        d = self.spec.dist
        rng = random.Random(f"{self.spec.seed}:graph:{m}")
        nf = self.functions[m]
        calls = [[] for _ in range(nf)]
        for k in range(1, nf):
            calls[rng.randrange(k)].append((m, k, rng.getrandbits(32)))
        for k in range(nf):
            for _ in range(d["local_calls"].draw_int(rng) - 1):
                other = rng.randrange(nf)
                if other != k:
                    calls[k].append((m, other, rng.getrandbits(32)))
        external = d["external_calls"].draw_int(rng, times=self.spec.module_scale)
        if self.spec.modules > 1 and external:
            per_module = max(1.0, self.spec.shape["calls_per_callee_module"])
            targets = [self.callee_module(rng, m)
                       for _ in range(max(1, round(external / per_module)))]
            for _ in range(external):
                t = rng.choice(targets)
                calls[rng.randrange(nf)].append(
                    (t, self.callee[t].draw(rng), rng.getrandbits(32)))
        refs = [[] for _ in range(nf)]
        if self.with_variables:
            for _ in range(d["external_refs"].draw_int(rng, times=self.spec.module_scale)):
                t = self.callee_module(rng, m)
                if not self.variables[t]:
                    t = self.with_variables[rng.randrange(len(self.with_variables))]
                if t != m:
                    refs[rng.randrange(nf)].append(
                        (t, rng.randrange(self.variables[t]), rng.randrange(1, 29)))
        return calls, refs

    def variable_values(self, m, v):
        rng = random.Random(f"{self.spec.seed}:var:{m}:{v}")
        return [rng.getrandbits(32) for _ in range(8)]

    def body(self, m, k, graph):
        """The straight-line part of function k of module m: a list of
        operations, from the function's own seed, as many as its size
        leaves after its calls and references to other modules."""
        d = self.spec.dist
        rng = random.Random(f"{self.spec.seed}:body:{m}:{k}")
        insts = max(4, int(d["insts"].draw(rng) * self.spec.scale))
        nvars = self.variables[m]
        calls, refs = graph
        # IR instructions: 2 for the return and the call guard, 3 a call
        # (xor, call, add), 5 a read of a variable.
        ops, cost = [], 2 + 3 * len(calls[k]) + 5 * len(refs[k])
        # Each variable is read by one function at least (variable v by
        # function v mod functions), or the thin link would drop it.
        nf = self.functions[m]
        for v in range(k, nvars, nf):
            ops.append(("var", m, v, rng.randrange(1, 29)))
            cost += 5
        while cost < insts:
            kind = rng.random()
            if kind < 0.25 and nvars:
                ops.append(("var", m, rng.randrange(nvars), rng.randrange(1, 29)))
                cost += 5
            elif kind < 0.4:
                ops.append(("sel", 1 << rng.randrange(32), rng.getrandbits(32) | 1,
                            rng.getrandbits(32)))
                cost += 5
            else:
                # A multiply-add then a xor-shift: consecutive multiply-adds
                # would fold into one.
                ops.append(("muladd", rng.getrandbits(32) | 1, rng.getrandbits(32)))
                ops.append(("xorshift", rng.randrange(1, 29)))
                cost += 4
        return ops


def _eval_ops(prog, ops, x):
    for op in ops:
        kind = op[0]
        if kind == "muladd":
            x = (x * op[1] + op[2]) & M32
        elif kind == "xorshift":
            x ^= x >> op[1]
        elif kind == "var":
            x = (x + prog.variable_values(op[1], op[2])[(x >> op[3]) & 7]) & M32
        else:  # sel
            x = (x * op[2]) & M32 if x & op[1] else (x + op[3]) & M32
    return x


def evaluate(prog, m, k, x, depth, graph=None):
    """What function k of module m returns for (x, depth)."""
    graph = graph or prog.module_graph(m)
    calls, refs = graph
    x = _eval_ops(prog, prog.body(m, k, graph), x)
    for t, v, shift in refs[k]:
        x = (x + prog.variable_values(t, v)[(x >> shift) & 7]) & M32
    if depth > 0:
        for t, j, salt in calls[k]:
            x = (x + evaluate(prog, t, j, x ^ salt, depth - 1)) & M32
    return x


def checksum(prog, depth=1):
    """What main prints: every entry's result mixed in order (FNV-1a's
    constants)."""
    acc = 2166136261
    for m in range(prog.spec.modules):
        r = evaluate(prog, m, 0, (m * 2654435761) & M32, depth)
        acc = ((acc ^ r) * 16777619) & M32
    return acc


def fname(m, k):
    return f"m{m}_f{k}"


def vname(m, v):
    return f"m{m}_v{v}"


def module_source(prog, m):
    """The C source of module m."""
    graph = prog.module_graph(m)
    calls, refs = graph
    nf = prog.functions[m]
    out = [f"/* Generated module {m}: {nf} functions, {prog.variables[m]} variables. */"]
    foreign = sorted({(t, j) for cs in calls for t, j, _ in cs if t != m})
    for t, j in foreign:
        out.append(f"unsigned {fname(t, j)}(unsigned, int);")
    for t, v in sorted({(t, v) for rs in refs for t, v, _ in rs}):
        out.append(f"extern unsigned {vname(t, v)}[8];")
    for k in range(nf):
        out.append(f"unsigned {fname(m, k)}(unsigned, int);")
    for v in range(prog.variables[m]):
        vals = ", ".join(f"0x{x:08x}u" for x in prog.variable_values(m, v))
        out.append(f"unsigned {vname(m, v)}[8] = {{{vals}}};")
    for k in range(nf):
        lines = [f"unsigned {fname(m, k)}(unsigned x, int d) {{"]
        for op in prog.body(m, k, graph):
            kind = op[0]
            if kind == "muladd":
                lines.append(f"  x = x * 0x{op[1]:08x}u + 0x{op[2]:08x}u;")
            elif kind == "xorshift":
                lines.append(f"  x ^= x >> {op[1]};")
            elif kind == "var":
                lines.append(f"  x += {vname(op[1], op[2])}[(x >> {op[3]}) & 7];")
            else:
                lines.append(f"  x = (x & 0x{op[1]:08x}u) ? x * 0x{op[2]:08x}u"
                             f" : x + 0x{op[3]:08x}u;")
        for t, v, shift in refs[k]:
            lines.append(f"  x += {vname(t, v)}[(x >> {shift}) & 7];")
        if calls[k]:
            lines.append("  if (d > 0) {")
            for t, j, salt in calls[k]:
                lines.append(f"    x += {fname(t, j)}(x ^ 0x{salt:08x}u, d - 1);")
            lines.append("  }")
        lines.append("  return x;")
        lines.append("}")
        out.append("\n".join(lines))
    return "\n".join(out) + "\n"


def main_source(prog):
    n = prog.spec.modules
    out = ["/* Generated: calls every module's entry, prints a checksum. */",
           "#include <stdio.h>",
           "typedef unsigned (*entry_fn)(unsigned, int);"]
    out += [f"unsigned {fname(m, 0)}(unsigned, int);" for m in range(n)]
    out.append("static entry_fn const entries[] = {")
    out += [f"  {fname(m, 0)}," for m in range(n)]
    out.append("};")
    out.append("""int main(int argc, char **argv) {
  (void)argv;
  unsigned acc = 2166136261u;
  /* The depth comes from argc (1 when run without arguments), so that no
     compiler can see it. */
  for (unsigned i = 0; i < sizeof entries / sizeof entries[0]; i++)
    acc = (acc ^ entries[i](i * 2654435761u, argc)) * 16777619u;
  printf("checksum %08x\\n", acc);
  return 0;
}""")
    return "\n".join(out) + "\n"


def expected_output(prog):
    return f"checksum {checksum(prog):08x}\n"


def _rel_source(m, spec):
    return os.path.join("src", f"g{spec.group_of(m)}", f"m{m}.c")


def _rel_object(m, spec):
    return os.path.join("obj", f"g{spec.group_of(m)}", f"m{m}.o")


def write_sources(prog, tree):
    """Writes every source (skipping those already there: the sources of a
    key never change) and the expected output."""
    spec = prog.spec
    for m in range(spec.modules):
        path = os.path.join(tree, _rel_source(m, spec))
        if os.path.exists(path):
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        _write_atomic(path, module_source(prog, m))
    main = os.path.join(tree, "src", "main.c")
    if not os.path.exists(main):
        _write_atomic(main, main_source(prog))
    expected = os.path.join(tree, "expected.txt")
    if not os.path.exists(expected):
        _write_atomic(expected, expected_output(prog))


def _write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _compile_batch(clang, tree, outdir, sources, logfile):
    """One clang process compiling sources into outdir (clang names each
    object after its source)."""
    argv = [clang] + COMPILE_FLAGS + [
        os.path.relpath(os.path.join(tree, s), outdir) for s in sources]
    proc = subprocess.run(argv, cwd=outdir, capture_output=True, text=True,
                          env=clean_env())
    if proc.returncode != 0:
        with open(logfile, "a") as f:
            f.write(f"$ (cd {outdir} && {shlex.join(argv)})\n{proc.stderr}\n")
        raise BenchError(f"compiling {sources[0]} and {len(sources) - 1} more "
                         f"failed; see {logfile}")


def compile_all(spec, tree, clang, logfile, jobs):
    """Compiles every module whose object is missing or older than its
    source, BATCH files per clang, jobs clangs at once."""
    batches = {}
    for m in list(range(spec.modules)) + ["main"]:
        if m == "main":
            src, obj = os.path.join("src", "main.c"), "main.o"
        else:
            src, obj = _rel_source(m, spec), _rel_object(m, spec)
        o = os.path.join(tree, obj)
        if os.path.exists(o) and os.path.getmtime(o) >= os.path.getmtime(
                os.path.join(tree, src)):
            continue
        outdir = os.path.dirname(o)
        os.makedirs(outdir, exist_ok=True)
        batches.setdefault(outdir, []).append(src)
    work = [(outdir, srcs[i:i + BATCH]) for outdir, srcs in batches.items()
            for i in range(0, len(srcs), BATCH)]
    if not work:
        return 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_compile_batch, clang, tree, outdir, srcs, logfile)
                   for outdir, srcs in work]
        for f in futures:
            f.result()
    return sum(len(s) for _, s in work)


def make_archives(spec, tree, llvm_ar):
    """The groups after the first as archives, regular and thin in turn;
    returns the link's inputs in order (relative to the tree)."""
    inputs = ["main.o"]
    groups = (spec.modules + spec.group - 1) // spec.group
    for g in range(groups):
        members = [_rel_object(m, spec) for m in
                   range(g * spec.group, min(spec.modules, (g + 1) * spec.group))]
        kind = spec.group_kind(g)
        if kind == "objects":
            inputs += members
            continue
        lib = os.path.join("lib", f"libg{g}.a")
        path = os.path.join(tree, lib)
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            flags = "rcsT" if kind == "thin" else "rcs"
            list_file = path + ".members"
            with open(list_file, "w") as f:
                f.write("\n".join(members) + "\n")
            tmp = path + ".tmp"
            if os.path.exists(tmp):
                os.remove(tmp)
            subprocess.run([llvm_ar, flags, os.path.relpath(tmp, tree),
                            "@" + os.path.relpath(list_file, tree)],
                           cwd=tree, check=True, env=clean_env())
            os.remove(list_file)
            os.replace(tmp, path)
        inputs.append(lib)
    return inputs


def size_ratio(spec):
    """How much smaller generated functions are than the real ones, on
    average: the scale applies to their straight-line part, not to their
    calls (3 IR instructions each), whose number is the measured one."""
    d = spec.dist
    calls = d["local_calls"].mean + d["external_calls"].mean / max(1.0, d["functions"].mean)
    call_insts = min(3 * calls, d["insts"].mean)
    return (call_insts + spec.scale * (d["insts"].mean - call_insts)) / d["insts"].mean


def import_limit(spec):
    """The thin link imports functions of up to 100 IR instructions (LLVM
    22's -import-instr-limit); for functions drawn at a scale the limit
    shrinks with their mean size, so that the thin link imports about what
    it would at the real sizes."""
    if spec.scale == 1:
        return []
    return ["-mllvm", f"-import-instr-limit={max(1, round(100 * size_ratio(spec)))}"]


def link_command(clang, tree, inputs, output):
    """The ld.lld arguments clang -fuse-ld=lld -flto=thin would use, from
    clang -###, as the recorded links of the other programs."""
    # A response file keeps the command short: clang expands it.
    rsp = os.path.join(tree, "link-inputs.rsp")
    with open(rsp, "w") as f:
        f.write("\n".join(inputs) + "\n")
    proc = subprocess.run([clang, "-###", "-flto=thin", "-fuse-ld=lld",
                           "@link-inputs.rsp", "-o", output],
                          cwd=tree, capture_output=True, text=True, env=clean_env())
    lines = [l for l in proc.stderr.splitlines() if l.startswith(' "')]
    if proc.returncode != 0 or not lines:
        raise BenchError(f"clang -### gave no link command: {proc.stderr[-300:]}")
    argv = shlex.split(lines[-1])
    if not os.path.basename(argv[0]).startswith(("ld.lld", "ld")):
        raise BenchError(f"clang -### named no ld.lld: {argv[0]}")
    return argv[1:]


def content_key(spec, staged, clang_version):
    """A hash of what a generated tree is made of: every file
    write_sources wrote into staged (names and bytes), and how they are
    built (the compiler and its flags, the groups and their kinds, the
    link's extra options)."""
    h = hashlib.sha256()
    groups = (spec.modules + spec.group - 1) // spec.group
    h.update(json.dumps({"clang": clang_version, "compile": COMPILE_FLAGS,
                         "group": spec.group,
                         "kinds": [spec.group_kind(g) for g in range(groups)],
                         "link": import_limit(spec)}, sort_keys=True).encode())
    # (A .tmp is a file whose writing was cut off; write_sources writes it
    # again.)
    names = [os.path.relpath(os.path.join(d, f), staged)
             for d, _, files in os.walk(staged) for f in files
             if not f.endswith(".tmp")]
    for rel in sorted(names):
        with open(os.path.join(staged, rel), "rb") as f:
            data = f.read()
        h.update(f"{rel}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()[:12]


def _tree_from_recipe(cache, recipe):
    """The tree the memo of recipe (Spec.recipe_key) names, or None when
    the sources of this generator were never written (or the memo's tree is
    gone)."""
    memo = os.path.join(cache, "generated", "recipes", recipe)
    if not os.path.exists(memo):
        return None
    with open(memo) as f:
        tree = os.path.join(cache, "generated", f.read().strip())
    return tree if os.path.isdir(tree) else None


def built_tree(spec, cache, clang_version):
    """The finished tree of spec in cache, or None."""
    tree = _tree_from_recipe(cache, spec.recipe_key(clang_version))
    return tree if tree and os.path.exists(os.path.join(tree, STAMP)) else None


def _generate(spec, cache, clang_version, recipe, name):
    """Writes the sources of spec (in a staging folder, so that a tree is
    never seen half written), names the tree by their content_key and
    records the recipe memo; returns the tree and the seconds it took. The
    tree may exist already: the same program from an earlier generator."""
    generated = os.path.join(cache, "generated")
    staged = os.path.join(generated, f".staging-gen{spec.modules}-{recipe}")
    start = time.monotonic()
    prog = Program(spec)
    log(f"generating {name} (seed {spec.seed}, scale {spec.scale}, "
        f"module scale {spec.module_scale})")
    write_sources(prog, staged)
    key = content_key(spec, staged, clang_version)
    tree = os.path.join(generated, f"gen{spec.modules}-{key}")
    if os.path.isdir(tree):
        shutil.rmtree(staged)
        log(f"{name}: these sources were generated before, in {tree}")
    else:
        os.replace(staged, tree)
    memos = os.path.join(generated, "recipes")
    os.makedirs(memos, exist_ok=True)
    _write_atomic(os.path.join(memos, recipe), os.path.basename(tree) + "\n")
    return tree, time.monotonic() - start


def prepare(spec, cache, tools):
    """Make sure the generated program of spec is built; return the
    harness's build info (see prepare.prepare)."""
    version = subprocess.run([tools["clang"], "--version"], capture_output=True,
                             text=True).stdout.splitlines()[0]
    name = f"gen{spec.modules}"
    recipe = spec.recipe_key(version)
    tree = _tree_from_recipe(cache, recipe)
    generated = 0.0
    if tree is None:
        tree, generated = _generate(spec, cache, version, recipe, name)
    stamp = os.path.join(tree, STAMP)
    if os.path.exists(stamp):
        with open(stamp) as f:
            link = json.load(f)
        return _info(name, spec, tree, link)
    logdir = os.path.join(cache, "logs")
    os.makedirs(logdir, exist_ok=True)
    logfile = os.path.join(logdir, f"{name}-build.log")
    start = time.monotonic()
    jobs = len(os.sched_getaffinity(0))
    log(f"compiling {name} in {tree}: {spec.modules + 1} modules, {BATCH} per clang, "
        f"{jobs} at once (log: {logfile})")
    compiled = compile_all(spec, tree, tools["clang"], logfile, jobs)
    inputs = make_archives(spec, tree, tools["llvm-ar"])
    args = link_command(tools["clang"], tree, inputs, "prog") + import_limit(spec)
    link = {"cwd": tree, "args": args, "key": os.path.basename(tree).split("-")[-1],
            "modules": spec.modules,
            "seed": spec.seed, "scale": spec.scale, "module_scale": spec.module_scale,
            "generate_seconds": round(generated, 1),
            "build_seconds": round(generated + time.monotonic() - start, 1),
            "compiled": compiled}
    _write_atomic(stamp, json.dumps(link, indent=1))
    log(f"built {name} in {link['build_seconds']} s "
        f"(generation {link['generate_seconds']} s)")
    return _info(name, spec, tree, link)


def _info(name, spec, tree, link):
    return {"program": name, "package": "generated",
            "version": f"{spec.modules} modules, seed {spec.seed}, scale {spec.scale}, "
                       f"module scale {spec.module_scale}",
            "tree": tree, "cwd": link["cwd"], "args": link["args"], "output": "prog",
            "build_seconds": link.get("build_seconds")}


def find_generated(cache, modules, module_scale):
    """The recorded build (dtlto-bench-build.json) of the generated program
    of this many modules at this module scale in cache, or None. When
    generators that made different programs left a tree each, the one
    built last."""
    found = None
    for path in glob.glob(os.path.join(cache, "generated", "*", STAMP)):
        with open(path) as f:
            build = json.load(f)
        if build.get("modules") == modules and build.get("module_scale") == module_scale:
            when = os.path.getmtime(path)
            if found is None or when > found[0]:
                found = (when, build)
    return found and found[1]


def is_generated_name(name):
    """Whether name names a generated program: gen<N>."""
    return name.startswith("gen") and name[3:].isdigit()


def require_generated(cache, name, module_scale):
    """The recorded build of the generated program called name (gen<N>) at
    this module scale; when there is none, a BenchError naming the command
    that builds it."""
    build = (find_generated(cache, int(name[3:]), module_scale)
             if is_generated_name(name) else None)
    if build is None:
        raise BenchError(f"no generated {name} at module scale {module_scale} in {cache}: "
                         f"run bench/run.py --programs {name} --gen-module-scale "
                         f"{module_scale} --build-only")
    return build


def add_replay_options(parser, src_root, several_linkers=False):
    """The options of the scripts that replay a prepared program's recorded
    link with our tools and LLVM 22's (bench/cpu-split.py, bench/engine-replay.py,
    bench/job-cpu.py, bench/peak-rss.py, bench/upto.py). With several_linkers,
    --ld-lld may be repeated, each PATH[,NAME=VALUE...], and is a list (None
    when not given)."""
    parser.add_argument("--gen-module-scale", type=float, default=0.1,
                        help="the module scale of a generated program (default: %(default)s)")
    add_cache_option(parser)
    ours = os.path.join(src_root, "build/bin/ld.lld")
    if several_linkers:
        parser.add_argument("--ld-lld", action="append", metavar="PATH[,NAME=VALUE...]",
                            help=f"our linker, and environment settings for its links; "
                                 f"repeat to compare builds (default: {ours}); "
                                 "builtin:local runs the dtlto-plugin-host and "
                                 "dtlto-backend beside it")
    else:
        parser.add_argument("--ld-lld", default=ours,
                            help="our linker (default: %(default)s); builtin:local runs the "
                                 "dtlto-plugin-host and dtlto-backend beside it")
    parser.add_argument("--dtlto-backend",
                        default=os.path.join(src_root, "build/bin/dtlto-backend"),
                        help="the remote compiler of the native modes (default: "
                             "%(default)s); not builtin:local's: to compare two backends "
                             "there, give --ld-lld in a copy of build/bin that holds the "
                             "other one")
    parser.add_argument("--stock-ld-lld", default="/usr/lib/llvm-22/bin/ld.lld",
                        help="LLVM 22's own linker, to compare with (default: %(default)s)")
