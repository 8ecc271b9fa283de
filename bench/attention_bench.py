#!/usr/bin/env python3
"""Attention benchmark on the standard grid: fa-opt's kernels against
PyTorch SDPA (flash, cudnn, efficient backends) and FlexAttention, in one run
on the same inputs.

Grid (DESIGN.md, "Performance method"): dtype bf16 and f16; head dim D 64 and
128; T in 512 ... 16k with B * T = 16k tokens and H = 2048 / D; causal (top
left, PyTorch's is_causal) and not. FLOPs: forward 4 * B * H * T * T * D,
halved for causal; backward 2.5 x the forward.

Phases, in this order, under one wall-clock budget (--budget seconds):

1. correctness on a small ragged problem ([2, 3, 300, D]) for every kernel
   set: our o, lse, dq, dk, dv against a float64 reference (GPU float64,
   autograd through a dense softmax), next to SDPA's errors on the same
   inputs (this also loads every kernel module);
2. SDPA flash / cudnn / efficient, forward and backward, every grid config;
3. ours, every grid config, cheapest first: first a check on the full
   problem (outputs NaN-poisoned, every element must be finite afterwards;
   o, lse, dq, dk, dv of one or two (batch, head) slices against float64,
   next to SDPA flash's errors on the same slices), then the timing. A
   config whose predicted time (from the same kernel at a smaller T) does
   not fit the remaining budget,
   or is over --ours-max-call-seconds, or has T over --ours-max-seqlen, is
   skipped with a note;
4. paired (--paired-rounds R, default 4; 0 skips it): per config, ours
   and SDPA cudnn again, forward and backward, in R alternating rounds
   (ours, cudnn, then cudnn, ours, ...), so that both see the same clock
   and power state; the ratio of the two medians of each round, median
   over the rounds. Under sustained load the H200 runs at its 700 W cap
   with clocks that depend on what ran before (docs/PERFORMANCE.md), which
   phases 2 and 3, minutes apart, do not control for;
5. FlexAttention (torch.compile(flex_attention), causal through a block
   mask), one compile per (dtype, D, causal), in priority order bf16 before
   f16, D 128 before 64, until the budget runs out; a compile failure is
   recorded as a note and the rest is skipped cleanly.

Timing: CUDA events around each call after warm-up, median of the repeats;
fresh random normal inputs per config (seeded, so every implementation sees
the same ones; never zeros). The backward of SDPA and Flex is
torch.autograd.grad of a recorded forward (their backward kernels plus
autograd's overhead); ours is the fa.attention_backward kernels launched by
fa_opt (delta, dk/dv with dq atomics, dq conversion) on our forward's o and
lse. Outputs: bench.json, bench.csv, bench.png and the printed table.

Needs the kernels of bench/make_bench_kernels.sh (FA_OPT_KERNEL_DIRS, or
--kernel-dir) and python/ on PYTHONPATH. --smoke-cpu runs the whole script
on the CPU on a tiny grid with a float32 stand-in for ours (to test the
script where there is no GPU; its numbers mean nothing).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime
import json
import math
import os
import platform
import statistics
import sys
import time
import traceback
import warnings

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # --markdown needs no torch
    torch = F = None

TOKENS = 16384
HIDDEN = 2048
DTYPES = {"bf16": "bfloat16", "f16": "float16"}  # torch dtype names
SDPA_BACKENDS = ("flash", "cudnn", "efficient")
IMPLS = ("ours",) + SDPA_BACKENDS + ("flex",)
BASELINES = SDPA_BACKENDS + ("flex",)


def log(*args):
    print(*args, flush=True)


def log_exc(lines=4):
    """The last lines of the current traceback (the full one would crowd
    the table out of the printed tail)."""
    for line in traceback.format_exc().rstrip().splitlines()[-lines:]:
        log("    | " + line)


# --- the grid -------------------------------------------------------------------

class Config:
    def __init__(self, dtype, d, t, causal, tokens=TOKENS, hidden=HIDDEN):
        self.dtype, self.d, self.t, self.causal = dtype, d, t, causal
        self.b = max(1, tokens // t)
        self.h = hidden // d
        self.fwd_flops = 4 * self.b * self.h * t * t * d / (2 if causal else 1)
        self.bwd_flops = 2.5 * self.fwd_flops
        self.result = {"fwd": {}, "bwd": {}}
        self.check = None
        # pass -> {"ratio": cudnn ms / ours ms (median over the rounds),
        # "rounds": [each round's ratio], "backend": "cudnn"}
        self.paired = {}
        self.notes = []

    @property
    def combo(self):
        return (self.dtype, self.d, self.causal)

    @property
    def name(self):
        return (f"{self.dtype} d{self.d} T{self.t} "
                f"{'causal' if self.causal else 'full'}")

    def seed(self):
        return (1000 * self.t + 10 * self.d + (1 if self.causal else 0)
                + (5 if self.dtype == "f16" else 0))

    def inputs(self, device, requires_grad=False):
        """q, k, v, do: [B, H, T, D] standard normal in the dtype (the same
        draw for every implementation)."""
        g = torch.Generator(device=device)
        g.manual_seed(self.seed())
        shape = (self.b, self.h, self.t, self.d)
        dtype = getattr(torch, DTYPES[self.dtype])
        out = [torch.randn(shape, generator=g, device=device,
                           dtype=torch.float32).to(dtype)
               for _ in range(4)]
        if requires_grad:
            for x in out[:3]:
                x.requires_grad_(True)
        return out

    def record(self, pas, impl, ms=None, reps=None, note=None, times=None):
        flops = self.fwd_flops if pas == "fwd" else self.bwd_flops
        entry = {"ms": ms, "tflops": (flops / (ms * 1e-3) / 1e12
                                      if ms else None), "reps": reps}
        if times is not None:
            entry["times_ms"] = [round(x, 4) for x in times]
        if note:
            entry["note"] = note
        self.result[pas][impl] = entry

    def tflops(self, pas, impl):
        return (self.result[pas].get(impl) or {}).get("tflops")

    def ratio(self, pas, backend):
        ours, other = self.tflops(pas, "ours"), self.tflops(pas, backend)
        return ours / other if ours and other else None

    def to_json(self):
        return {"dtype": self.dtype, "head_dim": self.d, "seqlen": self.t,
                "batch": self.b, "heads": self.h, "causal": self.causal,
                "fwd_flops": self.fwd_flops, "bwd_flops": self.bwd_flops,
                "check": self.check, "fwd": self.result["fwd"],
                "bwd": self.result["bwd"],
                "ratio_fwd": {b: self.ratio("fwd", b) for b in BASELINES},
                "ratio_bwd": {b: self.ratio("bwd", b) for b in BASELINES},
                "paired": self.paired, "notes": self.notes}


def make_grid(args):
    grid = []
    for dt in args.dtypes:
        for d in args.head_dims:
            for causal in args.causal:
                for t in args.seqlens:
                    grid.append(Config(dt, d, t, causal, args.tokens,
                                       args.hidden))
    return grid


# --- timing -----------------------------------------------------------------------

class Clock:
    def __init__(self, budget):
        self.start = time.perf_counter()
        self.budget = budget

    def elapsed(self):
        return time.perf_counter() - self.start

    def left(self):
        return self.budget - self.elapsed()


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def time_calls(fn, reps, device):
    """Times ``reps`` calls of fn, each alone (CUDA events, or the host
    clock after a synchronize on the CPU); returns the list of ms."""
    if device == "cuda":
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for s, e in zip(starts, ends):
            s.record()
            fn()
            e.record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) for s, e in zip(starts, ends)]
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def bench(fn, device, warmup=2, target_ms=60.0, min_reps=5, max_reps=50):
    """Warm-up calls, one timed call for an estimate, then as many repeats
    as fill ``target_ms`` (within [min_reps, max_reps]); median ms."""
    for _ in range(warmup):
        fn()
    sync(device)
    est = time_calls(fn, 1, device)[0]
    reps = int(min(max_reps, max(min_reps, target_ms / max(est, 1e-3))))
    times = time_calls(fn, reps, device)
    return statistics.median(times), times


# --- reference and errors --------------------------------------------------------------

def reference(q, k, v, do, causal, scale):
    """float64 o, lse, dq, dk, dv for one [T, D] head (autograd through a
    dense softmax)."""
    q, k, v = (x.detach().double().requires_grad_(True) for x in (q, k, v))
    s = (q @ k.transpose(-1, -2)) * scale
    if causal:
        t = s.shape[-1]
        keep = torch.ones(t, t, dtype=torch.bool, device=s.device).tril()
        s = s.masked_fill(~keep, -math.inf)
    lse = torch.logsumexp(s, dim=-1)
    o = torch.exp(s - lse[..., None]) @ v
    dq, dk, dv = torch.autograd.grad(o, (q, k, v), do.double())
    return o.detach(), lse.detach(), dq, dk, dv


def rel_err(x, ref):
    d = torch.linalg.vector_norm((x.double() - ref).flatten()).item()
    n = torch.linalg.vector_norm(ref.flatten()).item()
    e = d / n if n > 0 else d
    return e if math.isfinite(e) else float("inf")


def sdpa_with_grads(q, k, v, do, causal, backend_names):
    """SDPA (first backend of the list that accepts) on [.., T, D] with
    autograd; returns (o, dq, dk, dv, backend)."""
    from torch.nn.attention import sdpa_kernel
    for name in backend_names:
        qq, kk, vv = (x.detach().clone().requires_grad_(True)
                      for x in (q, k, v))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with sdpa_kernel([sdpa_backend(name)]):
                    o = F.scaled_dot_product_attention(qq, kk, vv,
                                                       is_causal=causal)
                    dq, dk, dv = torch.autograd.grad(o, (qq, kk, vv), do)
            return o.detach(), dq, dk, dv, name
        except RuntimeError:
            continue
    raise RuntimeError("no SDPA backend accepted the case")


def sdpa_backend(name):
    from torch.nn.attention import SDPBackend
    return {"flash": SDPBackend.FLASH_ATTENTION,
            "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION,
            "math": SDPBackend.MATH}[name]


def check_slices(q, k, v, do, outs, causal, slices, check_backends, ratio,
                 lse_tol):
    """Compares ours (o, lse, dq, dk, dv, each [B, H, T, D] / [B, H, T])
    with float64 on the (b, h) slices, next to SDPA's errors there. Returns
    a dict with the worst errors, SDPA's, and pass/fail."""
    o, lse, dq, dk, dv = outs
    names = ("o", "dq", "dk", "dv")
    finite = all(bool(torch.isfinite(x).all()) for x in (o, lse, dq, dk, dv))
    worst = {n: 0.0 for n in names}
    worst_sdpa = {n: 0.0 for n in names}
    lse_err = 0.0
    backend = None
    scale = 1.0 / math.sqrt(q.shape[-1])
    for b, h in slices:
        ref = reference(q[b, h], k[b, h], v[b, h], do[b, h], causal, scale)
        ro, rlse, rdq, rdk, rdv = ref
        mine = (o[b, h], dq[b, h], dk[b, h], dv[b, h])
        for n, x, r in zip(names, mine, (ro, rdq, rdk, rdv)):
            worst[n] = max(worst[n], rel_err(x, r))
        diff = (lse[b, h].double() - rlse).abs().max().item()
        lse_err = max(lse_err, diff if math.isfinite(diff) else float("inf"))
        so, sdq, sdk, sdv, backend = sdpa_with_grads(
            q[b, h][None, None], k[b, h][None, None], v[b, h][None, None],
            do[b, h][None, None], causal, check_backends)
        for n, x, r in zip(names, (so, sdq, sdk, sdv), (ro, rdq, rdk, rdv)):
            worst_sdpa[n] = max(worst_sdpa[n], rel_err(x[0, 0], r))
        del ref, ro, rlse, rdq, rdk, rdv
    ok = finite and lse_err <= lse_tol and all(
        worst[n] <= ratio * worst_sdpa[n] + 1e-6 for n in names)
    return {"pass": ok, "all_finite": finite, "slices": [list(s) for s in slices],
            "err": worst, "sdpa_err": worst_sdpa, "sdpa_backend": backend,
            "lse_max_abs_err": lse_err,
            "max_ratio": max((worst[n] / worst_sdpa[n]) if worst_sdpa[n] > 0
                             else (0.0 if worst[n] == 0 else float("inf"))
                             for n in names)}


