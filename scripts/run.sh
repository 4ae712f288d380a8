#!/usr/bin/env bash
# The main job: installs the dependencies, builds, and trains LeNet on Fashion-MNIST for 3 epochs
# from the command line, events on stdout and the per-epoch confusion matrix on stderr. (The
# desktop application takes over this job once it exists.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release
cmake --build --preset release -j"$(nproc)"
exec build/release/bin/thresher-engine train --model resources/models/lenet.json --data fashion-mnist \
  --epochs 3 --batch 64 --save build/lenet.thr "$@"
