"""The shape of a ThinLTO link, read from its summaries: how many functions
and variables each module defines, how large the functions are, how the
modules call each other, and what the thin link makes each module import.

The generator of large programs (generate.py) draws its programs from these
distributions, measured on the benchmark's real programs; the same census of
a generated program shows that it follows them.

How: the program's recorded link is replayed with LLVM 22's ld.lld in
index-only mode (--thinlto-index-only, --thinlto-emit-imports-files,
--save-temps), which runs the thin link and stops: the combined index
(<out>.index.bc) holds every module's summaries after the thin link, and
each module's index file (<module>.thinlto.bc, what a distributed backend
gets) holds what it imports. llvm-dis prints both as text, which is parsed
here. Dead summaries (live: 0) are left out, as the thin link leaves them
out of the backends.
"""

import json
import os
import re
import statistics
import subprocess
import tempfile

from . import BenchError

# The quantities, per module unless said otherwise; the first group is what
# the generator draws from, the second what it must reproduce.
DRAWN = {
    "functions": "functions defined per module",
    "variables": "variables defined per module",
    "insts": "IR instructions per function",
    "local_calls": "calls per function to functions of its own module",
    "external_calls": "calls per module to functions other modules define",
    "callees": "modules a module calls into (out-degree)",
    "external_refs": "references per module to variables other modules define",
    "function_callers": "calls per function from other modules",
}
RESULTING = {
    "callers": "modules calling into a module (in-degree)",
    "imported_functions": "functions imported per module by the thin link",
    "import_sources": "modules imported from, per module",
    "bitcode_bytes": "bitcode bytes per module",
    "shard_bytes": "index shard bytes per module (LLVM 22's)",
}
QUANTITIES = {**DRAWN, **RESULTING}

_TOKEN = re.compile(r'\^\d+|"(?:[^"\\]|\\.)*"|[A-Za-z_][\w.$]*|-?\d+|[(),:]')


def _parse_value(tokens, i):
    """One value of the summary assembly at tokens[i]: an atom, or a
    parenthesised list of items, each [key, value] or [None, value]."""
    if tokens[i] != "(":
        return tokens[i], i + 1
    items, i = [], i + 1
    while tokens[i] != ")":
        if tokens[i] == ",":
            i += 1
            continue
        if i + 1 < len(tokens) and tokens[i + 1] == ":":
            key = tokens[i]
            value, i = _parse_value(tokens, i + 2)
            items.append([key, value])
        else:
            value, i = _parse_value(tokens, i)
            items.append([None, value])
    return items, i + 1


def _get(items, key, default=None):
    if isinstance(items, list):
        for k, v in items:
            if k == key:
                return v
    return default


def parse_index_text(text):
    """(modules, gvs) from llvm-dis output of a summary index: modules maps
    ^id to path; gvs maps ^id to (guid, [summary dicts]). A summary dict has
    kind, module (path), live, linkage, insts, calls and refs (^ids)."""
    modules, raw = {}, {}
    for line in text.splitlines():
        m = re.match(r"(\^\d+) = (module|gv): (.*)$", line)
        if not m:
            continue
        value, _ = _parse_value(_TOKEN.findall(m.group(3)), 0)
        if m.group(2) == "module":
            modules[m.group(1)] = json.loads(_get(value, "path"))
        else:
            raw[m.group(1)] = value
    gvs = {}
    for vid, value in raw.items():
        summaries = []
        for kind, body in _get(value, "summaries", []):
            flags = _get(body, "flags", [])
            calls = [_get(c, "callee") for _, c in _get(body, "calls", [])]
            refs = [r for _, r in _get(body, "refs", [])]
            summaries.append({
                "kind": kind, "module": modules.get(_get(body, "module")),
                "live": _get(flags, "live") == "1",
                "linkage": _get(flags, "linkage"),
                "insts": int(_get(body, "insts", 0)),
                "calls": calls, "refs": refs})
        gvs[vid] = (_get(value, "guid"), summaries)
    return modules, gvs


def _dis(llvm_dis, path):
    proc = subprocess.run([llvm_dis, "-o", "-", path], capture_output=True, text=True)
    if proc.returncode != 0:
        raise BenchError(f"llvm-dis {path} failed: {proc.stderr.strip()[-200:]}")
    return proc.stdout


def _member_sizes(archive):
    """{header offset: size} of the members of a regular ar archive (LLD
    names a member by the offset of its header)."""
    sizes = {}
    with open(archive, "rb") as f:
        if f.read(8) != b"!<arch>\n":
            return sizes
        pos = 8
        while True:
            header = f.read(60)
            if len(header) < 60:
                return sizes
            size = int(header[48:58].decode().strip() or 0)
            sizes[pos] = size
            pos += 60 + size + (size & 1)
            f.seek(pos)