# --- ours ---------------------------------------------------------------------------------

class Ours:
    """fa-opt's kernels through fa_opt (forward kernel with lse; backward
    kernels on our o and lse)."""

    name = "fa-opt"

    def __init__(self):
        import fa_opt.ops as ops
        self.ops = ops

    def forward(self, q, k, v, causal):
        return self.ops.forward(q, k, v, "top_left" if causal else "none")

    def backward(self, q, k, v, o, lse, do, causal):
        c = "top_left" if causal else "none"
        ks = self.ops._kernels(q, self.ops.check_inputs(q, k, v), c, None)
        return self.ops.backward(ks, q, k, v, o, lse, do, c, None)

    @contextlib.contextmanager
    def poisoned(self):
        """Outputs (o, dq, dk, dv) come NaN-filled, so an unwritten element
        shows up."""
        orig = self.ops._new_like

        def new_like(*a, **kw):
            return orig(*a, **kw).fill_(float("nan"))
        self.ops._new_like = new_like
        try:
            yield
        finally:
            self.ops._new_like = orig


class StandIn:
    """--smoke-cpu: float32 math in place of our kernels (tests the script
    only)."""

    name = "stand-in (float32 math)"

    def _fwd(self, q, k, v, causal):
        s = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(q.shape[-1])
        if causal:
            t = s.shape[-1]
            s = s.masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(),
                              -math.inf)
        lse = torch.logsumexp(s, -1)
        return torch.exp(s - lse[..., None]) @ v.float(), lse

    def forward(self, q, k, v, causal):
        o, lse = self._fwd(q, k, v, causal)
        return o.to(q.dtype), lse

    def backward(self, q, k, v, o, lse, do, causal):
        qq, kk, vv = (x.detach().float().requires_grad_(True)
                      for x in (q, k, v))
        oo, _ = self._fwd(qq, kk, vv, causal)
        return tuple(g.to(q.dtype) for g in
                     torch.autograd.grad(oo, (qq, kk, vv), do.float()))

    @contextlib.contextmanager
    def poisoned(self):
        yield


