#!/usr/bin/env python3
"""CPU execution check of the tiled fa.attention_backward against float64.

For each configuration this script draws fresh random q, k, v and do (the
seed is printed, `--seed` replays it), computes the forward o and lse in
float64 with numpy and rounds them to f32 (the operands a real forward would
hand over), and computes the gradients dq, dk, dv in float64 in closed form:

    p = exp(scale * q k^T - lse)  (0 where causal hides a key or lse = -inf)
    delta = rowsum(do * o)
    dv = p^T do,  dp = do v^T,  ds = p * (dp - delta)
    dq = scale * ds k,  dk = scale * ds^T q

It writes an MLIR module whose `@main` runs `fa.attention_backward` on these
operands as constants (f32 gradients) and prints, through the MLIR runner
utilities, the differences of dq, dk, dv to the reference, taken in f64
inside the module so printing precision does not limit the check. The module
goes through `fa-opt --fa-to-cpu="block-m=.. block-n=.."` and `mlir-runner`.

Tolerance: for each gradient g, max |g - ref| <= tol * max(1, max |ref|),
tol = 1e-5 by default: an absolute f32 bound of 1e-5 for gradients of
magnitude up to 1, relative to the largest entry for larger ones (the f32
accumulation error grows with the magnitude of the summed terms). No NaN
passes. Rows whose lse is -inf (no visible key) must get dq exactly 0, and
keys no query sees must get dk = dv = 0 exactly. The last line is
'N passed, N failed'; the exit status is non-zero when any check fails.

Usage: attention_backward_cpu_check.py --matrix NAME [--seed S] [--tol T]
       [--fa-opt P] [--mlir-runner P] [--lib-dir D]
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attention_cpu_check import (BLOCKS, SHAPES, dense_hex,  # noqa: E402
                                 reference, round_to, run_on_cpu, ttype)
from attention_cpu_check import matrix as forward_matrix  # noqa: E402

NEG_INF = float("-inf")

# The largest normalized error of each gradient over the run.
WORST = {"dq": 0.0, "dk": 0.0, "dv": 0.0}


def visible(tq, tk, causal):
    """[Tq, Tk] booleans: which key each query row sees."""
    if causal == "none":
        return np.ones((tq, tk), dtype=bool)
    off = 0 if causal == "top_left" else tk - tq
    return np.arange(tk)[None, :] <= np.arange(tq)[:, None] + off


def reference_backward(q, k, v, do, o, lse, scale, causal):
    """float64 gradients (dq, dk, dv) of attention for output gradient `do`,
    given the forward's o and lse (float64). Shapes [B, T, D]."""
    q, k, v, do = (x.astype(np.float64) for x in (q, k, v, do))
    s = scale * np.einsum("bid,bjd->bij", q, k)
    vis = visible(q.shape[1], k.shape[1], causal)[None]
    fin = np.isfinite(lse)[..., None]
    with np.errstate(invalid="ignore", over="ignore"):
        p = np.where(vis & fin, np.exp(s - np.where(fin, lse[..., None], 0.0)),
                     0.0)
    delta = (do * o).sum(axis=-1)
    dv = np.einsum("bij,bie->bje", p, do)
    dp = np.einsum("bie,bje->bij", do, v)
    ds = p * (dp - delta[..., None])
    dq = scale * np.einsum("bij,bjd->bid", ds, k)
    dk = scale * np.einsum("bij,bid->bjd", ds, q)
    return dq, dk, dv


DIFF3 = [
    "  %%%s0 = tensor.empty() : %s",
    "  %%%s = linalg.generic {indexing_maps = [#id3, #id3, #id3], "
    "iterator_types = [\"parallel\", \"parallel\", \"parallel\"]} "
    "ins(%%%s, %%%s : %s, %s) outs(%%%s0 : %s) {",
    "  ^bb0(%%a: f32, %%r: f64, %%u: f64):",
    "    %%e = arith.extf %%a : f32 to f64",
    "    %%s = arith.subf %%e, %%r : f64",
    "    linalg.yield %%s : f64",
    "  } -> %s",
]


