#!/usr/bin/env bash
# What the staleness bound costs: two gradient-sharing nodes on loopback (the MLP on
# Fashion-MNIST, one thread each), for --max-staleness 0, 1, 2 and off, unpinned and both pinned
# to one core. Per row: samples/s of both nodes together (between each node's first and last
# iteration event), bytes sent per iteration (node 0), mean wait per step, steps that stopped
# waiting, the largest lag, and test accuracy after the epoch.
# BASE_BIN: a folder with an older thresher-engine to run first in each setting (it gets no
# --max-staleness), for a before/after comparison in one run.
#   LIMIT (12800 samples), PINNED ("no yes"), BOUNDS ("0 1 2 off"), THRESHER_BIN, BASE_BIN
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cluster_env.sh" staleness
LIMIT="${LIMIT:-12800}" PINNED="${PINNED:-no yes}" BOUNDS="${BOUNDS:-0 1 2 off}"
MODEL="$ROOT/resources/models/mlp.json"
printf "%-7s %-6s %-10s %-11s %-8s %-9s %-7s %s\n" pinned bound samples/s bytes/iter wait_ms timeouts lag_max accuracy
run() {  # pinned, label, engine, extra args...
  local pinned=$1 label=$2 engine=$3; shift 3
  local nodes; nodes="$(loopback_nodes 2)"
  local pre=(); [ "$pinned" = yes ] && pre=(taskset -c 0)
  for r in 0 1; do
    "${pre[@]}" "$engine" train --model "$MODEL" --data fashion-mnist --epochs 1 --batch 64 --limit "$LIMIT" \
      --threads 1 --seed 1 --nodes "$nodes" --node-rank $r --secret-file "$WORK/secret" "$@" \
      > "$WORK/$r.jsonl" 2>/dev/null &
  done
  wait
  python3 - "$pinned" "$label" "$WORK/0.jsonl" "$WORK/1.jsonl" <<'PY'
import json, sys
pinned, label, files = sys.argv[1], sys.argv[2], sys.argv[3:]
rate, tx, wait, to, lag, acc = 0.0, 0.0, 0.0, 0, 0, "-"
for i, f in enumerate(files):
    ev = [json.loads(l) for l in open(f)]
    its = [e for e in ev if e["event"] == "iteration"]
    span = its[-1]["t"] - its[0]["t"]
    rate += (its[-1]["samples"] - its[0]["samples"]) / span
    wait = max(wait, sum(e.get("wait_ms", 0) for e in its) / len(its))
    to = max(to, its[-1].get("wait_timeouts", 0)); lag = max(lag, max(e.get("lag_max", 0) for e in its))
    if i == 0:
        tx = (its[-1]["bytes_tx"] - its[0]["bytes_tx"]) / (len(its) - 1)
        acc = "%.4f" % [e for e in ev if e["event"] == "epoch_end"][-1]["accuracy"]
print(f"{pinned:7} {label:6} {rate:<10.0f} {tx:<11.0f} {wait:<8.2f} {to:<9} {lag:<7} {acc}")
PY
}
for pinned in $PINNED; do
  [ -n "${BASE_BIN:-}" ] && run "$pinned" before "$BASE_BIN/thresher-engine"
  for b in $BOUNDS; do run "$pinned" "$b" "$E" --max-staleness "$b"; done
done
