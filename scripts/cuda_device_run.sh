#!/usr/bin/env bash
# Runs on a GPU machine lent through the device tool, from the repository root, with the bundle
# scripts/cuda_device_bundle.sh made (carried as build/device-bundle): the CUDA suites, the same
# suites under compute-sanitizer, the encoder and training benchmarks (bench/gpu_throughput.sh),
# distributed runs on the one GPU (bench/gpu_distributed.sh) and the recurrent layers on cuDNN's
# RNN API (rnn: the LSTM throughput against torch's nn.LSTM on the same GPU, and the char_lstm
# template trained on a text, single and distributed, by bench/gpu_distributed.sh). cuBLAS and
# cuDNN are the machine's own (its CUDA toolkit or PyTorch's wheels), found by name.
#
# Usage: bash scripts/cuda_device_run.sh [tests] [sanitize] [bench] [dist] [rnn]   (default: all five)
# SANITIZE_ONLY="suite [functions]" narrows the sanitize step to one suite under memcheck.
# Logs go to $OUT when the device tool sets it (at most 8 files come back), else a /tmp folder.
set -uo pipefail
cd "$(dirname "$0")/.."

BUNDLE="${BUNDLE:-build/device-bundle}"
RESULTS="${OUT:-$(mktemp -d /tmp/thresher-device.XXXXXX)}"
STEPS="${*:-tests sanitize bench dist rnn}"
mkdir -p "$RESULTS"

libs=/tmp/thresher-libs
mkdir -p "$libs"
tar -xJf "$BUNDLE/libs.tar.xz" -C "$libs" || { echo "cuda_device_run: no $BUNDLE/libs.tar.xz (run scripts/cuda_device_bundle.sh here first and carry $BUNDLE)" >&2; exit 2; }
gpu_dirs=""
for so in libcublas.so.13 libcudnn.so.9; do
  found="$(find /usr/local /opt /usr/lib -name "$so" 2>/dev/null | head -1)"
  if [[ -z "$found" ]]; then
    echo "cuda_device_run: $so not found on this machine" >&2
  else
    gpu_dirs+="$(dirname "$found"):"
  fi