# --- phases -----------------------------------------------------------------------------

def phase_small_check(args, impl, device, combos):
    """Our kernels on [2, 3, 300, D] (T not a multiple of the block) against
    float64, every (dtype, D, causal)."""
    rows = []
    for dt, d, causal in combos:
        g = torch.Generator(device=device)
        g.manual_seed(7 * d + (1 if causal else 0))
        shape = (2, 3, 300, d)
        q, k, v, do = (torch.randn(shape, generator=g, device=device)
                       .to(getattr(torch, DTYPES[dt])) for _ in range(4))
        row = {"dtype": dt, "head_dim": d, "causal": causal,
               "shape": list(shape)}
        try:
            with impl.poisoned():
                o, lse = impl.forward(q, k, v, causal)
                dq, dk, dv = impl.backward(q, k, v, o, lse, do, causal)
            sync(device)
            slices = [(b, h) for b in range(2) for h in range(3)]
            row.update(check_slices(q, k, v, do, (o, lse, dq, dk, dv), causal,
                                    slices, args.check_backends, args.ratio,
                                    args.lse_tol))
        except Exception as err:  # recorded, the run goes on
            row.update({"pass": False, "error": f"{type(err).__name__}: {err}"})
        rows.append(row)
        log(f"  small check {dt} d{d} {'causal' if causal else 'full'}: "
            + ("PASS" if row["pass"] else "FAIL")
            + (f"  err o/dq/dk/dv {fmt_errs(row['err'])}  sdpa "
               f"{fmt_errs(row['sdpa_err'])}  lse {row['lse_max_abs_err']:.1e}"
               if "err" in row else f"  {row.get('error')}"))
    return rows


def fmt_errs(e):
    return "/".join(f"{e[n]:.2e}" for n in ("o", "dq", "dk", "dv"))


def phase_sdpa(args, grid, device, clock, stop_at):
    from torch.nn.attention import sdpa_kernel
    for cfg in grid:
        if clock.elapsed() > stop_at:
            for be in SDPA_BACKENDS:
                for pas in ("fwd", "bwd"):
                    cfg.record(pas, be, note="skipped: out of time")
            continue
        q, k, v, do = cfg.inputs(device)
        qg, kg, vg = (x.detach().clone().requires_grad_(True)
                      for x in (q, k, v))
        for be in SDPA_BACKENDS:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    with sdpa_kernel([sdpa_backend(be)]):
                        with torch.no_grad():
                            ms, times = bench(
                                lambda: F.scaled_dot_product_attention(
                                    q, k, v, is_causal=cfg.causal),
                                device, target_ms=args.target_ms)
                        cfg.record("fwd", be, ms, len(times), times=times)
                        o = F.scaled_dot_product_attention(
                            qg, kg, vg, is_causal=cfg.causal)
                        ms, times = bench(
                            lambda: torch.autograd.grad(
                                o, (qg, kg, vg), do, retain_graph=True),
                            device, target_ms=args.target_ms)
                        cfg.record("bwd", be, ms, len(times), times=times)
                        del o
            except Exception as err:
                note = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
                for pas in ("fwd", "bwd"):
                    if pas not in cfg.result or be not in cfg.result[pas] \
                            or cfg.result[pas][be].get("ms") is None:
                        cfg.record(pas, be, note=note)
        log(f"  sdpa {cfg.name:24s} " + "  ".join(
            f"{be} {fmt_t(cfg.tflops('fwd', be))}/{fmt_t(cfg.tflops('bwd', be))}"
            for be in SDPA_BACKENDS))
        del q, k, v, do, qg, kg, vg


PAIRED_BACKEND = "cudnn"


