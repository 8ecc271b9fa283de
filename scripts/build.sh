#!/usr/bin/env bash
# Configures and builds fa-opt (and, when CUDA is present, the runtime and
# fa-run) into ${BUILD_DIR:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -G Ninja -S . -B "$BUILD_DIR" \
  -DCMAKE_BUILD_TYPE=Release \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
  -DPython3_EXECUTABLE="$(command -v python3)" >/dev/null
ninja -C "$BUILD_DIR"
# The TableGen docs that test/Tools/docs-current.test compares with docs/.
ninja -C "$BUILD_DIR" mlir-doc >/dev/null
