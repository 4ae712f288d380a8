#!/usr/bin/env bash
# What each topology costs the nodes: N engine nodes on loopback (1 worker, 1 thread each), the
# MLP on Fashion-MNIST with gradient sharing, once per topology (mesh, relay, tree). Reports per
# topology the bytes each node sends per iteration while it trains (its last iteration event's
# cumulative bytes_tx / its iterations, so the start and the final reconcile are left out): the
# busiest node, the mean, node 0 -- plus the messages relayed and the wall time of the run. Then
# the same for parameter averaging (every 5 iterations) with its rounds in a star on node 0
# (mesh) and up the tree.
# A mesh has every node upload its messages N-1 times; the relay star puts all of that on node 0;
# a tree bounds every node to fanout+1 links. On a 2-core machine the wall times mostly measure
# CPU contention between N processes, not the network. Environment: NODES (8), LIMIT (12800),
# FANOUT (2), THRESHER_BIN.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cluster_env.sh" topology
NODES="${NODES:-8}"
LIMIT="${LIMIT:-12800}"
FANOUT="${FANOUT:-2}"

run_case() {  # strategy topology
  local strategy=$1 topology=$2
  nodes="$(loopback_nodes "$NODES")"
  extra=(--strategy "$strategy" --topology "$topology")
  [ "$topology" = tree ] && extra+=(--fanout "$FANOUT")
  start=$(date +%s.%N)
  for ((r = 0; r < NODES; r++)); do
    "$E" train --model "$ROOT/resources/models/mlp.json" --data fashion-mnist --epochs 1 --limit "$LIMIT" \
      --test-limit 500 --threads 1 --nodes "$nodes" --node-rank $r --secret-file "$WORK/secret" "${extra[@]}" \
      > "$WORK/$strategy-$topology-$r.jsonl" 2> "$WORK/$strategy-$topology-$r.log" &
  done
  wait
  end=$(date +%s.%N)
  python3 - "$WORK/$strategy-$topology" "$strategy" "$topology" "$NODES" "$start" "$end" "$FANOUT" <<'PY'
import json, sys
prefix, strategy, topology, n, start, end, fanout = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6]), sys.argv[7]
tx, rx, relayed = [], [], 0
for r in range(n):
    events = [json.loads(l) for l in open(f"{prefix}-{r}.jsonl")]
    its = [e for e in events if e["event"] == "iteration"]
    tx.append(its[-1]["bytes_tx"] / len(its))
    rx.append(its[-1]["bytes_rx"] / len(its))
    relayed += its[-1].get("relayed", 0)
name = topology + (f" ({fanout})" if topology == "tree" else "")
print(f"{strategy:<20} {name:<10} {n:>5} {max(tx):>14.0f} {sum(tx) / n:>14.0f} {tx[0]:>14.0f} {rx[0]:>14.0f} {relayed:>8} {end - start:>7.1f}")
PY
}

printf '%-20s %-10s %5s %14s %14s %14s %14s %8s %7s\n' strategy topology nodes max_tx_B/it mean_tx_B/it node0_tx_B/it node0_rx_B/it relayed wall_s
for topology in mesh relay tree; do run_case gradient-sharing "$topology"; done
for topology in mesh tree; do run_case parameter-averaging "$topology"; done
