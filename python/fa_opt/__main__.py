"""``python -m fa_opt``: compile attention configs ahead of time, list
kernel folders.

    python -m fa_opt compile --dtype bf16 f16 --head-dim 64 128 \\
        --causal none top_left bottom_right --out .dev/pykernels
    python -m fa_opt list .dev/pykernels

``compile`` takes the cartesian product of the lists, compiles each config
through the cache and copies the entries into ``--out`` (a precompiled
folder: point ``FA_OPT_KERNEL_DIRS`` or ``fa_opt.add_kernel_dir`` at it on a
machine without fa-opt).

Errors print one ``error: ...`` line on stderr, never a traceback: bad
arguments exit 2 (argparse's usage line first), a failed compile (fa-opt
missing or failing, a folder that cannot be written) exits 1.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys

from .compiler import (CompilationError, FaOptNotFoundError,
                       compile_attention, export_artifact)
from .config import (AttentionConfig, CAUSAL_KINDS, CompileOptions, DTYPES,
                     OPTION_FIELDS, SHORT_FORWARD_MAX_SEQLEN_K,
                     SUPPORTED_CHIPS, option_key,
                     scale_problem)
from .manifest import ManifestError

PROG = "python -m fa_opt"


def _int(text: str, minimum: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an integer, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(
            f"must be {what}, got {value}")
    return value


def _positive(text: str) -> int:
    return _int(text, 1, "> 0")


def _dim(text: str):
    """'?' / 'dynamic', or a static size >= 0."""
    if text in ("?", "dynamic"):
        return None
    return _int(text, 0, ">= 0 (or '?' for dynamic)")


def _head_dim_v(text: str):
    """'?' / 'dynamic' (the head dim), or a number > 0."""
    if text in ("?", "dynamic"):
        return None
    return _int(text, 1, "> 0 (or '?' for the head dim)")


def _scale(text: str):
    if text == "default":
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected 'default' or a number, got {text!r}") from None
    problem = scale_problem(value)
    if problem:
        raise argparse.ArgumentTypeError(f"{problem}, got {text}")
    return value


def _parser():
    parser = argparse.ArgumentParser(prog=PROG)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compile", help="compile configs (cartesian product)")
    c.add_argument("--dtype", nargs="+", default=["bf16"], choices=DTYPES)
    c.add_argument("--head-dim", nargs="+", type=_positive, default=[64])
    c.add_argument("--head-dim-v", nargs="+", type=_head_dim_v, default=[None],
                   help="'?' (the head dim, default) or a number")
    c.add_argument("--causal", nargs="+", default=["none"], choices=CAUSAL_KINDS)
    c.add_argument("--scale", nargs="+", type=_scale, default=[None],
                   help="'default' (1/sqrt(D)) or a positive number")
    c.add_argument("--batch", type=_dim, default=None, help="'?' (default) or N")
    c.add_argument("--seqlen-q", type=_dim, default=None)
    c.add_argument("--seqlen-k", type=_dim, default=None)
    c.add_argument("--chip", default="sm_90a", choices=SUPPORTED_CHIPS,
                   help="target chip (default sm_90a)")
    c.add_argument("--block-m", type=_positive)
    c.add_argument("--block-n", type=_positive)
    c.add_argument("--tma", choices=("true", "false"),
                   help="sm_90a wgmma forward: Q/K/V loads by TMA (passed as "
                        "fa-to-ptx's tma=; default: fa-to-ptx's default)")
    c.add_argument("--producer-warp", choices=("true", "false"),
                   help="sm_90a TMA wgmma forward: a producer warpgroup "
                        "issues the loads (passed as fa-to-ptx's "
                        "producer-warp=; default: fa-to-ptx's default)")
    c.add_argument("--tiles-per-block", type=int, choices=(0, 1, 2),
                   help="sm_90a TMA wgmma forward: query tiles per GPU "
                        "block (passed as fa-to-ptx's tiles-per-block=; "
                        "default: fa-to-ptx's default, 0: 2 at head dim "
                        "128, else 1; at head dim 128 fa-to-ptx's "
                        "persistent=auto takes the persistent kernel "
                        "instead, --option persistent=false keeps two)")
    c.add_argument("--dq-atomics", choices=("true", "false"),
                   help="sm_90a wgmma backward: dq added with f32 atomics "
                        "in the dk/dv kernel (passed as fa-to-ptx's "
                        "dq-atomics=; default: fa-to-ptx's default, true)")
    c.add_argument("--backward-producer-warp",
                   choices=("true", "false", "auto"),
                   help="sm_90a TMA wgmma backward with dq atomics: a "
                        "producer warpgroup in the dk/dv kernel (passed as "
                        "fa-to-ptx's backward-producer-warp=; default: "
                        "fa-to-ptx's default, auto)")
    c.add_argument("--deterministic", choices=("true", "false"),
                   help="backward: dq in a separate kernel, bitwise "
                        "reproducible (passed as fa-to-ptx's "
                        "deterministic=; default: fa-to-ptx's default, "
                        "false)")
    c.add_argument("--index-bitwidth", type=int, choices=(0, 32, 64),
                   help="sm_90a TMA wgmma kernels: bits of their "
                        "index type (passed as fa-to-ptx's "
                        "index-bitwidth=; default: fa-to-ptx's default, 0: "
                        "32 for the forward at D = Dv = 128 and at D = Dv "
                        "= 64 with a causal mask and for the backward, "
                        "else 64)")
    c.add_argument("--option", action="append", default=[], type=_option,
                   metavar="KEY=VALUE",
                   help="a further fa-to-ptx option, passed as is (e.g. "
                        "pair-key-blocks=true; repeatable; fa-opt rejects "
                        "an unknown key); options with a flag of their own "
                        "take the flag")
    c.add_argument("--short-forward", choices=("true", "false"),
                   default="true",
                   help="also compile a forward for key sequences of at most "
                        f"{SHORT_FORWARD_MAX_SEQLEN_K} (64-query tiles, three "
                        "blocks per multiprocessor), launched for such "
                        "calls: on sm_90a at head dim 64 (--head-dim-v 64 "
                        "too), bf16/f16, with --seqlen-k '?' or at most "
                        f"{SHORT_FORWARD_MAX_SEQLEN_K}, and only when the "
                        "flags above leave the forward's shape to fa-to-ptx "
                        "(default: true; FA_OPT_SHORT_FORWARD=0 turns it off "
                        "at launch)")
    c.add_argument("--no-backward", action="store_true")
    c.add_argument("--out", help="copy the compiled entries into this folder")
    ls = sub.add_parser("list", help="list the kernels of precompiled folders")
    ls.add_argument("dirs", nargs="+")
    return parser, {"compile": c, "list": ls}


# fa-to-ptx options that have a flag of their own (the options a
# CompileOptions field sets, flagged by their key, and the driver's
# output-dir; features has no flag and goes through --option).
_FLAGGED_OPTIONS = {key: "--out" if key == "output-dir" else f"--{key}"
                    for key in OPTION_FIELDS if key != "features"}


def _option(text: str) -> str:
    """A --option value: KEY=VALUE as CompileOptions.extra takes it
    (config.option_key), KEY without a flag of its own
    (argparse.ArgumentTypeError otherwise)."""
    try:
        key = option_key(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err))
    if key in _FLAGGED_OPTIONS:
        raise argparse.ArgumentTypeError(
            f"{key} has its own flag: use {_FLAGGED_OPTIONS[key]}")
    return text


def _fail(message: str) -> int:
    """A failure that is not a usage error: one line, exit 1."""
    line = " ".join(message.split("\n", 1)[0].split())
    print(f"{PROG}: error: {line}", file=sys.stderr)
    return 1


def _compile_error_line(err: CompilationError) -> str:
    """The first line of fa-opt's failure and its first ``error:`` line."""
    lines = str(err).splitlines()
    first = lines[0].rstrip(":") if lines else "fa-opt failed"
    detail = next((l.strip() for l in lines[1:] if "error:" in l), "")
    return f"{first}: {detail}" if detail else first


