#!/usr/bin/env bash
# GPU training throughput: thresher-engine --device cuda:0 against the PyTorch peer
# (bench/torch_peer.py --device cuda) on the same GPU, for LeNet and the MLP at batch 64 and 512,
# then the device threshold encoder's throughput (bench_device_encoder). The GPU sibling of
# train_throughput.sh; bench/README.md says what each figure means.
#
# Both sides compute in plain FP32 (no TF32), keep the training set in memory, read the loss back
# every iteration and leave the first 20 iterations out of their rate (start-up, cuDNN's
# algorithm search).
#
# Environment: EPOCHS (1), BATCHES ("64 512"), MODELS ("lenet mlp"), DEVICE (cuda:0), THREADS (4,
# the engine's host threads: data loading), SEED (1), LIMIT (unset: all 60 000 samples),
# DATA (/usr/share/datasets/fashion-mnist: a folder with the four IDX .gz files), THRESHER_BIN
# (the folder with thresher-engine and bench_device_encoder; default build/cuda/bin, configured
# and built first when missing), PYTHON (python3: the one that imports torch), RESULTS_DIR (logs;
# default a fresh folder under /tmp, kept), ENCODER (1: also run the encoder benchmark),
# CPU_REFERENCE (1: also train each model once on --device cpu at the first batch size, so the
# GPU run's test accuracy can be set beside the CPU backend's).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

EPOCHS="${EPOCHS:-1}"
BATCHES="${BATCHES:-64 512}"
MODELS="${MODELS:-lenet mlp}"
DEVICE="${DEVICE:-cuda:0}"
THREADS="${THREADS:-4}"
SEED="${SEED:-1}"
LIMIT="${LIMIT:-}"
DATA="${DATA:-/usr/share/datasets/fashion-mnist}"
PYTHON="${PYTHON:-python3}"
ENCODER="${ENCODER:-1}"
CPU_REFERENCE="${CPU_REFERENCE:-1}"
RESULTS_DIR="${RESULTS_DIR:-$(mktemp -d /tmp/thresher-gpu-bench.XXXXXX)}"
BIN="${THRESHER_BIN:-build/cuda/bin}"

if [[ ! -x "$BIN/thresher-engine" ]]; then
  echo "gpu_throughput: no $BIN/thresher-engine; building build/cuda (THRESHER_CUDA=ON)" >&2
  cmake --preset release -B build/cuda -DTHRESHER_CUDA=ON -DTHRESHER_GUI=OFF -DTHRESHER_TESTS=OFF >&2
  cmake --build build/cuda -j"$(nproc)" --target thresher-engine bench_device_encoder >&2
  BIN=build/cuda/bin
fi
if ! "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "gpu_throughput: $PYTHON cannot import torch with CUDA; the PyTorch columns will be empty" >&2
fi
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
  [[ -f "$DATA/$f" ]] || { echo "gpu_throughput: $DATA/$f is missing (set DATA)" >&2; exit 2; }
done

limit_args=()
if [[ -n "$LIMIT" ]]; then
  limit_args=(--limit "$LIMIT")
fi
torch_device="cuda:${DEVICE#cuda:}"

echo "gpu_throughput: device=$DEVICE epochs=$EPOCHS batches='$BATCHES' seed=$SEED limit=${LIMIT:-all} logs=$RESULTS_DIR" >&2
"$BIN/thresher-engine" devices >&2 || true
status=0
for batch in $BATCHES; do
  labels=()
  for model in $MODELS; do
    label="$model-b$batch"
    labels+=("$label")
    out="$RESULTS_DIR/$label"
    mkdir -p "$out"
    engine_cmd=("$BIN/thresher-engine" train --model "resources/models/$model.json" --data "$DATA"
                --device "$DEVICE" --epochs "$EPOCHS" --batch "$batch" --threads "$THREADS" --seed "$SEED"
                "${limit_args[@]}")
    echo "== $label: ${engine_cmd[*]}" >&2
    "${engine_cmd[@]}" >"$out/engine.jsonl" 2>"$out/engine.stderr" ||
      { echo "gpu_throughput: $label: engine exited with status $? (see $out/engine.stderr)" >&2; status=1; }

    peer_cmd=("$PYTHON" bench/torch_peer.py --model "$model" --device "$torch_device" --warmup 20
              --epochs "$EPOCHS" --batch "$batch" --threads "$THREADS" --seed "$SEED" --data-dir "$DATA"
              "${limit_args[@]}")
    echo "== $label: ${peer_cmd[*]}" >&2
    "${peer_cmd[@]}" >"$out/torch.jsonl" 2>"$out/torch.stderr" ||
      { echo "gpu_throughput: $label: torch peer exited with status $? (see $out/torch.stderr)" >&2; status=1; }
  done
  echo
  echo "batch $batch on $DEVICE"
  "$PYTHON" bench/summarize.py "$RESULTS_DIR" "${labels[@]}" --batch "$batch" || status=1
done

accuracy() {  # the last epoch_end's accuracy in an engine log
  "$PYTHON" -c 'import json,sys
acc = [json.loads(l).get("accuracy") for l in open(sys.argv[1]) if l.startswith("{") and "\"epoch_end\"" in l]
print(acc[-1] if acc else "-")' "$1" 2>/dev/null || echo "-"
}
if [[ "$CPU_REFERENCE" == 1 ]]; then
  batch="${BATCHES%% *}"
  echo
  echo "test accuracy, engine on $DEVICE vs engine on cpu (batch $batch, same seed)"
  for model in $MODELS; do
    out="$RESULTS_DIR/$model-b$batch"
    "$BIN/thresher-engine" train --model "resources/models/$model.json" --data "$DATA" --device cpu \
      --epochs "$EPOCHS" --batch "$batch" --threads "$(nproc)" --seed "$SEED" "${limit_args[@]}" \
      >"$out/engine-cpu.jsonl" 2>"$out/engine-cpu.stderr" || status=1
    echo "$model: $DEVICE $(accuracy "$out/engine.jsonl")  cpu $(accuracy "$out/engine-cpu.jsonl")"
  done
fi

if [[ "$ENCODER" == 1 ]]; then
  echo
  echo "device threshold encoder (bench_device_encoder)"
  "$BIN/bench_device_encoder" --device "$DEVICE" | tee "$RESULTS_DIR/encoder.txt" || status=1
fi
exit "$status"
