#!/usr/bin/env bash
# Throughput over a 1 Gbit/s link: two engine nodes in network namespaces this script creates
# (thr-bench-a/b, veth with 10.232.0.1/.2, shaped by `tc tbf` to 1 gbit in both directions),
# training the MLP on Fashion-MNIST with one thread each, for:
#   gradient-sharing        threshold-encoded updates every iteration (the default adaptive τ)
#   averaging-5             parameters + updater state averaged every 5 iterations
#   dense-1                 parameters averaged every iteration without updater state: a dense
#                           exchange of 4·N bytes each way per iteration
# against one node alone (same thread count). Reports samples/s (both nodes' samples / wall
# time) and the overhead per iteration relative to the single node's iteration time.
# Rates are measured between each node's first and last iteration event (start-up and
# evaluation excluded). Needs root, iproute2 and tc; cleans the namespaces up on exit.
# Environment: LIMIT (12800
# training samples per run), RATE (1gbit), THRESHER_BIN; LINK: tbf (the default: shaped by the
# kernel), emulated (no tc; the engines' own --link-rate RATE, engine/dist/net/link_emulator.h)
# or both; STRATEGIES (default "gradient-sharing averaging-5 dense-1"; also gs-send: gradient
# sharing with --overlap-comm send, gs-s1: staleness bound 1, gs-s1-encode: bound 1 with
# --overlap-comm encode); EXTRA: more engine
# arguments for the pairs (e.g. "--max-staleness 1"). After the table, each run's mean phase
# times per iteration (engine/events/README.md) and its test accuracy after the epoch.
set -euo pipefail
[ "$(id -u)" -eq 0 ] || { echo "netns_throughput: needs root (network namespaces)" >&2; exit 2; }
A=thr-bench-a B=thr-bench-b
cleanup() { ip netns del "$A" 2>/dev/null || true; ip netns del "$B" 2>/dev/null || true; }
CLEANUP=cleanup
source "$(dirname "${BASH_SOURCE[0]}")/cluster_env.sh" netns
LIMIT="${LIMIT:-12800}"
RATE="${RATE:-1gbit}"
cleanup
ip netns add "$A"; ip netns add "$B"
ip link add thr-bva type veth peer name thr-bvb
ip link set thr-bva netns "$A"; ip link set thr-bvb netns "$B"
ip -n "$A" addr add 10.232.0.1/24 dev thr-bva; ip -n "$B" addr add 10.232.0.2/24 dev thr-bvb
for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
ip -n "$A" link set thr-bva up; ip -n "$B" link set thr-bvb up
LINK="${LINK:-tbf}"
STRATEGIES="${STRATEGIES:-gradient-sharing averaging-5 dense-1}"
shape() {  # tbf on both ends of the veth, or none
  local op=$1
  tc -n "$A" qdisc "$op" dev thr-bva root tbf rate "$RATE" burst 512kb latency 20ms 2>/dev/null || [ "$op" = del ]
  tc -n "$B" qdisc "$op" dev thr-bvb root tbf rate "$RATE" burst 512kb latency 20ms 2>/dev/null || [ "$op" = del ]
}
MODEL="$ROOT/resources/models/mlp.json"
common=(train --model "$MODEL" --data fashion-mnist --epochs 1 --batch 64 --limit "$LIMIT" --test-limit 1000 --threads 1)

