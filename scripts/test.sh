#!/usr/bin/env bash
# Runs every test: installs what is missing, builds, then runs the lit suite
# (dialect, passes, pipelines, CPU execution, PTX validation, runtime unit
# tests, the plugin in stock mlir-opt, the C API), then installs the build
# into a temporary prefix and builds examples/downstream against it
# (scripts/test-downstream.sh). Exits non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
/usr/lib/llvm-22/bin/lit -sv "$BUILD_DIR/test"
# The Python package (python/, docs/PYTHON.md): pytest with this build's
# fa-opt; GPU tests skip without a GPU. Any failure, or no test collected
# (exit 5), fails the run.
(export FA_OPT="$(cd "$BUILD_DIR" && pwd)/bin/fa-opt" FA_OPT_CACHE_DIR="$(mktemp -d)"
 cd python && python3 -m pytest -q -p no:cacheprovider)
BUILD_DIR="$BUILD_DIR" bash scripts/test-downstream.sh
