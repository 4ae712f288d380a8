#!/usr/bin/env bash
# Image data pipeline (issue 24): does decoding and augmentation keep up with training? For each
# case, thresher-engine trains one epoch from a folder of image files and the iteration events say
# how long each step waited for its batch (etl_ms) against the whole step (iter_ms): the data-wait
# share, which should stay under 5%. Also the decode time (run start, before the first step) and
# the test accuracy (top-5 with 200 classes).
#
#   lenet-png          Fashion-MNIST as PNG class folders (make_fashion_png_folder), LeNet, 1×28×28
#   lenet-png-aug      the same with --augment crop:4,flip
#   tiny-jpeg-aug      a Tiny-ImageNet-shaped folder (make_tiny_imagenet_folder: 200 classes of
#                      64×64 RGB JPEGs), resources/models/tiny_imagenet_cnn.json, crop:4,flip
#
# Environment: THREADS (2), BATCH (64), SEED (1), PNG_TRAIN (6000), PNG_TEST (1000), TINY_TRAIN
# (50 per class), TINY_TEST (10 per class), THRESHER_BIN (build/release/bin: thresher-engine and
# the two folder generators), PYTHON (python3, for the event arithmetic), RESULTS_DIR (a fresh
# /tmp folder, kept).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
THREADS="${THREADS:-2}"
BATCH="${BATCH:-64}"
SEED="${SEED:-1}"
PNG_TRAIN="${PNG_TRAIN:-6000}"
PNG_TEST="${PNG_TEST:-1000}"
TINY_TRAIN="${TINY_TRAIN:-50}"
TINY_TEST="${TINY_TEST:-10}"
BIN="${THRESHER_BIN:-build/release/bin}"
PYTHON="${PYTHON:-python3}"
RESULTS_DIR="${RESULTS_DIR:-$(mktemp -d /tmp/thresher-images.XXXXXX)}"
for tool in thresher-engine make_fashion_png_folder make_tiny_imagenet_folder; do
  [[ -x "$BIN/$tool" ]] || { echo "image_pipeline: no $BIN/$tool (build the release preset or set THRESHER_BIN)" >&2; exit 2; }
done
mkdir -p "$RESULTS_DIR"
echo "image_pipeline: threads=$THREADS batch=$BATCH seed=$SEED logs=$RESULTS_DIR"

[[ -d "$RESULTS_DIR/fashion-png" ]] ||
  "$BIN/make_fashion_png_folder" /usr/share/datasets/fashion-mnist "$RESULTS_DIR/fashion-png" "$PNG_TRAIN" "$PNG_TEST" >/dev/null
[[ -d "$RESULTS_DIR/tiny" ]] ||
  "$BIN/make_tiny_imagenet_folder" "$RESULTS_DIR/tiny" 200 "$TINY_TRAIN" "$TINY_TEST" >/dev/null

run() {  # name model data [extra engine args...]
  local name="$1" model="$2" data="$3"
  shift 3
  "$BIN/thresher-engine" train --model "$model" --data "$data" --epochs 1 --batch "$BATCH" --threads "$THREADS" \
    --seed "$SEED" "$@" >"$RESULTS_DIR/$name.jsonl" 2>"$RESULTS_DIR/$name.log"
  "$PYTHON" - "$name" "$RESULTS_DIR/$name.jsonl" <<'PY'
import json, sys
name, path = sys.argv[1], sys.argv[2]
events = [json.loads(l) for l in open(path)]
its = [e for e in events if e.get("event") == "iteration"][5:]  # past start-up
start = next(e for e in events if e.get("event") == "run_started")
end = [e for e in events if e.get("event") == "epoch_end"][-1]
etl = sum(e.get("etl_ms", 0.0) for e in its)
total = sum(e["iter_ms"] for e in its)
samples = its[-1]["samples"] - its[0]["samples"] + its[0]["samples"] / its[0]["iter"]  # "samples" counts up
top = f'{end["top_k_accuracy"]:.3f}' if "top_k" in end else "-"
print(f'{name:15s} decode {start["t"]:6.1f} s   data wait {100 * etl / total:5.2f}% of {total / len(its):7.1f} ms/step   '
      f'{1000 * samples / total:8.0f} samples/s   acc {end["accuracy"]:.3f}   top-5 {top}')
PY
}

run lenet-png resources/models/lenet.json "$RESULTS_DIR/fashion-png"
run lenet-png-aug resources/models/lenet.json "$RESULTS_DIR/fashion-png" --augment crop:4,flip
run tiny-jpeg-aug resources/models/tiny_imagenet_cnn.json "$RESULTS_DIR/tiny" --augment crop:4,flip
