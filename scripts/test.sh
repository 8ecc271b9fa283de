#!/usr/bin/env bash
# Runs every test: installs what is missing, builds, then runs the lit suite
# (dialect, passes, pipelines, CPU execution, PTX validation, runtime unit
# tests). Exits non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
/usr/lib/llvm-22/bin/lit -sv "$BUILD_DIR/test"
