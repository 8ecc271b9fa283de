"""How a PyTorch tensor becomes a kernel memref, without copying when the
strides allow it. Pure Python on (sizes, strides): testable without torch.

The kernels take rank-3 memrefs ``[batch, T, D]`` (lse: rank 2
``[batch, T]``) with a dynamic offset and dynamic strides
(docs/ARTIFACTS.md). A tensor ``[b0, ..., bn, T, D]`` is passed as is when
its leading (batch) dims *flatten* into one dim of a single stride:

    after dropping batch dims of size 1, every neighbouring pair (i, i+1)
    must satisfy  stride[i] == size[i+1] * stride[i+1].

For ``[B, H, T, D]`` with strides ``(sB, sH, sT, sD)`` that is
``sB == H * sH`` (or B == 1, or H == 1). It holds for a contiguous
``[B, H, T, D]`` tensor, for slices along T or D of one (``x[:, :, :100]``,
``kv_cache[..., :64]``: sT and the offset change, sB == H * sH still), for
any batch-1 tensor (the ``[1, T, H, D]`` layout seen as ``x.transpose(1, 2)``
has ``sH = D``, ``sT = H*D``: no copy), and for heads broadcast with stride
0 when B == 1. It fails, and the tensor is copied (``.contiguous()``), for the
``[B, T, H, D]`` layout seen as ``x.transpose(1, 2)`` with B > 1
(``sB = T*H*D`` but ``H * sH = H*D``: the rank-3 memref has one batch stride,
and ``b * sB + h * sH`` is not ``(b*H + h) * s`` for any s), for heads sliced
out of a fused QKV projection with B > 1, and for ``x.permute(1, 0, 2, 3)`` of
a contiguous ``[H, B, T, D]`` tensor. T and D keep any stride; the launcher
still requires ``stride(-1) == 1`` (see checks.py). Outputs (o, lse,
gradients) are allocated contiguous ``[B, H, T, D]``, or in q's layout when
that flattens.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple


def flatten_batch(sizes: Sequence[int], strides: Sequence[int]
                  ) -> Optional[Tuple[int, int]]:
    """``(batch, batch_stride)`` of the rank-3 view of a tensor with these
    sizes/strides (rank >= 2; the last two dims are T and D), or None when
    the batch dims do not flatten (a copy is needed)."""
    if len(sizes) != len(strides) or len(sizes) < 2:
        raise ValueError("expected sizes and strides of one rank >= 2")
    bsizes, bstrides = sizes[:-2], strides[:-2]
    batch = 1
    for s in bsizes:
        batch *= s
    # Size-1 dims carry no stride information; a zero-size tensor is never
    # read, so any stride will do.
    dims = [(s, st) for s, st in zip(bsizes, bstrides) if s != 1]
    if batch == 0 or not dims:
        return batch, sizes[-2] * strides[-2] if sizes[-2] else 0
    for (s0, st0), (s1, st1) in zip(dims, dims[1:]):
        if st0 != s1 * st1:
            return None
    return batch, dims[-1][1]


def memref_params(ptr: int, sizes: Sequence[int], strides: Sequence[int],
                  offset: int = 0) -> List[int]:
    """One memref descriptor as kernel parameters: allocated ptr, aligned
    ptr, offset, sizes..., strides... (all 64-bit)."""
    return [ptr, ptr, offset, *sizes, *strides]


def rank3(sizes: Sequence[int], strides: Sequence[int]
          ) -> Optional[Tuple[List[int], List[int]]]:
    """The ``[batch, T, D]`` sizes and strides of a tensor, or None when its
    batch dims do not flatten."""
    flat = flatten_batch(sizes, strides)
    if flat is None:
        return None
    batch, bstride = flat
    return ([batch, sizes[-2], sizes[-1]],
            [bstride, strides[-2], strides[-1]])


def rank2(sizes: Sequence[int], strides: Sequence[int]
          ) -> Optional[Tuple[List[int], List[int]]]:
    """The ``[batch, T]`` sizes and strides of an lse-like tensor
    ``[batch..., T]``, or None when its batch dims do not flatten."""
    flat = flatten_batch(list(sizes) + [1], list(strides) + [1])
    if flat is None:
        return None
    batch, bstride = flat
    return [batch, sizes[-1]], [bstride, strides[-1]]