def phase_paired(args, impl, grid, device, clock, stop_at):
    """Ours against SDPA cudnn in alternating rounds, per config and pass,
    where both were timed in their phases: each round times both (ours
    first in even rounds, cudnn first in odd ones) with as many calls as
    fill --target-ms / 2 (3 to 20); the round's ratio is cudnn's median ms
    over ours (ours' speed over cudnn's, as Config.ratio); the median of
    the rounds' ratios goes to cfg.paired[pass]. A failure costs only its
    config and pass (a note says why)."""
    from torch.nn.attention import sdpa_kernel
    be = PAIRED_BACKEND
    for cfg in grid:
        ready = [pas for pas in ("fwd", "bwd")
                 if cfg.tflops(pas, "ours") and cfg.tflops(pas, be)]
        if not ready:
            cfg.notes.append(f"paired: skipped, ours or {be} not timed")
            continue
        # The calls' time at the phases' medians: 3 to 20 calls of each
        # per round, one warm-up each, our forward and cudnn's recorded
        # forward for the backward.
        est = 0.0
        for pas in ready:
            for name in ("ours", be):
                x = cfg.result[pas][name]["ms"]
                est += args.paired_rounds * min(max(3 * x, args.target_ms / 2),
                                                20 * x) + x
        est += cfg.result["fwd"].get("ours", {}).get("ms") or 0.0
        if clock.elapsed() + est / 1e3 + 0.5 > stop_at:
            cfg.notes.append("paired: skipped, out of time")
            continue
        q = k = v = do = o = lse = None
        try:
            q, k, v, do = cfg.inputs(device)
            o, lse = impl.forward(q, k, v, cfg.causal)
            for pas in ready:
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        cfg.paired[pas] = paired_rounds(
                            args, device, cfg, pas, be,
                            *paired_calls(impl, cfg, pas, be, q, k, v, o,
                                          lse, do, sdpa_kernel))
                except Exception as err:
                    cfg.notes.append(f"paired {pas}: {type(err).__name__}: "
                                     f"{str(err).splitlines()[0][:200]}")
        except Exception as err:
            cfg.notes.append(f"paired: {type(err).__name__}: "
                             f"{str(err).splitlines()[0][:200]}")
        finally:
            del q, k, v, do, o, lse
        log(f"  paired {cfg.name:24s} " + "  ".join(
            f"{pas} ours/{be} {fmt_r((cfg.paired.get(pas) or {}).get('ratio'))}"
            for pas in ("fwd", "bwd")))


def paired_calls(impl, cfg, pas, be, q, k, v, o, lse, do, sdpa_kernel):
    """(ours, cudnn) callables of one pass on the config's inputs: the
    forward, or the backward (ours on our o and lse; SDPA's as
    torch.autograd.grad of a forward recorded here)."""
    if pas == "fwd":
        def sdpa_fwd():
            with sdpa_kernel([sdpa_backend(be)]), torch.no_grad():
                F.scaled_dot_product_attention(q, k, v, is_causal=cfg.causal)
        return (lambda: impl.forward(q, k, v, cfg.causal)), sdpa_fwd
    qg, kg, vg = (x.detach().clone().requires_grad_(True) for x in (q, k, v))
    with sdpa_kernel([sdpa_backend(be)]):
        og = F.scaled_dot_product_attention(qg, kg, vg, is_causal=cfg.causal)
    return ((lambda: impl.backward(q, k, v, o, lse, do, cfg.causal)),
            (lambda: torch.autograd.grad(og, (qg, kg, vg), do,
                                         retain_graph=True)))


def paired_rounds(args, device, cfg, pas, be, ours_fn, other_fn):
    """{"ratio", "rounds", "backend"}: --paired-rounds alternating rounds
    of the two callables (see phase_paired)."""
    pair = [("ours", ours_fn), (be, other_fn)]
    for _, fn in pair:  # warm-up
        fn()
    sync(device)
    reps = {name: int(min(20, max(3, args.target_ms / 2 / max(
        cfg.result[pas][name]["ms"], 1e-3)))) for name, _ in pair}
    ratios = []
    for r in range(args.paired_rounds):
        ms = {}
        for name, fn in (pair if r % 2 == 0 else pair[::-1]):
            ms[name] = statistics.median(time_calls(fn, reps[name], device))
        ratios.append(ms[be] / ms["ours"])
    return {"ratio": statistics.median(ratios),
            "rounds": [round(x, 4) for x in ratios], "backend": be}


def fmt_t(x):
    return "-" if x is None else (f"{x:.0f}" if x >= 10 else f"{x:.2f}")


def fmt_r(x):
    return "-" if x is None else f"{x:.4f}"


