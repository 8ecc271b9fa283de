"""PyTorch entry points: :func:`attention` (an autograd function) and the
drop-in :func:`scaled_dot_product_attention`."""

from __future__ import annotations

import threading
from typing import Dict, Optional, Tuple

from .deps import is_missing_torch, torch_required

try:
    import torch
except ModuleNotFoundError as _err:  # a clear message, not a bare "No module named 'torch'"
    if not is_missing_torch(_err):
        raise
    raise torch_required("fa_opt.ops (fa_opt.attention, "
                         "fa_opt.scaled_dot_product_attention)") from _err

from .checks import Problem, check_inputs, check_sdpa_args
from .config import AttentionConfig, chip_for_capability, normalize_causal
from .layout import one_batch_span, rank2, rank3
from .memo import BoundedMemo
from .runtime import KernelSet, deterministic_backward, launch, registry

_ELT = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}

#: Copies made because a tensor's batch dims did not flatten (tests read it).
copy_count = 0
_chips: Dict[int, str] = {}
_chip_lock = threading.Lock()


def _device_index(device: torch.device) -> int:
    """The index of a CUDA device (the current one for plain "cuda")."""
    return device.index if device.index is not None \
        else torch.cuda.current_device()


def _chip(device: torch.device) -> str:
    index = _device_index(device)
    chip = _chips.get(index)
    if chip is None:
        import os
        chip = os.environ.get("FA_OPT_CHIP") or chip_for_capability(
            *torch.cuda.get_device_capability(index))
        with _chip_lock:
            _chips[index] = chip
    return chip


_RANK3 = frozenset(("q", "k", "v", "o", "do", "dout", "dq", "dk", "dv",
                    "dq_accum"))


# Per-call work that depends only on the tensors' metadata, kept by it
# (the input checks' Problem, each param's kernel view, the config), so a
# repeated call skips it; the oldest dropped first. Failed checks are
# never kept: they raise each time.
_problems = BoundedMemo(1024)
_views = BoundedMemo(1024)
_configs = BoundedMemo(1024)


def _checked(q, k, v, fn: str) -> Problem:
    """check_inputs(q, k, v, fn), kept by everything it reads (shapes,
    strides, dtypes, devices)."""
    try:
        key = (q.shape, q.stride(), q.dtype, q.device, k.shape, k.stride(),
               k.dtype, k.device, v.shape, v.stride(), v.dtype, v.device)
    except RuntimeError:  # a tensor without strides (sparse): its error
        return check_inputs(q, k, v, fn)
    return _problems.get_or_make(key, lambda: check_inputs(q, k, v, fn))


def _view(name: str, t: torch.Tensor):
    """``(sizes, strides)`` (tuples) of param ``name``'s kernel view of
    ``t``, or None when its batch dims do not flatten."""
    kind = 3 if name in _RANK3 else 2 if (
        name in ("lse", "delta") or t.dim() < 2) else 0

    def make():
        view = (rank3 if kind == 3 else rank2)(t.shape, t.stride()) if kind \
            else (list(t.shape), list(t.stride()))
        return None if view is None else (tuple(view[0]), tuple(view[1]))

    return _views.get_or_make((kind, t.shape, t.stride()), make)


def _as_memref(name: str, t: torch.Tensor, inputs=None):
    """``(tensor, (ptr, sizes, strides, element_size))`` of the kernel view
    of param ``name``: rank 3 ``[batch, T, D]`` for q k v o do dq dk dv,
    rank 2 ``[batch, T]`` for lse. Copies ``t`` when its batch dims do not
    flatten (fa_opt.layout), or when ``name`` is in ``inputs`` (default
    ``_INPUTS``) and its rows are not 16-byte aligned or one batch entry
    spans 2^31 elements or more (:func:`_too_wide`)."""
    global copy_count
    view = _view(name, t)
    inputs = _INPUTS if inputs is None else inputs
    if view is None or (name in inputs and (not _rows_aligned(t, view)
                                            or _too_wide(view))):
        copy_count += 1
        # Fresh storage: contiguous() would keep a contiguous view at an
        # odd storage offset.
        t = torch.empty_like(t, memory_format=torch.contiguous_format
                             ).copy_(t)
        view = _view(name, t)
    sizes, strides = view
    return t, (t.data_ptr(), sizes, strides, t.element_size())


# Inputs the tensor-core kernels read 16 bytes at a time (cp.async; o and
# do in the backward's _delta, hence _BACKWARD_INPUTS): each row must start
# at a 16-byte aligned address. A view that breaks that (an odd storage
# offset, a row stride that is not a multiple of 16 bytes) is copied into
# fresh storage; outputs are allocated here and always aligned. The same
# rule makes every q/k/v/o view one a TMA tensor map can describe
# (fa_opt.layout.tensor_map_args: 16-byte aligned start and strides; a
# broadcast stride 0 too, checked on the H200).
_INPUTS = frozenset(("q", "k", "v", "do", "dout"))
# The backward's inputs: the above and o.
_BACKWARD_INPUTS = _INPUTS | {"o"}


