#!/usr/bin/env bash
# Quick start, on Debian 12 as root: installs every package of
# docs/packages.md that is missing (what the build, the example and the whole
# test suite need), builds dtlto into build/, then links the example program
# with DTLTO and runs it.
#
#   ./quickstart.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# The package list: the first column of docs/packages.md's table.
mapfile -t packages < <(sed -n 's/^| `\([a-z0-9][a-z0-9.+-]*\)` |.*/\1/p' \
                        "$root/docs/packages.md")
if ((${#packages[@]} == 0)); then
  echo "quickstart: no packages listed in $root/docs/packages.md" >&2
  exit 1
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
    missing+=("$p")
done
if ((${#missing[@]})); then
  echo "quickstart: installing ${missing[*]}"
  if [[ $(id -u) != 0 ]]; then
    echo "quickstart: run as root to install packages (or install them first:" \
         "apt-get install ${missing[*]})" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

cmake -S "$root" -B "$root/build" -G Ninja
ninja -C "$root/build"
"$root/examples/run-demo.sh"
