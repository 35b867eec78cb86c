#!/bin/bash
# The farm model against a real engine: links of a generated program through
# distributors/ssh/ssh.py to two sshd hosts in network namespaces of their
# own (test/distributors/ssh/Inputs/hosts.py), each link's distributor under
# bench/benchlib/probe.py (bytes and duration of every job), with the
# client's links to the hosts first unshaped, then limited by a tbf qdisc to
# each RATE in turn, then with every ssh connection through
# bench/benchlib/delayrelay.py (this kernel has no sch_netem) at each of
# DELAYS (ms, one way; default "10 40"). bench/farmmodel.py then predicts
# each shaped link's distributor wall from the unshaped link's jobs plus
# each job's bytes at the rate, or plus the per-job round trips the first
# delay measured, scaled to the others; and prints prediction against
# measurement.
#
# usage: bench/farmmodel-ssh.sh TREE OUT [RATE_MBIT...]
#   TREE  a generated program's tree (CACHE/generated/gen<N>-<key>)
#   OUT   where records and logs go
# Runs as root (namespaces). Example:
#   bench/farmmodel-ssh.sh /var/cache/dtlto-bench/generated/gen30-<key> /tmp/farm 16 4
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help || $# -lt 2 ]]; then
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
  [[ $# -ge 2 ]] && exit 0 || exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
tree=$(cd "$1" && pwd)
out=$(mkdir -p "$2" && cd "$2" && pwd)
shift 2
rates=("$@")
((${#rates[@]})) || rates=(16 4)

if [[ ${FARM_STATE:-} == "" ]]; then
  # Outside the harness: start it, with this script as its command.
  exec /usr/bin/python3 "$src/test/distributors/ssh/Inputs/hosts.py" run --hosts 2 \
    --hide "$src" --hide "$out" --hide "$tree" --record "$out/hosts.record" \
    -- bash "$0" "$tree" "$out" "${rates[@]}"
fi

ld_lld=${LD_LLD:-$src/build/bin/ld.lld}
clang=${CLANG:-/usr/lib/llvm-22/bin/clang}
mapfile -t args < <(/usr/bin/python3 -c '
import json, sys
for a in json.load(open(sys.argv[1]))["args"]:
    print(a)' "$tree/dtlto-bench-build.json")
mkdir -p "$FARM_STATE/remote"

link() { # link TAG: one link through ssh.py under probe.py
  local tag=$1 i a
  local argv=()
  for a in "${args[@]}"; do argv+=("$a"); done
  # Relative paths only (the output, hence the archive members' copies):
  # the hosts have none of this machine's directories.
  for i in "${!argv[@]}"; do [[ ${argv[$i]} == -o ]] && argv[$((i + 1))]=prog.farm-$tag; done
  local config=${SSH_CONFIG:-$FARM_SSH_CONFIG}
  local dist=(/usr/bin/python3 "$here/benchlib/probe.py" --record "$out/$tag.json"
    --since "$(date +%s.%N)" --timings "$out/$tag.timings" --
    /usr/bin/python3 "$src/distributors/ssh/ssh.py" --quiet
    --ssh-config="$config" --identity="$FARM_KEY"
    --known-hosts="$FARM_KNOWN_HOSTS" --strict-host-key-checking=yes
    --remote-python=/usr/bin/python3 --remote-dir="$FARM_STATE/remote"
    --host="$FARM_H1:1" --host="$FARM_H2:1" --timings="$out/$tag.timings")
  local extra=("--thinlto-distributor=${dist[0]}")
  for a in "${dist[@]:1}"; do extra+=("--thinlto-distributor-arg=$a"); done
  (cd "$tree" && DTLTO_LOCAL_FALLBACK=0 nice "$ld_lld" "${argv[@]}" "${extra[@]}" \
    --thinlto-remote-compiler="$clang" --thinlto-jobs=2) > "$out/$tag.log" 2>&1
  mv "$tree/prog.farm-$tag" "$out/prog.$tag"
  cmp "$out/prog.$tag" "$out/prog.base"
  echo "$tag: $(/usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(len(r["jobs"]), "jobs, distributor", round(r["distributor_wall"], 2), "s")' "$out/$tag.json")"
}

# The reference program: our linker, in-process ThinLTO.
base=()
for a in "${args[@]}"; do base+=("$a"); done
for i in "${!base[@]}"; do [[ ${base[$i]} == -o ]] && base[$((i + 1))]=$out/prog.base; done
(cd "$tree" && nice "$ld_lld" "${base[@]}" --thinlto-jobs=2)

link unshaped
for rate in "${rates[@]}"; do
  for v in v1 v2; do
    tc qdisc replace dev "$v" root tbf rate "${rate}mbit" burst 32kbit latency 2s
  done
  link "rate${rate}"
done
for v in v1 v2; do tc qdisc del dev "$v" root 2>/dev/null || true; done
read -r -a delays <<< "${DELAYS:-10 40}"
for d in "${delays[@]}"; do
  printf 'Host *\n  ProxyCommand /usr/bin/python3 %s %%h %%p %s\n' \
    "$here/benchlib/delayrelay.py" "$d" > "$out/ssh_config.delay$d"
  SSH_CONFIG=$out/ssh_config.delay$d link "delay$d"
done

for rate in "${rates[@]}"; do
  # tbf on the client's side shapes what goes to the hosts (each job's
  # inputs); objects come back unshaped.
  /usr/bin/python3 "$here/farmmodel.py" validate "$out/rate${rate}.json" \
    --durations-from "$out/unshaped.json" --upload "$(echo "$rate / 8" | bc -l)"
done
# Seconds the first delay added to each job, as two "round trips" of the
# model: calibrated on the first delay, scaled to the others.
rtt_per_ms=$(/usr/bin/python3 -c '
import json, sys
base, first, ms = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), float(sys.argv[3])
jobs = len(base["jobs"])
extra = (first["distributor_wall"] - base["distributor_wall"]) * 2 / jobs  # 2 workers
print(max(0.0, extra / 2 / ms))' "$out/unshaped.json" "$out/delay${delays[0]}.json" "${delays[0]}")
echo "calibrated on ${delays[0]} ms: $rtt_per_ms s of model round trip per ms of delay"
for d in "${delays[@]}"; do
  /usr/bin/python3 "$here/farmmodel.py" validate "$out/delay$d.json" \
    --durations-from "$out/unshaped.json" --rtt "$(echo "$rtt_per_ms * $d" | bc -l)"
done
