"""Run a distributor script with what Windows lacks taken away.

  as_windows.py SCRIPT [ARGS...]

The POSIX-only modules (fcntl, resource) cannot be imported, os and signal
lose what Windows has not (os.waitid, os.killpg, os.pidfd_open,
signal.SIGHUP), and os.name is "nt" once the standard library is loaded,
so dtltodist takes its Windows branches (supervise(): no process group,
Ctrl-C not passed on, kill after the grace period). Paths stay POSIX: the
Windows path rules are tested through ntpath (windows_plan.py).
"""

import os
import runpy
import signal
import sys

# Load what the scripts use while os.name is still true: some modules look
# at it when they are imported.
import argparse, json, shlex, shutil, subprocess, tempfile  # noqa: E401,F401

sys.modules["fcntl"] = None
sys.modules["resource"] = None
for name in ("waitid", "killpg", "pidfd_open"):
    if hasattr(os, name):
        delattr(os, name)
del signal.SIGHUP
os.name = "nt"

sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
