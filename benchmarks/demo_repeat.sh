#!/usr/bin/env bash
# The README's demo, run RUNS times in a row on one devcloud: every run
# boots the demo's six servers (one forced onto the libvirt compute, then a
# multi-create of two and three single requests at once) and deletes them.
# Prints one line per run and writes benchmarks/results/demo_repeat.json.
#
#   benchmarks/demo_repeat.sh [RUNS]      (default 10)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
runs=${1:-10}
out=benchmarks/results/demo_repeat.json
logs=$(mktemp -d)
bash tools/devcloud.sh up > "$logs/up.log" 2>&1 || { echo "devcloud up failed: $logs/up.log"; exit 1; }
rows=()
failed=0
for i in $(seq 1 "$runs"); do
    t0=$SECONDS
    bash tools/devcloud-demo.sh > "$logs/run-$i.log" 2>&1
    rc=$?
    active=$(grep -c '  ACTIVE  ' "$logs/run-$i.log")
    error=$(grep -c '  ERROR  ' "$logs/run-$i.log")
    [ "$rc" = 0 ] || failed=$((failed + 1))
    echo "run $i: rc $rc, $active ACTIVE, $error ERROR, $((SECONDS - t0)) s"
    rows+=("{\"run\": $i, \"rc\": $rc, \"active\": $active, \"error\": $error, \"seconds\": $((SECONDS - t0))}")
done
bash tools/devcloud.sh down > "$logs/down.log" 2>&1
machine=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
{
    echo "{\"command\": \"benchmarks/demo_repeat.sh $runs\","
    echo " \"machine\": \"$machine, $(nproc) CPUs\","
    echo " \"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\","
    echo " \"commit\": \"$(git rev-parse --short HEAD)\","
    echo " \"runs_failed\": $failed,"
    echo " \"runs\": ["
    (IFS=','; echo "  ${rows[*]}")
    echo " ]}"
} > "$out"
echo "$failed of $runs runs failed; $out; logs in $logs"
[ "$failed" = 0 ]
