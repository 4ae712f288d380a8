#!/usr/bin/env bash
# LSTM training throughput: bench_lstm_throughput (the engine's Network, oneDNN's LSTM
# primitives) against bench/torch_lstm_peer.py (nn.LSTM), same sizes, CPU, same thread count, run
# back to back. Prints both JSON lines and the ratios (thresher / torch). bench/README.md.
#
# Environment: THREADS (2), BATCH (32), STEPS (64), FEATURES (64), HIDDEN (256), LAYERS (2),
# ITERATIONS (30), WARMUP (3), THRESHER_BIN (folder of bench_lstm_throughput; build/release/bin),
# PYTHON (/usr/bin/python3: Debian's python3-torch), GATE (sigmoid; hard_sigmoid: Keras 2's
# default gates, which run on the engine's host path, cpu/rnn_host.cpp — torch's nn.LSTM still
# has sigmoid gates: the same sizes, not the same function), RETAIN (unset; R: dropout inside the
# cells, input and recurrent, Keras's dropout = recurrent_dropout = 1 - R, on the host path; torch's
# nn.LSTM has no dropout inside its cells, so again the same sizes only), DEVICE (cpu; cuda:0 runs
# both on the GPU: the engine's CUDA backend with cuDNN's RNN API, torch's nn.LSTM on cuDNN too).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${THRESHER_BIN:-$ROOT/build/release/bin}/bench_lstm_throughput"
PYTHON="${PYTHON:-/usr/bin/python3}"
if [[ ! -x "$BIN" ]]; then
  echo "lstm_throughput: no $BIN (cmake --build build/release --target bench_lstm_throughput)" >&2
  exit 2
fi
args=(--threads "${THREADS:-2}" --batch "${BATCH:-32}" --steps "${STEPS:-64}" --features "${FEATURES:-64}"
      --hidden "${HIDDEN:-256}" --layers "${LAYERS:-2}" --iterations "${ITERATIONS:-30}" --warmup "${WARMUP:-3}")
args+=(--device "${DEVICE:-cpu}")
extra=(--gate "${GATE:-sigmoid}")
[[ -n "${RETAIN:-}" ]] && extra+=(--retain "$RETAIN")
ours="$(OMP_NUM_THREADS="${THREADS:-2}" timeout 600 "$BIN" "${args[@]}" "${extra[@]}")"
theirs="$(OMP_NUM_THREADS="${THREADS:-2}" timeout 600 "$PYTHON" "$ROOT/bench/torch_lstm_peer.py" "${args[@]}")"
echo "$ours"
echo "$theirs"
"$PYTHON" - "$ours" "$theirs" <<'PY'
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print("samples/s thresher %.1f, %s %.1f: ratio %.2f" % (a["samples_per_s"], b["impl"], b["samples_per_s"], a["samples_per_s"] / b["samples_per_s"]))
print("peak RSS thresher %.0f MiB, torch %.0f MiB: ratio %.2f" % (a["peak_rss_mib"], b["peak_rss_mib"], a["peak_rss_mib"] / b["peak_rss_mib"]))
PY
