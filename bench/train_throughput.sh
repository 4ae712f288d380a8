#!/usr/bin/env bash
# Training throughput: thresher-engine against the PyTorch peer (bench/torch_peer.py) on
# Fashion-MNIST, same models and hyper-parameters, run back to back so both see the same machine.
# Prints one table (bench/summarize.py); see bench/README.md for what each figure means.
#
# Environment: EPOCHS (1), THREADS (2), BATCH (64), SEED (1), LIMIT (unset: the full 60 000
# training samples), MODELS ("lenet mlp"), THRESHER_BIN (the engine binary or the folder holding
# it; default build/release/bin), PYTHON (/usr/bin/python3: Debian's python3-torch lives there,
# not in a pyenv), RESULTS_DIR (where logs go; default a fresh folder under /tmp, kept).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

EPOCHS="${EPOCHS:-1}"
THREADS="${THREADS:-2}"
BATCH="${BATCH:-64}"
SEED="${SEED:-1}"
LIMIT="${LIMIT:-}"
MODELS="${MODELS:-lenet mlp}"
PYTHON="${PYTHON:-/usr/bin/python3}"
RESULTS_DIR="${RESULTS_DIR:-$(mktemp -d /tmp/thresher-bench.XXXXXX)}"

ENGINE="${THRESHER_BIN:-build/release/bin}"
if [[ -d "$ENGINE" ]]; then
  ENGINE="$ENGINE/thresher-engine"
fi
if [[ ! -x "$ENGINE" ]]; then
  echo "train_throughput: no engine binary at $ENGINE (build the release preset or set THRESHER_BIN)" >&2
  exit 2
fi

TIME=/usr/bin/time
if [[ ! -x "$TIME" ]]; then
  echo "train_throughput: $TIME is missing (Debian package 'time'); engine peak RSS will not be measured" >&2
  TIME=""
fi

limit_args=()
if [[ -n "$LIMIT" ]]; then
  limit_args=(--limit "$LIMIT")
fi

echo "train_throughput: epochs=$EPOCHS batch=$BATCH threads=$THREADS seed=$SEED limit=${LIMIT:-all} logs=$RESULTS_DIR" >&2
for model in $MODELS; do
  out="$RESULTS_DIR/$model"
  mkdir -p "$out"

  engine_cmd=("$ENGINE" train --model "resources/models/$model.json" --data fashion-mnist
              --epochs "$EPOCHS" --batch "$BATCH" --threads "$THREADS" --seed "$SEED" "${limit_args[@]}")
  echo "== $model: ${engine_cmd[*]}" >&2
  # A failed run still gets a table row (with "-" where figures are missing) and a note.
  if [[ -n "$TIME" ]]; then
    "$TIME" -v -o "$out/engine.time" "${engine_cmd[@]}" >"$out/engine.jsonl" 2>"$out/engine.stderr" ||
      echo "train_throughput: $model: engine exited with status $? (see $out/engine.stderr)" >&2
  else
    "${engine_cmd[@]}" >"$out/engine.jsonl" 2>"$out/engine.stderr" ||
      echo "train_throughput: $model: engine exited with status $? (see $out/engine.stderr)" >&2
  fi

  peer_cmd=("$PYTHON" bench/torch_peer.py --model "$model" --epochs "$EPOCHS" --batch "$BATCH"
            --threads "$THREADS" --seed "$SEED" "${limit_args[@]}")
  echo "== $model: ${peer_cmd[*]}" >&2
  "${peer_cmd[@]}" >"$out/torch.jsonl" 2>"$out/torch.stderr" ||
    echo "train_throughput: $model: torch peer exited with status $? (see $out/torch.stderr)" >&2
done

# shellcheck disable=SC2086 # MODELS is a word list on purpose
"$PYTHON" bench/summarize.py "$RESULTS_DIR" $MODELS --batch "$BATCH"