def phase_ours(args, impl, grid, device, clock, stop_at, save):
    """Check then time each config, cheapest first, within the budget."""
    rates = {}  # combo -> (fwd ms per fwd flop, bwd ms per bwd flop)
    for cfg in sorted(grid, key=lambda c: (c.fwd_flops, c.name)):
        left = stop_at - clock.elapsed()
        rate = rates.get(cfg.combo)
        if rate is None:  # pessimistic: 0.5 TFLOP/s both ways
            rate = (1e3 / 0.5e12, 1e3 / 0.5e12)
        pred_call = (rate[0] * cfg.fwd_flops + rate[1] * cfg.bwd_flops) / 1e3
        skip = None
        if args.ours_max_seqlen and cfg.t > args.ours_max_seqlen:
            skip = f"skipped: T > --ours-max-seqlen {args.ours_max_seqlen}"
        elif args.ours_max_call_seconds and pred_call > args.ours_max_call_seconds:
            skip = (f"skipped: predicted {pred_call:.1f} s for one forward + "
                    f"backward > --ours-max-call-seconds")
        elif 2 * pred_call + 2 > left:
            skip = (f"skipped: predicted {2 * pred_call:.1f} s (check + one "
                    f"repeat) > {max(left, 0):.0f} s left of the budget")
        if skip:
            for pas in ("fwd", "bwd"):
                cfg.record(pas, "ours", note=skip)
            cfg.notes.append("ours " + skip)
            log(f"  ours {cfg.name:24s} {skip}")
            continue
        try:
            q, k, v, do = cfg.inputs(device)
            # Check: the first (warm-up) call of each, outputs poisoned.
            t0 = time.perf_counter()
            with impl.poisoned():
                o, lse = impl.forward(q, k, v, cfg.causal)
                sync(device)
                t_f = time.perf_counter() - t0
                t1 = time.perf_counter()
                dq, dk, dv = impl.backward(q, k, v, o, lse, do, cfg.causal)
                sync(device)
                t_b = time.perf_counter() - t1
            rates[cfg.combo] = (t_f * 1e3 / cfg.fwd_flops,
                                t_b * 1e3 / cfg.bwd_flops)
            slices = [(cfg.b - 1, cfg.h - 1)]
            if cfg.t <= args.check_two_heads_upto:
                slices.insert(0, (0, 0))
            cfg.check = check_slices(q, k, v, do, (o, lse, dq, dk, dv),
                                     cfg.causal, slices, args.check_backends,
                                     args.ratio, args.lse_tol)
            del dq, dk, dv
            # Timing: repeats that fit the per-config target and the budget.
            left = stop_at - clock.elapsed()
            share = min(args.ours_target_seconds, max(left, 0) / 2)
            n_f = int(max(1, min(args.ours_max_reps, share / 3 / t_f)))
            n_b = int(max(1, min(args.ours_max_reps, share * 2 / 3 / t_b)))
            # Warm-up calls, as bench() gives the backends. (Each timed
            # call is event-timed alone: where the launcher's host time
            # exceeds the kernel's, as at T 2k causal D 128, the first
            # timed call measures the host time.)
            for _ in range(2):
                impl.forward(q, k, v, cfg.causal)
                impl.backward(q, k, v, o, lse, do, cfg.causal)
            sync(device)
            times = time_calls(lambda: impl.forward(q, k, v, cfg.causal),
                               n_f, device)
            cfg.record("fwd", "ours", statistics.median(times), n_f,
                       times=times)
            times = time_calls(lambda: impl.backward(q, k, v, o, lse, do,
                                                     cfg.causal), n_b, device)
            cfg.record("bwd", "ours", statistics.median(times), n_b,
                       times=times)
            # The timed calls refine the rate used to predict larger T.
            rates[cfg.combo] = (cfg.result["fwd"]["ours"]["ms"] / cfg.fwd_flops,
                                cfg.result["bwd"]["ours"]["ms"] / cfg.bwd_flops)
            del q, k, v, do, o, lse
        except Exception as err:
            note = f"error: {type(err).__name__}: {str(err).splitlines()[0][:300]}"
            for pas in ("fwd", "bwd"):
                if cfg.result[pas].get("ours", {}).get("ms") is None:
                    cfg.record(pas, "ours", note=note)
            cfg.notes.append("ours " + note)
            log(f"  ours {cfg.name:24s} {note}")
            log_exc()
            continue
        c = cfg.check
        log(f"  ours {cfg.name:24s} check {'PASS' if c['pass'] else 'FAIL'} "
            f"(err {fmt_errs(c['err'])}, sdpa {fmt_errs(c['sdpa_err'])}, lse "
            f"{c['lse_max_abs_err']:.1e})  fwd {fmt_t(cfg.tflops('fwd', 'ours'))}"
            f" TFLOP/s x{cfg.result['fwd']['ours']['reps']}  bwd "
            f"{fmt_t(cfg.tflops('bwd', 'ours'))} x"
            f"{cfg.result['bwd']['ours']['reps']}  [{clock.elapsed():.0f} s]")
        save()


FLEX_PRIORITY = [("bf16", 128, False), ("bf16", 128, True),
                 ("bf16", 64, False), ("bf16", 64, True),
                 ("f16", 128, False), ("f16", 128, True),
                 ("f16", 64, False), ("f16", 64, True)]


