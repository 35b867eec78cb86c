#!/bin/sh
# A dtlto-backend that takes SLOW_BACKEND_DELAY seconds (2 by default) to
# start, then is the real one (@REAL@, filled in by the test): the jobs
# queued behind its first one stay in the plugin's queue while the
# linker's own slot runs them. One process from the start (the wait is
# Python's, which then becomes the real one), so that a kill of the worker
# leaves nothing behind. With SLOW_BACKEND_PIDS set, each worker adds its
# pid to that file (procs.py then says whether it outlived the link).
exec /usr/bin/python3 -c 'import os, sys, time
f = os.environ.get("SLOW_BACKEND_PIDS")
if f:
    with open(f, "a") as out: out.write(f"{os.getpid()}\n")
time.sleep(float(sys.argv[1])); os.execv(sys.argv[2], sys.argv[2:])' \
  "${SLOW_BACKEND_DELAY:-2}" @REAL@ "$@"