def build_module(ins, refs, scale, causal, elt):
    """The MLIR text of @main: fa.attention_backward on `ins` (q, k, v, o,
    do, lse) and the f64 differences of its results to `refs`."""
    q, k, v, o, do, lse = ins
    qt, kt, vt = ttype(q.shape, elt), ttype(k.shape, elt), ttype(v.shape, elt)
    ot, dot = ttype(o.shape, "f32"), ttype(do.shape, elt)
    lt = ttype(lse.shape, "f32")
    gts = [ttype(x.shape, "f32") for x in (q, k, v)]
    g64 = [ttype(x.shape, "f64") for x in (q, k, v)]
    attrs = "scale(%r)" % scale
    if causal != "none":
        attrs += " causal(%s)" % causal
    lines = ["#id3 = affine_map<(a, b, c) -> (a, b, c)>",
             "func.func private @printMemrefF64(tensor<*xf64>)",
             "func.func @main() {"]

    def const(name, arr, ty, e):
        if arr.size == 0:
            lines.append("  %%%s = tensor.empty() : %s" % (name, ty))
        else:
            lines.append("  %%%s = arith.constant %s : %s" %
                         (name, dense_hex(arr, e), ty))

    for name, arr, ty, e in [("q", q, qt, elt), ("k", k, kt, elt),
                             ("v", v, vt, elt), ("o", o, ot, "f32"),
                             ("do", do, dot, elt), ("lse", lse, lt, "f32")]:
        const(name, arr, ty, e)
    for name, arr, ty in zip(("rq", "rk", "rv"), refs, g64):
        const(name, arr, ty, "f64")
    lines.append(
        "  %%dq, %%dk, %%dv = fa.attention_backward %%q, %%k, %%v, %%o, %%do, "
        "%%lse %s : %s, %s, %s, %s, %s, %s -> %s, %s, %s" %
        ((attrs, qt, kt, vt, ot, dot, lt) + tuple(gts)))
    for g, r, gt, rt in zip(("dq", "dk", "dv"), ("rq", "rk", "rv"), gts, g64):
        d = "diff_" + g
        text = "\n".join(DIFF3) % (d, rt, d, g, r, gt, rt, d, rt, rt)
        lines += text.split("\n")
        lines += ["  %%u_%s = tensor.cast %%%s : %s to tensor<*xf64>" %
                  (d, d, rt),
                  "  call @printMemrefF64(%%u_%s) : (tensor<*xf64>) -> ()" % d]
    return "\n".join(lines + ["  return", "}"]) + "\n"