def _too_wide(view) -> bool:
    """Whether one batch entry of the view spans 2^31 elements or more (an
    interleaved layout such as [1, T, H, D] read as [H, T, D]): the kernels
    with 32-bit indices (``index_bits 32``) take batch chunks below 2^31
    elements (fa_opt.runtime.batch_chunk), which a contiguous copy allows."""
    return one_batch_span(*view) >= 2**31


def _rows_aligned(t: torch.Tensor, view) -> bool:
    _, strides = view
    esize = t.element_size()
    return (t.data_ptr() % 16 == 0
            and all((s * esize) % 16 == 0 for s in strides[:-1]))


def _new_like(q: torch.Tensor, last: int, dtype: torch.dtype) -> torch.Tensor:
    """An output shaped like ``q`` with last dim ``last``: in q's memory
    layout when that flattens (a [B, T, H, D] layout stays one) and one
    batch entry spans fewer than 2^31 elements, else contiguous."""
    if last == q.shape[-1] and dtype == q.dtype:
        out = torch.empty_like(q)
        view = rank3(out.shape, out.stride())
        if view is not None and one_batch_span(*view) < 2**31:
            return out
    return q.new_empty((*q.shape[:-1], last), dtype=dtype)


def _config(p: Problem, causal: str, scale: Optional[float]) -> AttentionConfig:
    policy = registry.shape_policy  # read once: set_shape_policy may race
    return _configs.get_or_make(
        (p, causal, scale, policy), lambda: AttentionConfig.for_call(
            p.dtype, p.batch, p.seqlen_q, p.seqlen_k, p.head_dim,
            p.head_dim_v, causal, scale, policy))


def _kernels(q, p: Problem, causal: str, scale,
             deterministic: bool = False) -> KernelSet:
    config = _config(p, causal, scale)
    return registry.kernels_for(config, _chip(q.device), p.batch, p.seqlen_q,
                                p.seqlen_k, deterministic=deterministic)


def _backward_kernels(q, p: Problem, causal: str, scale) -> KernelSet:
    """The kernels for a backward call; under
    ``torch.use_deterministic_algorithms(True)`` ones whose backward is
    bitwise reproducible (see :func:`fa_opt.runtime.deterministic_backward`:
    RuntimeError where none can be had, a UserWarning with
    ``warn_only=True``)."""
    ks = _kernels(q, p, causal, scale)
    if not torch.are_deterministic_algorithms_enabled():
        return ks
    return deterministic_backward(
        ks, lambda: _kernels(q, p, causal, scale, deterministic=True),
        warn_only=torch.is_deterministic_algorithms_warn_only_enabled())


def forward(q, k, v, causal="none", scale=None, fn="fa_opt.attention"
            ) -> Tuple[torch.Tensor, torch.Tensor]:
    """``(o, lse)``: o like q (last dim Dv), lse ``[batch..., Tq]`` f32
    (natural log; -inf for a row that sees no key)."""
    p = _checked(q, k, v, fn)
    causal = normalize_causal(causal)
    ks = _kernels(q, p, causal, scale)
    o = _new_like(q, p.head_dim_v, _ELT[ks.forward.o_dtype])
    lse = torch.empty((*p.batch_shape, p.seqlen_q), dtype=torch.float32,
                      device=q.device)
    if p.batch == 0 or p.seqlen_q == 0:
        return o, lse
    tensors = {}
    keep = []
    for name, t in (("q", q), ("k", k), ("v", v), ("o", o), ("lse", lse)):
        t, tensors[name] = _as_memref(name, t)
        keep.append(t)
    launch(ks, ks.forward_for(p.seqlen_k), _device_index(q.device), tensors,
           p.batch, p.seqlen_q, p.seqlen_k,
           torch.cuda.current_stream(q.device).cuda_stream)
    return o, lse


def backward(ks: KernelSet, q, k, v, o, lse, do, causal: str, scale):
    """``(dq, dk, dv)`` through the backward kernels of ``ks``."""
    if not ks.backward:
        why = ks.backward_error or (
            f"the kernels come from {ks.source}, which holds no backward")
        raise NotImplementedError(
            "fa_opt.attention: backward is not available: fa-opt compiled no "
            f"GPU kernels for fa.attention_backward ({why.strip()}). Use "
            "torch.no_grad() / detached inputs for inference, or "
            "torch.nn.functional.scaled_dot_product_attention for training.")
    return _run_backward(ks, q, k, v, o, lse, do, causal, scale)


