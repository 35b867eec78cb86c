#!/bin/sh
# A dtlto-backend that takes SLOW_BACKEND_DELAY seconds (2 by default) to
# start, then is the real one (@REAL@, filled in by the test): the jobs
# queued behind its first one stay in the plugin's queue while the
# linker's own slot runs them. One process from the start (the wait is
# Python's, which then becomes the real one), so that a kill of the worker
# leaves nothing behind.
exec /usr/bin/python3 -c 'import os, sys, time; time.sleep(float(sys.argv[1])); os.execv(sys.argv[2], sys.argv[2:])' \
  "${SLOW_BACKEND_DELAY:-2}" @REAL@ "$@"