def phase_flex(args, grid, device, clock, stop_at, notes, save):
    def skip_all(cfgs, note):
        for cfg in cfgs:
            for pas in ("fwd", "bwd"):
                if "flex" not in cfg.result[pas]:
                    cfg.record(pas, "flex", note=note)

    try:
        import torch._dynamo
        from torch.nn.attention.flex_attention import (create_block_mask,
                                                       flex_attention)
    except Exception as err:
        note = f"FlexAttention unavailable: {type(err).__name__}: {err}"
        notes.append(note)
        skip_all(grid, note)
        return
    for key in ("cache_size_limit", "recompile_limit",
                "accumulated_cache_size_limit",
                "accumulated_recompile_limit"):
        if hasattr(torch._dynamo.config, key):
            setattr(torch._dynamo.config, key, 256)
    dynamic = args.flex_dynamic
    compiled = torch.compile(flex_attention, dynamic=dynamic)
    by_combo = {}
    for cfg in grid:
        by_combo.setdefault(cfg.combo, []).append(cfg)
    order = [c for c in FLEX_PRIORITY if c in by_combo] + \
        [c for c in by_combo if c not in FLEX_PRIORITY]
    compile_guess = args.flex_compile_guess
    failures = 0

    def causal_mask(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx

    queue = list(order)
    while queue:
        combo = queue.pop(0)
        cfgs = sorted(by_combo[combo], key=lambda c: c.t)
        left = stop_at - clock.elapsed()
        if failures >= 2:
            skip_all(cfgs, "skipped: FlexAttention failed to compile for two "
                     "configs before (see notes)")
            continue
        if left < compile_guess:
            note = (f"skipped: {max(left, 0):.0f} s left of the budget, a "
                    f"FlexAttention compile took ~{compile_guess:.0f} s")
            skip_all(cfgs, note)
            log(f"  flex {combo}: {note}")
            continue
        combo_start = time.perf_counter()
        first = True
        for cfg in cfgs:
            if clock.elapsed() > stop_at:
                skip_all([cfg], "skipped: out of time")
                continue
            try:
                q, k, v, do = cfg.inputs(device, requires_grad=True)
                bm = (create_block_mask(causal_mask, None, None, cfg.t, cfg.t,
                                        device=device)
                      if cfg.causal else None)
                t0 = time.perf_counter()
                o = compiled(q, k, v, block_mask=bm)
                torch.autograd.grad(o, (q, k, v), do)
                sync(device)
                if first:
                    compile_s = time.perf_counter() - t0
                    cfg.notes.append(f"flex compile (fwd+bwd) {compile_s:.1f} s")
                    log(f"  flex {combo}: compiled in {compile_s:.1f} s")
                    first = False
                # Forward timed with grad-recording inputs (the compiled
                # training graph; the same attention kernel).
                ms, times = bench(lambda: compiled(q, k, v, block_mask=bm),
                                  device, target_ms=args.target_ms)
                cfg.record("fwd", "flex", ms, len(times), times=times)
                o = compiled(q, k, v, block_mask=bm)
                try:
                    ms, times = bench(lambda: torch.autograd.grad(
                        o, (q, k, v), do, retain_graph=True), device,
                        target_ms=args.target_ms)
                    cfg.record("bwd", "flex", ms, len(times), times=times)
                except RuntimeError as err:
                    # A compiled backward that will not run twice on one
                    # graph: time forward + backward, less the forward.
                    fb, times = bench(lambda: torch.autograd.grad(
                        compiled(q, k, v, block_mask=bm), (q, k, v), do),
                        device, target_ms=args.target_ms)
                    cfg.record("bwd", "flex", fb - cfg.result["fwd"]["flex"]
                               ["ms"], len(times), times=times,
                               note="fwd+bwd minus fwd (retain_graph "
                               f"refused: {str(err).splitlines()[0][:120]})")
                log(f"  flex {cfg.name:24s} {fmt_t(cfg.tflops('fwd', 'flex'))}"
                    f"/{fmt_t(cfg.tflops('bwd', 'flex'))} TFLOP/s")
                del q, k, v, do, o, bm
            except Exception as err:
                msg = str(err).strip().splitlines()
                note = (f"FlexAttention failed ({'compile' if first else 'run'})"
                        f": {type(err).__name__}: {msg[0][:300] if msg else ''}")
                log(f"  flex {cfg.name}: {note}")
                log_exc()
                if first:
                    failures += 1
                    notes.append(f"flex {combo} (dynamic={dynamic}): {note}")
                    if dynamic is not False and failures == 1:
                        # Try once more with static shapes (one compile per
                        # T), in case dynamic shapes are the problem.
                        dynamic = False
                        torch._dynamo.reset()
                        compiled = torch.compile(flex_attention,
                                                 dynamic=False)
                        notes.append("flex: retrying with dynamic=False")
                        queue.insert(0, combo)
                        break
                    skip_all(cfgs, note)
                    break
                skip_all([cfg], note)
        compile_guess = max(args.flex_compile_guess * 0.5,
                            min(compile_guess,
                                time.perf_counter() - combo_start))
        save()


# --- outputs ------------------------------------------------------------------------------

def write_csv(path, grid):
    cols = ["dtype", "head_dim", "seqlen", "batch", "heads", "causal",
            "fwd_flops", "check"]
    for pas in ("fwd", "bwd"):
        for impl in IMPLS:
            cols += [f"{pas}_{impl}_ms", f"{pas}_{impl}_tflops"]
        for be in BASELINES:
            cols.append(f"{pas}_ours_over_{be}")
        cols.append(f"{pas}_ours_over_{PAIRED_BACKEND}_paired")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for c in grid:
            row = [c.dtype, c.d, c.t, c.b, c.h, int(c.causal), c.fwd_flops,
                   "" if c.check is None else
                   ("pass" if c.check["pass"] else "FAIL")]
            for pas in ("fwd", "bwd"):
                for impl in IMPLS:
                    e = c.result[pas].get(impl) or {}
                    row += [_num(e.get("ms")), _num(e.get("tflops"))]
                for be in BASELINES:
                    row.append(_num(c.ratio(pas, be)))
                row.append(_num((c.paired.get(pas) or {}).get("ratio")))
            w.writerow(row)


def _num(x):
    return "" if x is None else f"{x:.6g}"


def plot(path, grid, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    dtypes = sorted({c.dtype for c in grid}, key=list(DTYPES).index)
    dims = sorted({c.d for c in grid})
    panels = [(pas, d) for pas in ("fwd", "bwd") for d in dims]
    fig, axes = plt.subplots(len(dtypes), len(panels),
                             figsize=(4.6 * len(panels), 3.8 * len(dtypes)),
                             squeeze=False)
    colors = {"ours": "tab:red", "flash": "tab:blue", "cudnn": "tab:green",
              "efficient": "tab:orange", "flex": "tab:purple"}
    for i, dt in enumerate(dtypes):
        for j, (pas, d) in enumerate(panels):
            ax = axes[i][j]
            for impl in IMPLS:
                for causal, style in ((False, "-"), (True, "--")):
                    pts = sorted((c.t, c.tflops(pas, impl)) for c in grid
                                 if (c.dtype, c.d, c.causal) == (dt, d, causal)
                                 and c.tflops(pas, impl))
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] for p in pts],
                                style, marker="o", ms=3, color=colors[impl],
                                label=f"{impl}{' causal' if causal else ''}")
            ax.set_xscale("log", base=2)
            ts = sorted({c.t for c in grid})
            ax.set_xticks(ts)
            ax.set_xticklabels([f"{t // 1024}k" if t >= 1024 else str(t)
                                for t in ts])
            ax.set_yscale("log")
            ax.set_title(f"{dt} {'forward' if pas == 'fwd' else 'backward'} "
                         f"D={d}", fontsize=10)
            ax.set_xlabel("T (B*T = 16k, H = 2048/D)", fontsize=8)
            ax.set_ylabel("TFLOP/s", fontsize=8)
            ax.grid(True, which="both", alpha=0.3)
            ax.tick_params(labelsize=7)
    handles, labels = [], []
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="lower center", ncol=min(10, len(labels)),
               fontsize=8)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0.06, 1, 0.95))
    fig.savefig(path, dpi=80)
    plt.close(fig)


def print_table(grid):
    log("")
    log("TFLOP/s (fwd | bwd); ratio = ours / backend; check = ours vs float64"
        " on slices of the timed problem")
    head = (f"{'config':24s} {'check':5s} | {'ours':>5s} {'flash':>5s} "
            f"{'cudnn':>5s} {'eff':>5s} {'flex':>5s} {'/flash':>7s} "
            f"{'/cudnn':>7s} {'/eff':>7s} {'/flex':>7s} |"
            f" {'ours':>5s} {'flash':>5s} {'cudnn':>5s} {'eff':>5s} "
            f"{'flex':>5s} {'/flash':>7s} {'/cudnn':>7s} {'/eff':>7s} "
            f"{'/flex':>7s}")
    log(head)
    for c in grid:
        chk = "-" if c.check is None else ("pass" if c.check["pass"]
                                           else "FAIL")
        parts = [f"{c.name:24s} {chk:5s}"]
        for pas in ("fwd", "bwd"):
            parts.append(" ".join(f"{fmt_t(c.tflops(pas, i)):>5s}"
                                  for i in IMPLS) + " " + " ".join(
                f"{fmt_r(c.ratio(pas, b)):>7s}" for b in BASELINES))
        log(" | ".join(parts))


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summary(grid):
    out = {}
    for pas in ("fwd", "bwd"):
        for be in BASELINES:
            out[f"{pas}_ours_over_{be}_geomean"] = geomean(
                [c.ratio(pas, be) for c in grid])
        paired = [(c.paired.get(pas) or {}).get("ratio") for c in grid]
        out[f"{pas}_ours_over_{PAIRED_BACKEND}_paired_geomean"] = geomean(
            paired)
        out[f"{pas}_paired_configs"] = len([x for x in paired if x])
        for impl in IMPLS:
            vals = [c.tflops(pas, impl) for c in grid if c.tflops(pas, impl)]
            out[f"{pas}_{impl}_tflops_max"] = max(vals) if vals else None
            out[f"{pas}_{impl}_configs"] = len(vals)
    return out


