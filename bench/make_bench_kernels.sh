#!/usr/bin/env bash
# Compiles the kernels bench/attention_bench.py times on the standard grid
# (docs/PERFORMANCE.md): dtype (bf16, f16) x head_dim (64, 128) x causal
# (none, top_left), each an fa.attention (forward with lse) and its
# fa.attention_backward on [batch, T, D] with batch, seqlen_q and seqlen_k
# dynamic (one kernel set serves every T of the grid and B * H = 16k / T *
# 2048 / D), default scale 1/sqrt(D), through the Python package's compile
# driver (python -m fa_opt compile). Writes precompiled cache entries into DIR
# (default .dev/bench, gitignored). Run here (needs fa-opt); carry DIR to the
# device machine and point FA_OPT_KERNEL_DIRS at it there. Arguments after
# DIR go to the compile driver (e.g. --option dq-cluster-pairs=true). The
# head-dim-64 sets include the short forward (fa_opt.config.
# short_forward_options), launched by attention_bench.py for T <= 2048;
# options that fix the forward's shape, or --short-forward false, leave it
# out.
set -euo pipefail
cd "$(dirname "$0")/.."
export FA_OPT=${FA_OPT:-$PWD/build/bin/fa-opt}
DIR=${1:-.dev/bench}
case $DIR in -*) echo "usage: $0 [DIR [compile arguments...]] (DIR first, got '$DIR')" >&2; exit 2;; esac
shift $(( $# > 0 ? 1 : 0 ))
CHIP=${CHIP:-sm_90a}
rm -rf "$DIR" && mkdir -p "$DIR"
# A fresh compile cache: the entries come from this fa-opt, not an old cache.
export FA_OPT_CACHE_DIR=$(mktemp -d)
trap 'rm -rf "$FA_OPT_CACHE_DIR"' EXIT
PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH} python3 -m fa_opt compile \
  --dtype bf16 f16 --head-dim 64 128 --causal none top_left \
  --chip "$CHIP" --out "$DIR" "$@"
# Every entry must hold a backward (the bench times it).
n=$(ls "$DIR" | wc -l)
nb=$(grep -l '"backward": \[' "$DIR"/*/fa_opt.json | wc -l)
echo "$n kernel sets, $nb with backward, in $DIR"
[ "$n" -eq 8 ] && [ "$nb" -eq 8 ]
