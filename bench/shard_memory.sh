#!/usr/bin/env bash
# Streaming shards keep memory flat (issue 24): a synthetic IDX set about 4x larger than a memory
# budget is exported as shards (thresher-engine export), then one epoch is trained from those
# shards and from the shards of a tiny set with the same test part; peak RSS (/usr/bin/time -v)
# of the two should be within 1.2x. For contrast the big set is also trained from its IDX files,
# held whole in memory as every source but shards is. Then `predict` over each set's test part
# (streamed from the shards, one line per sample to /dev/null): within 1.2x again.
#
# "Budget" here is what a worker may spend on data: BUDGET_MB (default 64) of float rows. The big
# set is 4 x BUDGET_MB of 784-float rows (Fashion-MNIST-shaped, random pixels and a lit row per class)
# in its train part and as much again in its test part (evaluation streams it too); the tiny set is
# TINY rows (1000) with a 1000-row test part.
#
# Environment: BUDGET_MB (64), TINY (1000), BATCH (128), THREADS (2), SEED (1), THRESHER_BIN
# (build/release/bin), PYTHON (/usr/bin/python3, with numpy), RESULTS_DIR (a fresh /tmp folder, kept).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUDGET_MB="${BUDGET_MB:-64}"
TINY="${TINY:-1000}"
BATCH="${BATCH:-128}"
THREADS="${THREADS:-2}"
SEED="${SEED:-1}"
BIN="${THRESHER_BIN:-build/release/bin}"
PYTHON="${PYTHON:-/usr/bin/python3}"
RESULTS_DIR="${RESULTS_DIR:-$(mktemp -d /tmp/thresher-shards.XXXXXX)}"
[[ -x "$BIN/thresher-engine" ]] || { echo "shard_memory: no $BIN/thresher-engine (build the release preset or set THRESHER_BIN)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "shard_memory: needs GNU time (/usr/bin/time)" >&2; exit 2; }
mkdir -p "$RESULTS_DIR"
BIG=$(( BUDGET_MB * 4 * 1024 * 1024 / (784 * 4) ))
echo "shard_memory: budget ${BUDGET_MB} MiB, big set ${BIG} rows (~$(( BUDGET_MB * 4 )) MiB of floats), tiny ${TINY} rows, logs in $RESULTS_DIR"

# Plain IDX files (train + t10k), written with numpy: random pixels, classes 0-9 in turn, each
# image's class marked by a lit row so the set is learnable.
make_idx() {  # folder rows test_rows
  "$PYTHON" - "$1" "$2" "$3" <<'PY'
import struct, sys, os
import numpy as np
folder, rows, test_rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(folder, exist_ok=True)
rng = np.random.default_rng(rows)
for prefix, n in (("train", rows), ("t10k", test_rows)):
    x = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
    y = (np.arange(n) % 10).astype(np.uint8)
    x[np.arange(n), y * 2, :] = 255  # the class's row lit: learnable, every class present
    with open(f"{folder}/{prefix}-images-idx3-ubyte", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28)); f.write(x.tobytes())
    with open(f"{folder}/{prefix}-labels-idx1-ubyte", "wb") as f:
        f.write(struct.pack(">II", 0x801, n)); f.write(y.tobytes())
PY
}

cat > "$RESULTS_DIR/model.json" <<'JSON'
{"name":"shard-bench","seed":1,"input":{"channels":1,"height":28,"width":28},
 "updater":{"type":"sgd","learning_rate":0.01},
 "layers":[{"type":"dense","units":32,"activation":"relu"},{"type":"output","units":10}]}
JSON

peak_kb() { grep "Maximum resident set size" "$1" | awk '{print $NF}'; }

run_case() {  # name data
  /usr/bin/time -v -o "$RESULTS_DIR/$1.time" "$BIN/thresher-engine" train --model "$RESULTS_DIR/model.json" --data "$2" \
    --epochs 1 --batch "$BATCH" --seed "$SEED" --threads "$THREADS" --save "$RESULTS_DIR/$1.thr" \
    >"$RESULTS_DIR/$1.events" 2>"$RESULTS_DIR/$1.log"
  echo "$1: peak RSS $(( $(peak_kb "$RESULTS_DIR/$1.time") / 1024 )) MiB"
}

check_ratio() {  # what tiny-case big-case: the big set's peak RSS at most 1.2x the tiny one's
  local tiny big ratio
  tiny=$(peak_kb "$RESULTS_DIR/$2.time"); big=$(peak_kb "$RESULTS_DIR/$3.time")
  ratio=$("$PYTHON" -c "print(f'{$big / $tiny:.3f}')")
  echo "shard_memory: $1, big/tiny peak RSS from shards = $ratio (target <= 1.2)"
  "$PYTHON" -c "import sys; sys.exit(0 if $big <= 1.2 * $tiny else 1)" || { echo "shard_memory: FAIL: $1 above 1.2x" >&2; exit 1; }
}

predict_case() {  # name data
  local start=$SECONDS
  /usr/bin/time -v -o "$RESULTS_DIR/$1.time" "$BIN/thresher-engine" predict --model-file "$RESULTS_DIR/shards-tiny.thr" \
    --data "$2" --threads "$THREADS" >/dev/null 2>"$RESULTS_DIR/$1.log"
  echo "$1: peak RSS $(( $(peak_kb "$RESULTS_DIR/$1.time") / 1024 )) MiB in $((SECONDS - start)) s"
}

for set in big:$BIG:$BIG tiny:$TINY:1000; do
  IFS=: read -r name rows test_rows <<<"$set"
  [[ -d "$RESULTS_DIR/$name-idx" ]] || make_idx "$RESULTS_DIR/$name-idx" "$rows" "$test_rows"
  if [[ ! -f "$RESULTS_DIR/$name-shards/index.json" ]]; then
    rm -rf "$RESULTS_DIR/$name-shards"
    "$BIN/thresher-engine" export --data "$RESULTS_DIR/$name-idx" --out "$RESULTS_DIR/$name-shards" --batch "$BATCH" \
      --seed "$SEED" --shards 8 >"$RESULTS_DIR/$name-export.events" 2>"$RESULTS_DIR/$name-export.log"
  fi
  echo "export $name: $(tail -1 "$RESULTS_DIR/$name-export.events")"
done

run_case shards-tiny "$RESULTS_DIR/tiny-shards"
run_case shards-big "$RESULTS_DIR/big-shards"
run_case idx-big "$RESULTS_DIR/big-idx"
check_ratio "train and evaluate" shards-tiny shards-big

predict_case predict-tiny "$RESULTS_DIR/tiny-shards"
predict_case predict-big "$RESULTS_DIR/big-shards"
check_ratio predict predict-tiny predict-big
