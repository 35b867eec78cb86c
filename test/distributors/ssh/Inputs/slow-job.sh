# Sourced by the interrupt tests: a manifest of one job whose compiler
# ($FARM_STATE/slow-cc) writes its pid to $FARM_STATE/started (as seen on
# its host) and then takes two minutes; its inputs are dummies.
mkdir -p in "$FARM_STATE/remote"
echo module > in/a.bc
echo index > in/a.idx
printf '#!/bin/sh\necho $$ > "%s/started.tmp"\nmv "%s/started.tmp" "%s/started"\nexec sleep 120\n' \
  "$FARM_STATE" "$FARM_STATE" "$FARM_STATE" > "$FARM_STATE/slow-cc"
chmod +x "$FARM_STATE/slow-cc"
printf '{"common": {"linker_output": "p", "args": ["%s/slow-cc"], "inputs": []},
 "jobs": [{"args": ["in/a.bc", "-o", "out/a.o"], "inputs": ["in/a.bc", "in/a.idx"],
           "outputs": ["out/a.o"]}]}\n' "$FARM_STATE" > m.json

# gone NAME COMMAND...: wait up to a minute for COMMAND, which succeeds once
# NAME is gone, to succeed; say whether it did.
gone() {
  local name=$1 i
  shift
  for i in $(seq 600); do
    if timeout 10 "$@" > /dev/null 2>&1; then
      echo "$name: gone"
      return
    fi
    sleep 0.1
  done
  echo "$name: still there"
}
