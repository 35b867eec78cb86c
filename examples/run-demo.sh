#!/usr/bin/env bash
# Builds the example program examples/wordstat with ThinLTO, links it with
# DTLTO (our build/bin/ld.lld, jobs run by utils/dtlto/local.py), runs it, and
# checks that it prints what the same program linked with in-process ThinLTO
# prints.
#
#   examples/run-demo.sh [OUTPUT_DIR]      (default: build/examples)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src=$root/examples/wordstat
out=${1:-$root/build/examples}
ld=$root/build/bin/ld.lld
local_py=$root/utils/dtlto/local.py
jobs=$(nproc)

if [[ ! -x $ld ]]; then
  echo "run-demo.sh: $ld is missing: build first (ninja -C build)" >&2
  exit 1
fi
rm -rf "$out" && mkdir -p "$out/obj/hash" "$out/obj/fmt"
cd "$out"

step() { printf '\n== %s\n' "$*"; }

step "Compiling wordstat to ThinLTO bitcode (clang-22 -flto=thin -O2)"
cflags=(-flto=thin -O2 -I"$src/include")
for f in main counter; do
  clang++-22 "${cflags[@]}" -c "$src/$f.cpp" -o "obj/$f.o"
done
clang-22 "${cflags[@]}" -c "$src/tokenize.c" -o obj/tokenize.o
for f in fnv1a crc32; do clang-22 "${cflags[@]}" -c "$src/hash/$f.c" -o "obj/hash/$f.o"; done
for f in number table; do clang-22 "${cflags[@]}" -c "$src/fmt/$f.c" -o "obj/fmt/$f.o"; done
llvm-ar-22 rcs libhash.a obj/hash/fnv1a.o obj/hash/crc32.o
llvm-ar-22 rcs --thin libfmt.a obj/fmt/number.o obj/fmt/table.o
echo "3 translation units, libhash.a (regular archive, 2 members), libfmt.a (thin archive, 2 members)"

inputs=(obj/main.o obj/counter.o obj/tokenize.o libhash.a libfmt.a)

step "Linking with DTLTO: build/bin/ld.lld + utils/dtlto/local.py --jobs=$jobs"
TIMEFORMAT='link took %R s (wall)'
time DTLTO_VERBOSE=1 clang++-22 -flto=thin -O2 --ld-path="$ld" "${inputs[@]}" \
  -o wordstat -fthinlto-distributor="$local_py" \
  -Xthinlto-distributor=--jobs="$jobs"

step "Running the DTLTO-linked program"
corpus=("$src"/*.cpp "$src"/*.c "$src"/include/*.h "$root/README.md")
./wordstat -n 8 "${corpus[@]}" | tee wordstat.out

step "Checking against in-process ThinLTO"
clang++-22 -flto=thin -O2 -fuse-ld=lld "${inputs[@]}" -o wordstat.inprocess
./wordstat.inprocess -n 8 "${corpus[@]}" > wordstat.inprocess.out
if cmp -s wordstat.out wordstat.inprocess.out; then
  echo "same output as in-process ThinLTO"
else
  echo "run-demo.sh: the DTLTO-linked program prints something else than the in-process one:" >&2
  diff wordstat.inprocess.out wordstat.out >&2 || true
  exit 1
fi
leftovers=$(find . -name '*.native.o*' -o -name '*.dist-file.json' | wc -l)
echo "temporary files left behind by the link: $leftovers"
[[ $leftovers == 0 ]]
