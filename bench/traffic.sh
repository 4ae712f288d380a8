#!/usr/bin/env bash
# Bytes on the wire per iteration: gradient sharing against sending dense updates, for LeNet and
# the MLP. Two engine nodes on loopback (1 worker each), Fashion-MNIST, the default adaptive
# threshold and residual clipping. Reports, per model:
#   dense       4·N bytes: what one dense float32 update per worker per iteration would send
#   message     the mean encoded message (iteration events' message_bytes)
#   wire        the node's datagram bytes sent per iteration (headers, MACs, acks and
#               retransmissions included; between the first and the last iteration event, so
#               what a run sends once after its last iteration is left out)
# and the reduction dense / wire. Environment: LIMIT (12800), EPOCHS (1), THRESHER_BIN.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cluster_env.sh" traffic
LIMIT="${LIMIT:-12800}"
EPOCHS="${EPOCHS:-1}"

printf '%-6s %12s %10s %14s %14s %12s %9s\n' model params density dense_B/iter message_B/iter wire_B/iter reduction
for model in lenet mlp; do
  nodes="$(loopback_nodes 2)"
  for r in 0 1; do
    "$E" train --model "$ROOT/resources/models/$model.json" --data fashion-mnist --epochs "$EPOCHS" \
      --limit "$LIMIT" --test-limit 1000 --threads 1 --nodes "$nodes" --node-rank $r \
      --secret-file "$WORK/secret" > "$WORK/$model-$r.jsonl" 2> "$WORK/$model-$r.log" &
  done
  wait
  python3 - "$WORK/$model-0.jsonl" "$model" <<'PY'
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
start = next(e for e in events if e["event"] == "run_started")
its = [e for e in events if e["event"] == "iteration"]
n = start["params"]
dense = 4 * n
msg = sum(e["message_bytes"] for e in its) / len(its)
density = sum(e["density"] for e in its) / len(its)
wire = (its[-1]["bytes_tx"] - its[0]["bytes_tx"]) / max(len(its) - 1, 1)
print(f"{sys.argv[2]:<6} {n:>12} {density:>10.5f} {dense:>14.0f} {msg:>14.0f} {wire:>12.0f} {dense / wire:>8.0f}x")
PY
done
