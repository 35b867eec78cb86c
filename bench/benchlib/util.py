"""Process launching for the harness: one place, no shell."""

import os
import subprocess
import sys

from . import BenchError

# Variables that would change what a build or a link does.
_DROP = ("LIBRARY_PATH", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "CFLAGS",
         "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "LDLIBS", "CC", "CXX")


def clean_env(extra=None):
    """The environment for builds and links: stable, no DTLTO_* settings."""
    env = {k: v for k, v in os.environ.items()
           if k not in _DROP and not k.startswith("DTLTO_")}
    env["LC_ALL"] = "C"
    if extra:
        env.update(extra)
    return env


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def run(argv, cwd=None, env=None, logfile=None, check=True, capture=False,
        timeout=None, stdin=subprocess.DEVNULL):
    """Run argv; on failure raise BenchError naming the command and the log."""
    if logfile:
        with open(logfile, "a") as f:
            f.write(f"\n$ (cd {cwd or os.getcwd()} && {' '.join(argv)})\n")
            f.flush()
            proc = subprocess.run(argv, cwd=cwd, env=env, stdout=f,
                                  stderr=subprocess.STDOUT, stdin=stdin,
                                  timeout=timeout)
    else:
        proc = subprocess.run(argv, cwd=cwd, env=env, stdin=stdin,
                              capture_output=capture, text=capture,
                              timeout=timeout)
    if check and proc.returncode != 0:
        where = f"; see {logfile}" if logfile else ""
        detail = ""
        if capture and proc.stderr:
            detail = ": " + proc.stderr.strip().splitlines()[-1]
        raise BenchError(f"'{' '.join(argv[:4])}{' ...' if len(argv) > 4 else ''}' "
                         f"failed with exit code {proc.returncode}{detail}{where}")
    return proc
