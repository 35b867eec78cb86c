#!/usr/bin/env bash
# Copies LLVM's own DTLTO tests and distributor scripts from an llvm-project
# checkout (release/22.x for LLVM 22) into SCRATCH, keeping their paths, and
# writes SCRATCH/lit.site.cfg.py, which runs them with this directory's
# lit.cfg.py. Nothing is copied into this repository.
#
#   utils/upstream-tests/prepare.sh LLVM_PROJECT_DIR SCRATCH
set -euo pipefail
if (($# != 2)); then
  sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
llvm=$1 scratch=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dirs=(lld/test/ELF/dtlto lld/test/COFF/dtlto llvm/test/ThinLTO/X86/dtlto
      cross-project-tests/dtlto llvm/utils/dtlto)
for d in "${dirs[@]}"; do
  [[ -d $llvm/$d ]] || { echo "prepare.sh: $llvm/$d is missing (an llvm-project checkout?)" >&2; exit 1; }
done
mkdir -p "$scratch"
for d in "${dirs[@]}"; do
  mkdir -p "$scratch/$(dirname "$d")"
  rm -rf "${scratch:?}/$d"
  cp -r "$llvm/$d" "$scratch/$d"
done
cat > "$scratch/lit.site.cfg.py" <<PY
import os
config.upstream_root = os.path.dirname(os.path.abspath(__file__))
lit_config.load_config(config, "$here/lit.cfg.py")
PY
echo "prepare.sh: LLVM's DTLTO tests are in $scratch; run, e.g.:"
echo "  /usr/lib/llvm-22/bin/lit -sv $scratch/lld/test $scratch/llvm/test $scratch/cross-project-tests"
