#!/usr/bin/env python3
"""GPU check of fa kernels: ours against float64 and against PyTorch's SDPA.

For every <kernel>.manifest in the given artifacts folders and every shape
(the manifest's static dims, the --shapes list for dynamic ones), runs
fa-run with --save (fresh random inputs, NaN-poisoned outputs, its own
float64 CPU check), then on the same rounded inputs:

  * recomputes the float64 reference with torch on the GPU,
  * runs torch.nn.functional.scaled_dot_product_attention in the kernel's
    dtype (flash backend when it accepts the case, else PyTorch's choice)
    with the same scale and causal alignment (is_causal for top_left, a
    lower-right causal bias or an explicit mask for bottom_right),
  * compares both outputs with ||out - ref|| / ||ref||.

A case passes when fa-run passed (all written, no NaN, within its own
tolerances) and our error is at most --ratio (2) times SDPA's, or, for f32,
at most 1e-5, or below 1/64 of the dtype's unit roundoff (f16 1.5e-5, bf16
1.2e-4: a case whose exact answer is nearly representable, such as one
visible key, where both errors are rounding noise and their ratio means
nothing). Rows that see no key (bottom_right with Tq > Tk, Tk = 0) must
be exactly 0 in ours; SDPA's output there is policy, not error (math gives
NaN, cuDNN non-zero values), and is set to 0 before comparing. Prints a table, then 'N passed, N failed'; exits 1 on
any failure.

Backward manifests (version 2, op attention_backward): fa-run draws q, k,
v, do, takes o and lse from its float64 forward (o rounded to the dtype),
runs the kernels and checks dq, dk, dv against its float64 closed form
(with --check-deterministic for a deterministic manifest: two runs, dq
bitwise equal). Here the float64 reference gradients are recomputed with
torch autograd on the GPU, and PyTorch's own backward (autograd through
SDPA, flash first, on the same rounded q, k, v, do in the dtype) is
compared with the same reference. A case passes when fa-run passed and
each of dq, dk, dv has ours <= --ratio x SDPA's error, or, for f32,
ours <= 1e-5 relative, or ours below the noise floor above.

Usually run through scripts/gpu-check.sh on the device machine.
"""

import argparse
import glob
import json
import math
import os
import re
import subprocess
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn.functional as F

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
F32_ABS_TOL = 1e-5


def noise_floor(dtype: str) -> float:
    """Relative errors below 1/64 of the dtype's unit roundoff pass whatever
    SDPA's error is (f16: 2^-10 / 64, bf16: 2^-7 / 64; f32 has its own
    absolute tolerance)."""
    return {"f16": 2.0 ** -10 / 64, "bf16": 2.0 ** -7 / 64}.get(dtype, 0.0)


def read_manifest(path):
    """Key -> list of values, as the runtime reads it (no validation)."""
    fields = {}
    with open(path) as f:
        for line in f:
            words = line.split("#", 1)[0].split()
            if words:
                fields[words[0]] = words[1:]
    return fields


def static_dim(fields, key):
    value = fields.get(key, ["?"])[0]
    return None if value == "?" else int(value)


def shapes_for(fields, shapes, batch):
    """(batch, Tq, Tk) cases: static dims fixed, dynamic ones from --shapes."""
    b = static_dim(fields, "batch")
    sq, sk = static_dim(fields, "seqlen_q"), static_dim(fields, "seqlen_k")
    cases = []
    for tq, tk in shapes:
        case = (b if b is not None else batch, sq if sq is not None else tq,
                sk if sk is not None else tk)
        if case not in cases:
            cases.append(case)
    return cases


def visible_keys(causal, tq, tk, device):
    """Number of keys each query row sees (causal masks are prefixes)."""
    i = torch.arange(tq, device=device, dtype=torch.int64)
    if causal == "none":
        last = torch.full_like(i, tk - 1)
    elif causal == "top_left":
        last = i
    else:
        last = i + tk - tq
    return (last + 1).clamp(0, tk)


