#!/bin/bash
# Whether DTLTO links a generated program as in-process ThinLTO does, byte
# for byte: the tree of gen<N> (module scale 1, built by bench/run.py if it
# is not in the cache) copied to OUT, then the recorded link run in-process
# (LLVM 22's ld.lld), by stock LLVM 22 DTLTO and by ours with dtlto-backend
# and with clang jobs, every distributed link through utils/dtlto/local.py
# with no job in the linker's own slot; prints each output's SHA-256 and
# whether it is in-process's. The program's archives are regular and thin
# alike (bench/benchlib/generate.py); --regular rebuilds each thin archive
# as a regular one from its members first, to see the two kinds of members
# apart. Why the names of archive members' copies decide the layout:
# docs/usage.md, "The same program as in-process ThinLTO".
#
# usage: bench/archive-order.sh [--regular] [N] [OUT]
#        (default: 100 /dev/shm/archive-order)
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
REGULAR=0
if [[ ${1:-} == --regular ]]; then
  REGULAR=1
  shift
fi
N=${1:-100}
OUT=${2:-/dev/shm/archive-order}
if [[ ! $N =~ ^[0-9]+$ ]]; then
  echo "archive-order.sh: error: N is a number of modules, not '$N' (see --help)" >&2
  exit 2
fi
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${DTLTO_BENCH_CACHE:-/var/cache/dtlto-bench}
LLVM=/usr/lib/llvm-22/bin

/usr/bin/python3 "$ROOT/bench/run.py" --programs "gen$N" --gen-module-scale 1 --build-only >/dev/null
# The tree, then the recorded link's arguments, a line each.
mapfile -t BUILD < <(/usr/bin/python3 -c "import sys; sys.path.insert(0, '$ROOT/bench')
from benchlib.generate import require_generated
build = require_generated('$CACHE', 'gen$N', 1.0)
print('\n'.join([build['cwd']] + build['args']))")
TREE=${BUILD[0]}
ARGS=("${BUILD[@]:1}")
rm -rf "$OUT" && mkdir -p "$OUT" && cp -a "$TREE/." "$OUT/"
cd "$OUT"
for a in lib/*.a; do
  if ((REGULAR)) && [[ $(head -c 7 "$a") == '!<thin>' ]]; then
    # A thin archive names its members relative to its own directory.
    (cd "$(dirname "$a")" && b=$(basename "$a") && mapfile -t m < <("$LLVM/llvm-ar" t "$b") &&
     rm "$b" && "$LLVM/llvm-ar" rcs "$b" "${m[@]}")
    echo "regular now: $a"
  fi
done
dist=(--thinlto-distributor=/usr/bin/python3 "--thinlto-distributor-arg=$ROOT/utils/dtlto/local.py"
      --thinlto-distributor-arg=--jobs=2)
export DTLTO_LOCAL_JOBS=0 DTLTO_LOCAL_FALLBACK=0
"$LLVM/ld.lld" "${ARGS[@]}" -o prog.inproc --thinlto-jobs=2
"$LLVM/ld.lld" "${ARGS[@]}" -o prog.stock "${dist[@]}" "--thinlto-remote-compiler=$LLVM/clang"
"$ROOT/build/bin/ld.lld" "${ARGS[@]}" -o prog.native "${dist[@]}" \
  "--thinlto-remote-compiler=$ROOT/build/bin/dtlto-backend"
"$ROOT/build/bin/ld.lld" "${ARGS[@]}" -o prog.clang "${dist[@]}" "--thinlto-remote-compiler=$LLVM/clang"
ref=$(sha256sum prog.inproc | cut -d' ' -f1)
for p in prog.inproc prog.stock prog.native prog.clang; do
  sum=$(sha256sum "$p" | cut -d' ' -f1)
  if [[ $p == prog.inproc ]]; then what=reference
  elif [[ $sum == "$ref" ]]; then what="identical to in-process"
  else what="DIFFERS from in-process"; fi
  echo "$p $sum $what"
done
