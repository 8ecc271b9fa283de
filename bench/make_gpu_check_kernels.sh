#!/usr/bin/env bash
# Compiles the GPU check matrix of the foundation issue with fa-opt: for each
# dtype (f16, bf16, f32) x causal (none, top_left, bottom_right) x head_dim
# (64, 128), an fa.attention on [2, 8, ?, D] (batch x heads 2 x 8, dynamic
# seqlens) with lse, into DIR (default .dev/kernels) as PTX + manifest.
# FA_TO_PTX_OPTS adds fa-to-ptx options (e.g. wgmma=false). Also compiles
# the bundled examples. Run here (needs fa-opt); carry DIR to
# the device machine and run scripts/gpu-check.sh DIR there.
set -euo pipefail
cd "$(dirname "$0")/.."
FA_OPT=${FA_OPT:-build/bin/fa-opt}
DIR=${1:-.dev/kernels}
CHIP=${CHIP:-sm_90a}
rm -rf "$DIR" && mkdir -p "$DIR" .dev/mlir
for dt in f16 bf16 f32; do
  for causal in none top_left bottom_right; do
    for d in 64 128; do
      name="fwd_${dt}_${causal}_d${d}"
      t="tensor<2x8x?x${d}x${dt}>"
      cat > ".dev/mlir/$name.mlir" <<MLIR
func.func @$name(%q: $t, %k: $t, %v: $t) -> ($t, tensor<2x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal($causal) : $t, $t, $t -> $t, tensor<2x8x?xf32>
  return %o, %lse : $t, tensor<2x8x?xf32>
}
MLIR
      "$FA_OPT" ".dev/mlir/$name.mlir" --fa-to-ptx="chip=$CHIP output-dir=$DIR ${FA_TO_PTX_OPTS:-}" -o /dev/null
    done
  done
done
"$FA_OPT" examples/attention.mlir --fa-to-ptx="chip=$CHIP output-dir=$DIR ${FA_TO_PTX_OPTS:-}" -o /dev/null
ls "$DIR" | grep -c manifest
