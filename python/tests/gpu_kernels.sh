#!/usr/bin/env bash
# Compiles (here, with fa-opt) the kernels the GPU tests and
# examples/real_model_check.py use, into DIR (default .dev/pykernels at the
# repository root; arguments after DIR go to every compile), for a machine
# without fa-opt:
#   FA_OPT_KERNEL_DIRS=$PWD/.dev/pykernels python3 -m pytest -m gpu
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-../.dev/pykernels}
shift $(( $# > 0 ? 1 : 0 ))
# Arguments after DIR go to every compile (e.g. --option persistent=true).
EXTRA=("$@")
CHIP=${CHIP:-sm_90a}
c() { python3 -m fa_opt compile --chip "$CHIP" --out "$DIR" "$@" "${EXTRA[@]}"; }
c --dtype f16 bf16 f32 --head-dim 64 --causal none top_left bottom_right
c --dtype bf16 --head-dim 128 --causal none top_left
c --dtype bf16 --head-dim 64 --head-dim-v 32
c --dtype f32 --head-dim 64 --scale 0.3
# test_backward_under_torch_deterministic_algorithms:
c --dtype bf16 --head-dim 64 --causal top_left --deterministic true
ls "$DIR" | wc -l
