#!/bin/sh
# A dtlto-backend that is not there the first time: the first process
# started (the one that creates the directory $DYING_MARK) exits with code
# 3 at once; every later one is the real dtlto-backend (@REAL@, filled in
# by the test).
if mkdir "$DYING_MARK" 2>/dev/null; then
  exit 3
fi
exec @REAL@ "$@"
