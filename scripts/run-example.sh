#!/usr/bin/env bash
# The main job on the bundled example (or the file given as $1):
#  1. compiles it to PTX + manifest with fa-opt --fa-to-ptx,
#  2. validates the PTX with ptxas -arch=sm_90a (when CUDA is installed),
#  3. runs the CPU pipeline (fa-to-cpu) on fresh random inputs of the
#     example's configuration (dynamic dims: batch 2, Tq 77, Tk 93) and
#     prints its error against a float64 reference,
#  4. runs the kernel on the GPU with fa-run when a GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
EXAMPLE=${1:-examples/attention.mlir}
BUILD_DIR=${BUILD_DIR:-build}
OUT_DIR=${OUT_DIR:-$BUILD_DIR/kernels}
FA_OPT=$BUILD_DIR/bin/fa-opt
[ -x "$FA_OPT" ] || { echo "error: $FA_OPT not built; run scripts/build.sh" >&2; exit 1; }
[ -f "$EXAMPLE" ] || { echo "error: no such file '$EXAMPLE'" >&2; exit 1; }

echo "== 1. fa-opt $EXAMPLE --fa-to-ptx=\"output-dir=$OUT_DIR\""
rm -rf "$OUT_DIR"
"$FA_OPT" "$EXAMPLE" --fa-to-ptx="output-dir=$OUT_DIR" -o /dev/null
ls -l "$OUT_DIR"

PTXAS=/usr/local/cuda/bin/ptxas
if [ -x "$PTXAS" ]; then
  echo "== 2. ptxas -arch=sm_90a"
  for p in "$OUT_DIR"/*.ptx; do
    if ! log=$("$PTXAS" -arch=sm_90a -v "$p" -o "${p%.ptx}.cubin" 2>&1); then
      echo "$log" >&2
      echo "error: ptxas rejected $p" >&2
      exit 1
    fi
    echo "$log" | grep -E "Used|spill" || true
    echo "ptxas: $p OK"
  done
else
  echo "== 2. skipped: no ptxas at $PTXAS"
fi

echo "== 3. CPU: fa-to-cpu against a float64 reference"
python3 test/Integration/CPU/attention_cpu_check.py --like "$EXAMPLE" \
  --fa-opt "$FA_OPT" --mlir-runner /usr/lib/llvm-22/bin/mlir-runner

FA_RUN=$BUILD_DIR/bin/fa-run
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && [ -x "$FA_RUN" ]; then
  echo "== 4. GPU: fa-run"
  for m in "$OUT_DIR"/*.manifest; do "$FA_RUN" --manifest "$m"; done
else
  echo "== 4. skipped: no GPU here (bench/gpu_check.py runs the kernels on the H200)"
fi
