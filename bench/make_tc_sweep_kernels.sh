#!/usr/bin/env bash
# Compiles the tensor-core forward kernels of a block-shape sweep into DIR
# (default .dev/sweep): bf16 and f16, head dim 64 and 128, causal none and
# top_left, on [?, ?, D] (dynamic batch and seqlens), for each (num-warps,
# block-m, block-n) of the list below. Carry DIR to the device machine and
# run bench/tc_sweep.sh there. Names: sw_<dtype>_d<D>_<causal>_w<W>_m<M>_n<N>
# (and _s<S> for a config "W,M,N,S" that fixes the wgmma stages to S).
# BACKWARD=1: fa.attention_backward instead (names swb_...; block-m and
# block-n as the backward's options read them).
set -euo pipefail
cd "$(dirname "$0")/.."
FA_OPT=${FA_OPT:-build/bin/fa-opt}
DIR=${1:-.dev/sweep}
CHIP=${CHIP:-sm_90a}
rm -rf "$DIR" && mkdir -p "$DIR" .dev/mlir
CONFIGS_64=${CONFIGS_64:-"4,64,128 4,64,64 8,128,128 8,128,64 4,128,128 4,128,64"}
CONFIGS_128=${CONFIGS_128:-"4,64,64 8,128,64 4,128,64 4,64,32 8,128,32 2,64,64"}
DTYPES=${DTYPES:-"bf16"}
for dt in $DTYPES; do
  for d in 64 128; do
    configs=$CONFIGS_64; [ "$d" = 128 ] && configs=$CONFIGS_128
    for causal in none top_left; do
      for c in $configs; do
        IFS=, read -r w m n s <<<"$c"
        suffix="w${w}_m${m}_n${n}${s:+_s$s}"
        name="sw_${dt}_d${d}_${causal}_${suffix}"
        t="tensor<?x?x${d}x${dt}>"
        if [ -n "${BACKWARD:-}" ]; then
          name="swb_${dt}_d${d}_${causal}_${suffix}"
          cat > ".dev/mlir/$name.mlir" <<MLIR
func.func @$name(%q: $t, %k: $t, %v: $t, %o: $t, %do: $t, %lse: tensor<?x?xf32>) -> ($t, $t, $t) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal($causal) : $t, $t, $t, $t, $t, tensor<?x?xf32> -> $t, $t, $t
  return %dq, %dk, %dv : $t, $t, $t
}
MLIR
        else
          cat > ".dev/mlir/$name.mlir" <<MLIR
func.func @$name(%q: $t, %k: $t, %v: $t) -> ($t, tensor<?x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal($causal) : $t, $t, $t -> $t, tensor<?x?xf32>
  return %o, %lse : $t, tensor<?x?xf32>
}
MLIR
        fi
        "$FA_OPT" ".dev/mlir/$name.mlir" \
          --fa-to-ptx="chip=$CHIP output-dir=$DIR ${FA_TO_PTX_OPTS:-} num-warps=$w block-m=$m block-n=$n stages=${s:-0}" -o /dev/null
        ptxas -arch=sm_90a -v "$DIR/${name}"_attention*_0.ptx -o /dev/null 2>&1 \
          | grep -E "registers|spill" | tr '\n' ' ' | sed "s/^/$name: /"; echo
      done
    done
  done
done
ls "$DIR" | grep -c manifest
