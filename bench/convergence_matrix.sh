#!/usr/bin/env bash
# The convergence matrix of tests/engine/cli/test_convergence_matrix.cpp on Fashion-MNIST:
#   {2, 4 workers} × {one process, processes over a mesh, processes through a relay}
#   × {adaptive, fixed, target} × {unpinned, all pinned to one core}
# MODEL (lenet | mlp, default mlp), LIMIT training samples (12800), EPOCHS (1), batch 64 for the
# whole run (64/W per worker). Prints test accuracy per row and the difference to one machine;
# a row whose run fails (divergence, NaN guard) says so. THRESHER_BIN as elsewhere.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cluster_env.sh" matrix
MODEL="${MODEL:-mlp}" LIMIT="${LIMIT:-12800}" EPOCHS="${EPOCHS:-1}"
common=(train --model "$ROOT/resources/models/$MODEL.json" --data fashion-mnist --epochs "$EPOCHS" --limit "$LIMIT"
        --seed 1 --threads 1)
acc() { python3 -c "
import json, sys
ends = [json.loads(l) for l in open(sys.argv[1]) if '\"epoch_end\"' in l]
ok = any('\"status\":\"ok\"' in l for l in open(sys.argv[1]))
print('%.4f' % ends[-1]['accuracy'] if ends and ok else 'failed')" "$1"; }
"$E" "${common[@]}" --batch 64 > "$WORK/one.jsonl" 2>/dev/null
one="$(acc "$WORK/one.jsonl")"
echo "one machine: $one"
printf "%-8s %-8s %-12s %-8s %-9s %s\n" workers place threshold pinned accuracy diff
for W in 2 4; do for place in process mesh relay; do for thr in adaptive fixed:0.001 target:0.01; do for pin in no yes; do
  pre=(); [ "$pin" = yes ] && pre=(taskset -c 0)
  sharing=(--strategy gradient-sharing --threshold-algorithm "$thr" --batch $((64 / W)))
  if [ "$place" = process ]; then
    "${pre[@]}" "$E" "${common[@]}" "${sharing[@]}" --workers-per-node "$W" > "$WORK/0.jsonl" 2>/dev/null || true
  else
    nodes="$(loopback_nodes "$W")"
    for r in $(seq 0 $((W - 1))); do
      "${pre[@]}" "$E" "${common[@]}" "${sharing[@]}" --nodes "$nodes" --node-rank "$r" --topology "$place" \
        --secret-file "$WORK/secret" > "$WORK/$r.jsonl" 2>/dev/null &
    done
    wait || true
  fi
  a="$(acc "$WORK/0.jsonl")"
  d="$(python3 -c "print('%+.4f' % (float('$a') - float('$one')) if '$a' != 'failed' else '-')")"
  printf "%-8s %-8s %-12s %-8s %-9s %s\n" "$W" "$place" "$thr" "$pin" "$a" "$d"
done; done; done; done