def markdown(path):
    """Markdown tables (forward, backward) of a bench.json: per config our
    TFLOP/s, each backend's, ours / backend, and the paired ratio against
    cudnn ("-" where the run has none)."""
    with open(path) as f:
        data = json.load(f)
    names = {"flash": "flash", "cudnn": "cudnn", "efficient": "eff.",
             "flex": "Flex"}

    def t(e):
        x = (e or {}).get("tflops")
        return "-" if x is None else (f"{x:.0f}" if x >= 10 else f"{x:.2f}")

    def r(x):
        return "-" if x is None else f"{x:.4f}"

    out = []
    for pas, title in (("fwd", "Forward"), ("bwd", "Backward")):
        out.append(f"{title}, TFLOP/s and ours / backend:\n")
        out.append("| dtype | D | T | causal | check | ours | "
                   + " | ".join(names[b] for b in BASELINES) + " | "
                   + " | ".join(f"/{names[b]}" for b in BASELINES)
                   + f" | /{PAIRED_BACKEND} paired |")
        out.append("|" + " --- |" * (5 + 2 + 2 * len(BASELINES)))
        for c in data["configs"]:
            chk = "-" if not c["check"] else ("pass" if c["check"]["pass"]
                                              else "FAIL")
            out.append(
                f"| {c['dtype']} | {c['head_dim']} | {c['seqlen']} | "
                f"{'yes' if c['causal'] else 'no'} | {chk} | "
                f"{t(c[pas].get('ours'))} | "
                + " | ".join(t(c[pas].get(b)) for b in BASELINES) + " | "
                + " | ".join(r(c[f'ratio_{pas}'].get(b)) for b in BASELINES)
                + f" | {r(((c.get('paired') or {}).get(pas) or {}).get('ratio'))}"
                + " |")
        out.append("")
    return "\n".join(out)


# --- main ---------------------------------------------------------------------------------

