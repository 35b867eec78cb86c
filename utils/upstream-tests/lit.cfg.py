# -*- Python -*-
# A lit configuration for running LLVM's own DTLTO regression tests
# (lld/test/{ELF,COFF}/dtlto, llvm/test/ThinLTO/X86/dtlto,
# cross-project-tests/dtlto) outside the llvm-project tree, against any set of
# linker binaries: the stock ones, ours, or the stock ones with our preload
# library. It sets up only the substitutions and features those tests use.
# The tests themselves are LLVM's and are not in this repository: see
# README.md next to this file, and prepare.sh, which copies them from an
# llvm-project checkout into a scratch directory whose lit.site.cfg.py loads
# this file (and sets config.upstream_root to that directory).
#
#   lit -sv SCRATCH/lld/test SCRATCH/llvm/test SCRATCH/cross-project-tests \
#       [--param tools_dir=/usr/lib/llvm-22/bin] \
#       [--param ld_lld=PATH] [--param lld_link=PATH] [--param llvm_lto2=PATH] \
#       [--param clang=PATH] [--param clangxx=PATH] [--param python=PATH] \
#       [--param preload=PATH [--param preload_tools=ld.lld,lld-link,llvm-lto2]] \
#       [--param llvm_src_root=DIR]   # DIR/utils/dtlto/{mock,validate,local}.py
#       [--param exec_root=DIR]
#
# DTLTO_* environment variables (DTLTO_UPSTREAM_COMPAT=1, ...) reach the
# links.

import os
import shlex
import stat
import sys

import lit.formats
import lit.llvm
import lit.util
from lit.llvm.subst import ToolSubst

params = lit_config.params
upstream_root = getattr(config, "upstream_root", None)
if not upstream_root:
    lit_config.fatal("config.upstream_root is not set: run lit on a directory "
                     "made by utils/upstream-tests/prepare.sh")


def param(name, default=None):
    value = params.get(name)
    return value if value not in (None, "") else default


config.name = "dtlto-upstream"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".test", ".ll", ".c", ".cpp"]
# LLVM's distributor scripts (utils/) and our output (_out) are not tests.
config.excludes = ["Inputs", "_out", "utils"]
config.test_source_root = upstream_root
config.test_exec_root = param(
    "exec_root", os.path.join(upstream_root, "_out")
)

# Directory of the stock LLVM tools (opt, llc, llvm-ar, FileCheck, split-file,
# count, not, ...).  Needed by use_default_substitutions().
tools_dir = param("tools_dir", "/usr/lib/llvm-22/bin")
config.llvm_tools_dir = tools_dir

# The tests reach the distributor scripts as %llvm_src_root/utils/dtlto/*.py.
llvm_src_root = param("llvm_src_root", os.path.join(upstream_root, "llvm"))
config.llvm_src_root = llvm_src_root
config.llvm_obj_root = param("llvm_obj_root", llvm_src_root)