def reference(q, k, v, scale, causal):
    """float64 o [B, Tq, Dv] and lse [B, Tq]; rows without keys: 0, -inf."""
    b, tq, _ = q.shape
    tk, dv = v.shape[1], v.shape[2]
    o = torch.zeros(b, tq, dv, dtype=torch.float64, device=q.device)
    lse = torch.full((b, tq), -math.inf, dtype=torch.float64, device=q.device)
    if tk == 0 or tq == 0:
        return o, lse
    count = visible_keys(causal, tq, tk, q.device)
    mask = torch.arange(tk, device=q.device)[None, :] < count[:, None]
    for i in range(b):  # one batch entry at a time bounds the memory
        s = (q[i] @ k[i].T) * scale
        s = s.masked_fill(~mask, -math.inf)
        m = s.amax(dim=-1, keepdim=True)
        m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
        p = torch.exp(s - m)
        l = p.sum(dim=-1, keepdim=True)
        has = l > 0
        o[i] = torch.where(has, (p @ v[i]) / torch.where(has, l, 1), 0)
        lse[i] = torch.where(has, m + torch.log(l), -math.inf).squeeze(-1)
    return o, lse


def run_sdpa(q, k, v, scale, causal):
    """SDPA on [1, B, T, D] (batch entries as heads); returns (o, backend)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    tq, tk = q.shape[1], k.shape[1]
    args = dict(scale=scale)
    if causal == "top_left" or (causal == "bottom_right" and tq == tk):
        args["is_causal"] = True
    elif causal == "bottom_right":
        # An explicit boolean mask (True = keep).
        count = visible_keys(causal, tq, tk, q.device)
        args["attn_mask"] = (torch.arange(tk, device=q.device)[None, :]
                             < count[:, None])
    q4, k4, v4 = (x.unsqueeze(0) for x in (q, k, v))
    # Flash first (the error DESIGN.md compares against), then the others in
    # the order PyTorch prefers them; the first that accepts the case wins.
    for backend, name in ((SDPBackend.FLASH_ATTENTION, "flash"),
                          (SDPBackend.CUDNN_ATTENTION, "cudnn"),
                          (SDPBackend.EFFICIENT_ATTENTION, "efficient"),
                          (SDPBackend.MATH, "math")):
        try:
            warnings.simplefilter("ignore", UserWarning)  # "not used because"
            with sdpa_kernel([backend]):
                out = F.scaled_dot_product_attention(q4, k4, v4, **args)
            torch.cuda.synchronize()
            return out.squeeze(0), name
        except RuntimeError:
            continue
    raise RuntimeError("no SDPA backend accepted the case")


def rel_err(out, ref):
    """||out - ref|| / ||ref|| in float64; ||out|| when ref is all zero."""
    diff = torch.linalg.vector_norm((out.double() - ref).flatten()).item()
    norm = torch.linalg.vector_norm(ref.flatten()).item()
    return diff / norm if norm > 0 else diff


def load_f32(path, shape):
    data = np.fromfile(path, dtype=np.float32)
    expected = int(np.prod(shape))
    if data.size != expected:
        raise ValueError(f"{path}: {data.size} floats, expected {expected}")
    return torch.from_numpy(data.reshape(shape))


def parse_shapes(text):
    shapes = []
    for item in text.split(","):
        m = re.fullmatch(r"\s*(\d+)x(\d+)\s*", item)
        if not m:
            raise argparse.ArgumentTypeError(f"bad shape '{item}', want TQxTK")
        shapes.append((int(m.group(1)), int(m.group(2))))
    return shapes


def is_backward(fields):
    return fields.get("op", [""])[0] == "attention_backward"


def reference_grads(q, k, v, dout, scale, causal):
    """float64 dq, dk, dv of o = attention(q, k, v) for dout, by autograd
    through a dense softmax (rows without keys contribute nothing)."""
    b, tq, _ = q.shape
    tk = k.shape[1]
    q, k, v = (x.double().detach().requires_grad_(True) for x in (q, k, v))
    count = visible_keys(causal, tq, tk, q.device)
    mask = torch.arange(tk, device=q.device)[None, :] < count[:, None]
    has = (count > 0)[:, None].double()
    # Rows without keys: unmasked scores, then p = 0 (no NaN anywhere).
    mask = mask | (count == 0)[:, None]
    s = torch.einsum("bid,bjd->bij", q, k) * scale
    s = s.masked_fill(~mask, -math.inf)
    p = torch.softmax(s, dim=-1) * has
    o = torch.einsum("bij,bje->bie", p, v)
    o.backward(dout.double())
    return q.grad, k.grad, v.grad


def run_sdpa_backward(q, k, v, dout, scale, causal):
    """Gradients of SDPA (in q's dtype) for dout; returns (dq, dk, dv,
    backend)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    tq, tk = q.shape[1], k.shape[1]
    args = dict(scale=scale)
    if causal == "top_left" or (causal == "bottom_right" and tq == tk):
        args["is_causal"] = True
    elif causal == "bottom_right":
        count = visible_keys(causal, tq, tk, q.device)
        args["attn_mask"] = (torch.arange(tk, device=q.device)[None, :]
                             < count[:, None])
    for backend, name in ((SDPBackend.FLASH_ATTENTION, "flash"),
                          (SDPBackend.CUDNN_ATTENTION, "cudnn"),
                          (SDPBackend.EFFICIENT_ATTENTION, "efficient"),
                          (SDPBackend.MATH, "math")):
        try:
            leaves = [x.unsqueeze(0).detach().requires_grad_(True)
                      for x in (q, k, v)]
            warnings.simplefilter("ignore", UserWarning)
            with sdpa_kernel([backend]):
                out = F.scaled_dot_product_attention(*leaves, **args)
                out.backward(dout.unsqueeze(0))
            torch.cuda.synchronize()
            return (*(x.grad.squeeze(0) for x in leaves), name)
        except RuntimeError:
            continue
    raise RuntimeError("no SDPA backend accepted the backward case")


