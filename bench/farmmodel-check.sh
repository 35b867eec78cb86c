#!/bin/bash
# The farm model against a real engine: links of a generated program through
# ENGINE's distributor to two hosts in network namespaces of their own, the
# tree hidden from them, each link's distributor under
# bench/benchlib/probe.py (bytes and duration of every job): with a tbf
# qdisc limiting each host's link to each RATE in turn, then with every
# connection through bench/benchlib/delayrelay.py (this kernel has no
# sch_netem) at each of DELAYS (ms, one way; default "10 40"), each shaped
# link after an unshaped one. bench/farmmodel.py then predicts each shaped
# link's distributor wall from the jobs' median durations in the unshaped
# links plus each job's bytes at the rate (less tbf's burst), or plus the
# per-job round trips the first delay measured (the median over
# CALIBRATION_LINKS links at it, default 3), scaled to the others, and for
# reapi also from the round trips its protocol makes a job (uncalibrated);
# and prints prediction against measurement.
#   ssh    distributors/ssh/ssh.py to sshd hosts (test/distributors/ssh/
#          Inputs/hosts.py); the rate limits what goes to the hosts (each
#          job's inputs); the relay is ssh's ProxyCommand.
#   reapi  distributors/reapi/reapi.py to two of Bazel's remote workers
#          (test/distributors/reapi/Inputs/fixture.py), the action cache
#          skipped; an untimed first link fills their CAS, so the inputs are
#          not sent again (as for a relink) and the rate limits what the
#          workers send back (each job's object); the relay listens in front
#          of each endpoint.
#
# usage: bench/farmmodel-check.sh ENGINE TREE OUT [RATE_MBIT...]
#   ENGINE  ssh or reapi
#   TREE    a generated program's tree (CACHE/generated/gen<N>-<key>)
#   OUT     where records and logs go
# Runs as root (namespaces). Example:
#   bench/farmmodel-check.sh ssh /var/cache/dtlto-bench/generated/gen30-<key> /tmp/farm 16 4
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help || $# -lt 3 ]]; then
  sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'
  [[ ${1:-} == -h || ${1:-} == --help ]] && exit 0 || exit 2
fi
engine=$1
case $engine in
  ssh | reapi) ;;
  *) echo "farmmodel-check.sh: error: ENGINE is ssh or reapi, not '$engine'" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
