#!/usr/bin/env bash
# Runs the in-process protocol suite (test_cluster_protocol: three whole nodes over the datagram
# and stream twins, every fault case) many times with different seeds, P at a time, and counts
# the failures: a flake is a bug to find, so every failing run's log is kept.
#
# Usage: bash scripts/protocol_repeats.sh [RUNS] [PARALLEL]   (default 20 runs, nproc/2 at a time)
# Environment: BIN (build/release/bin), SECONDS_LIMIT (stop starting runs after this long; 0: none),
# RESULTS (a folder for logs; $OUT on the device machine), FIRST_SEED (1).
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-20}"
PARALLEL="${2:-$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))}"
BIN="${BIN:-build/release/bin}"
SECONDS_LIMIT="${SECONDS_LIMIT:-0}"
RESULTS="${RESULTS:-${OUT:-$(mktemp -d /tmp/protocol-repeats.XXXXXX)}}"
FIRST_SEED="${FIRST_SEED:-1}"
mkdir -p "$RESULTS/runs"
export THRESHER_SOURCE_DIR="$PWD" THRESHER_BIN_DIR="$BIN" QT_QPA_PLATFORM=offscreen
export THRESHER_FASHION_MNIST="${THRESHER_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}"

started=0
start=$SECONDS
run_one() {
  local seed=$1
  if THRESHER_PROTOCOL_SEED=$seed timeout 600 "$BIN/test_cluster_protocol" >"$RESULTS/runs/seed-$seed.log" 2>&1; then
    echo "seed $seed ok $(grep -o 'Totals:.*' "$RESULTS/runs/seed-$seed.log")"
    rm -f "$RESULTS/runs/seed-$seed.log"
  else
    echo "seed $seed FAILED: $(grep -m3 -E '^FAIL' "$RESULTS/runs/seed-$seed.log" | cut -c1-300)"
  fi
}
for ((i = 0; i < RUNS; ++i)); do
  if (( SECONDS_LIMIT > 0 && SECONDS - start > SECONDS_LIMIT )); then break; fi
  while (( $(jobs -rp | wc -l) >= PARALLEL )); do wait -n; done
  run_one $((FIRST_SEED + i)) >>"$RESULTS/summary.txt" &
  started=$((started + 1))
done
wait
ok=$(grep -cE '^seed [0-9]+ ok ' "$RESULTS/summary.txt" || true)
failed=$(grep -cE '^seed [0-9]+ FAILED' "$RESULTS/summary.txt" || true)
echo "protocol_repeats: $started runs ($PARALLEL at a time, $((SECONDS - start)) s): $ok ok, $failed failed" | tee -a "$RESULTS/summary.txt"
[[ "$failed" == 0 ]]
