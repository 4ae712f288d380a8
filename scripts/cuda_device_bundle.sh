#!/usr/bin/env bash
# Packs, on this machine, what a GPU machine lent through the device tool needs to run the CUDA
# suites and benchmarks: the lent machines have CUDA, cuDNN and PyTorch but not Thresher's other
# dependencies (Qt, oneDNN), and reach no package registry. So the binaries are built here and
# travel with the libraries they load, except the GPU ones (driver, cuBLAS, cuDNN: the engine
# opens them at run time), which must be the device machine's own; scripts/cuda_device_run.sh
# unpacks and runs them there.
#
# Layout of $BUNDLE (default build/device-bundle, ignored by git, about 60 MiB with the data):
#   bin/      thresher-engine, test_backend_parity, test_device_encoder, test_gradient_sharing,
#             test_cluster_protocol (scripts/protocol_repeats.sh: many seeds at once on 16 cores),
#             bench_device_encoder
#   libs.tar.xz  their non-system, non-CUDA shared libraries (oneDNN, Qt Core/Test, ICU, ...)
#   data/     Fashion-MNIST's four IDX files (leave out with WITH_DATA=0 to stay small) and GPL-3.txt,
#             the English text the rnn step trains the char_lstm template on
#
# Then, from the device tool: run(command="bash scripts/cuda_device_run.sh", carry=["build/device-bundle"])
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD="${BUILD:-build/cuda}"
BUNDLE="${BUNDLE:-build/device-bundle}"
WITH_DATA="${WITH_DATA:-1}"
DATA="${DATA:-/usr/share/datasets/fashion-mnist}"
TARGETS=(thresher-engine test_backend_parity test_device_encoder test_gradient_sharing bench_device_encoder test_cluster_protocol
         bench_lstm_throughput)

if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  cmake --preset release -B "$BUILD" -DTHRESHER_CUDA=ON
fi
cmake --build "$BUILD" -j"$(nproc)" --target "${TARGETS[@]}"

rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/bin" "$BUNDLE/libs"
for t in "${TARGETS[@]}"; do
  cp "$BUILD/bin/$t" "$BUNDLE/bin/"
  strip "$BUNDLE/bin/$t"
done

# Libraries: what ldd resolves, less the C and C++ runtimes (the device machine's own, newer ones
# serve, and its cuDNN may need their newer symbols) and the GPU libraries (they must match the
# device machine's driver).
skip='^(ld-linux[^/]*|linux-vdso[^/]*|libc|libm|libdl|libpthread|librt|libresolv|libutil|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libcudnn[a-z_]*|libnvidia[^/]*)\.so'
for t in "${TARGETS[@]}"; do
  ldd "$BUILD/bin/$t" | awk '$2 == "=>" && $3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
  name="$(basename "$lib")"
  if [[ "$name" =~ $skip ]]; then continue; fi
  cp -L "$lib" "$BUNDLE/libs/$name"
done
tar -cJf "$BUNDLE/libs.tar.xz" -C "$BUNDLE/libs" .
rm -rf "$BUNDLE/libs"

if [[ "$WITH_DATA" == 1 ]]; then
  mkdir -p "$BUNDLE/data"
  cp "$DATA"/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz "$BUNDLE/data/"
fi
mkdir -p "$BUNDLE/data"
cp /usr/share/common-licenses/GPL-3 "$BUNDLE/data/GPL-3.txt"
du -sh "$BUNDLE" >&2
size=$(du -sm "$BUNDLE" | cut -f1)
if (( size > 60 )); then
  echo "cuda_device_bundle: $BUNDLE is ${size} MiB; the device tool carries 64 MiB with the tree (try WITH_DATA=0)" >&2
fi