def module_bytes(module_id, cwd, cache):
    """Size of a module's bitcode: a file, or a member of a regular archive
    ('lib.a(m.o at 1234)', as LLD names them)."""
    m = re.match(r"(.*)\((.*) at (\d+)\)$", module_id)
    if not m:
        return os.path.getsize(os.path.join(cwd, module_id))
    archive = os.path.join(cwd, m.group(1))
    if archive not in cache:
        cache[archive] = _member_sizes(archive)
    return cache[archive].get(int(m.group(3)), 0)


def index_only_link(ld_lld, cwd, args, workdir):
    """Runs the thin link of a recorded link and stops; returns the combined
    index's path. Every file goes to workdir."""
    args = list(args)
    args[args.index("-o") + 1] = os.path.join(workdir, "out")
    argv = [ld_lld] + args + [f"--thinlto-index-only={workdir}/index-files.txt",
                              "--thinlto-emit-imports-files",
                              f"--thinlto-prefix-replace=;{workdir}/", "--save-temps"]
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BenchError(f"the index-only link in {cwd} failed: "
                         f"{proc.stderr.strip()[-300:]}")
    return os.path.join(workdir, "out.index.bc")


def census(ld_lld, llvm_dis, cwd, args):
    """{quantity: [one value per module (or function, for insts)]} of the
    recorded link, and the module count."""
    with tempfile.TemporaryDirectory(prefix="dtlto-census-") as work:
        modules, gvs = parse_index_text(_dis(llvm_dis, index_only_link(
            ld_lld, cwd, args, work)))
        definers = {}  # ^id -> modules defining it (live)
        for vid, (_, sums) in gvs.items():
            definers[vid] = {s["module"] for s in sums if s["live"]}
        # The regular LTO part of a link (ninja's CFI) is a pseudo-module of
        # the combined index, "[Regular LTO]": no ThinLTO module, no job.
        modules = {k: v for k, v in modules.items() if not v.startswith("[")}
        per = {path: {q: 0 for q in QUANTITIES} for path in modules.values()}
        callers = {path: set() for path in modules.values()}
        callees = {path: set() for path in modules.values()}
        insts, local_calls = [], []
        function_callers = {}  # (module, ^id) -> calls from other modules
        functions = []  # (module, ^id) of every live function
        for vid, (_, sums) in gvs.items():
            for s in sums:
                if not s["live"] or s["module"] not in per:
                    continue
                p = per[s["module"]]
                if s["kind"] == "variable":
                    p["variables"] += 1
                    continue
                if s["kind"] != "function":
                    continue
                p["functions"] += 1
                functions.append((s["module"], vid))
                insts.append(s["insts"])
                local = 0
                for callee in s["calls"]:
                    where = definers.get(callee, set())
                    if s["module"] in where:
                        local += 1
                    elif where:
                        p["external_calls"] += 1
                        # A function several modules define (C++ inline
                        # functions): count one definer, as one is kept.
                        for other in sorted(where)[:1]:
                            function_callers[(other, callee)] = \
                                function_callers.get((other, callee), 0) + 1
                            callers[other].add(s["module"])
                            callees[s["module"]].add(other)
                local_calls.append(local)
                for ref in s["refs"]:
                    where = definers.get(ref, set())
                    if where and s["module"] not in where and any(
                            x["kind"] == "variable" for x in gvs[ref][1]):
                        p["external_refs"] += 1
        member_cache = {}
        for path, p in per.items():
            p["callers"] = len(callers[path])
            p["callees"] = len(callees[path])
            p["bitcode_bytes"] = module_bytes(path, cwd, member_cache)
            shard = os.path.join(work, path + ".thinlto.bc")
            if os.path.exists(shard):
                p["shard_bytes"] = os.path.getsize(shard)
                _, sgvs = parse_index_text(_dis(llvm_dis, shard))
                p["imported_functions"] = sum(
                    1 for _, sums in sgvs.values() for s in sums
                    if s["kind"] == "function" and s["module"] != path)
            imports = os.path.join(work, path + ".imports")
            if os.path.exists(imports):
                with open(imports) as f:
                    p["import_sources"] = sum(1 for line in f if line.strip())
    per_function = ("insts", "local_calls", "function_callers")
    out = {q: [p[q] for p in per.values()] for q in QUANTITIES
           if q not in per_function}
    out["insts"] = insts
    out["local_calls"] = local_calls
    # Every live function, called from other modules or not.
    out["function_callers"] = [function_callers.get(key, 0) for key in functions]
    return out, len(per)


PERCENTILES = list(range(0, 101, 5)) + [99]


def quantiles(values):
    """The values at PERCENTILES (nearest rank), plus the mean."""
    v = sorted(values)
    if not v:
        return {"mean": 0, "q": [0] * len(PERCENTILES)}
    q = [v[min(len(v) - 1, max(0, round(p / 100 * (len(v) - 1))))] for p in
         sorted(PERCENTILES)]
    return {"mean": statistics.fmean(v), "q": q}


def summarize(samples):
    """{quantity: quantiles} of census() samples."""
    return {q: quantiles(v) for q, v in samples.items()}
