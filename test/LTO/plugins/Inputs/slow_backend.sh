#!/bin/sh
# A dtlto-backend that takes two seconds to start, then is the real one
# (@REAL@, filled in by the test): the jobs queued behind its first one
# stay in the plugin's queue while the linker's own slot runs them.
sleep 2
exec @REAL@ "$@"