def check_backward_case(args, manifest, fields, shape, index):
    b, tq, tk = shape
    kernel = fields.get("name", ["?"])[0]
    dtype = fields.get("dtype", ["?"])[0]
    causal = fields.get("causal", ["none"])[0]
    deterministic = fields.get("deterministic", ["0"])[0] == "1"
    row = dict(kernel=kernel, kind="backward", dtype=dtype, causal=causal,
               batch=b, seqlen_q=tq, seqlen_k=tk, deterministic=deterministic,
               ours=None, sdpa=None, ratio=None, tflops=None, backend="",
               passed=False, note="")
    save = os.path.join(args.save_root, f"{index:03d}_{kernel}_{b}x{tq}x{tk}")
    cmd = [args.fa_run, "--manifest", manifest, "--batch", str(b),
           "--seqlen-q", str(tq), "--seqlen-k", str(tk), "--save", save,
           "--repeat", str(args.repeat)]
    if deterministic:
        cmd.append("--check-deterministic")
    if args.seed is not None:
        cmd += ["--seed", str(args.seed)]
    start = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    if args.verbose or proc.returncode not in (0, 1):
        print(f"$ {' '.join(cmd)}\n{log}", flush=True)
    row["fa_run_rc"] = proc.returncode
    m = re.search(r"([0-9.]+) TFLOP/s", proc.stdout)
    if m:
        row["tflops"] = float(m.group(1))
    if deterministic:
        row["bitwise"] = ("dq bitwise identical" in proc.stdout
                          and "DIFFERS" not in proc.stdout)
    if proc.returncode not in (0, 1):
        errors = [l for l in log.splitlines() if l.startswith("error:")]
        row["note"] = errors[0] if errors else f"fa-run exit {proc.returncode}"
        return row

    with open(os.path.join(save, "meta.json")) as f:
        meta = json.load(f)
    d, dv = meta["head_dim"], meta["head_dim_v"]
    dev = torch.device("cuda")
    shapes = dict(q=(b, tq, d), k=(b, tk, d), v=(b, tk, dv), do=(b, tq, dv),
                  dq=(b, tq, d), dk=(b, tk, d), dv=(b, tk, dv))
    t = {n: load_f32(os.path.join(save, f"{n}.f32"), sh).to(dev)
         for n, sh in shapes.items()}
    scale = meta["scale"]
    refs = reference_grads(t["q"], t["k"], t["v"], t["do"], scale, causal)
    ours = [rel_err(t[n], r) for n, r in zip(("dq", "dk", "dv"), refs)]
    row["ours"] = ours
    # fa-run's C++ reference must agree with this one on our errors.
    for n, e in zip(("dq", "dk", "dv"), ours):
        cpp = meta.get(f"{n}_rel_err")
        if isinstance(cpp, (int, float)) and math.isfinite(cpp) and not (
                abs(cpp - e) <= 1e-3 * max(e, 1e-12) + 1e-12):
            row["note"] += f"fa-run's reference says {n} {cpp:.3e}; "

    tdt = DTYPES[dtype]
    sdpa = None
    if b and tq and tk:
        *grads, backend = run_sdpa_backward(
            t["q"].to(tdt), t["k"].to(tdt), t["v"].to(tdt),
            t["do"].to(tdt), scale, causal)
        row["backend"] = backend
        sdpa = [rel_err(g, r) for g, r in zip(grads, refs)]
    row["sdpa"] = sdpa

    ok = proc.returncode == 0 and all(math.isfinite(e) for e in ours)
    within = True
    ratios = []
    for i, e in enumerate(ours):
        s_err = sdpa[i] if sdpa else None
        good = (dtype == "f32" and e <= F32_ABS_TOL) or e <= noise_floor(dtype)
        if s_err is not None and math.isfinite(s_err):
            ratios.append(e / s_err if s_err > 0 else
                          (math.inf if e > 0 else 0.0))
            good = good or e <= args.ratio * s_err
        within = within and good
    row["ratio"] = max(ratios) if ratios else None
    row["passed"] = bool(ok and within)
    if proc.returncode != 0:
        fails = [l for l in proc.stdout.splitlines() if l.startswith("FAIL")]
        row["note"] += "; ".join(fails) or f"fa-run exit {proc.returncode}"
    row["seconds"] = round(time.time() - start, 2)
    return row


