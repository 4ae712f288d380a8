#!/usr/bin/env bash
# Chaos run: three engine nodes training the MLP on Fashion-MNIST with gradient sharing, for
# DURATION seconds of back-to-back runs, each with
#   - LOSS (5%) of every packet dropped at random (iptables `statistic` in a network namespace
#     this script creates, thr-chaos, so nothing outside it is touched; needs root -- without
#     root the nodes run on the host's loopback with no loss, and the report says so);
#   - node 2 killed (SIGKILL) once it has done KILL_AFTER iterations, and restarted 1 s later
#     with the same command line: it must rejoin from the controller's snapshot;
#   - a hostile peer (bench/chaos_hostile.py, root only) replaying the nodes' own datagrams
#     (exactly, and from a foreign port), flipping bytes, forging headers, sending garbage, and
#     holding TCP connections open (idle, slowloris, replayed handshakes, header-only frames).
# Every node has a deadline (RUN_TIMEOUT); a run that hits it counts as a failure. Reports per run
# and in total: iterations (node 0), retransmitted and dropped datagrams (all nodes' run_finished),
# what the hostile peer sent, whether node 2 rejoined, and the replicas' max |difference|
# (thresher-engine compare, node 0 against 1 and against the restarted 2).
# Environment: DURATION (600), LOSS (0.05), EPOCHS (3), LIMIT (6000), KILL_AFTER (60),
# RUN_TIMEOUT (900), THRESHER_BIN. Exit status 1 if any run failed or replicas differ.
set -euo pipefail
NS=thr-chaos
cleanup() {
  [ -n "${HOSTILE_PID:-}" ] && kill "$HOSTILE_PID" 2>/dev/null || true
  for p in ${NODE_PIDS:-}; do kill "$p" 2>/dev/null || true; done
  [ "$(id -u)" -eq 0 ] && ip netns del "$NS" 2>/dev/null || true
}
CLEANUP=cleanup
source "$(dirname "${BASH_SOURCE[0]}")/cluster_env.sh" chaos
DURATION="${DURATION:-600}"
LOSS="${LOSS:-0.05}"
EPOCHS="${EPOCHS:-3}"
LIMIT="${LIMIT:-6000}"
KILL_AFTER="${KILL_AFTER:-60}"
RUN_TIMEOUT="${RUN_TIMEOUT:-900}"

if [ "$(id -u)" -eq 0 ]; then
  ip netns del "$NS" 2>/dev/null || true
  ip netns add "$NS"
  ip -n "$NS" link set lo up
  ip netns exec "$NS" iptables -A INPUT -m statistic --mode random --probability "$LOSS" -j DROP
  IN=(ip netns exec "$NS")
  NODES="127.0.0.1:47101,127.0.0.1:47102,127.0.0.1:47103"
  PORTS=(47101 47102 47103)
  MODE="netns $NS, ${LOSS} loss (iptables statistic), hostile peer"
else
  IN=()
  NODES="$(loopback_nodes 3)"
  MODE="host loopback, NO loss and NO hostile peer (not root)"
fi
echo "chaos: $MODE; duration ${DURATION} s; runs of $EPOCHS epochs, $LIMIT samples; node 2 killed after $KILL_AFTER iterations"

node() {  # rank tag: starts a node in the background (a child of this shell); its pid in PID
  local r=$1 tag=$2
  "${IN[@]}" timeout -s KILL "$RUN_TIMEOUT" "$E" train --model "$ROOT/resources/models/mlp.json" --data fashion-mnist \
    --epochs "$EPOCHS" --limit "$LIMIT" --test-limit 1000 --batch 32 --threads 1 --seed 5 \
    --nodes "$NODES" --node-rank "$r" --secret-file "$WORK/secret" --save "$WORK/$tag.thr" \
    --strategy gradient-sharing --join-wait 10 > "$WORK/$tag.jsonl" 2> "$WORK/$tag.log" &
  PID=$!
}

iterations_of() { grep -c '"event":"iteration"' "$1" 2>/dev/null || true; }