tree=$(cd "$2" && pwd)
out=$(mkdir -p "$3" && cd "$3" && pwd)
shift 3
rates=("$@")
((${#rates[@]})) || rates=(16 4)
ld_lld=${LD_LLD:-$src/build/bin/ld.lld}
build=$(dirname "$(dirname "$ld_lld")")

if [[ ${FARM_STATE:-}${REAPI_STATE:-} == "" ]]; then
  # Outside the harness: start it, with this script as its command.
  hide=(--hide "$src" --hide "$out" --hide "$tree")
  if [[ $engine == ssh ]]; then
    exec /usr/bin/python3 "$src/test/distributors/ssh/Inputs/hosts.py" run --hosts 2 \
      "${hide[@]}" --record "$out/hosts.record" -- bash "$0" ssh "$tree" "$out" "${rates[@]}"
  fi
  exec /usr/bin/python3 "$src/test/distributors/reapi/Inputs/fixture.py" run \
    --build-dir "$build" "${hide[@]}" --record "$out/fixture.record" --workers 2 \
    --worker-jobs 1 -- bash "$0" reapi "$tree" "$out" "${rates[@]}"
fi

clang=${CLANG:-/usr/lib/llvm-22/bin/clang}
mapfile -t args < <(/usr/bin/python3 -c '
import json, sys
for a in json.load(open(sys.argv[1]))["args"]:
    print(a)' "$tree/dtlto-bench-build.json")

relays=()
stop_relays() {
  local p
  for p in "${relays[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  relays=()
}
trap stop_relays EXIT

distributor() { # distributor DELAY_MS: the engine's distributor argv in dist=()
  local delay=$1 i
  if [[ $engine == ssh ]]; then
    local config=$FARM_SSH_CONFIG
    if ((delay)); then
      config=$out/ssh_config.delay$delay
      printf 'Host *\n  ProxyCommand /usr/bin/python3 %s %%h %%p %s\n' \
        "$here/benchlib/delayrelay.py" "$delay" > "$config"
    fi
    dist=(/usr/bin/python3 "$src/distributors/ssh/ssh.py" --quiet
      --ssh-config="$config" --identity="$FARM_KEY"
      --known-hosts="$FARM_KNOWN_HOSTS" --strict-host-key-checking=yes
      --remote-python=/usr/bin/python3 --remote-dir="$FARM_STATE/remote"
      --host="$FARM_H1:1" --host="$FARM_H2:1")
    return
  fi
  dist=(/usr/bin/python3 "$src/distributors/reapi/reapi.py" --quiet --jobs=2
    --skip-cache-lookup --stubs-dir="$build/distributors/reapi/gen")
  for i in 1 2; do
    local url=REAPI_W$i
    url=${!url}
    if ((delay)); then
      local port=$((18980 + i)) hostport=${url#*://}
      /usr/bin/python3 "$here/benchlib/delayrelay.py" --listen "$port" \
        "${hostport%:*}" "${hostport##*:}" "$delay" &
      relays+=($!)
      /usr/bin/python3 "$here/benchlib/delayrelay.py" --wait "$port"
      url=grpc://127.0.0.1:$port
    fi
    dist+=(--endpoint="$url")
  done
}

link() { # link TAG [DELAY_MS]: one link through the engine under probe.py
  local tag=$1 delay=${2:-0} i a
  local argv=()
  for a in "${args[@]}"; do argv+=("$a"); done
  # Relative paths only (the output, hence the archive members' copies):
  # ssh's hosts have none of this machine's directories.
  for i in "${!argv[@]}"; do [[ ${argv[$i]} == -o ]] && argv[$((i + 1))]=prog.farm-$tag; done
  distributor "$delay"
  dist=(/usr/bin/python3 "$here/benchlib/probe.py" --record "$out/$tag.json"
    --since "$(date +%s.%N)" --timings "$out/$tag.timings" -- "${dist[@]}"
    --timings="$out/$tag.timings")
  local extra=("--thinlto-distributor=${dist[0]}")
  for a in "${dist[@]:1}"; do extra+=("--thinlto-distributor-arg=$a"); done
  (cd "$tree" && DTLTO_LOCAL_FALLBACK=0 nice "$ld_lld" "${argv[@]}" "${extra[@]}" \
    --thinlto-remote-compiler="$clang" --thinlto-jobs=2) > "$out/$tag.log" 2>&1
  stop_relays
  mv "$tree/prog.farm-$tag" "$out/prog.$tag"
  cmp "$out/prog.$tag" "$out/prog.base"
  echo "$tag: $(/usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(len(r["jobs"]), "jobs, distributor", round(r["distributor_wall"], 2), "s")' "$out/$tag.json")"
}

# tbf's bucket, bytes: each transfer's first this many go at once (the
# bucket refills while a job compiles); the model is told (--burst).
burst=4096
shape() { # shape RATE_MBIT|off: the hosts' links, in the engine's direction
  local rate=$1 i
  for i in 1 2; do
    local tc=(tc) dev=v$i
    if [[ $engine == reapi ]]; then
      local pid=REAPI_PID$i
      tc=(nsenter -t "${!pid}" -n tc) dev=eth0
    fi
    if [[ $rate == off ]]; then
      "${tc[@]}" qdisc del dev "$dev" root 2>/dev/null || true
    else
      "${tc[@]}" qdisc replace dev "$dev" root tbf rate "${rate}mbit" burst "$burst" latency 2s
    fi
  done
}

# The reference program: our linker, in-process ThinLTO.
base=()
for a in "${args[@]}"; do base+=("$a"); done
for i in "${!base[@]}"; do [[ ${base[$i]} == -o ]] && base[$((i + 1))]=$out/prog.base; done
(cd "$tree" && nice "$ld_lld" "${base[@]}" --thinlto-jobs=2)

if [[ $engine == ssh ]]; then
  mkdir -p "$FARM_STATE/remote"
  direction=--upload
else
  ip link set lo up # the fixture's network namespace is new: the relays listen here
  link warmup # fills the workers' CAS
  direction=--download
fi
# An unshaped link before each shaped one: the model takes each job's
# median over them, so that one slow link on this noisy machine does not
# pass for the shaping's cost.
read -r -a delays <<< "${DELAYS:-10 40}"
unshaped=()
plain() {
  link "unshaped${#unshaped[@]}"
  unshaped+=("$out/unshaped${#unshaped[@]}.json")
}
for rate in "${rates[@]}"; do
  plain
  shape "$rate"
  link "rate${rate}"
  shape off
done
for d in "${delays[@]}"; do
  plain
  link "delay$d" "$d"
done
# The calibration's own links: more of the first delay, each after an
# unshaped link (CALIBRATION_LINKS in all, default 3, counting the one
# above). One link's delay cost alone was off by 2.4x once in four runs.
calibration=("$out/delay${delays[0]}.json")
for ((k = 2; k <= ${CALIBRATION_LINKS:-3}; k++)); do
  plain
  link "delay${delays[0]}-$k" "${delays[0]}"
  calibration+=("$out/delay${delays[0]}-$k.json")
done
reference=()
for r in "${unshaped[@]}"; do reference+=(--durations-from "$r"); done

for rate in "${rates[@]}"; do
  /usr/bin/python3 "$here/farmmodel.py" validate "$out/rate${rate}.json" \
    "${reference[@]}" "$direction" "$(echo "$rate / 8" | bc -l)" --burst "$burst"
done
# Seconds the first delay added to each job, as two "round trips" of the
# model, scaled to the other delays: the median over the calibration links
# of what each link's jobs took more than the same jobs' median in the
# unshaped links. Two ways, printed side by side:
#   jobs  each job's duration (the distributor's --timings: its start to
#         its object back) less its median over the unshaped links,
#         averaged over the link's jobs;
#   wall  the link's distributor wall less the unshaped links' median,
#         spread over its jobs (2 workers).
calibrate() { # calibrate jobs|wall: seconds of model round trip per ms of delay
  /usr/bin/python3 -c '
import json, statistics, sys
how, ms = sys.argv[1], float(sys.argv[2])
split = sys.argv.index("--")
links = [json.load(open(p)) for p in sys.argv[3:split]]
bases = [json.load(open(p)) for p in sys.argv[split + 1:]]
ref = {}
for b in bases:
    for j in b["jobs"]:
        ref.setdefault(j["module"], []).append(j["seconds"])
base = statistics.median(b["distributor_wall"] for b in bases)

def extra(link):  # seconds a job
    if how == "jobs":
        return statistics.mean(j["seconds"] - statistics.median(ref[j["module"]])
                               for j in link["jobs"])
    return (link["distributor_wall"] - base) * 2 / len(link["jobs"])  # 2 workers

each = [extra(link) / 2 / ms for link in links]
print(max(0.0, statistics.median(each)), " ".join(f"{e:.5f}" for e in each))' \
    "$1" "${delays[0]}" "${calibration[@]}" -- "${unshaped[@]}"
}
predict_delays() { # predict_delays RTT_PER_MS: the model against every delayed link
  for d in "${delays[@]}"; do
    /usr/bin/python3 "$here/farmmodel.py" validate "$out/delay$d.json" \
      "${reference[@]}" --rtt "$(echo "$1 * $d" | bc -l)"
  done
}
# Uncalibrated, from the protocol: the real round trips (2 x DELAY each) of
# a job of reapi.py once its connections are up: FindMissingBlobs for the
# job's own blobs, Execute (its answer comes with the result), the object's
# Read. The model pays 2 of its round trips a job, so its round trip is
# trips x DELAY.
if [[ $engine == reapi ]]; then
  trips=3
  echo "from the protocol: $trips round trips a job"
  predict_delays "$(echo "$trips / 1000" | bc -l)"
fi
for how in jobs wall; do
  read -r rtt_per_ms each < <(calibrate "$how")
  echo "calibrated on ${delays[0]} ms from the $how of ${#calibration[@]} links:" \
    "$rtt_per_ms s of model round trip per ms of delay (each link: $each)"
  predict_delays "$rtt_per_ms"
done