done
export LD_LIBRARY_PATH="$libs:${gpu_dirs}${LD_LIBRARY_PATH:-}"
export QT_QPA_PLATFORM=offscreen
{
  nvidia-smi -L
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  for b in "$BUNDLE"/bin/*; do ldd "$b" | grep "not found" | sed "s|^|$(basename "$b"): |"; done
  "$BUNDLE/bin/thresher-engine" devices
} 2>&1 | tee "$RESULTS/environment.txt"

status=0
if [[ " $STEPS " == *" tests "* ]]; then
  for t in test_backend_parity test_device_encoder test_gradient_sharing; do
    "$BUNDLE/bin/$t" >"$RESULTS/$t.txt" 2>&1 || status=1
    grep -E "^FAIL" -A2 "$RESULTS/$t.txt" | head -n 60
    echo "$t: $(grep -c '^SKIP' "$RESULTS/$t.txt") rows skipped"
    tail -n 2 "$RESULTS/$t.txt"
  done
fi
if [[ " $STEPS " == *" sanitize "* ]]; then
  # memcheck (out-of-bounds and misaligned accesses, leaks of device memory) over both suites,
  # racecheck (shared-memory hazards) over the encoder's kernels. One log, the tool's summaries.
  sanitizer="$(command -v compute-sanitizer || find /usr/local -name compute-sanitizer -type f 2>/dev/null | head -1)"
  if [[ -z "$sanitizer" ]]; then
    echo "cuda_device_run: no compute-sanitizer on this machine" | tee "$RESULTS/sanitize.txt"
  else
    : >"$RESULTS/sanitize.txt"
    # Each line: tool, its options, then the suite and its arguments.
    while read -r tool opt1 opt2 suite args; do
      [[ "$opt1" == - ]] && opts=() || opts=("$opt1" "$opt2")
      echo "== compute-sanitizer --tool $tool ${opts[*]} $suite $args" >>"$RESULTS/sanitize.txt"
      # shellcheck disable=SC2086  # args: the suite's test-function names, split on purpose
      "$sanitizer" --tool "$tool" "${opts[@]}" --error-exitcode 3 "$BUNDLE/bin/$suite" $args >>"$RESULTS/sanitize.txt" 2>&1 || status=1
      grep -E "ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY|^Totals" "$RESULTS/sanitize.txt" | tail -n 2
    done < <(if [[ -n "${SANITIZE_ONLY:-}" ]]; then echo "memcheck --leak-check full $SANITIZE_ONLY"; else cat <<'RUNS'
memcheck --leak-check full test_backend_parity
memcheck --leak-check full test_device_encoder
memcheck --leak-check full test_gradient_sharing on_a_gpu
racecheck - - test_device_encoder
synccheck - - test_device_encoder
RUNS
    fi)
  fi
fi
logs=/tmp/thresher-gpu-bench
rm -rf "$logs"
data="$BUNDLE/data"
[[ -d "$data" ]] || data=/usr/share/datasets/fashion-mnist
if [[ " $STEPS " == *" bench "* ]]; then
  THRESHER_BIN="$BUNDLE/bin" DATA="$data" RESULTS_DIR="$logs" bench/gpu_throughput.sh 2>&1 |
    tee "$RESULTS/bench.txt" || status=1
fi
if [[ " $STEPS " == *" dist "* ]]; then
  THRESHER_BIN="$BUNDLE/bin" DATA="$data" RESULTS_DIR="$logs/distributed" bench/gpu_distributed.sh 2>&1 |
    tee "$RESULTS/distributed.txt" || status=1
fi
if [[ " $STEPS " == *" rnn "* ]]; then
  # The GPU's own python3 holds PyTorch with CUDA (Debian's /usr/bin/python3 is not there).
  {
    DEVICE=cuda:0 PYTHON=python3 THRESHER_BIN="$BUNDLE/bin" bench/lstm_throughput.sh
    DEVICE=cuda:0 PYTHON=python3 THRESHER_BIN="$BUNDLE/bin" BATCH=256 bench/lstm_throughput.sh
  } 2>&1 | tee "$RESULTS/rnn.txt" || status=1
  text="$BUNDLE/data/GPL-3.txt"
  [[ -f "$text" ]] || text=/usr/share/common-licenses/GPL-3
  # Every case on the GPU, then the same cases on the CPU backend: the GPU must train as the CPU
  # does (each case's accuracy within 5 points of its CPU twin; replicas equal as always).
  for dev in cuda:0 cpu; do
    GPU="$dev" MODEL=char_lstm DATA="$text" EPOCHS="${RNN_EPOCHS:-40}" ACC_TOLERANCE=1 THRESHER_BIN="$BUNDLE/bin" \
      RESULTS_DIR="$logs/rnn-${dev%%:*}" bench/gpu_distributed.sh 2>&1 | tee -a "$RESULTS/rnn.txt" || status=1
  done
  python3 - "$logs" <<'EOF' 2>&1 | tee -a "$RESULTS/rnn.txt" || status=1
import json, sys
def acc(dev, case):
    v = [json.loads(l).get("accuracy") for l in open(f"{sys.argv[1]}/rnn-{dev}/{case}/node-0.jsonl")
         if l.startswith("{") and '"epoch_end"' in l]
    return v[-1] if v else None
bad = []
for case in ("single", "gs-2x1", "pa-2x1", "gs-1x2", "gs-mixed"):
    g, c = acc("cuda", case), acc("cpu", case)
    print(f"char_lstm {case:9s} accuracy cuda:0 {g} cpu {c}")
    if g is None or c is None or abs(g - c) > 0.05:
        bad.append(case)
print("char_lstm GPU against CPU: " + ("every case within 0.05" if not bad else "differ: " + ", ".join(bad)))
sys.exit(1 if bad else 0)
EOF
fi
[[ -d "$logs" ]] && tar -czf "$RESULTS/bench-logs.tar.gz" --exclude="*.bin" -C /tmp thresher-gpu-bench  # saved replicas stay behind (size)
exit "$status"