def run_config(cfg, rng, tools, tol):
    b, tq, tk, d, dv = cfg["shape"]
    bm, bn = cfg["blocks"]
    causal = cfg.get("causal", "none")
    elt = cfg.get("dtype", "f32")
    q = rng.standard_normal((b, tq, d)).astype(np.float32)
    k = rng.standard_normal((b, tk, d)).astype(np.float32)
    v = rng.standard_normal((b, tk, dv)).astype(np.float32)
    do = rng.standard_normal((b, tq, dv)).astype(np.float32)
    q, k, v, do = (round_to(x, elt) for x in (q, k, v, do))
    scale = float(np.float32(cfg.get("scale", 1.0 / np.sqrt(d))))
    o64, lse64 = reference(q, k, v, scale, causal)
    if cfg.get("no_key_rows"):
        # Rows handed over as having no visible key (lse = -inf, o = 0), as
        # a masked forward reports them: they must contribute nothing.
        rows = rng.choice(tq, cfg["no_key_rows"], replace=False)
        lse64[:, rows] = NEG_INF
        o64[:, rows, :] = 0.0
    # The operands a forward would hand over: o and lse rounded to f32.
    o32, lse32 = o64.astype(np.float32), lse64.astype(np.float32)
    refs = reference_backward(q, k, v, do, o64, lse64, scale, causal)
    mod = build_module((q, k, v, o32, do, lse32), refs, scale, causal, elt)
    prints, error = run_on_cpu(mod, tools, bm, bn)
    if error:
        return False, error
    if len(prints) != 3:
        return False, "expected 3 prints, got %d" % len(prints)
    ok = True
    msgs = []
    no_key_rows = ~np.isfinite(lse64)  # [B, Tq]
    unseen_keys = ~visible(tq, tk, causal).any(axis=0)  # [Tk]
    for name, diff, ref in zip(("dq", "dk", "dv"), prints, refs):
        diff = diff.reshape(ref.shape)
        if np.isnan(diff).any():
            return False, "NaN in %s" % name
        err = float(np.abs(diff).max()) if diff.size else 0.0
        mag = float(np.abs(ref).max()) if ref.size else 0.0
        rel = err / max(1.0, mag)
        ok &= rel <= tol
        WORST[name] = max(WORST[name], rel)
        msgs.append("%s %.3g (max|ref| %.3g)" % (name, rel, mag))
        # The reference is exactly 0 there, so the difference is the value.
        zero = no_key_rows if name == "dq" else np.broadcast_to(
            unseen_keys[None, :], ref.shape[:2])
        if zero.any() and (diff[zero] != 0).any():
            return False, "%s is not exactly 0 where no key (query) is " \
                "visible" % name
    masked = int(no_key_rows.sum())
    return ok, "max|g-ref|/max(1,max|ref|): %s (tol %.1g)%s" % (
        ", ".join(msgs), tol,
        "; %d rows with no visible key" % masked if masked else "")


def matrix(name):
    """The forward's matrices (noncausal, causal, nonsquare-causal, dtypes),
    plus masked-rows, which only the backward has."""
    if name != "masked-rows":
        return forward_matrix(name)
    cfgs = []
    # bottom_right with Tq > Tk: the first Tq - Tk query rows see no key
    # (lse = -inf) and must get dq = 0; top_left with Tk > Tq: the last
    # Tk - Tq keys are seen by no query and must get dk = dv = 0. Also
    # the rectangular shapes of the main matrix under both alignments,
    # and non-causal rows handed over with lse = -inf.
    for bl in BLOCKS:
        cfgs.append(dict(shape=(2, 40, 16, 8, 8), blocks=bl,
                         causal="bottom_right"))
        cfgs.append(dict(shape=(2, 16, 40, 8, 8), blocks=bl,
                         causal="top_left"))
    for tq, tk, d, dv in SHAPES:
        if tq == tk:
            continue
        for c in ("top_left", "bottom_right"):
            cfgs.append(dict(shape=(1, tq, tk, d, dv), blocks=(7, 13),
                             causal=c))
    # Non-causal rows handed over with lse = -inf: p = 0 by the select,
    # never exp(-inf - (-inf)).
    for bl in BLOCKS:
        cfgs.append(dict(shape=(2, 37, 53, 8, 11), blocks=bl,
                         no_key_rows=5))
    return cfgs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--matrix", required=True, help="a named test matrix")
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
    for cfg in matrix(args.matrix):
        ok, msg = run_config(cfg, rng, args, args.tol)
        desc = "%s B,Tq,Tk,D,Dv=%s blocks=%s causal=%s%s" % (
            cfg.get("dtype", "f32"), ",".join(map(str, cfg["shape"])),
            "x".join(map(str, cfg["blocks"])), cfg.get("causal", "none"),
            " lse=-inf rows=%d" % cfg["no_key_rows"]
            if cfg.get("no_key_rows") else "")
        print("%s %s: %s" % ("PASS" if ok else "FAIL", desc, msg))
        sys.stdout.flush()
        passed += ok
        failed += not ok
    print("worst max|g-ref|/max(1,max|ref|): dq %.3g, dk %.3g, dv %.3g" %
          (WORST["dq"], WORST["dk"], WORST["dv"]))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
