#!/usr/bin/env python3
"""Nsight Compute side by side: our kernels and PyTorch SDPA's (cuDNN by
default) for one pass of one standard-grid config, on the device machine.

For each implementation it runs ncu (``--clock-control none``, sections
SpeedOfLight, ComputeWorkloadAnalysis, WarpStateStats,
MemoryWorkloadAnalysis, Occupancy, LaunchStats) on this script in target
mode, where only the third call of the pass lies between
cudaProfilerStart and cudaProfilerStop (``--profile-from-start off``: the
backward's kernels run on autograd's thread, which NVTX ranges of the main
thread would not cover). Then it prints, per profiled kernel: grid, block,
registers per thread, dynamic workgroup memory, duration, the busiest
pipeline by elapsed cycles (ncu's "Shared" pipe holds the tensor
sub-pipe) and issue slots busy, and the sum of the durations.

Config: bf16 (or --dtype f16) q, k, v ``[B, H, T, D]`` with H = 2048 / D,
B = 16384 / T (DESIGN.md's standard grid), ``is_causal`` top-left.

usage (device machine, kernels from bench/make_bench_kernels.sh):
  FA_OPT_KERNEL_DIRS=$PWD/.dev/bench PYTHONPATH=python \\
    python3 bench/profile_vs_cudnn.py --head-dim 64 --seqlen 4096 --pass bwd
Reports go to --out (default $OUT, else the current folder) as
``ncu-<impl>-<pass>-d<D>-t<T>-c<causal>.txt``. Exits 2 when ncu is not
found or profiles no kernel.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys

SECTIONS = ["SpeedOfLight", "ComputeWorkloadAnalysis", "WarpStateStats",
            "MemoryWorkloadAnalysis", "Occupancy", "LaunchStats"]


def target(args):
    """The profiled program: three calls of the pass, the third profiled."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[args.dtype]
    h, b = 2048 // args.head_dim, 16384 // args.seqlen
    gen = torch.Generator(device="cuda").manual_seed(0)

    def rand():
        return torch.randn(b, h, args.seqlen, args.head_dim, device="cuda",
                           dtype=dtype, generator=gen)

    q, k, v, do = rand(), rand(), rand(), rand()
    if args.pass_ == "bwd":
        for t in (q, k, v):
            t.requires_grad_(True)

    def forward():
        if args.impl == "ours":
            import fa_opt
            return fa_opt.attention(q, k, v, causal=args.causal)
        backend = {"cudnn": SDPBackend.CUDNN_ATTENTION,
                   "flash": SDPBackend.FLASH_ATTENTION}[args.impl]
        with sdpa_kernel([backend]):
            return F.scaled_dot_product_attention(q, k, v,
                                                  is_causal=args.causal)

    cudart = torch.cuda.cudart()
    for it in range(3):
        if args.pass_ == "fwd":
            if it == 2:
                cudart.cudaProfilerStart()
            with torch.no_grad():
                forward()
        else:
            o = forward()
            torch.cuda.synchronize()
            if it == 2:
                cudart.cudaProfilerStart()
            torch.autograd.grad(o, (q, k, v), do)
        torch.cuda.synchronize()
        if it == 2:
            cudart.cudaProfilerStop()


def summarize(path):
    """[(kernel, fields)] from an ncu text report."""
    kernels, cur = [], None
    pat = {
        "duration": r"^\s+Duration\s+(\S+)\s+([\d.,]+)",
        "pipe": r"(\w+) is the highest-utilized pipeline \(([\d.]+)%\)",
        "issue": r"^\s+Issue Slots Busy\s+%\s+([\d.]+)",
        "regs": r"^\s+Registers Per Thread\s+\S+\s+(\d+)",
        "smem": r"^\s+Dynamic Shared Memory Per Block\s+(\S+)\s+([\d.,]+)",
    }
    with open(path) as f:
        for line in f:
            m = re.match(r"^  (\S.*?) \((\d+, \d+, \d+)\)x\((\d+, \d+, \d+)\)",
                         line)
            if m:
                cur = {"name": m.group(1)[:70], "grid": m.group(2),
                       "block": m.group(3)}
                kernels.append(cur)
                continue
            if cur is None:
                continue
            for key, rx in pat.items():
                mm = re.search(rx, line)
                if mm and key not in cur:
                    if key == "duration":
                        unit, val = mm.group(1), float(mm.group(2).replace(",", ""))
                        cur[key] = val * {"ns": 1e-3, "us": 1.0, "ms": 1e3,
                                          "s": 1e6}.get(unit, 1.0)
                    elif key == "smem":
                        cur[key] = f"{mm.group(2)} {mm.group(1)}"
                    elif key == "pipe":
                        cur[key] = f"{mm.group(1)} {mm.group(2)}%"
                    else:
                        cur[key] = mm.group(1)
    return kernels


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--head-dim", type=int, default=64, choices=[64, 128])
    p.add_argument("--seqlen", type=int, default=4096)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--pass", dest="pass_", choices=["fwd", "bwd"],
                   default="bwd")
    p.add_argument("--dtype", choices=["bf16", "f16"], default="bf16")
    p.add_argument("--impls", nargs="+", default=["ours", "cudnn"],
                   choices=["ours", "cudnn", "flash"])
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    p.add_argument("--ncu", default=None, help="ncu binary (default: PATH, "
                   "then /usr/local/cuda/bin/ncu)")
    p.add_argument("--target", dest="impl", help=argparse.SUPPRESS)
    args = p.parse_args()
    if 16384 % args.seqlen:
        p.error("--seqlen must divide 16384 (the standard grid's B * T)")
    if args.impl:
        target(args)
        return 0
    ncu = args.ncu or shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    if not os.path.exists(ncu):
        print(f"error: ncu not found ({ncu})", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    version = subprocess.run([ncu, "--version"], capture_output=True,
                             text=True).stdout.strip().splitlines()
    print(f"ncu: {ncu} ({version[-1] if version else 'version unknown'})")
    status = 0
    for impl in args.impls:
        report = os.path.join(
            args.out, f"ncu-{impl}-{args.pass_}-d{args.head_dim}-"
            f"t{args.seqlen}-c{int(args.causal)}.txt")
        cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off"]
        for s in SECTIONS:
            cmd += ["--section", s]
        cmd += [sys.executable, os.path.abspath(__file__), "--target", impl,
                "--head-dim", str(args.head_dim), "--seqlen",
                str(args.seqlen), "--pass", args.pass_, "--dtype", args.dtype]
        if args.causal:
            cmd.append("--causal")
        with open(report, "w") as f:
            rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT)
        kernels = summarize(report)
        print(f"== {impl} {args.dtype} D {args.head_dim} T {args.seqlen} "
              f"{'causal' if args.causal else 'no mask'} {args.pass_} "
              f"(ncu exit {rc}, {len(kernels)} kernels, {report})")
        if rc != 0 or not kernels:
            status = 2
        for k in kernels:
            print(f"  {k['name']:70s} grid ({k['grid']}) block ({k['block']}) "
                  f"regs {k.get('regs', '-')} smem {k.get('smem', '-')} "
                  f"{k.get('duration', float('nan')):9.1f} us "
                  f"busiest pipe {k.get('pipe', '-')} issue {k.get('issue', '-')}%")
        print(f"  total {sum(k.get('duration', 0.0) for k in kernels):.1f} us")
    return status


if __name__ == "__main__":
    sys.exit(main())
