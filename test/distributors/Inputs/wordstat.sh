# wordstat.sh DIR [CLANG-FLAG...]: examples/wordstat (7 modules, C and C++)
# compiled to ThinLTO bitcode in DIR, its in-process ThinLTO program
# (DIR/inproc) and the DTLTO objects of local.py running its jobs here
# with clang (DIR/ref, --save-temps: in-process ThinLTO's objects). Needs
# CLANG, CLANGXX, LLD, LOCAL and SRC (the source tree) in the environment.
set -e
dir=$1
shift
w=$SRC/examples/wordstat
mkdir -p "$dir/ref" "$dir/sc"
cd "$dir"
for f in main counter; do "$CLANGXX" -flto=thin -O2 "$@" -I"$w/include" -c "$w/$f.cpp"; done
for f in tokenize hash/fnv1a hash/crc32 fmt/number fmt/table; do
  "$CLANG" -flto=thin -O2 "$@" -I"$w/include" -c "$w/$f.c"
done
objs=(main.o counter.o tokenize.o fnv1a.o crc32.o number.o table.o)
"$CLANGXX" -fuse-ld=lld --ld-path="$LLD" -flto=thin "${objs[@]}" -o inproc
"$CLANGXX" -fuse-ld=lld --ld-path="$LLD" -flto=thin "${objs[@]}" -o ref/wordstat \
  -Wl,--thinlto-distributor="$LOCAL" -Wl,--thinlto-remote-compiler="$CLANG" -Wl,--save-temps
