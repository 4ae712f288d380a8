#!/usr/bin/env bash
# Installs everything Thresher builds and tests with, from Debian 12's own packages (run as root).
# ocl-icd-opencl-dev: Debian builds oneDNN with its OpenCL GPU runtime, so oneDNN's CMake package
# looks for OpenCL even though Thresher only uses its CPU engine.
# iproute2, iptables: test_cluster_faults builds a lossy link between network namespaces.
# openssh-server, openssh-client: the SSH tests start a real sshd (and ssh-keygen) on loopback.
# libqt6sql6-sqlite: the app's run history (Qt's SQLite driver); libqt6svg6: its SVG icon;
# xvfb, xauth: `xvfb-run` for looking at the app on a machine without a display.
# libzip-dev, libhdf5-dev: model files with weights (DL4J model zips, Keras .keras archives and .h5).
# libonnx-dev, libprotobuf-dev, protobuf-compiler: `export-model --format onnx` builds its graph with
# ONNX's generated protobuf classes and checks it with libonnx's checker (engine/export);
# python3-onnx: the export suites run ONNX's Python checker (full check) on every exported file.
# python3-h5py: test_keras_export reads every Keras export back with h5py (an HDF5 reader that is
# not Thresher's), tests/tools/keras_files/check_keras_export.py.
# onnxruntime-node (npm, into tests/tools/onnx_runtime): an independent runtime that the export
# suites run exported models in; nodejs/npm come from Debian when the machine has no Node.js.
# slurm-wlm, munge: the Slurm suites start a private one-node Slurm (munged, slurmctld, slurmd);
# slurmdbd, mariadb-server: test_slurm_accounting adds accounting (a private MariaDB + slurmdbd).
# libjpeg62-turbo-dev, libpng-dev, libwebp-dev: image folders as data (engine/data/image).
# clang: test_lock_discipline runs clang's thread-safety analysis over engine/dist (GCC builds).
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -q --no-install-recommends \
  build-essential cmake ninja-build ccache pkg-config git ca-certificates \
  libdnnl-dev ocl-icd-opencl-dev nlohmann-json3-dev libcli11-dev zlib1g-dev libssl-dev \
  libboost-dev libboost-system-dev libssh-dev openssh-server openssh-client \
  iproute2 iptables slurm-wlm munge slurmdbd mariadb-server \
  qt6-base-dev libqt6sql6-sqlite libqt6svg6 libqcustomplot-dev xvfb xauth \
  libzip-dev libhdf5-dev libonnx-dev libprotobuf-dev protobuf-compiler python3-onnx python3-h5py clang \
  libjpeg62-turbo-dev libpng-dev libwebp-dev dataset-fashion-mnist
command -v npm >/dev/null || $SUDO apt-get install -y -q --no-install-recommends nodejs npm
# The CPU runtime is inside the npm package; its install script would fetch the CUDA provider from
# another registry (ONNXRUNTIME_NODE_INSTALL=skip; tests/tools/onnx_runtime/.npmrc says it too).
(cd "$(dirname "$0")/../tests/tools/onnx_runtime" && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund)
