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

# odd_link LOG [DISTRIBUTOR-ARG...]: the link again, from a directory
# whose name has spaces, quotes, $ and a non-ASCII letter, to an output
# named "pro g's", with a --remote-dir like it under $FARM_STATE; then
# whether that remote directory was left empty.
odd_link() {
  local log=$PWD/$1 odd="odd dir (é) \$x 'q\"" remote="$FARM_STATE/remote dir 'q' \$x é" left
  shift
  mkdir "$odd" "$remote" && cp main.o series.o libfarm.a "$odd/" && (
    cd "$odd"
    record "$log" link "pro g's" "$@" "--remote-dir=$remote"
  )
  left=$(ls -A "$remote")
  echo "remote directory after the link: ${left:-empty}" >> "$log"
}

# refusals LOG [DISTRIBUTOR-ARG...]: one link per hostile job side
# (evil.py run in place of python3 on the real hosts or nodes), each of
# which must be refused; then whether escaped.o appeared where evil.py
# aimed it.
refusals() {
  local log=$1 kind
  shift
  cp "$FARM_INPUTS/evil.py" "$FARM_STATE/evil.py"
  for kind in dotdot absolute link undeclared; do
    ln -s evil.py "$FARM_STATE/evil-$kind"
    echo "evil-$kind:" >> "$log"
    record evil.part link evil.out "$@" "--remote-python=$FARM_STATE/evil-$kind"
    cat evil.part >> "$log"
  done
  echo "escaped.o: $(ls "$FARM_STATE/escaped.o" 2>/dev/null || echo none)" >> "$log"
}

# hold_cc: writes $FARM_STATE/hold-cc, a compiler that never compiles: it
# notes that it runs ($FARM_STATE/held/<host>.<pid>) and waits for a file
# that never comes, until it is killed. A job it runs is held until the
# linker cancels it.
hold_cc() {
  mkdir -p "$FARM_STATE/held"
  chmod 1777 "$FARM_STATE/held"
  printf '#!/bin/sh\ntouch "%s/held/$(hostname).$$" 2>/dev/null\nwhile [ ! -e "%s/never" ]; do sleep 0.05; done\n' \
    "$FARM_STATE" "$FARM_STATE" > "$FARM_STATE/hold-cc"
  chmod 755 "$FARM_STATE/hold-cc"
}

# leftovers: what the links left in this directory besides their outputs
# and logs (temporary files of the engine or of a distributor), one a line.
leftovers() {
  ls -A | grep -E 'native|thinlto|dist-file|\.dtlto|dtlto-' || echo none
}
