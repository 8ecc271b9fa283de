"""Input validation, with messages in PyTorch's style. Duck-typed (needs
``.dtype``, ``.device``, ``.shape``, ``.stride()``), so it runs on torch
tensors of any device (meta too) and on stand-ins without torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from .config import TORCH_DTYPE_NAMES

_NAMES = ("query", "key", "value")


class FaOptInputError(ValueError, RuntimeError):
    """Invalid attention inputs (a ValueError, and a RuntimeError as
    PyTorch's own SDPA checks raise)."""


class FaOptUnsupportedError(NotImplementedError):
    """An argument fa_opt does not implement (named in the message)."""


@dataclass(frozen=True)
class Problem:
    """The sizes of one call, at the kernel level."""

    dtype: str  # f16 | bf16 | f32
    batch_shape: Tuple[int, ...]
    batch: int
    seqlen_q: int
    seqlen_k: int
    head_dim: int
    head_dim_v: int


def _shape(t) -> Tuple[int, ...]:
    return tuple(int(s) for s in t.shape)


def check_inputs(q, k, v, fn: str = "fa_opt.attention") -> Problem:
    """Checks device, dtype, rank, shapes and last-dim contiguity."""
    tensors = (q, k, v)
    devices = [str(t.device) for t in tensors]
    if any(getattr(t.device, "type", None) != "cuda" for t in tensors):
        raise FaOptInputError(
            f"{fn}: Expected query, key and value to be on a CUDA device, but "
            f"got query.device: {devices[0]}, key.device: {devices[1]} and "
            f"value.device: {devices[2]} instead.")
    if len(set(devices)) != 1:
        raise FaOptInputError(
            f"{fn}: Expected query, key and value to be on the same device, "
            f"but got query.device: {devices[0]}, key.device: {devices[1]} "
            f"and value.device: {devices[2]} instead.")
    dtypes = [str(t.dtype) for t in tensors]
    if len(set(dtypes)) != 1:
        raise FaOptInputError(
            f"{fn}: Expected query, key and value to have the same dtype, but "
            f"got query.dtype: {dtypes[0]}, key.dtype: {dtypes[1]} and "
            f"value.dtype: {dtypes[2]} instead.")
    if dtypes[0] not in TORCH_DTYPE_NAMES:
        raise FaOptInputError(
            f"{fn}: Expected query, key and value to be of dtype "
            f"torch.float16, torch.bfloat16 or torch.float32, but got "
            f"{dtypes[0]} instead.")
    shapes = [_shape(t) for t in tensors]
    ranks = [len(s) for s in shapes]
    if len(set(ranks)) != 1 or ranks[0] < 3:
        raise FaOptInputError(
            f"{fn}: Expected query, key and value to have the same number of "
            f"dimensions, at least 3 ([..., seq_len, head_dim], e.g. [batch, "
            f"heads, seq_len, head_dim]), but got query.dim(): {ranks[0]}, "
            f"key.dim(): {ranks[1]} and value.dim(): {ranks[2]} instead.")
    (qs, ks, vs) = shapes
    if not (qs[:-2] == ks[:-2] == vs[:-2]):
        raise FaOptInputError(
            f"{fn}: Expected query, key and value to have the same batch "
            f"dimensions (all but the last two), but got query.shape: "
            f"{list(qs)}, key.shape: {list(ks)} and value.shape: {list(vs)} "
            f"instead. (Grouped-query attention with fewer key/value heads is "
            f"not supported.)")
    if ks[-2] != vs[-2]:
        raise FaOptInputError(
            f"{fn}: Expected key and value to have the same sequence length "
            f"(size(-2)), but got key.size(-2): {ks[-2]} and value.size(-2): "
            f"{vs[-2]} instead.")
    if qs[-1] != ks[-1]:
        raise FaOptInputError(
            f"{fn}: Expected query and key to have the same head dim "
            f"(size(-1)), but got query.size(-1): {qs[-1]} and key.size(-1): "
            f"{ks[-1]} instead.")
    if qs[-1] == 0 or vs[-1] == 0:
        raise FaOptInputError(
            f"{fn}: Expected a head dim > 0, but got query.size(-1): {qs[-1]} "
            f"and value.size(-1): {vs[-1]} instead.")
    for name, t, s in zip(_NAMES, tensors, shapes):
        stride = int(t.stride()[-1])
        if stride != 1 and s[-1] > 1:
            raise FaOptInputError(
                f"{fn}: Expected the last dimension of {name} to be "
                f"contiguous (stride 1), but got {name}.stride(-1): {stride} "
                f"instead; call .contiguous() on it.")
    batch = 1
    for s in qs[:-2]:
        batch *= s
    return Problem(dtype=TORCH_DTYPE_NAMES[dtypes[0]], batch_shape=qs[:-2],
                   batch=batch, seqlen_q=qs[-2], seqlen_k=ks[-2],
                   head_dim=qs[-1], head_dim_v=vs[-1])


def check_sdpa_args(query, key, attn_mask, dropout_p, enable_gqa) -> None:
    """Rejects, by name, the scaled_dot_product_attention arguments fa_opt
    does not implement (no silent fallback)."""
    fn = "fa_opt.scaled_dot_product_attention"
    if attn_mask is not None:
        raise FaOptUnsupportedError(
            f"{fn}: attn_mask is not supported (got a "
            f"{type(attn_mask).__name__}); pass attn_mask=None, with "
            f"is_causal=True for a causal mask, or call "
            f"torch.nn.functional.scaled_dot_product_attention for other masks")
    if dropout_p != 0.0:
        raise FaOptUnsupportedError(
            f"{fn}: dropout_p={dropout_p} is not supported (only dropout_p=0.0)")
    if enable_gqa:
        qs, ks = _shape(query), _shape(key)
        if len(qs) >= 3 and len(ks) >= 3 and qs[-3] != ks[-3]:
            raise FaOptUnsupportedError(
                f"{fn}: enable_gqa=True with {qs[-3]} query heads and "
                f"{ks[-3]} key/value heads is not supported (grouped-query "
                f"attention needs one kernel batch index per head group)")
