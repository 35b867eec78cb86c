# Sourced by the bodies of the Slurm and SSH tests, which run inside a
# harness (cluster.py, hosts.py). Needs CLANG, LLD and ENGINE in the
# environment; the test program's bitcode (main.o series.o libfarm.a) in
# the current directory.

# link OUT [DISTRIBUTOR-ARG...] [-- CLANG-ARG...]: link the test program
# through ENGINE. REMOTE_CC, when set, is the compiler the jobs run
# (default: CLANG).
link() {
  local out=$1 extra=() a
  shift
  while (($#)) && [[ $1 != -- ]]; do
    extra+=(-Xlinker "--thinlto-distributor-arg=$1")
    shift
  done
  (($#)) && shift && extra+=("$@")
  # No local fallback: every object must come from the distributor.
  DTLTO_LOCAL_FALLBACK=0 "$CLANG" -fuse-ld=lld --ld-path="$LLD" -flto=thin main.o series.o libfarm.a -o "$out" \
    -Xlinker "--thinlto-distributor=$ENGINE" \
    -Xlinker "--thinlto-remote-compiler=${REMOTE_CC:-$CLANG}" "${extra[@]}"
}

# record LOG COMMAND...: run COMMAND, its output and then "exit N" into LOG.
# The test checks LOG once the harness has stopped every daemon.
record() {
  local log=$1
  shift
  "$@" > "$log" 2>&1
  echo "exit $?" >> "$log"
}