def check_case(args, manifest, fields, shape, index):
    if is_backward(fields):
        return check_backward_case(args, manifest, fields, shape, index)
    b, tq, tk = shape
    kernel = fields.get("kernel", ["?"])[0]
    dtype = fields.get("dtype", ["?"])[0]
    causal = fields.get("causal", ["none"])[0]
    row = dict(kernel=kernel, dtype=dtype, causal=causal, batch=b,
               seqlen_q=tq, seqlen_k=tk, ours=None, sdpa=None, ratio=None,
               lse=None, tflops=None, backend="", passed=False, note="")
    save = os.path.join(args.save_root, f"{index:03d}_{kernel}_{b}x{tq}x{tk}")
    cmd = [args.fa_run, "--manifest", manifest, "--batch", str(b),
           "--seqlen-q", str(tq), "--seqlen-k", str(tk), "--save", save,
           "--repeat", str(args.repeat)]
    if args.seed is not None:
        cmd += ["--seed", str(args.seed)]
    start = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    if args.verbose or proc.returncode not in (0, 1):
        print(f"$ {' '.join(cmd)}\n{log}", flush=True)
    row["fa_run_rc"] = proc.returncode
    m = re.search(r"([0-9.]+) TFLOP/s", proc.stdout)
    if m:
        row["tflops"] = float(m.group(1))
    if proc.returncode not in (0, 1):
        errors = [l for l in log.splitlines() if l.startswith("error:")]
        row["note"] = errors[0] if errors else f"fa-run exit {proc.returncode}"
        return row

    with open(os.path.join(save, "meta.json")) as f:
        meta = json.load(f)
    d, dv = meta["head_dim"], meta["head_dim_v"]
    dev = torch.device("cuda")
    q = load_f32(os.path.join(save, "q.f32"), (b, tq, d)).to(dev)
    k = load_f32(os.path.join(save, "k.f32"), (b, tk, d)).to(dev)
    v = load_f32(os.path.join(save, "v.f32"), (b, tk, dv)).to(dev)
    o = load_f32(os.path.join(save, "o.f32"), (b, tq, dv)).to(dev)
    scale = meta["scale"]
    ref_o, ref_lse = reference(q.double(), k.double(), v.double(), scale,
                               causal)
    ours = rel_err(o, ref_o)
    row["ours"] = ours
    if meta["has_lse"]:
        lse = load_f32(os.path.join(save, "lse.f32"), (b, tq)).to(dev).double()
        finite = torch.isfinite(ref_lse)
        if bool((torch.isfinite(lse) != finite).any()):
            row["note"] += "lse -inf rows differ; "
        if bool(finite.any()):
            row["lse"] = (lse[finite] - ref_lse[finite]).abs().max().item()

    # The C++ reference and this one must agree on our error.
    cpp = meta.get("o_rel_err")
    if isinstance(cpp, (int, float)) and math.isfinite(cpp) and not (
            abs(cpp - ours) <= 1e-3 * max(ours, 1e-12) + 1e-12):
        row["note"] += f"fa-run's reference says {cpp:.3e}; "

    empty_rows = visible_keys(causal, tq, tk, dev) == 0
    if tq == 0 or b == 0:
        sdpa = 0.0
    elif tk == 0:
        sdpa = None  # SDPA has no answer for zero keys
        row["backend"] = "n/a"
    else:
        tdt = DTYPES[dtype]
        s_out, backend = run_sdpa(q.to(tdt), k.to(tdt), v.to(tdt), scale,
                                  causal)
        row["backend"] = backend
        # Rows that see no key: SDPA's answer is policy, not numerics (math
        # gives NaN, cuDNN some non-zero values): compare the other rows.
        s_out = s_out.double()
        s_out[:, empty_rows, :] = 0.0
        sdpa = rel_err(s_out, ref_o)
    row["sdpa"] = sdpa

    ok = proc.returncode == 0 and math.isfinite(ours)
    if bool(empty_rows.any()) and bool((o[:, empty_rows, :] != 0).any()):
        ok = False
        row["note"] += "rows without keys are not 0; "
    norm_zero = float(torch.linalg.vector_norm(ref_o.flatten())) == 0.0
    if norm_zero:
        within = ours == 0.0
    else:
        within = ((dtype == "f32" and ours <= F32_ABS_TOL)
                  or ours <= noise_floor(dtype))
        if sdpa is not None and math.isfinite(sdpa):
            if sdpa > 0:
                row["ratio"] = ours / sdpa
            elif ours > 0:
                row["ratio"] = math.inf
            within = within or ours <= args.ratio * sdpa
    row["passed"] = bool(ok and within)
    if proc.returncode != 0:
        fails = [l for l in proc.stdout.splitlines() if l.startswith("FAIL")]
        row["note"] += "; ".join(fails) or f"fa-run exit {proc.returncode}"
    row["seconds"] = round(time.time() - start, 2)
    return row


