#!/usr/bin/env bash
# One-call GPU check for the device machine (CUDA + PyTorch, no LLVM/MLIR):
# builds the runtime (also libfa_runtime.so, for the Python tests' ctypes
# launcher) and fa-run (-DFA_ENABLE_COMPILER=OFF) into /tmp, runs
# the host unit tests, then bench/gpu_check.py over every *.manifest of the
# given artifacts folders: fa-run's own check against float64 plus PyTorch
# SDPA's error on the same inputs. Ends with 'N passed, N failed'; non-zero
# exit on any failure.
#
# usage: scripts/gpu-check.sh [--selftest] [ARTIFACTS_DIR...] [-- GPU_CHECK_ARGS...]
#   --selftest   also check runtime/selftest/naive_attention.cu (compiled
#                here with nvcc -ptx), and that fa-run rejects a wrong and a
#                partly-unwritten result: tests the runtime and the checker
#                before the compiler's kernels exist.
# env: FA_RT_BUILD_DIR (default /tmp/fa-rt-build), CHIP (default sm_90a);
#      with $OUT set (the device tool), the table goes to $OUT/gpu-check.txt
#      and the rows to $OUT/gpu-check.json.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${FA_RT_BUILD_DIR:-/tmp/fa-rt-build}
CHIP=${CHIP:-sm_90a}
SELFTEST=0
DIRS=()
EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --selftest) SELFTEST=1 ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) DIRS+=("$1") ;;
  esac
  shift
done

die() { echo "error: $*" >&2; exit 2; }

echo "== build: runtime + fa-run -> $BUILD"
cmake -G Ninja -S "$ROOT" -B "$BUILD" -DFA_ENABLE_COMPILER=OFF \
  -DCMAKE_BUILD_TYPE=Release >"$BUILD.cmake.log" 2>&1 \
  || { cat "$BUILD.cmake.log"; die "cmake failed"; }
ninja -C "$BUILD" fa-run fa-runtime-unittests fa_runtime_shared >"$BUILD.ninja.log" 2>&1 \
  || { cat "$BUILD.ninja.log"; die "build failed"; }
FA_RUN="$BUILD/bin/fa-run"
"$BUILD/bin/fa-runtime-unittests" >"$BUILD.unittests.log" 2>&1 \
  || { cat "$BUILD.unittests.log"; die "runtime unit tests failed"; }
echo "unit tests: $(tail -1 "$BUILD.unittests.log")"

NEG_FAILED=0
if [ "$SELFTEST" = 1 ]; then
  SELF=/tmp/fa-selftest-artifacts
  rm -rf "$SELF" && mkdir -p "$SELF" "$SELF-negative"
  NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  "$NVCC" -ptx -arch="$CHIP" -o "$SELF/selftest.ptx" \
    "$ROOT/runtime/selftest/naive_attention.cu" || die "nvcc -ptx failed"
  # manifest NAME DTYPE CAUSAL SCALE D DV HAS_LSE [FOLDER]
  manifest() {
    local dir=${8:-$SELF}
    cat >"$dir/$1.manifest" <<MANIFEST
# self-test kernel (runtime/selftest/naive_attention.cu)
version 1
kernel $1
ptx $SELF/selftest.ptx
chip $CHIP
dtype $2
o_dtype $2
causal $3
scale $4
batch ?
batch_shape ?
seqlen_q ?
seqlen_k ?
head_dim $5
head_dim_v $6
has_lse $7
block_m 64
block_n 1
threads 64
shared_bytes 0
grid ceil_div(seqlen_q,block_m) batch 1
MANIFEST
  }
  manifest selftest_f32_none f32 none 0.125 64 64 1
  manifest selftest_bf16_top_left bf16 top_left 0.088388347648318447 128 128 1
  manifest selftest_f16_bottom_right f16 bottom_right 0.125 64 64 1
  manifest selftest_bf16_bottom_right_dv80 bf16 bottom_right \
    0.10206207261596575 96 80 0
  DIRS=("$SELF" "${DIRS[@]}")

  # The checker must reject: a kernel whose mask differs from its manifest,
  # and a launch that leaves rows unwritten (block_m 128 with 64 threads).
  NEG="$SELF-negative"
  manifest selftest_f32_none f32 top_left 0.125 64 64 1 "$NEG"
  mv "$NEG/selftest_f32_none.manifest" "$NEG/wrong-mask.manifest"
  manifest selftest_f32_none f32 none 0.125 64 64 1 "$NEG"
  sed -i 's/^block_m 64/block_m 128/' "$NEG/selftest_f32_none.manifest"
  mv "$NEG/selftest_f32_none.manifest" "$NEG/unwritten.manifest"
  for m in wrong-mask unwritten; do
    "$FA_RUN" --manifest "$NEG/$m.manifest" --batch 2 --seqlen-q 200 \
      --seqlen-k 150 --repeat 0 >"$NEG/$m.log" 2>&1
    rc=$?
    if [ $rc = 1 ]; then
      echo "negative self-test $m: rejected as it should be ($(grep -m1 FAIL "$NEG/$m.log"))"
    else
      echo "negative self-test $m: FAILED, fa-run exit $rc (want 1):"
      cat "$NEG/$m.log"
      NEG_FAILED=1
    fi
  done
fi

[ ${#DIRS[@]} -gt 0 ] || die "no artifacts folder given (and no --selftest)"

JSON_ARGS=()
if [ -n "${OUT:-}" ]; then JSON_ARGS=(--json "$OUT/gpu-check.json"); fi
echo "== check: ${DIRS[*]}"
PYTHONUNBUFFERED=1 python3 "$ROOT/bench/gpu_check.py" --fa-run "$FA_RUN" \
  "${JSON_ARGS[@]}" "${EXTRA[@]}" "${DIRS[@]}" | \
  if [ -n "${OUT:-}" ]; then tee "$OUT/gpu-check.txt"; else cat; fi
rc=${PIPESTATUS[0]}
if [ "$NEG_FAILED" != 0 ]; then
  echo "error: a negative self-test was not rejected" >&2
  exit 1
fi
exit "$rc"
