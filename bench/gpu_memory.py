#!/usr/bin/env python3
"""Peak device memory of the backward kernels against sequence length.

For each T in --seqlens, runs `fa-run --memory-only` on a backward manifest
(bench/make_gpu_check_backward_kernels.sh writes the bf16, B=1, H=8, D=128
one to .dev/bwd-kernels-memory): the runtime allocates q, k, v, o, do, lse,
dq, dk, dv and the workspace (delta f32 [batch, T], dq accumulator f32
[batch, T, D]), runs every kernel once, and reports the bytes of those
tensors and the drop of cuMemGetInfo's free memory over allocation and
the run (which also sees the driver's local-memory reservation for the
launch). For comparison, the peak of torch.cuda.max_memory_allocated over
PyTorch's SDPA forward + backward (flash) on tensors of the same shapes.
Prints a markdown table; linear growth in T is the claim checked (each
doubling of T about doubles the bytes; a Tq x Tk buffer would quadruple).

--memory-only uses synthetic o and lse (no O(T^2) host forward), so the run
is not checked for accuracy here; bench/gpu_check.py does that.
"""

import argparse
import re
import subprocess
import sys
import time

import torch
import torch.nn.functional as F


def ours(fa_run, manifest, t, timeout):
    cmd = [fa_run, "--manifest", manifest, "--seqlen-q", str(t),
           "--seqlen-k", str(t), "--memory-only", "--repeat", "0",
           "--seed", "1"]
    start = time.time()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None, None, f"timeout after {timeout} s"
    m = re.search(r"memory: (\d+) bytes of device tensors .*workspace (\d+)\)"
                  r".*run: (-?\d+) bytes", proc.stdout)
    if proc.returncode != 0 or not m:
        return None, None, None, (proc.stdout + proc.stderr).strip()[-300:]
    return (int(m.group(1)), int(m.group(2)), int(m.group(3)),
            f"{time.time() - start:.1f} s")


def sdpa_peak(batch, heads, t, d):
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    q, k, v = (torch.randn(batch, heads, t, d, device="cuda",
                           dtype=torch.bfloat16, requires_grad=True)
               for _ in range(3))
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        o = F.scaled_dot_product_attention(q, k, v)
        o.backward(torch.randn_like(o))
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del q, k, v, o
    return peak


def mib(x):
    return "-" if x is None else f"{x / 2**20:.1f}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("manifest")
    p.add_argument("--fa-run", required=True)
    p.add_argument("--seqlens", default="4096,8192,16384,32768")
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--timeout", type=float, default=120)
    args = p.parse_args()
    rows = []
    prev = None
    for t in (int(x) for x in args.seqlens.split(",")):
        tensors, workspace, drop, note = ours(args.fa_run, args.manifest, t,
                                              args.timeout)
        try:
            torch_peak = sdpa_peak(1, args.heads, t, args.head_dim)
        except RuntimeError as e:
            torch_peak = None
            note += f"; sdpa: {e}"
        growth = (f"{tensors / prev:.2f}x" if tensors and prev else "-")
        prev = tensors or prev
        rows.append((t, mib(tensors), mib(workspace), mib(drop), growth,
                     mib(torch_peak), note))
        print(rows[-1], flush=True)
    print()
    print("| T | ours: tensors MiB | of which workspace MiB | ours: "
          "cuMemGetInfo drop MiB | growth vs T/2 | SDPA flash fwd+bwd peak "
          "MiB | our run |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