summarise() {  # label, files...: steady-state rates between each node's first and last iteration
  python3 - "$@" <<'PY'
import json, os, sys
label, files = sys.argv[1], sys.argv[2:]
rate, per_iter, iter_ms, tx = 0.0, 0.0, 0.0, 0.0
phases = ["etl_ms", "receive_ms", "decode_ms", "wait_ms", "compute_ms", "step_ms", "updater_ms", "encode_ms", "apply_ms", "send_ms", "average_ms"]
sums, acc = {}, ""
for f in files:
    ev = [json.loads(l) for l in open(f)]
    for e in ev:
        if e["event"] == "epoch_end" and "accuracy" in e: acc = f"{e['accuracy']:.4f}"
        if e["event"] == "iteration":
            for p in phases: sums[p] = sums.get(p, 0.0) + e.get(p, 0.0)
    its = [e for e in ev if e["event"] == "iteration"]
    span = its[-1]["t"] - its[0]["t"]
    rate += (its[-1]["samples"] - its[0]["samples"]) / span
    per_iter = max(per_iter, span * 1000 / (len(its) - 1))
    iter_ms = max(iter_ms, sum(e["iter_ms"] for e in its) / len(its))
    # Between the first and last iteration event: what a run sends once after its last
    # iteration (7.2 MB per MLP node) is not per iteration (launcher/sweep/run_summary.h).
    tx = max(tx, (its[-1].get("bytes_tx", 0) - its[0].get("bytes_tx", 0)) / max(len(its) - 1, 1))
print(f"{label} {rate:.1f} {per_iter:.3f} {iter_ms:.3f} {tx:.0f}")
n = sum(1 for f in files for l in open(f) if '"event":"iteration"' in l)
with open(os.environ["PHASES"], "a") as out:
    out.write(f"{label:<22} acc {acc or '-':>6}  " + " ".join(f"{p[:-3]} {sums.get(p, 0.0) / max(n, 1):.2f}" for p in phases if sums.get(p)) + "\n")
PY
}

export PHASES="$WORK/phases"
ip netns exec "$A" "$E" "${common[@]}" > "$WORK/single.jsonl" 2>/dev/null
summarise single "$WORK/single.jsonl" > "$WORK/results"
run_pair() {  # label, strategy args...
  local label=$1; shift
  # shellcheck disable=SC2086
  set -- "$@" ${EXTRA:-}
  local nodes="10.232.0.1:40123,10.232.0.2:40123"
  ip netns exec "$A" "$E" "${common[@]}" --nodes "$nodes" --node-rank 0 --secret-file "$WORK/secret" "$@" > "$WORK/$label-0.jsonl" 2>/dev/null &
  ip netns exec "$B" "$E" "${common[@]}" --nodes "$nodes" --node-rank 1 --secret-file "$WORK/secret" "$@" > "$WORK/$label-1.jsonl" 2>/dev/null &
  wait
  summarise "$label" "$WORK/$label-0.jsonl" "$WORK/$label-1.jsonl" >> "$WORK/results"
}
run_strategies() {  # suffix, more engine args...
  local suffix=$1; shift
  for s in $STRATEGIES; do
    case $s in
      gradient-sharing) run_pair "gradient-sharing$suffix" --strategy gradient-sharing "$@" ;;
      gs-s1) run_pair "gs-s1$suffix" --strategy gradient-sharing --max-staleness 1 "$@" ;;
      gs-send) run_pair "gs-send$suffix" --strategy gradient-sharing --overlap-comm send "$@" ;;
      gs-s1-encode) run_pair "gs-s1-encode$suffix" --strategy gradient-sharing --max-staleness 1 --overlap-comm encode "$@" ;;
      averaging-5) run_pair "averaging-5$suffix" --strategy parameter-averaging --averaging-frequency 5 "$@" ;;
      dense-1) run_pair "dense-1$suffix" --strategy parameter-averaging --averaging-frequency 1 --save-updater false "$@" ;;
      *) echo "netns_throughput: unknown strategy $s" >&2; exit 2 ;;
    esac
  done
}
if [ "$LINK" = tbf ] || [ "$LINK" = both ]; then shape add; run_strategies "" ; shape del; fi
if [ "$LINK" = emulated ] || [ "$LINK" = both ]; then run_strategies "+emul" --link-rate "$RATE"; fi

python3 - "$WORK/results" "$RATE" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
base_rate, base_iter = float(rows[0][1]), float(rows[0][2])
print(f"MLP, 2 nodes over a {sys.argv[2]} link (tc tbf; +emul: the engines' emulated link), 1 thread each; one node alone: {base_rate:.0f} samples/s, {base_iter:.2f} ms per iteration")
print(f"{'strategy':<18} {'samples/s':>10} {'vs 1 node':>10} {'ms/iter':>9} {'overhead':>10} {'tx B/iter':>11}")
for label, rate, per_iter, iter_ms, tx in rows:
    r, p = float(rate), float(per_iter)
    print(f"{label:<18} {r:>10.0f} {r / base_rate:>9.2f}x {p:>9.2f} {p - base_iter:>8.2f}ms {float(tx):>11.0f}")
PY
echo "mean phase times per iteration (ms), test accuracy after the epoch:"
cat "$WORK/phases"
