#!/usr/bin/env bash
# The main job: installs the dependencies, builds, and opens the desktop app with the default
# LeNet run loaded (resources/runs/lenet-local.json: two local nodes, gradient sharing,
# Fashion-MNIST) — press Launch to train. Without a display it runs that same spec through
# `thresher-launch`, with a progress bar on stderr. Arguments go to the program that runs.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
bash scripts/install-deps.sh
cmake --preset release
# Only what the main job runs (the suites are scripts/test.sh's business).
cmake --build --preset release -j"$(nproc)" --target thresher thresher-launch thresher-engine
if [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; then
  exec build/release/bin/thresher --open resources/runs/lenet-local.json "$@"
fi
echo "No display: running resources/runs/lenet-local.json with thresher-launch (the app shows the same run)." >&2
exec build/release/bin/thresher-launch run resources/runs/lenet-local.json "$@"
