"""Debian source packages: make sure apt knows deb-src, download, unpack.

The deb-src entry is derived from the machine's own `deb` entries (same
mirror, suites, components and key), so the harness never names a mirror.
"""

import functools
import glob
import os
import re
import shutil
import subprocess

from . import BenchError
from .util import clean_env, log, run

SOURCES_D = "/etc/apt/sources.list.d"
OUR_SOURCES = os.path.join(SOURCES_D, "dtlto-bench-src.sources")


def _showsrc(package):
    proc = subprocess.run(["apt-cache", "showsrc", "--only-source", package],
                          capture_output=True, text=True, env=clean_env())
    if proc.returncode != 0:
        return []
    return re.findall(r"^Version: (\S+)$", proc.stdout, re.M)


def _deb822_stanzas(text):
    for block in re.split(r"\n\s*\n", text):
        fields = {}
        for line in block.splitlines():
            if line.startswith("#") or ":" not in line or line[0].isspace():
                continue
            key, value = line.split(":", 1)
            fields[key.strip().lower()] = value.strip()
        if fields:
            yield fields


def _derived_deb_src():
    """deb-src stanzas mirroring the enabled Debian `deb` entries."""
    stanzas = []
    for path in sorted(glob.glob(os.path.join(SOURCES_D, "*.sources"))):
        if path == OUR_SOURCES:
            continue
        with open(path) as f:
            for s in _deb822_stanzas(f.read()):
                types = s.get("types", "").split()
                if "deb" not in types or s.get("enabled", "yes") == "no":
                    continue
                if "debian" not in s.get("signed-by", "") + s.get("uris", ""):
                    continue
                stanzas.append(s)
    one_line = [os.path.join("/etc/apt", "sources.list")]
    one_line += sorted(glob.glob(os.path.join(SOURCES_D, "*.list")))
    for path in one_line:
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for line in f:
                m = re.match(r"\s*deb\s+(\[[^\]]*\]\s+)?(\S+)\s+(\S+)\s+(.*)", line)
                if not m or "debian" not in m.group(2):
                    continue
                s = {"uris": m.group(2), "suites": m.group(3),
                     "components": m.group(4).strip()}
                opts = re.search(r"signed-by=(\S+?)[\s\]]", m.group(1) or "")
                if opts:
                    s["signed-by"] = opts.group(1)
                stanzas.append(s)
    out = []
    for s in stanzas:
        lines = ["Types: deb-src", f"URIs: {s['uris']}", f"Suites: {s['suites']}",
                 f"Components: {s.get('components', 'main')}"]
        if s.get("signed-by"):
            lines.append(f"Signed-By: {s['signed-by']}")
        out.append("\n".join(lines))
    return "\n\n".join(out) + "\n" if out else ""


def ensure_deb_src(probe_package):
    """Add a deb-src entry (and apt-get update) when apt knows no sources."""
    if _showsrc(probe_package):
        return
    if os.geteuid() != 0:
        raise BenchError(
            f"apt knows no source package '{probe_package}': add a 'Types: "
            f"deb-src' entry under {SOURCES_D} and run apt-get update (as root), "
            "or run the harness as root to have it done")
    text = _derived_deb_src()
    if not text:
        raise BenchError("no Debian 'deb' entry found under /etc/apt to derive a "
                         f"deb-src entry from: add one to {OUR_SOURCES}")
    log(f"adding deb-src entries in {OUR_SOURCES} and running apt-get update")
    with open(OUR_SOURCES, "w") as f:
        f.write("# Written by dtlto bench/run.py: source packages for benchmarks.\n")
        f.write(text)
    run(["apt-get", "update", "-q"], env=clean_env(), capture=True)
    if not _showsrc(probe_package):
        raise BenchError(f"apt still knows no source package '{probe_package}' "
                         f"after adding {OUR_SOURCES} and apt-get update")


def _version_key():
    def cmp(a, b):
        if a == b:
            return 0
        lt = subprocess.run(["dpkg", "--compare-versions", a, "lt", b]).returncode
        return -1 if lt == 0 else 1
    return functools.cmp_to_key(cmp)


def _strip_epoch(version):
    return version.split(":", 1)[1] if ":" in version else version


def fetch(package, download_dir, logfile):
    """Download the newest source of package that can be fetched.

    Returns (version, path of the .dsc). Older versions are tried when a
    download fails (mirrors sometimes lack the newest upload's files)."""
    versions = sorted(set(_showsrc(package)), key=_version_key(), reverse=True)
    if not versions:
        raise BenchError(f"apt knows no source package '{package}'")
    os.makedirs(download_dir, exist_ok=True)
    for version in versions:
        dsc = os.path.join(download_dir, f"{package}_{_strip_epoch(version)}.dsc")
        if os.path.exists(dsc + ".complete"):
            return version, dsc
        log(f"downloading source package {package}={version}")
        proc = subprocess.run(
            ["apt-get", "source", "--download-only", "-q", f"{package}={version}"],
            cwd=download_dir, env=clean_env(), capture_output=True, text=True)
        with open(logfile, "a") as f:
            f.write(proc.stdout + proc.stderr)
        if proc.returncode == 0 and os.path.exists(dsc):
            open(dsc + ".complete", "w").close()
            return version, dsc
        log(f"download of {package}={version} failed; trying an older version")
    raise BenchError(f"no version of source package '{package}' could be "
                     f"downloaded (tried {', '.join(versions)}); see {logfile}")


def unpack(dsc, dest, logfile):
    """Unpack a source package into dest (replacing a half-unpacked one)."""
    if os.path.exists(dest):
        shutil.rmtree(dest)
    run(["dpkg-source", "--no-check", "-x", dsc, dest], env=clean_env(),
        logfile=logfile)


def orig_tarball(dsc):
    """The upstream tarball next to a .dsc."""
    found = glob.glob(os.path.join(os.path.dirname(dsc), "*.orig.tar.*"))
    name = os.path.basename(dsc).split("_")[0]
    found = [p for p in found if os.path.basename(p).startswith(name + "_")
             and not p.endswith(".asc")]
    if not found:
        raise BenchError(f"no upstream tarball next to {dsc}")
    return found[0]