def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=os.environ.get("OUT", "."),
                   help="folder for bench.json, bench.csv, bench.png")
    p.add_argument("--kernel-dir", action="append", default=[],
                   help="precompiled kernels (added to FA_OPT_KERNEL_DIRS)")
    p.add_argument("--dtypes", nargs="+", default=["bf16", "f16"],
                   choices=list(DTYPES))
    p.add_argument("--head-dims", nargs="+", type=int, default=[64, 128])
    p.add_argument("--seqlens", nargs="+", type=int,
                   default=[512, 1024, 2048, 4096, 8192, 16384])
    p.add_argument("--causal", nargs="+", type=lambda s: s in ("1", "yes", "true"),
                   default=[False, True], help="yes/no values")
    p.add_argument("--tokens", type=int, default=TOKENS, help="B * T")
    p.add_argument("--hidden", type=int, default=HIDDEN, help="H * D")
    p.add_argument("--budget", type=float, default=250.0,
                   help="wall-clock seconds for the whole run")
    p.add_argument("--flex-reserve", type=float, default=70.0,
                   help="seconds kept for FlexAttention at the end")
    p.add_argument("--no-flex", action="store_true")
    p.add_argument("--flex-dynamic", type=lambda s: None if s == "auto"
                   else s in ("1", "yes", "true"), default=True,
                   help="torch.compile(dynamic=...) for flex: yes/no/auto")
    p.add_argument("--flex-compile-guess", type=float, default=25.0)
    p.add_argument("--target-ms", type=float, default=50.0,
                   help="timed ms per baseline measurement (>= 5 repeats)")
    p.add_argument("--ours-target-seconds", type=float, default=1.5,
                   help="timed seconds per config for ours (fwd + bwd)")
    p.add_argument("--ours-max-reps", type=int, default=5)
    p.add_argument("--paired-rounds", type=int, default=4,
                   help="alternating rounds of ours vs SDPA cudnn per config "
                        "(even: each goes first equally often; 0: no paired "
                        "phase)")
    p.add_argument("--paired-reserve", type=float, default=45.0,
                   help="seconds kept for the paired phase, taken from the "
                        "sdpa and ours phases (unused with --paired-rounds "
                        "0); what it leaves goes to FlexAttention")
    p.add_argument("--ours-max-seqlen", type=int, default=0,
                   help="skip ours above this T (0: none)")
    p.add_argument("--ours-max-call-seconds", type=float, default=0,
                   help="skip ours where one fwd + bwd is predicted longer")
    p.add_argument("--check-two-heads-upto", type=int, default=2048,
                   help="check two (batch, head) slices up to this T, one "
                        "above")
    p.add_argument("--check-backends", nargs="+",
                   default=["flash", "cudnn", "efficient", "math"])
    p.add_argument("--ratio", type=float, default=2.0,
                   help="pass: our error <= ratio x SDPA's (+1e-6)")
    p.add_argument("--lse-tol", type=float, default=1e-3)
    p.add_argument("--smoke-cpu", action="store_true",
                   help="tiny grid on the CPU, float32 stand-in for ours")
    p.add_argument("--markdown", metavar="BENCH_JSON",
                   help="print the markdown tables of an earlier run's "
                        "bench.json and exit (no GPU needed)")
    args = p.parse_args()
    if args.markdown:
        print(markdown(args.markdown))
        return 0

    clock = Clock(args.budget)
    device = "cpu" if args.smoke_cpu else "cuda"
    if args.smoke_cpu:
        if args.seqlens == p.get_default("seqlens"):
            args.seqlens = [64, 128]
        if args.tokens == TOKENS:
            args.tokens = 256
        if args.hidden == HIDDEN:
            args.hidden = 256
        impl = StandIn()
    else:
        if not torch.cuda.is_available():
            sys.exit("no CUDA device (use --smoke-cpu to test the script)")
        import fa_opt
        for d in args.kernel_dir:
            try:
                fa_opt.add_kernel_dir(d)
            except NotADirectoryError as err:
                sys.exit(f"--kernel-dir: {err}")
        impl = Ours()
    os.makedirs(args.out, exist_ok=True)
    grid = make_grid(args)
    combos = sorted({c.combo for c in grid}, key=lambda c: (c[0], c[1], c[2]))

    env = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
           "host": platform.node(), "python": platform.python_version(),
           "torch": torch.__version__, "device": device, "ours": impl.name,
           "argv": sys.argv}
    try:
        import triton
        env["triton"] = triton.__version__
    except Exception:
        pass
    if device == "cuda":
        env["gpu"] = torch.cuda.get_device_name()
        env["cuda"] = torch.version.cuda
        env["cudnn"] = torch.backends.cudnn.version()
        env["kernel_dirs"] = os.environ.get("FA_OPT_KERNEL_DIRS", "")
    log(f"attention_bench: {env}")
    result = {"env": env, "args": {k: v for k, v in vars(args).items()},
              "method": {
                  "flops_fwd": "4*B*H*T*T*D, halved for causal",
                  "flops_bwd": "2.5 x forward",
                  "grid": "B*T = tokens, H = hidden/D",
                  "timing": "CUDA events per call after warm-up; median",
                  "inputs": "standard normal per config, seeded, same for "
                            "every implementation",
                  "check": "ours vs float64 (GPU autograd through a dense "
                           "softmax) on (batch, head) slices, outputs "
                           "NaN-poisoned; pass: finite everywhere, lse max "
                           "abs err <= lse_tol, each of o/dq/dk/dv rel. err "
                           "<= ratio x SDPA's on the same slice + 1e-6",
                  "sdpa_bwd": "torch.autograd.grad of a recorded forward",
                  "paired": "ours vs SDPA cudnn per config and pass in "
                            "--paired-rounds alternating rounds; ratio = "
                            "median over rounds of cudnn ms / ours ms",
                  "flex": "torch.compile(flex_attention), causal through "
                          "create_block_mask; forward timed on "
                          "grad-recording inputs"},
              "notes": [], "phases_s": {}}
    out_json = os.path.join(args.out, "bench.json")

    def save():
        result["configs"] = [c.to_json() for c in grid]
        result["summary"] = summary(grid)
        result["elapsed_s"] = round(clock.elapsed(), 1)
        with open(out_json + ".tmp", "w") as f:
            json.dump(result, f, indent=1, default=str)
        os.replace(out_json + ".tmp", out_json)

    def phase(name, fn):
        t0 = clock.elapsed()
        log(f"== {name} [{t0:.0f} s]")
        try:
            fn()
        except Exception as err:  # a broken phase leaves the others
            result["notes"].append(f"phase {name} failed: "
                                   f"{type(err).__name__}: {err}")
            log_exc()
        result["phases_s"][name] = round(clock.elapsed() - t0, 1)
        save()

    if device == "cuda":
        def ceiling():
            a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
            b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
            ms, _ = bench(lambda: a @ b, device, target_ms=50)
            result["gemm_bf16_8192_tflops"] = 2 * 8192 ** 3 / ms / 1e9
            log(f"  bf16 8192^3 matmul: {result['gemm_bf16_8192_tflops']:.0f}"
                f" TFLOP/s")
        phase("ceiling", ceiling)

    def small():
        result["small_check"] = phase_small_check(args, impl, device, combos)
    phase("small check", small)

    flex_reserve = 0 if args.no_flex else args.flex_reserve
    final_reserve = 12.0
    paired_reserve = args.paired_reserve if args.paired_rounds > 0 else 0
    phase("sdpa", lambda: phase_sdpa(
        args, grid, device, clock,
        args.budget - final_reserve - flex_reserve - paired_reserve - 30))
    phase("ours", lambda: phase_ours(
        args, impl, grid, device, clock,
        args.budget - final_reserve - flex_reserve - paired_reserve, save))
    if args.paired_rounds > 0:
        phase("paired", lambda: phase_paired(
            args, impl, grid, device, clock,
            args.budget - final_reserve - flex_reserve))
    if args.no_flex:
        for cfg in grid:
            for pas in ("fwd", "bwd"):
                cfg.record(pas, "flex", note="skipped: --no-flex")
    else:
        phase("flex", lambda: phase_flex(
            args, grid, device, clock, args.budget - final_reserve,
            result["notes"], save))

    save()
    try:
        write_csv(os.path.join(args.out, "bench.csv"), grid)
    except Exception:
        log_exc()
    try:
        plot(os.path.join(args.out, "bench.png"), grid,
             f"fa-opt vs SDPA / FlexAttention, {env.get('gpu', device)}, "
             f"{env['date'][:10]} (TFLOP/s; dashed: causal)")
    except Exception:
        log_exc()
    print_table(grid)
    s = summary(grid)
    log("")
    log("geomean ours/backend: " + "  ".join(
        f"{pas} /{be} {fmt_r(s[f'{pas}_ours_over_{be}_geomean'])}"
        for pas in ("fwd", "bwd") for be in BASELINES))
    if args.paired_rounds > 0:
        log(f"paired ours/{PAIRED_BACKEND} (alternating rounds): " + "  ".join(
            f"{pas} {fmt_r(s[f'{pas}_ours_over_{PAIRED_BACKEND}_paired_geomean'])}"
            f" on {s[f'{pas}_paired_configs']} configs"
            for pas in ("fwd", "bwd")))
    checks = [c.check["pass"] for c in grid if c.check] + \
        [r["pass"] for r in result.get("small_check", [])]
    log(f"checks: {sum(checks)} passed, {len(checks) - sum(checks)} failed; "
        f"ours timed on {s['fwd_ours_configs']}/{len(grid)} configs; "
        f"flex on {s['fwd_flex_configs']}/{len(grid)}; "
        f"elapsed {clock.elapsed():.0f} s")
    for n in result["notes"]:
        log("note: " + n)
    return 0 if all(checks) else 1


if __name__ == "__main__":
    sys.exit(main())