def _options(args) -> CompileOptions:
    """The compile options of the command line (ValueError on a conflict)."""
    def flag(value):
        return None if value is None else value == "true"
    # features has no flag: --option features=... sets the field.
    features = [o.partition("=")[2] for o in args.option
                if option_key(o) == "features"]
    extra = tuple(o for o in args.option if option_key(o) != "features")
    return CompileOptions(chip=args.chip, features=features[-1] if features
                          else None, block_m=args.block_m,
                          block_n=args.block_n, tma=flag(args.tma),
                          producer_warp=flag(args.producer_warp),
                          tiles_per_block=args.tiles_per_block,
                          dq_atomics=flag(args.dq_atomics),
                          backward_producer_warp=(
                              "auto" if args.backward_producer_warp == "auto"
                              else flag(args.backward_producer_warp)),
                          deterministic=flag(args.deterministic),
                          index_bitwidth=args.index_bitwidth,
                          extra=extra,
                          short_forward=args.short_forward == "true")


def _compile(args, sub) -> int:
    try:
        options = _options(args)
    except ValueError as err:  # conflicting options
        sub.error(str(err))
    configs = []
    for dtype, d, dv, causal, scale in itertools.product(
            args.dtype, args.head_dim, args.head_dim_v, args.causal,
            args.scale):
        try:
            configs.append(AttentionConfig(
                dtype=dtype, head_dim=d, head_dim_v=dv, causal=causal,
                scale=scale, batch=args.batch, seqlen_q=args.seqlen_q,
                seqlen_k=args.seqlen_k))
        except (TypeError, ValueError) as err:
            sub.error(str(err))
    if args.out:
        # Before compiling anything: a folder we cannot write is a usage
        # error, not something to find out after the first compile.
        try:
            os.makedirs(args.out, exist_ok=True)
        except OSError as err:
            sub.error(f"argument --out: cannot create directory "
                      f"'{args.out}': {err.strerror or err}")
        if not os.access(args.out, os.W_OK | os.X_OK):
            sub.error(f"argument --out: directory '{args.out}' is not "
                      f"writable")
    for config in configs:
        try:
            art = compile_attention(config, options,
                                    backward=not args.no_backward)
            where = export_artifact(art, args.out) if args.out else art.directory
        except CompilationError as err:
            return _fail(f"{config.short_name()}: {_compile_error_line(err)}")
        except FaOptNotFoundError as err:
            return _fail(str(err))
        except OSError as err:
            return _fail(f"{config.short_name()}: {err}")
        bwd = "backward" if art.entry.get("backward") else "no backward"
        if not args.no_backward and art.backward_error:
            # The forward is usable (inference); training would raise
            # NotImplementedError later: say why now.
            why = art.backward_error.strip().splitlines()
            print(f"{PROG} compile: warning: "
                  f"{config.short_name()}: no backward kernels: "
                  f"{why[-1].strip() if why else 'fa-opt failed'}",
                  file=sys.stderr)
        short = art.short_forward()
        if short:
            bwd += f", short forward (seqlen_k <= {short[0]})"
        elif art.short_forward_error:
            # The default forward runs every length: say why it must.
            print(f"{PROG} compile: warning: {config.short_name()}: no "
                  f"short forward: "
                  f"{art.short_forward_error.strip().splitlines()[-1]}",
                  file=sys.stderr)
        print(f"{config.short_name():28s} scale {config.scale:.6g}  "
              f"{art.entry['forward'][0]}, {bwd}  -> {where}")
    return 0