# PATH: the tools dir first, then the host PATH (sed, ls, sort, grep, cmp ...).
config.environment["PATH"] = os.pathsep.join(
    [tools_dir, os.environ.get("PATH", "/usr/bin:/bin")]
)
for var in ("HOME", "TMP", "TEMP", "TMPDIR", "LANG", "LC_ALL"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
# Settings of our engine (DTLTO_UPSTREAM_COMPAT=1 ...) reach the links.
for var in os.environ:
    if var.startswith("DTLTO_"):
        config.environment[var] = os.environ[var]

# Same constants as upstream lld/test/lit.cfg.py.
config.environment["LLD_VERSION"] = "LLD 1.0"
config.environment["LLD_IN_TEST"] = "1"

# FileCheck, '| count', '| not', %python (and the system-* features).
lit.llvm.initialize(lit_config, config)
llvm_config = lit.llvm.llvm_config
llvm_config.use_default_substitutions()
python = param("python")
if python:
    config.substitutions = [
        (k, ('"%s"' % python) if k == "%python" else v)
        for (k, v) in config.substitutions
    ]


def tool(name, param_name):
    path = param(param_name, os.path.join(tools_dir, name))
    return path if os.path.exists(path) else None


ld_lld = tool("ld.lld", "ld_lld")
lld_link = tool("lld-link", "lld_link")
llvm_lto2 = tool("llvm-lto2", "llvm_lto2")
clang = tool("clang", "clang")
clangxx = tool("clang++", "clangxx")

def write_wrapper(name, body):
    wrap_dir = os.path.join(config.test_exec_root, "_wrappers")
    os.makedirs(wrap_dir, exist_ok=True)
    w = os.path.join(wrap_dir, name)
    with open(w, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(w, os.stat(w).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return w


# Optional LD_PRELOAD for selected (normally stock) binaries: each is reached
# through a wrapper script with the tool's own name, so argv[0] (and so lld's
# flavour and its "ld.lld:" message prefix) is unchanged, and no other process
# of the test (clang, opt, python, the distributor) gets the preload.
preload = param("preload")
if preload:
    wanted = param("preload_tools", "ld.lld,lld-link").split(",")
    real = {"ld.lld": ld_lld, "lld-link": lld_link, "llvm-lto2": llvm_lto2}
    wrapped = {}
    for name in wanted:
        target = real.get(name)
        if target:
            wrapped[name] = write_wrapper(
                name,
                "LD_PRELOAD=%s${LD_PRELOAD:+:$LD_PRELOAD} exec %s \"$@\""
                % (shlex.quote(preload), shlex.quote(target)))
    ld_lld = wrapped.get("ld.lld", ld_lld)
    lld_link = wrapped.get("lld-link", lld_link)
    llvm_lto2 = wrapped.get("llvm-lto2", llvm_lto2)

subs = []
if ld_lld:
    subs.append(ToolSubst(r"ld\.lld", command=ld_lld))
    config.available_features.add("ld.lld")
if lld_link:
    subs.append(ToolSubst("lld-link", command=lld_link))
    config.available_features.add("lld-link")
if llvm_lto2:
    subs.append(ToolSubst("llvm-lto2", command=llvm_lto2))
    config.available_features.add("llvm-lto2")
llvm_config.add_tool_substitutions(subs, [tools_dir])

if clang:
    config.available_features.add("clang")
    # clang looks for ld.lld next to its own (resolved) executable, so a
    # -fuse-ld=lld link would run the stock ld.lld.  Unless told otherwise
    # (--param clang_ld_path=0), %clang/%clangxx name a one-line wrapper that
    # adds --ld-path=<ld.lld under test>.  A wrapper rather than an extra
    # argument keeps %clang a single word: tests also pass it as a value
    # (--thinlto-remote-compiler=%clang, -dtlto-compiler=%clang).
    use_ld_path = param("clang_ld_path", "auto")
    if ld_lld and (
        use_ld_path == "1"
        or (use_ld_path == "auto"
            and os.path.realpath(ld_lld)
            != os.path.realpath(os.path.join(os.path.dirname(clang), "ld.lld")))
    ):
        clang = write_wrapper(
            "clang", "exec %s --ld-path=%s \"$@\"" % (shlex.quote(clang), shlex.quote(ld_lld)))
        if clangxx:
            clangxx = write_wrapper(
                "clang++",
                "exec %s --ld-path=%s \"$@\"" % (shlex.quote(clangxx), shlex.quote(ld_lld)))
    if clangxx:
        config.substitutions.append(("%clangxx", clangxx))
    config.substitutions.append(("%clang", clang))

for name in ("opt", "llvm-ar"):
    if os.path.exists(os.path.join(tools_dir, name)):
        config.available_features.add(name)

# lld/test: 'REQUIRES: x86'.  llvm/test, cross-project-tests:
# 'REQUIRES: x86-registered-target'.  Debian's LLVM 22 has the X86 target.
targets = param("targets", "X86 AArch64 ARM")
for arch in targets.split():
    config.available_features.add(arch.lower())
    config.available_features.add(arch.lower() + "-registered-target")

config.substitutions.append(("%llvm_src_root", llvm_src_root))
config.substitutions.append(("%llvm_obj_root", config.llvm_obj_root))
config.substitutions.append(("%llvm_tools_dir", tools_dir))

lit_config.note(
    "dtlto-upstream: ld.lld=%s lld-link=%s llvm-lto2=%s clang=%s "
    "llvm_src_root=%s preload=%s"
    % (ld_lld, lld_link, llvm_lto2, clang, llvm_src_root, preload)
)
