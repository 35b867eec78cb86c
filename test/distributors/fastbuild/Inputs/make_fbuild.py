"""make_fbuild.py DIR: writes DIR/fbuild, an executable that runs the
recording stub (fbuild.py, next to this file) under this Python."""

import os
import shlex
import sys

here = os.path.dirname(os.path.abspath(__file__))
os.makedirs(sys.argv[1], exist_ok=True)
path = os.path.join(sys.argv[1], "fbuild")
with open(path, "w") as f:
    f.write(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} "
            f"{shlex.quote(os.path.join(here, 'fbuild.py'))} \"$@\"\n")
os.chmod(path, 0o755)
