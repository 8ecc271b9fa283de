#!/usr/bin/env bash
# Compiles the backward GPU check matrix with fa-opt into DIR (default
# .dev/bwd-kernels) as PTX + manifest (one manifest per op, several kernels):
#   - fa.attention_backward on [2, 8, ?, D] (batch x heads 2 x 8, dynamic
#     seqlens) for dtype (f16, bf16, f32) x causal (none, top_left,
#     bottom_right) x D (64, 128), default mode (dq through f32 atomics);
#   - deterministic=true variants for bf16 and f32, every causal kind, D 128;
#   - the memory-table kernel: bf16, [1, 8, ?, 128], no causal mask.
# Run here (needs fa-opt); carry DIR to the device machine and run
# scripts/gpu-check.sh DIR (and bench/gpu_memory.py) there. FA_TO_PTX_OPTS:
# more fa-to-ptx options (e.g. wgmma=false, or dq-atomics=true, which drops
# the deterministic variants).
set -euo pipefail
cd "$(dirname "$0")/.."
FA_OPT=${FA_OPT:-build/bin/fa-opt}
DIR=${1:-.dev/bwd-kernels}
CHIP=${CHIP:-sm_90a}
rm -rf "$DIR" && mkdir -p "$DIR" "$DIR-memory" .dev/mlir

# emit NAME DTYPE CAUSAL D BATCH_DIMS OUT_DIR [deterministic]
emit() {
  local name=$1 dt=$2 causal=$3 d=$4 bdims=$5 out=$6 det=${7:-false}
  local t="tensor<${bdims}x?x${d}x${dt}>" l="tensor<${bdims}x?xf32>"
  cat > ".dev/mlir/$name.mlir" <<MLIR
func.func @$name(%q: $t, %k: $t, %v: $t, %o: $t, %do: $t, %lse: $l)
    -> ($t, $t, $t) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal($causal)
      : $t, $t, $t, $t, $t, $l -> $t, $t, $t
  return %dq, %dk, %dv : $t, $t, $t
}
MLIR
  "$FA_OPT" ".dev/mlir/$name.mlir" \
    --fa-to-ptx="chip=$CHIP ${FA_TO_PTX_OPTS:-} deterministic=$det output-dir=$out" -o /dev/null
}

for dt in f16 bf16 f32; do
  for causal in none top_left bottom_right; do
    for d in 64 128; do
      emit "bwd_${dt}_${causal}_d${d}" "$dt" "$causal" "$d" 2x8 "$DIR"
    done
  done
done
# (dq-atomics=true cannot be deterministic: those variants are left out.)
case " ${FA_TO_PTX_OPTS:-} " in
  *" dq-atomics=true "*) ;;
  *)
    for dt in bf16 f32; do
      for causal in none top_left bottom_right; do
        emit "bwddet_${dt}_${causal}_d128" "$dt" "$causal" 128 2x8 "$DIR" true
      done
    done ;;
esac
emit bwdmem_bf16_d128 bf16 none 128 1x8 "$DIR-memory"
ls "$DIR" | grep -c manifest