start=$(date +%s)
run=0
failed=0
: > "$WORK/runs.jsonl"
while [ $(( $(date +%s) - start )) -lt "$DURATION" ]; do
  run=$((run + 1))
  node 0 "r$run-0"; p0=$PID; node 1 "r$run-1"; p1=$PID; node 2 "r$run-2"; p2=$PID
  NODE_PIDS="$p0 $p1 $p2"
  HOSTILE_PID=""
  if [ "$(id -u)" -eq 0 ]; then
    "${IN[@]}" python3 "$ROOT/bench/chaos_hostile.py" "${PORTS[@]}" > "$WORK/r$run-hostile.json" 2>&1 &
    HOSTILE_PID=$!
  fi
  # Node 2 dies once it has done KILL_AFTER iterations (deadline: RUN_TIMEOUT), then comes back.
  killed=0
  t0=$(date +%s)
  while kill -0 "$p2" 2>/dev/null && [ $(( $(date +%s) - t0 )) -lt "$RUN_TIMEOUT" ]; do
    if [ "$(iterations_of "$WORK/r$run-2.jsonl")" -ge "$KILL_AFTER" ]; then
      pkill -KILL -P "$p2" 2>/dev/null || true; kill -KILL "$p2" 2>/dev/null || true
      killed=1
      break
    fi
    sleep 0.2
  done
  wait "$p2" 2>/dev/null || true
  if [ "$killed" -eq 1 ]; then
    sleep 1
    node 2 "r$run-2b"; p2=$PID
    NODE_PIDS="$p0 $p1 $p2"
  fi
  rc=0
  for p in $p0 $p1 $p2; do wait "$p" || rc=1; done
  NODE_PIDS=""
  if [ -n "$HOSTILE_PID" ]; then kill -TERM "$HOSTILE_PID" 2>/dev/null || true; wait "$HOSTILE_PID" 2>/dev/null || true; fi
  last2="r$run-2"; [ "$killed" -eq 1 ] && last2="r$run-2b"
  d1=$("$E" compare "$WORK/r$run-0.thr" "$WORK/r$run-1.thr" --tolerance 0 2>/dev/null | tail -n 1 || true)
  d2=$("$E" compare "$WORK/r$run-0.thr" "$WORK/$last2.thr" --tolerance 0 2>/dev/null | tail -n 1 || true)
  python3 - "$WORK" "$run" "$killed" "$rc" "$last2" "$d1" "$d2" >> "$WORK/runs.jsonl" <<'PY'
import json, sys
work, run, killed, rc, last2, d1, d2 = sys.argv[1:8]
def events(tag):
    try:
        return [json.loads(l) for l in open(f"{work}/{tag}.jsonl") if l.strip()]
    except (OSError, ValueError):
        return []
def finished(ev):
    return next((e for e in reversed(ev) if e.get("event") == "run_finished"), {})
def diff(text):
    try:
        return json.loads(text)["max_abs_diff"]
    except (ValueError, KeyError, TypeError):
        return None
tags = [f"r{run}-0", f"r{run}-1", f"r{run}-2"] + ([last2] if killed == "1" else [])
evs = {t: events(t) for t in tags}
fin = {t: finished(e) for t, e in evs.items()}
try:
    hostile = json.loads(open(f"{work}/r{run}-hostile.json").read().strip().splitlines()[-1])
except (OSError, ValueError, IndexError):
    hostile = {}
rejoined = any(e.get("event") == "node_joined" and e.get("rejoin") for e in evs.get(last2, []))
out = {
    "run": int(run),
    "status": {t: fin[t].get("status", "none") for t in tags},
    "exit_ok": rc == "0",
    "iterations": fin[f"r{run}-0"].get("iters", 0),
    "retransmitted": sum(f.get("retransmitted", 0) for f in fin.values()),
    "dropped": sum(f.get("dropped", 0) for f in fin.values()),
    "killed_and_restarted": killed == "1",
    "rejoined": rejoined,
    "max_diff_0_1": diff(d1),
    "max_diff_0_2": diff(d2),
    "hostile": hostile,
    "wall_s": fin[f"r{run}-0"].get("wall_s"),
    "warnings_node0": sum(1 for e in evs[f"r{run}-0"] if e.get("event") == "warning"),
}
print(json.dumps(out))
PY
  tail -n 1 "$WORK/runs.jsonl"
  ok=$(tail -n 1 "$WORK/runs.jsonl" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
good = r["exit_ok"] and r["max_diff_0_1"] == 0 and r["max_diff_0_2"] == 0 and (r["rejoined"] or not r["killed_and_restarted"])
print(1 if good else 0)')
  [ "$ok" -eq 1 ] || { failed=$((failed + 1)); mkdir -p /tmp/thresher-chaos-failed; cp "$WORK"/r$run-* /tmp/thresher-chaos-failed/ 2>/dev/null || true
    echo "run $run FAILED (its files copied to /tmp/thresher-chaos-failed)"; }
done
python3 - "$WORK/runs.jsonl" "$(( $(date +%s) - start ))" "$MODE" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
tot = lambda k: sum(r[k] or 0 for r in runs)
hostile = {}
for r in runs:
    for k, v in r["hostile"].items():
        hostile[k] = hostile.get(k, 0) + v
diffs = [d for r in runs for d in (r["max_diff_0_1"], r["max_diff_0_2"])]
print(json.dumps({"mode": sys.argv[3], "wall_s": int(sys.argv[2]), "runs": len(runs),
                  "runs_ok": sum(1 for r in runs if r["exit_ok"]), "iterations": tot("iterations"),
                  "retransmitted": tot("retransmitted"), "dropped": tot("dropped"),
                  "restarts": sum(1 for r in runs if r["killed_and_restarted"]),
                  "rejoins": sum(1 for r in runs if r["rejoined"]),
                  "replicas_max_diff": None if None in diffs else max(diffs), "hostile": hostile}))
PY
[ "$failed" -eq 0 ]
