"""``python -m fa_opt``: compile attention configs ahead of time, list
kernel folders.

    python -m fa_opt compile --dtype bf16 f16 --head-dim 64 128 \\
        --causal none top_left bottom_right --out .dev/pykernels
    python -m fa_opt list .dev/pykernels

``compile`` takes the cartesian product of the lists, compiles each config
through the cache and copies the entries into ``--out`` (a precompiled
folder: point ``FA_OPT_KERNEL_DIRS`` or ``fa_opt.add_kernel_dir`` at it on a
machine without fa-opt).
"""

from __future__ import annotations

import argparse
import itertools
import sys

from .compiler import compile_attention, export_artifact
from .config import AttentionConfig, CAUSAL_KINDS, CompileOptions, DTYPES


def _dim(text: str):
    return None if text in ("?", "dynamic") else int(text)


def _scale(text: str):
    return None if text == "default" else float(text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fa_opt")
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compile", help="compile configs (cartesian product)")
    c.add_argument("--dtype", nargs="+", default=["bf16"], choices=DTYPES)
    c.add_argument("--head-dim", nargs="+", type=int, default=[64])
    c.add_argument("--head-dim-v", nargs="+", type=_dim, default=[None],
                   help="'?' or a number; default: head dim")
    c.add_argument("--causal", nargs="+", default=["none"], choices=CAUSAL_KINDS)
    c.add_argument("--scale", nargs="+", type=_scale, default=[None],
                   help="'default' (1/sqrt(D)) or a number")
    c.add_argument("--batch", type=_dim, default=None, help="'?' (default) or N")
    c.add_argument("--seqlen-q", type=_dim, default=None)
    c.add_argument("--seqlen-k", type=_dim, default=None)
    c.add_argument("--chip", default="sm_90a")
    c.add_argument("--block-m", type=int)
    c.add_argument("--block-n", type=int)
    c.add_argument("--no-backward", action="store_true")
    c.add_argument("--out", help="copy the compiled entries into this folder")
    ls = sub.add_parser("list", help="list the kernels of precompiled folders")
    ls.add_argument("dirs", nargs="+")
    args = parser.parse_args(argv)

    if args.command == "compile":
        options = CompileOptions(chip=args.chip, block_m=args.block_m,
                                 block_n=args.block_n)
        for dtype, d, dv, causal, scale in itertools.product(
                args.dtype, args.head_dim, args.head_dim_v, args.causal,
                args.scale):
            config = AttentionConfig(dtype=dtype, head_dim=d, head_dim_v=dv,
                                     causal=causal, scale=scale,
                                     batch=args.batch, seqlen_q=args.seqlen_q,
                                     seqlen_k=args.seqlen_k)
            art = compile_attention(config, options,
                                    backward=not args.no_backward)
            where = export_artifact(art, args.out) if args.out else art.directory
            bwd = "backward" if art.entry.get("backward") else "no backward"
            print(f"{config.short_name():28s} scale {config.scale:.6g}  "
                  f"{art.entry['forward'][0]}, {bwd}  -> {where}")
        return 0
    from .runtime import Registry
    reg = Registry()
    for d in args.dirs:
        reg.add_kernel_dir(d)
    for kind, item in reg._build_index():
        if kind == "artifact":
            cfg = item.config
            print(f"{item.directory}: {cfg.short_name()} scale {cfg.scale:.6g} "
                  f"chip {item.chip} backward "
                  f"{'yes' if item.entry.get('backward') else 'no'}")
        else:
            print(f"{item.path}: {item.dtype} d{item.head_dim} {item.causal} "
                  f"chip {item.chip}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
