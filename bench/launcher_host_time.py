#!/usr/bin/env python3
"""Host time per call of fa_opt's PyTorch entry points against SDPA's.

For one problem (bf16 or f16, [B, H, T, D], causal or not), each of
``fa_opt.ops.forward``, ``fa_opt.ops.backward`` (its three kernels), the
same two with the launch cache cleared before every call (the arguments
packed and the tensor maps looked up again), and SDPA's cuDNN and flash
backends is called N times without a synchronize, then once more with
one: "host" is the host time per call until the last call returned
(microseconds), "wall" until the GPU finished. Where host >= wall the
calls are host-bound. Then ``--profile`` prints cProfile's top functions
of the cached forward and backward.

Needs a CUDA GPU, torch and fa_opt's kernels for the problem
(FA_OPT_KERNEL_DIRS or fa-opt): e.g.

    PYTHONPATH=python FA_OPT_KERNEL_DIRS=.dev/bench \\
        python3 bench/launcher_host_time.py --head-dim 128 --seqlen 2048 --causal
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time


def host_and_wall_us(torch, fn, n):
    """(host us/call, wall us/call) of n calls of fn."""
    fn()
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    return (t1 - t0) / n * 1e6, (t2 - t0) / n * 1e6


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dtype", choices=("bf16", "f16"), default="bf16")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seqlen", type=int, default=2048)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import fa_opt.ops as ops
    from fa_opt import runtime

    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[args.dtype]
    causal = "top_left" if args.causal else "none"
    shape = (args.batch, args.heads, args.seqlen, args.head_dim)
    torch.manual_seed(0)
    q, k, v, do = (torch.randn(shape, device="cuda", dtype=dtype)
                   for _ in range(4))
    o, lse = ops.forward(q, k, v, causal)
    ks = ops._kernels(q, ops.check_inputs(q, k, v), causal, None)

    def fwd():
        return ops.forward(q, k, v, causal)

    def bwd():
        return ops.backward(ks, q, k, v, o, lse, do, causal, None)

    def uncached(fn):
        def call():
            runtime.clear_launch_cache()
            return fn()
        return call

    def sdpa(backend):
        def call():
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(q, k, v,
                                                      is_causal=args.causal)
        return call

    cases = [("fa_opt forward", fwd), ("fa_opt backward", bwd),
             ("fa_opt forward, uncached", uncached(fwd)),
             ("fa_opt backward, uncached", uncached(bwd)),
             ("SDPA cuDNN forward", sdpa(SDPBackend.CUDNN_ATTENTION)),
             ("SDPA flash forward", sdpa(SDPBackend.FLASH_ATTENTION))]
    print(f"{args.dtype} B {args.batch} H {args.heads} T {args.seqlen} "
          f"D {args.head_dim} causal {causal}, {args.calls} calls")
    for name, fn in cases:
        host, wall = host_and_wall_us(torch, fn, args.calls)
        print(f"{name:28s} host {host:8.1f} us/call  wall {wall:8.1f} us/call")
    if args.profile:
        for name, fn in cases[:2]:
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(args.calls):
                fn()
            prof.disable()
            torch.cuda.synchronize()
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("cumulative") \
                .print_stats(25)
            print(name)
            print(out.getvalue())


if __name__ == "__main__":
    main()