def fmt(x, spec=".2e"):
    if x is None:
        return "-"
    if isinstance(x, (list, tuple)):
        return "/".join(fmt(e, spec) for e in x)
    return format(x, spec) if math.isfinite(x) else str(x)


def print_table(header, rows, cells):
    if not rows:
        return
    table = [header] + [cells(r) for r in rows]
    widths = [max(len(str(t[i])) for t in table) for i in range(len(header))]
    print()
    for t in table:
        print("  ".join(str(c).ljust(w) for c, w in zip(t, widths)).rstrip())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("artifacts", nargs="+",
                   help="folders holding <kernel>.manifest + .ptx")
    p.add_argument("--fa-run", required=True, help="the fa-run binary")
    p.add_argument("--shapes", type=parse_shapes,
                   default=parse_shapes("256x256,257x300,1x513,300x77,128x0"),
                   help="TQxTK list for dynamic seqlens (default: %(default)s)")
    p.add_argument("--batch", type=int, default=3,
                   help="batch for a dynamic batch dim (default 3)")
    p.add_argument("--ratio", type=float, default=2.0,
                   help="pass when ours <= RATIO * SDPA's error (default 2)")
    p.add_argument("--repeat", type=int, default=5,
                   help="fa-run timed launches per case (default 5)")
    p.add_argument("--seed", type=int, help="fixed seed (default: random)")
    p.add_argument("--save-root", default="/tmp/fa-gpu-check",
                   help="where fa-run --save writes (default %(default)s)")
    p.add_argument("--json", help="write all rows as JSON here")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args()

    if not torch.cuda.is_available():
        print("error: torch sees no CUDA device", file=sys.stderr)
        return 2
    manifests = []
    for folder in args.artifacts:
        found = sorted(glob.glob(os.path.join(folder, "*.manifest")))
        if not found:
            print(f"error: no *.manifest in '{folder}'", file=sys.stderr)
            return 2
        manifests += found
    os.makedirs(args.save_root, exist_ok=True)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}; "
          f"{len(manifests)} manifests", flush=True)

    rows = []
    for manifest in manifests:
        fields = read_manifest(manifest)
        for shape in shapes_for(fields, args.shapes, args.batch):
            try:
                row = check_case(args, manifest, fields, shape, len(rows))
            except Exception as e:  # one broken case must not hide the rest
                row = dict(kernel=(fields.get("name") or
                                   fields.get("kernel", ["?"]))[0],
                           dtype=fields.get("dtype", ["?"])[0],
                           causal=fields.get("causal", ["?"])[0],
                           batch=shape[0], seqlen_q=shape[1],
                           seqlen_k=shape[2], passed=False,
                           note=f"{type(e).__name__}: {e}")
            rows.append(row)
            print(f"{'ok  ' if row['passed'] else 'FAIL'} {row['kernel']} "
                  f"{shape[0]}x{shape[1]}x{shape[2]}: ours "
                  f"{fmt(row.get('ours'))} sdpa {fmt(row.get('sdpa'))} "
                  f"{row.get('note', '')}", flush=True)
            if args.json:  # keep what is done if the run is cut short
                with open(args.json, "w") as f:
                    json.dump(rows, f, indent=1)

    header = ("config", "dtype", "causal", "ours", "sdpa", "ratio", "lse err",
              "TFLOP/s", "sdpa be", "pass")
    fwd_rows = [r for r in rows if r.get("kind") != "backward"]
    bwd_rows = [r for r in rows if r.get("kind") == "backward"]
    print_table(header, fwd_rows, lambda r: (
        f"{r['kernel']} B{r['batch']} Tq{r['seqlen_q']} Tk{r['seqlen_k']}",
        r["dtype"], r["causal"], fmt(r.get("ours")), fmt(r.get("sdpa")),
        fmt(r.get("ratio"), ".2f"), fmt(r.get("lse")),
        fmt(r.get("tflops"), ".1f"), r.get("backend") or "-",
        "PASS" if r["passed"] else "FAIL"))
    bwd_header = ("backward config", "dtype", "causal", "ours dq/dk/dv",
                  "sdpa dq/dk/dv", "max ratio", "bitwise dq", "TFLOP/s",
                  "sdpa be", "pass")
    print_table(bwd_header, bwd_rows, lambda r: (
        f"{r['kernel']} B{r['batch']} Tq{r['seqlen_q']} Tk{r['seqlen_k']}",
        r["dtype"], r["causal"], fmt(r.get("ours")), fmt(r.get("sdpa")),
        fmt(r.get("ratio"), ".2f"),
        ("yes" if r.get("bitwise") else "NO") if r.get("deterministic")
        else "-", fmt(r.get("tflops"), ".2f"), r.get("backend") or "-",
        "PASS" if r["passed"] else "FAIL"))
    notes = [(r, r["note"]) for r in rows if r.get("note")]
    for r, note in notes:
        print(f"note: {r['kernel']} {r['batch']}x{r['seqlen_q']}x"
              f"{r['seqlen_k']}: {note}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    passed = sum(1 for r in rows if r["passed"])
    failed = len(rows) - passed
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and rows else 1


if __name__ == "__main__":
    sys.exit(main())