def _short_text(art) -> str:
    """' short_forward seqlen_k<=N' for an entry with a short forward,
    ' short_forward unusable (why)' for one whose short forward fails its
    check, else ''."""
    try:
        short = art.short_forward()
        problem = art.short_forward_error
    except (OSError, ValueError) as err:  # the default forward: checked
        short, problem = None, str(err)
    if short:
        return f" short_forward seqlen_k<={short[0]}"
    if problem and art.entry.get("forward_short") is not None:
        return f" short_forward unusable ({problem})"
    return ""


def _options_text(options) -> str:
    """' options k=v ...' for the fa-to-ptx options an artifact was compiled
    with besides its chip (CompileOptions.to_dict's form), '' for none."""
    if not isinstance(options, dict):
        return ""
    names = {f: k for k, f in OPTION_FIELDS.items()}
    words = []
    for name, value in options.items():
        if name in ("chip", "extra") or value is None or name not in names:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        words.append(f"{names[name]}={value}")
    extra = options.get("extra") or ()
    words.extend(str(o) for o in extra if isinstance(o, str))
    return " options " + " ".join(words) if words else ""


def _list(args, sub) -> int:
    from .runtime import Registry
    for d in args.dirs:
        if not os.path.isdir(d):
            sub.error(f"not a directory: '{d}'" if os.path.exists(d)
                      else f"no such directory '{d}'")
    reg = Registry()
    for d in args.dirs:
        reg.add_kernel_dir(d)
    try:
        index = reg._build_index()
    except (OSError, ManifestError, ValueError) as err:
        return _fail(str(err))
    for kind, item in index:
        if kind == "artifact":
            cfg = item.config
            print(f"{item.directory}: {cfg.short_name()} scale {cfg.scale:.6g} "
                  f"chip {item.chip} backward "
                  f"{'yes' if item.entry.get('backward') else 'no'}"
                  + _short_text(item)
                  + _options_text(item.entry.get("options")))
        else:
            print(f"{item.path}: {item.dtype} d{item.head_dim} {item.causal} "
                  f"chip {item.chip}")
    for m in reg.backward_manifests:
        print(f"{m.path}: backward {m.dtype} d{m.head_dim} {m.causal} "
              f"chip {m.chip}")
    # Unreadable manifests are left out of the lookup; say which and why.
    for path, why in reg.skipped:
        line = " ".join(why.split("\n", 1)[0].split())
        # Manifest errors start with the path (and a line number).
        rest = line[len(path):] if line.startswith(path) else ": " + line
        print(f"{PROG} list: warning: skipped {path}{rest}", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    parser, subs = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "compile":
            return _compile(args, subs["compile"])
        return _list(args, subs["list"])
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
