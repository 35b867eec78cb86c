"""env_dist.py LOCAL_PY MANIFEST: print the LD_PRELOAD this distributor was
started with, then run the jobs with local.py."""
import os
import sys

print(f"distributor LD_PRELOAD: {os.environ.get('LD_PRELOAD', '<unset>')}", file=sys.stderr)
os.execv(sys.executable, [sys.executable] + sys.argv[1:])
