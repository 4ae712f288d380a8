#!/usr/bin/env bash
# Slow links (issue 21): the MLP of resources/models (1.8 M parameters: 7.2 MB per averaging frame,
# 14.4 MB with Nesterov's momentum) on 2 loopback nodes, each node's egress behind the engine's
# emulated link. The cases the issue found splitting a run, and what each node ends with:
#   gs-5mbit         gradient sharing, 5 Mbit/s (the final reconcile: 7.2 MB each way, ~11.5 s)
#   gs-1mbit-50ms    gradient sharing, 1 Mbit/s and 50 ms (~58 s each way)
#   pa-f1-20mbit     parameter averaging, frequency 1, 20 Mbit/s (14.4 MB per round and direction)
#   pa-f5-20mbit     parameter averaging, frequency 5, 20 Mbit/s
# Per node: status, exit code, wall time, warnings (the first one), reconcile_gap; per case the
# saved replicas' max |Δ| (`compare`). Exit status 1 when any node did not end ok or the
# replicas differ by more than 1e-5.
# Environment: LIMIT (1280 samples), CASES (all four), THRESHER_BIN.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cluster_env.sh" slow-links
LIMIT="${LIMIT:-1280}"
CASES="${CASES:-gs-5mbit gs-1mbit-50ms pa-f1-20mbit pa-f5-20mbit}"
status=0

args_for() {
  case "$1" in
    gs-5mbit) echo "--strategy gradient-sharing --link-rate 5mbit" ;;
    gs-1mbit-50ms) echo "--strategy gradient-sharing --link-rate 1mbit --link-delay 50ms" ;;
    pa-f1-20mbit) echo "--strategy parameter-averaging --averaging-frequency 1 --link-rate 20mbit" ;;
    pa-f5-20mbit) echo "--strategy parameter-averaging --averaging-frequency 5 --link-rate 20mbit" ;;
    *) echo "slow_links: unknown case $1" >&2; return 1 ;;
  esac
}

printf '%-14s %4s %-7s %4s %7s %8s %12s  %s\n' case node status exit wall_s warnings reconcile_gap first_warning
for c in $CASES; do
  extra="$(args_for "$c")" || exit 2
  nodes="$(loopback_nodes 2)"
  start=$(date +%s.%N)
  for r in 0 1; do
    # shellcheck disable=SC2086  # extra: the case's options, split on purpose
    timeout 900 "$E" train --model "$ROOT/resources/models/mlp.json" --data fashion-mnist --epochs 1 --batch 32 \
      --limit "$LIMIT" --test-limit 1000 --threads 1 --nodes "$nodes" --node-rank $r \
      --secret-file "$WORK/secret" --save "$WORK/$c-$r.thr" $extra > "$WORK/$c-$r.jsonl" 2> "$WORK/$c-$r.log" &
    pids[$r]=$!
  done
  for r in 0 1; do
    wait "${pids[$r]}"
    codes[$r]=$?
  done
  for r in 0 1; do
    python3 - "$WORK/$c-$r.jsonl" "$c" "$r" "${codes[$r]}" "$start" <<'PY'
import json, sys, time
events = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
fin = [e for e in events if e["event"] == "run_finished"]
warn = [e["message"] for e in events if e["event"] in ("warning", "error")]
f = fin[-1] if fin else {}
gap = f.get("reconcile_gap", "-")
print(f"{sys.argv[2]:<14} {sys.argv[3]:>4} {f.get('status', '-'):<7} {sys.argv[4]:>4} {f.get('wall_s', 0):>7.1f} "
      f"{len(warn):>8} {gap if isinstance(gap, str) else f'{gap:.2e}':>12}  {(warn[0][:110] if warn else '')}")
PY
    [[ "${codes[$r]}" == 0 ]] || status=1
  done
  cmp="$("$E" compare "$WORK/$c-0.thr" "$WORK/$c-1.thr" --tolerance 1e-5 2>&1)" || status=1
  echo "$c replicas: $cmp"
done
exit "$status"
