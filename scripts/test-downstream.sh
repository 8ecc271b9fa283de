#!/usr/bin/env bash
# Checks that fa embeds in other projects, from an already built tree
# (${BUILD_DIR:-build}; scripts/build.sh): `cmake --install` into a temporary
# prefix, then
#   - examples/downstream configured with find_package(FA CONFIG) against that
#     prefix, built, and run (C++ API: fa-downstream on FA::Compiler and
#     fa-downstream-libs on the library targets; C API: fa-downstream-c);
#   - the installed FAPlugin.so loaded into the stock mlir-opt of LLVM 22;
#   - the installed fa-opt run from the prefix.
# Nothing is rebuilt in the build tree. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD_DIR=${BUILD_DIR:-build}
MLIR_OPT=${MLIR_OPT:-/usr/lib/llvm-22/bin/mlir-opt}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/fa-downstream.XXXXXX")
if [ -z "${KEEP_WORK:-}" ]; then trap 'rm -rf "$WORK"' EXIT; fi
PREFIX="$WORK/prefix"
fail() { echo "test-downstream: error: $*" >&2; exit 1; }

echo "test-downstream: installing $BUILD_DIR into $PREFIX"
cmake --install "$BUILD_DIR" --prefix "$PREFIX" >"$WORK/install.log" \
  || { cat "$WORK/install.log" >&2; fail "cmake --install failed"; }
for f in lib/cmake/fa/FAConfig.cmake lib/cmake/fa/FATargets.cmake \
         include/fa/InitAll.h include/fa/Pipelines/Pipelines.h \
         include/fa/Dialect/FA/IR/FAOps.h.inc include/fa-c/Dialects.h \
         lib/libMLIRFAPipelines.a bin/fa-opt; do
  [ -e "$PREFIX/$f" ] || fail "the install lacks $f"
done

echo "test-downstream: building examples/downstream against the install"
GEN=()
if command -v ninja >/dev/null; then GEN=(-G Ninja); fi
cmake "${GEN[@]}" -S "$ROOT/examples/downstream" -B "$WORK/build" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PREFIX" \
  >"$WORK/configure.log" \
  || { cat "$WORK/configure.log" >&2; fail "configuring examples/downstream failed"; }
cmake --build "$WORK/build" >"$WORK/build.log" \
  || { cat "$WORK/build.log" >&2; fail "building examples/downstream failed"; }

"$WORK/build/fa-downstream"
"$WORK/build/fa-downstream-libs"
if [ -e "$PREFIX/lib/libFACAPI.so" ]; then
  [ -x "$WORK/build/fa-downstream-c" ] || fail "fa-downstream-c was not built"
  "$WORK/build/fa-downstream-c"
fi

if [ -e "$PREFIX/lib/FAPlugin.so" ]; then
  echo "test-downstream: the installed FAPlugin.so in $MLIR_OPT"
  "$MLIR_OPT" --load-dialect-plugin="$PREFIX/lib/FAPlugin.so" \
    --load-pass-plugin="$PREFIX/lib/FAPlugin.so" examples/attention.mlir \
    --pass-pipeline="builtin.module(fa-to-cpu{block-m=32 block-n=32})" \
    >"$WORK/plugin.mlir"
  grep -q "llvm.func @attention" "$WORK/plugin.mlir" \
    || fail "mlir-opt with FAPlugin.so produced no llvm.func @attention"
  ! grep -q "fa.attention" "$WORK/plugin.mlir" \
    || fail "fa.attention left after fa-to-cpu in mlir-opt"
  echo "test-downstream: OK: mlir-opt + FAPlugin.so ran fa-to-cpu"
fi

"$PREFIX/bin/fa-opt" examples/attention.mlir --fa-tile-attention >/dev/null \
  || fail "the installed fa-opt failed"
echo "test-downstream: OK: installed package, C++ API, C API, plugin and fa-opt"
