#!/usr/bin/env bash
# Device-side block-shape sweep of the tensor-core forward kernels made by
# bench/make_tc_sweep_kernels.sh: for each manifest in DIR, a float64 check
# on a ragged problem (fa-run, batch 3, Tq 300, Tk 257), then the time at
# T = SEQLEN (default 4096) with B * H = 16k / T * 2048 / D (the standard
# grid's batch); then SDPA flash and cudnn on the same shapes.
# usage: bench/tc_sweep.sh DIR   (needs fa-run: FA_RUN, default
#        /tmp/fa-rt-build/bin/fa-run, built by scripts/gpu-check.sh;
#        SKIP_SDPA=1 leaves out the SDPA timings)
set -uo pipefail
DIR=${1:-.dev/sweep}
FA_RUN=${FA_RUN:-/tmp/fa-rt-build/bin/fa-run}
T=${SEQLEN:-4096}
for m in "$DIR"/*.manifest; do
  name=$(basename "$m" .manifest)
  d=$(awk '$1=="head_dim"{print $2}' "$m")
  batch=$(( 16384 / T * 2048 / d ))
  check=$("$FA_RUN" --manifest "$m" --batch 3 --seqlen-q 300 --seqlen-k 257 --repeat 0 2>&1 | grep -E "PASS|FAIL|error" | head -2 | tr '\n' ' ')
  if grep -q "^op attention_backward" "$m"; then
    # Backward: synthetic o and lse (no O(T^2) host forward) for the timing.
    time=$("$FA_RUN" --manifest "$m" --batch $batch --seqlen-q $T --seqlen-k $T --memory-only --repeat 5 2>&1 | grep -E "time:|error" | tr '\n' ' ')
  else
    time=$("$FA_RUN" --manifest "$m" --batch $batch --seqlen-q $T --seqlen-k $T --no-check --repeat 10 2>&1 | grep -E "time:|error" | tr '\n' ' ')
  fi
  echo "$name | $check | $time"
done
[ -n "${SKIP_SDPA:-}" ] && exit 0
python3 - "$T" <<'PY'
import sys, torch
from torch.nn.attention import sdpa_kernel, SDPBackend
import torch.nn.functional as F
T = int(sys.argv[1])
for dt in (torch.bfloat16,):
  for d in (64, 128):
    for causal in (False, True):
      bh = 16384 // T * 2048 // d
      q, k, v = (torch.randn(1, bh, T, d, device="cuda", dtype=dt) for _ in range(3))
      flops = 4 * bh * T * T * d / (2 if causal else 1)
      for name, be in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        with sdpa_kernel([be]):
          for _ in range(3): F.scaled_dot_product_attention(q, k, v, is_causal=causal)
          s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
          ts = []
          for _ in range(10):
            s.record(); F.scaled_dot_product_attention(q, k, v, is_causal=causal); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e))
          ms = sorted(ts)[len(ts)//2]
          print(f"sdpa {name} bf16 d{d} causal={causal}: {ms:.4f} ms {flops/ms/1e9:.1f} TFLOP/s")
          # Backward: autograd.grad of a recorded forward (2.5x the FLOPs).
          qg, kg, vg = (x.clone().requires_grad_() for x in (q, k, v))
          do = torch.randn_like(q)
          ts = []
          for i in range(8):
            out = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)
            s.record(); torch.autograd.grad(out, (qg, kg, vg), do); e.record(); torch.cuda.synchronize()
            if i >= 2: ts.append(s.elapsed_time(e))
          ms = sorted(ts)[len(ts)//2]
          print(f"sdpa {name} bf16 d{d} causal={causal} backward: {ms:.4f} ms {2.5*flops/ms/1e9:.1f} TFLOP/s")
PY
