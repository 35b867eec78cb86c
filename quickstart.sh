#!/usr/bin/env bash
# Quick start, on Debian 12 as root: installs what is missing, builds dtlto
# into build/, then links the example program with DTLTO and runs it.
#
#   ./quickstart.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Everything the build, the example and the test suite need.
packages=(llvm-22 llvm-22-dev llvm-22-tools liblld-22-dev lld-22 clang-22
          cmake ninja-build python3 zlib1g-dev libzstd-dev make)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
    missing+=("$p")
done
if ((${#missing[@]})); then
  echo "quickstart: installing ${missing[*]}"
  if [[ $(id -u) != 0 ]]; then
    echo "quickstart: run as root to install packages (or install them first)" >&2
    exit 1
  fi
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

cmake -S "$root" -B "$root/build" -G Ninja
ninja -C "$root/build"
"$root/examples/run-demo.sh"
