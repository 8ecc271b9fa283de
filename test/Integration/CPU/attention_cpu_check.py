#!/usr/bin/env python3
"""CPU execution check of the tiled fa.attention against a float64 reference.

For each configuration this script draws fresh random q/k/v (the seed is
printed, `--seed` replays it), writes an MLIR module whose `@main` runs
`fa.attention` on them as constants and prints, through the MLIR runner
utilities, the output, the lse, and their differences to a float64 reference
computed here with numpy (the differences are taken in f64 inside the module,
so printing precision does not limit the check). The module goes through
`fa-opt --fa-to-cpu="block-m=.. block-n=.."` and `mlir-runner`.

A configuration passes when max |o - ref| <= tol and max |lse - ref| <= tol
over finite reference values, every -inf reference lse is -inf, and no NaN is
printed. Default tolerance: 1e-5 absolute (f32). The last line is
'N passed, N failed'; the exit status is non-zero when any check fails.

Usage: attention_cpu_check.py --matrix NAME [--seed S] [--fa-opt P]
       [--mlir-runner P] [--lib-dir D]
"""

import argparse
import os
import re
import subprocess
import sys

import numpy as np

NEG_INF = float("-inf")


def reference(q, k, v, scale, causal, mask=None):
    """float64 attention: returns (o, lse); rows with no visible key give
    o = 0, lse = -inf. Shapes: q [B, Tq, D], k [B, Tk, D], v [B, Tk, Dv]."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    s = scale * np.einsum("bid,bjd->bij", q, k)
    if mask is not None:
        s = s + mask.astype(np.float64)
    tq, tk = q.shape[1], k.shape[1]
    if causal != "none":
        off = 0 if causal == "top_left" else tk - tq
        i = np.arange(tq)[:, None]
        j = np.arange(tk)[None, :]
        s = np.where(j > i + off, NEG_INF, s)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = s.max(axis=-1, keepdims=True) if tk > 0 else np.full(
            s.shape[:-1] + (1,), NEG_INF)
        m_safe = np.where(np.isfinite(m), m, 0.0)
        p = np.exp(s - m_safe)
        l = p.sum(axis=-1, keepdims=True)
        o = np.where(l > 0, (p @ v) / np.where(l > 0, l, 1.0), 0.0)
        lse = np.where(l[..., 0] > 0, m_safe[..., 0] + np.log(
            np.where(l[..., 0] > 0, l[..., 0], 1.0)), NEG_INF)
    return o, lse


def to_bf16_bits(a):
    """Rounds float32 `a` to bfloat16 (nearest even); returns the bits."""
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def from_bf16_bits(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def round_to(a, elt):
    """`a` rounded to element type `elt`, as float32 values."""
    if elt == "bf16":
        return from_bf16_bits(to_bf16_bits(a))
    if elt == "f16":
        return a.astype(np.float16).astype(np.float32)
    return a.astype(np.float32)


def dense_hex(a, elt):
    """An MLIR dense elements literal holding `a` exactly (raw hex)."""
    if elt == "bf16":
        raw = to_bf16_bits(a)
    else:
        np_t = {"f32": np.float32, "f64": np.float64, "f16": np.float16}[elt]
        raw = a.astype(np_t)
    return 'dense<"0x%s">' % raw.tobytes().hex().upper()


def ttype(shape, elt):
    return "tensor<%sx%s>" % ("x".join(str(d) for d in shape), elt)


def build_module(q, k, v, o_ref, lse_ref, scale, causal, elt, perm=None):
    """The MLIR text of @main. With `perm`, a second fa.attention runs on the
    jointly row-permuted k/v and its output is compared to the same
    reference."""
    b, tq, d = q.shape
    tk, dv = k.shape[1], v.shape[2]
    qt, kt, vt = ttype(q.shape, elt), ttype(k.shape, elt), ttype(v.shape, elt)
    ot, lt = ttype((b, tq, dv), "f32"), ttype((b, tq), "f32")
    ot64, lt64 = ttype((b, tq, dv), "f64"), ttype((b, tq), "f64")
    attrs = "scale(%r)" % scale
    if causal != "none":
        attrs += " causal(%s)" % causal
    lines = [
        "func.func private @printMemrefF32(tensor<*xf32>)",
        "func.func private @printMemrefF64(tensor<*xf64>)",
        "#id3 = affine_map<(a, b, c) -> (a, b, c)>",
        "#id2 = affine_map<(a, b) -> (a, b)>",
    ]
    # Put the attribute aliases first.
    lines = lines[2:] + lines[:2]
    body = []

    def const(name, arr, ty, e):
        if arr.size == 0:
            body.append("  %%%s = tensor.empty() : %s" % (name, ty))
        else:
            body.append("  %%%s = arith.constant %s : %s" %
                        (name, dense_hex(arr, e), ty))

    const("q", q, qt, elt)
    const("k", k, kt, elt)
    const("v", v, vt, elt)
    const("oref", o_ref, ot64, "f64")
    const("lref", lse_ref, lt64, "f64")

    variants = [("", "k", "v")]
    if perm is not None:
        const("kp", k[:, perm, :], kt, elt)
        const("vp", v[:, perm, :], vt, elt)
        variants.append(("p", "kp", "vp"))
    for suffix, kn, vn in variants:
        body += [
            "  %%o%s, %%lse%s = fa.attention %%q, %%%s, %%%s %s : %s, %s, %s -> %s, %s"
            % (suffix, suffix, kn, vn, attrs, qt, kt, vt, ot, lt),
            "  %%od0%s = tensor.empty() : %s" % (suffix, ot64),
            "  %%od%s = linalg.generic {indexing_maps = [#id3, #id3, #id3], "
            "iterator_types = [\"parallel\", \"parallel\", \"parallel\"]} "
            "ins(%%o%s, %%oref : %s, %s) outs(%%od0%s : %s) {" %
            (suffix, suffix, ot, ot64, suffix, ot64),
            "  ^bb0(%a: f32, %r: f64, %u: f64):",
            "    %e = arith.extf %a : f32 to f64",
            "    %s = arith.subf %e, %r : f64",
            "    linalg.yield %s : f64",
            "  } -> %s" % ot64,
            "  %%ld0%s = tensor.empty() : %s" % (suffix, lt64),
            "  %%ld%s = linalg.generic {indexing_maps = [#id2, #id2, #id2], "
            "iterator_types = [\"parallel\", \"parallel\"]} "
            "ins(%%lse%s, %%lref : %s, %s) outs(%%ld0%s : %s) {" %
            (suffix, suffix, lt, lt64, suffix, lt64),
            "  ^bb0(%a: f32, %r: f64, %u: f64):",
            "    %e = arith.extf %a : f32 to f64",
            "    %s = arith.subf %e, %r : f64",
            "    linalg.yield %s : f64",
            "  } -> %s" % lt64,
        ]
        for name, ty, fn, ety in [("o", ot, "F32", "f32"),
                                  ("lse", lt, "F32", "f32"),
                                  ("od", ot64, "F64", "f64"),
                                  ("ld", lt64, "F64", "f64")]:
            body += [
                "  %%u_%s%s = tensor.cast %%%s%s : %s to tensor<*x%s>" %
                (name, suffix, name, suffix, ty, ety),
                "  call @printMemref%s(%%u_%s%s) : (tensor<*x%s>) -> ()" %
                (fn, name, suffix, ety),
            ]
    return "\n".join(lines + ["func.func @main() {"] + body +
                     ["  return", "}"]) + "\n"


NUM = re.compile(r"-?(?:inf|nan|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)", re.I)


def parse_prints(text):
    """The data of each printMemref call, flattened, in print order."""
    out = []
    for chunk in text.split("Unranked Memref")[1:]:
        data = chunk.split("data =", 1)[1]
        out.append(np.array([float(x) for x in NUM.findall(data)]))
    return out


def run_on_cpu(module, tools, bm, bn):
    """Lowers `module` with fa-opt --fa-to-cpu (blocks bm x bn), runs its
    @main with mlir-runner, and returns (the printed memrefs, None), or
    (None, an error message)."""
    opt = subprocess.run(
        [tools.fa_opt, "-", "--fa-to-cpu=block-m=%d block-n=%d" % (bm, bn)],
        input=module, capture_output=True, text=True)
    if opt.returncode != 0:
        return None, "fa-opt failed:\n" + opt.stderr[-2000:]
    libs = ",".join(os.path.join(tools.lib_dir, l) for l in
                    ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so"))
    run = subprocess.run(
        [tools.mlir_runner, "-e", "main", "-entry-point-result=void",
         "-shared-libs=" + libs], input=opt.stdout, capture_output=True,
        text=True)
    if run.returncode != 0:
        return None, "mlir-runner failed:\n" + run.stderr[-2000:]
    return parse_prints(run.stdout), None


def run_config(cfg, rng, tools, tol):
    b, tq, tk, d, dv = cfg["shape"]
    bm, bn = cfg["blocks"]
    causal = cfg.get("causal", "none")
    elt = cfg.get("dtype", "f32")
    q = rng.standard_normal((b, tq, d)).astype(np.float32)
    k = rng.standard_normal((b, tk, d)).astype(np.float32)
    v = rng.standard_normal((b, tk, dv)).astype(np.float32)
    q, k, v = (round_to(x, elt) for x in (q, k, v))
    scale = cfg.get("scale", 1.0 / np.sqrt(d))
    scale = float(np.float32(scale))
    o_ref, lse_ref = reference(q, k, v, scale, causal)
    perm = rng.permutation(tk) if cfg.get("permute") else None
    mod = build_module(q, k, v, o_ref, lse_ref, scale, causal, elt, perm)
    prints, error = run_on_cpu(mod, tools, bm, bn)
    if error:
        return False, error
    nvar = 2 if perm is not None else 1
    if len(prints) != 4 * nvar:
        return False, "expected %d prints, got %d" % (4 * nvar, len(prints))
    worst_o = worst_l = 0.0
    lref = lse_ref.reshape(-1)
    for i in range(nvar):
        o, lse, od, ld = prints[4 * i: 4 * i + 4]
        if np.isnan(o).any() or np.isnan(lse).any():
            return False, "NaN in the output"
        if od.size:
            worst_o = max(worst_o, float(np.abs(od).max()))
        fin = np.isfinite(lref)
        if (lse[~fin] != NEG_INF).any():
            return False, "lse of a row with no visible key is not -inf"
        if fin.any():
            worst_l = max(worst_l, float(np.abs(ld[fin]).max()))
    ok = worst_o <= tol and worst_l <= tol
    return ok, "max|o-ref| = %.3g, max|lse-ref| = %.3g (tol %.1g)" % (
        worst_o, worst_l, tol)


SHAPES = [(64, 64, 16, 16), (100, 100, 32, 32), (128, 96, 64, 24),
          (37, 53, 8, 11)]
BLOCKS = [(32, 32), (16, 64), (7, 13)]
NONSQUARE = [(3, 7), (7, 3), (1, 10), (10, 1)]


def matrix(name):
    cfgs = []
    if name == "noncausal":
        for tq, tk, d, dv in SHAPES:
            for bl in BLOCKS:
                cfgs.append(dict(shape=(2, tq, tk, d, dv), blocks=bl))
    elif name == "causal":
        for tq, tk, d, dv in SHAPES:
            if tq != tk:
                continue
            for bl in BLOCKS:
                for c in ("top_left", "bottom_right"):
                    cfgs.append(dict(shape=(2, tq, tk, d, dv), blocks=bl,
                                     causal=c))
    elif name == "nonsquare-causal":
        for tq, tk in NONSQUARE:
            for bl in [(2, 3), (7, 13), (1, 1)]:
                for c in ("top_left", "bottom_right"):
                    cfgs.append(dict(shape=(2, tq, tk, 8, 5), blocks=bl,
                                     causal=c))
    elif name == "permute":
        for tq, tk, d, dv in SHAPES:
            cfgs.append(dict(shape=(1, tq, tk, d, dv), blocks=(16, 64),
                             permute=True))
            cfgs.append(dict(shape=(1, tq, tk, d, dv), blocks=(7, 13),
                             permute=True))
    elif name == "misc":
        # Custom scales, Tq = 1 decode, head dims that are not powers of two,
        # a block larger than the sequence.
        cfgs += [
            dict(shape=(3, 1, 77, 80, 80), blocks=(16, 16)),
            dict(shape=(1, 1, 77, 96, 96), blocks=(16, 16),
                 causal="bottom_right"),
            dict(shape=(2, 50, 40, 16, 16), blocks=(128, 128), scale=0.7),
            dict(shape=(1, 33, 33, 4, 4), blocks=(5, 5), scale=3.0,
                 causal="top_left"),
        ]
    elif name == "dtypes":
        # f16 and bf16 inputs, f32 output: the reference uses the same
        # rounded inputs, so the f32 tolerance still holds.
        for elt in ("f16", "bf16"):
            for c in ("none", "top_left", "bottom_right"):
                cfgs.append(dict(shape=(2, 45, 70, 32, 16), blocks=(16, 32),
                                 causal=c, dtype=elt))
    else:
        raise SystemExit("error: unknown matrix '%s'" % name)
    return cfgs


# Sizes --like gives the dynamic dims of a file: batch dims, Tq, Tk
# (ragged: neither a multiple of the other nor of a block size).
LIKE_DYNAMIC = dict(batch=2, tq=77, tk=93)


def config_like(path, blocks):
    """The configuration of the first fa.attention of an MLIR file: dtype,
    head dims, causal kind and scale as there, batch dims flattened; dynamic
    batch dims and seqlens take the sizes of LIKE_DYNAMIC (head dims must be
    static)."""
    try:
        text = open(path).read()
    except OSError as e:
        raise SystemExit("error: cannot read '%s': %s" % (path, e.strerror))
    m = re.search(r"fa\.attention\b[^:]*:\s*tensor<([0-9?x]+)x(f16|bf16|f32)>,"
                  r"\s*tensor<([0-9?x]+)x\w+>,\s*tensor<([0-9?x]+)x\w+>", text)
    if not m:
        raise SystemExit("error: no fa.attention on ranked tensors in '%s'"
                         % path)

    def dims(group, seqlen):
        out = group.split("x")
        if "?" in out[-1]:
            raise SystemExit("error: the head dims of the fa.attention in "
                             "'%s' must be static" % path)
        sizes = [LIKE_DYNAMIC["batch"] if x == "?" else int(x)
                 for x in out[:-2]]
        sizes.append(LIKE_DYNAMIC[seqlen] if out[-2] == "?" else int(out[-2]))
        return sizes + [int(out[-1])]

    qs = dims(m.group(1), "tq")
    ks = dims(m.group(3), "tk")
    vs = dims(m.group(4), "tk")
    cfg = dict(shape=(int(np.prod(qs[:-2])), qs[-2], ks[-2], qs[-1], vs[-1]),
               blocks=blocks, dtype=m.group(2))
    head = text[m.start():m.end()]
    c = re.search(r"causal\((\w+)\)", head)
    if c:
        cfg["causal"] = c.group(1)
    sc = re.search(r"scale\(([^)]+)\)", head)
    if sc:
        cfg["scale"] = float(sc.group(1))
    return [cfg]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--matrix", help="a named test matrix")
    group.add_argument("--like", help="check the configuration of the first "
                       "fa.attention of this MLIR file")
    ap.add_argument("--blocks", default="64,64",
                    help="block-m,block-n for --like (default 64,64)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--fa-opt", dest="fa_opt", default="fa-opt")
    ap.add_argument("--mlir-runner", dest="mlir_runner", default="mlir-runner")
    ap.add_argument("--lib-dir", dest="lib_dir", default="/usr/lib/llvm-22/lib")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else int.from_bytes(
        os.urandom(4), "little")
    print("seed %d" % seed)
    rng = np.random.default_rng(seed)
    passed = failed = 0
    if args.like:
        bm, bn = (int(x) for x in args.blocks.split(","))
        cfgs = config_like(args.like, (bm, bn))
    else:
        cfgs = matrix(args.matrix)
    for cfg in cfgs:
        ok, msg = run_config(cfg, rng, args, args.tol)
        desc = "%s B,Tq,Tk,D,Dv=%s blocks=%s causal=%s%s%s" % (
            cfg.get("dtype", "f32"),
            ",".join(map(str, cfg["shape"])), "x".join(map(str, cfg["blocks"])),
            cfg.get("causal", "none"),
            " scale=%g" % cfg["scale"] if "scale" in cfg else "",
            " permuted-kv" if cfg.get("permute") else "")
        print("%s %s: %s" % ("PASS" if ok else "FAIL", desc, msg))
        passed += ok
        failed += not ok
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
