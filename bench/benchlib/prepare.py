"""Fetching, unpacking and building the benchmark programs into the cache."""

import json
import os

from . import BenchError, sources
from .programs import BUILD_STAMP, Generated, build, program as program_named
from .util import clean_env, log

# Debian packages the harness itself needs (besides clang-22, lld-22 and
# llvm-22, which the project needs anyway): make and the C library headers
# and start files for building, dpkg-dev for dpkg-source, libreadline-dev
# for lua; zlib and lzma headers, which zstd's Makefile uses when present;
# cmake for ninja.
# Marks a completely unpacked tree; holds the package version.
UNPACKED = ".dtlto-bench-unpacked"

BUILD_PACKAGES = ["build-essential", "cmake", "dpkg-dev", "libreadline-dev",
                  "zlib1g-dev", "liblzma-dev"]


def tools(clang, stock_ld_lld):
    """The compilers and archivers the builds use: clang and the LLVM tools
    beside it (llvm-ar for the generated programs' archives), and stock
    LLVM's ld.lld."""
    clang_real = os.path.realpath(clang)
    bindir = os.path.dirname(clang_real)
    found = {"clang": clang, "clang++": os.path.join(bindir, "clang++"),
             "llvm-ar": os.path.join(bindir, "llvm-ar"),
             "llvm-ar-path": os.path.join(bindir, "llvm-ar"),
             "llvm-ranlib": os.path.join(bindir, "llvm-ranlib"),
             "stock-ld": os.path.realpath(stock_ld_lld)}
    for key, path in found.items():
        if not os.access(path.split()[0], os.X_OK):
            raise BenchError(f"{path} is missing ({key}): install clang-22, "
                             "lld-22 and llvm-22")
    return found


def install_packages():
    """apt-get install what the harness needs and is missing (root only)."""
    import subprocess
    missing = [p for p in BUILD_PACKAGES
               if subprocess.run(["dpkg-query", "-W", "-f=${Status}", p],
                                 capture_output=True, text=True).stdout
               != "install ok installed"]
    if not missing:
        return
    if os.geteuid() != 0:
        raise BenchError(f"missing Debian packages: {' '.join(missing)} "
                         f"(apt-get install {' '.join(missing)})")
    log(f"installing {' '.join(missing)}")
    env = clean_env({"DEBIAN_FRONTEND": "noninteractive"})
    subprocess.run(["apt-get", "update", "-q"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    proc = subprocess.run(["apt-get", "install", "-y", "-q",
                           "--no-install-recommends"] + missing, env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise BenchError(f"apt-get install {' '.join(missing)} failed: "
                         + proc.stderr.strip()[-300:])


def prepare(name, cache, tools, gen=None):
    """Make sure the program is built in the cache; return its build info.

    The info has: program, package, version, tree (the build directory), cwd
    and args (the recorded final link), output (the linked program). gen
    holds the seed and scale of generated programs (generate.py)."""
    program = program_named(name)
    if isinstance(program, Generated):
        from . import generate
        spec = generate.Spec(program.modules, **(gen or {}))
        return generate.prepare(spec, cache, tools)
    os.makedirs(cache, exist_ok=True)
    logdir = os.path.join(cache, "logs")
    os.makedirs(logdir, exist_ok=True)
    # A finished build of any version is reused without asking apt.
    for entry in sorted(os.listdir(cache)):
        tree = os.path.join(cache, entry)
        stamp = os.path.join(tree, BUILD_STAMP)
        if entry.startswith(program.package + "_") and os.path.exists(stamp) \
                and os.path.exists(os.path.join(tree, program.output)):
            with open(stamp) as f:
                link = json.load(f)
            with open(os.path.join(tree, UNPACKED)) as f:
                version = f.read().strip()
            return _info(program, version, tree, link)

    sources.ensure_deb_src(program.package)
    logfile = os.path.join(logdir, f"{program.name}-fetch.log")
    version, dsc = sources.fetch(program.package, os.path.join(cache, "downloads"),
                                 logfile)
    tree = os.path.join(cache, f"{program.package}_{version.replace(':', '_')}")
    logfile = os.path.join(logdir, f"{program.name}-build.log")
    if not os.path.exists(os.path.join(tree, UNPACKED)):
        log(f"unpacking {os.path.basename(dsc)} into {tree}")
        sources.unpack(dsc, tree, logfile)
        with open(os.path.join(tree, UNPACKED), "w") as f:
            f.write(version + "\n")
    tools = dict(tools, orig=sources.orig_tarball(dsc), env=clean_env())
    # make is incremental: a failed build continues where it stopped next
    # time; only a finished one has its stamp.
    link = build(program, tree, tools, logfile)
    log(f"built {program.name} {version} in {link['build_seconds']} s")
    return _info(program, version, tree, link)


def _info(program, version, tree, link):
    return {"program": program.name, "package": program.package,
            "version": version, "tree": tree, "cwd": link["cwd"],
            "args": link["args"], "output": program.output,
            "build_seconds": link.get("build_seconds")}
