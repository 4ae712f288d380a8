#!/usr/bin/env bash
# Two gradient-sharing nodes pinned to ONE core (`taskset -c 0`), LeNet on the full Fashion-MNIST,
# TRIALS times: how many runs diverge (a failed run, or a NaN/non-finite error), the test accuracy
# each reached, and samples/s. Before issue 11's fix, 5 of 20 such runs diverged: two processes
# sharing a core run in phase, and each computed every gradient without the other's previous
# update. Extra engine arguments go to both nodes (e.g. --max-staleness off to see the old way).
#   bench/pinned_lenet.sh [engine args...]      TRIALS (20), EPOCHS (1), CORE (0), THRESHER_BIN
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cluster_env.sh" pinned
TRIALS="${TRIALS:-20}" EPOCHS="${EPOCHS:-1}" CORE="${CORE:-0}"
diverged=0
printf "%-5s %-8s %-9s %-10s %-8s %s\n" trial status accuracy samples/s wait_to lag_max
for t in $(seq 1 "$TRIALS"); do
  nodes="$(loopback_nodes 2)"
  for r in 0 1; do
    taskset -c "$CORE" "$E" train --model "$ROOT/resources/models/lenet.json" --data fashion-mnist --epochs "$EPOCHS" \
      --batch 32 --seed "$t" --threads 1 --nodes "$nodes" --node-rank $r --secret-file "$WORK/secret" "$@" \
      > "$WORK/t$t-$r.jsonl" 2> "$WORK/t$t-$r.err" &
  done
  status=0; wait || status=$?
  line="$(python3 - "$WORK/t$t-0.jsonl" "$WORK/t$t-1.jsonl" <<'PY'
import json, sys
acc, rate, to, lag, bad = "-", 0.0, 0, 0, False
for i, f in enumerate(sys.argv[1:]):
    ev = [json.loads(l) for l in open(f) if l.startswith("{")]
    its = [e for e in ev if e["event"] == "iteration"]
    if its:
        span = its[-1]["t"] - its[0]["t"]
        rate += (its[-1]["samples"] - its[0]["samples"]) / span if span > 0 else 0
        to = max(to, its[-1].get("wait_timeouts", 0)); lag = max(lag, max(e.get("lag_max", 0) for e in its))
    bad |= any(e["event"] == "error" for e in ev) or not any(e["event"] == "run_finished" and e["status"] == "ok" for e in ev)
    if i == 0:
        ends = [e for e in ev if e["event"] == "epoch_end"]
        if ends: acc = "%.4f" % ends[-1]["accuracy"]
print(("diverged" if bad else "ok"), acc, "%.0f" % rate, to, lag)
PY
)"
  set -- "$@"
  read -r st acc rate to lag <<< "$line"
  [ "$st" = ok ] && [ "$status" -eq 0 ] || { st=diverged; diverged=$((diverged + 1)); }
  printf "%-5s %-8s %-9s %-10s %-8s %s\n" "$t" "$st" "$acc" "$rate" "$to" "$lag"
done
echo "diverged: $diverged of $TRIALS"