def _run_backward(ks: KernelSet, q, k, v, o, lse, do, causal, scale):
    """Launches the backward manifest's kernels in order on the current
    stream. Params are tensors by name: q k v o do lse in, dq dk dv out (in
    the manifest's dtypes), and the manifest's scratch buffers (delta,
    dq_accum: written before read by the kernels, so left uninitialized)."""
    bm = ks.backward
    p = _checked(q, k, v, "fa_opt.attention (backward)")
    device = _device_index(q.device)
    dq = _new_like(q, p.head_dim, _ELT[bm.dq_dtype])
    dk = _new_like(k, p.head_dim, _ELT[bm.dk_dtype])
    dv = _new_like(v, p.head_dim_v, _ELT[bm.dv_dtype])
    if do.dtype != _ELT[bm.do_dtype]:
        do = do.to(_ELT[bm.do_dtype])
    named = {"q": q, "k": k, "v": v, "o": o, "do": do, "dout": do,
             "lse": lse, "dq": dq, "dk": dk, "dv": dv}
    sizes = {"batch": p.batch, "seqlen_q": p.seqlen_q, "seqlen_k": p.seqlen_k,
             "head_dim": p.head_dim, "head_dim_v": p.head_dim_v}
    for buf in bm.scratch:
        dims = [sizes[d] if d in sizes else int(d) for d in buf.dims]
        named[buf.name] = torch.empty(dims, dtype=_ELT[buf.dtype],
                                      device=q.device)
    if p.seqlen_k == 0 or p.batch == 0:
        # No key: dq = 0; dk, dv are empty (or batch is).
        return dq.zero_(), dk, dv
    if p.seqlen_q == 0:
        return dq, dk.zero_(), dv.zero_()
    stream = torch.cuda.current_stream(q.device).cuda_stream
    tensors, keep = {}, []
    for m in bm.kernels:
        for name in m.params:
            if name in tensors:
                continue
            if name not in named:
                raise RuntimeError(
                    f"fa_opt: backward kernel {m.kernel} takes an unknown "
                    f"tensor '{name}' ({bm.path})")
            t, tensors[name] = _as_memref(name, named[name],
                                          _BACKWARD_INPUTS)
            keep.append(t)
        launch(ks, m, device, tensors, p.batch, p.seqlen_q, p.seqlen_k, stream)
    # dq, dk, dv come from _new_like: flattenable, so never copied above
    # (a copy of an output would lose what the kernels write).
    return dq, dk, dv


class _Attention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal, scale):
        o, lse = forward(q, k, v, causal, scale)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal, ctx.scale = causal, scale
        ctx.mark_non_differentiable(lse)
        return o, lse

    @staticmethod
    def backward(ctx, do, _dlse):
        q, k, v, o, lse = ctx.saved_tensors
        p = _checked(q, k, v, "fa_opt.attention")
        ks = _backward_kernels(q, p, ctx.causal, ctx.scale)
        if do.stride(-1) != 1:
            do = do.contiguous()
        dq, dk, dv = backward(ks, q, k, v, o, lse, do, ctx.causal, ctx.scale)
        return dq, dk, dv, None, None


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *,
              causal=False, scale: Optional[float] = None,
              return_lse: bool = False):
    """Exact attention ``softmax(scale * q k^T) v`` with fa-opt's kernels.

    q ``[..., Tq, D]``, k ``[..., Tk, D]``, v ``[..., Tk, Dv]`` (same
    leading dims, e.g. ``[B, H]``; f16, bf16 or f32 on one CUDA device; last
    dim contiguous; any other strides, copied only where the leading dims do
    not flatten, see fa_opt.layout). ``causal``: False, True (= "top_left",
    PyTorch's ``is_causal``), "top_left" or "bottom_right" (KV-cache
    decoding). ``scale`` defaults to ``1/sqrt(D)``. Returns o ``[..., Tq,
    Dv]`` (and lse ``[..., Tq]``, f32, with ``return_lse``). Differentiable
    in q, k, v when backward kernels exist; launches on the current stream
    without synchronizing. The backward adds dq with f32 atomics where
    fa-to-ptx does so by default (sm_90a, head dim 64 or 128); under
    ``torch.use_deterministic_algorithms(True)`` it takes kernels compiled
    with ``deterministic=true`` instead (bitwise reproducible), and raises
    RuntimeError (``warn_only``: warns and keeps the atomics) where none can
    be had.
    """
    causal = normalize_causal(causal)
    if scale is not None:
        scale = float(scale)
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        o, lse = _Attention.apply(q, k, v, causal, scale)
    else:
        o, lse = forward(q, k, v, causal, scale)
    return (o, lse) if return_lse else o


def scaled_dot_product_attention(query, key, value, attn_mask=None,
                                 dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """Drop-in for ``torch.nn.functional.scaled_dot_product_attention``
    (``is_causal=True`` is top-left aligned, as there). ``attn_mask``,
    ``dropout_p != 0`` and grouped-query ``enable_gqa`` raise
    NotImplementedError naming the argument; nothing falls back silently."""
    check_sdpa_args(query, key, attn_mask, dropout_p, enable_gqa)
    return attention(query, key, value, causal=bool(is_causal), scale=scale)
