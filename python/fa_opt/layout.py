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

from dataclasses import dataclass
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


def one_batch_span(sizes: Sequence[int], strides: Sequence[int]) -> int:
    """Elements from the first to the last element of one batch entry of a
    ``[batch, ...]`` view (0 when it has none): the offsets a kernel
    reaches within one batch."""
    if 0 in sizes[1:]:
        return 0
    return 1 + sum((n - 1) * abs(s) for n, s in zip(sizes[1:], strides[1:]))


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


# --- TMA tensor maps ----------------------------------------------------------
#
# A forward manifest's `tensor_map OPERAND BOX_COLS BOX_ROWS SWIZZLE` lines
# (docs/ARTIFACTS.md), and those of a version 4 backward manifest's kernel
# sections (q, k, v, do, dq_accum), ask for one CUtensorMap per operand,
# passed by value after the memref params. The map describes the operand's
# rank-3 view [batch, T, D] innermost first: dims (D, T, batch), byte
# strides (T stride, batch stride); for a contiguous tensor (D*esize,
# T*D*esize), as the C++ runtime encodes it (runtime/lib/Manifest.cpp,
# buildTensorMapArgs).

#: cuTensorMapEncodeTiled's limits: dims at most 2^32 - 1 here, strides
#: multiples of 16 bytes below 2^40, a 16-byte aligned address.
TMA_MAX_DIM = (1 << 32) - 1
TMA_STRIDE_LIMIT = 1 << 40


@dataclass(frozen=True)
class TensorMapArgs:
    """The arguments of one cuTensorMapEncodeTiled call (rank 3, innermost
    dim first). Interleave none, L2 promotion 128B and OOB fill none
    (zeros) are fixed."""

    operand: str
    dtype: str  # f16 | bf16 | f32
    address: int
    global_dim: Tuple[int, int, int]  # (D, T, batch)
    global_strides: Tuple[int, int]  # bytes: (row, batch)
    box_dim: Tuple[int, int, int]  # (BOX_COLS, BOX_ROWS, 1)
    element_strides: Tuple[int, int, int] = (1, 1, 1)
    swizzle: int = 0  # bytes: 0, 32, 64 or 128


_DIM_NAMES = {"q": ("head_dim", "seqlen_q"), "k": ("head_dim", "seqlen_k"),
              "v": ("head_dim_v", "seqlen_k"), "o": ("head_dim_v", "seqlen_q"),
              "do": ("head_dim_v", "seqlen_q"),
              "dq_accum": ("head_dim", "seqlen_q")}


def tensor_map_args(tensor_map, dtype: str, element_size: int, ptr: int,
                    sizes: Sequence[int], strides: Sequence[int],
                    q_ptr: int, kernel: str = "") -> TensorMapArgs:
    """The encode arguments of ``tensor_map`` (a manifest.TensorMap) for an
    operand whose rank-3 view ``[batch, T, D]`` has these sizes and strides
    (elements) at ``ptr``. An operand with no element is never read: its
    dims are clamped to >= 1, its strides made contiguous and its address
    is ``q_ptr``. Raises ValueError, naming the operand, where TMA cannot
    describe the view (a dim over 2^32 - 1, a stride of 2^40 bytes or more
    or not a multiple of 16 bytes, an address not 16-byte aligned)."""
    name = tensor_map.operand
    where = f"tensor map for '{name}' (kernel '{kernel}'): "
    batch, rows, cols = (int(x) for x in sizes)
    empty = batch <= 0 or rows <= 0 or cols <= 0
    dims = (max(cols, 1), max(rows, 1), max(batch, 1))
    for what, value in zip((*_DIM_NAMES[name], "batch"), dims):
        if value > TMA_MAX_DIM:
            raise ValueError(f"{where}{what} = {value} exceeds the TMA limit "
                             f"of 2^32 - 1 ({TMA_MAX_DIM})")
    if empty:
        byte_strides = (dims[0] * element_size,
                        dims[1] * dims[0] * element_size)
        address = q_ptr
    else:
        if int(strides[2]) != 1:
            raise ValueError(f"{where}the last dim must have stride 1, got "
                             f"{strides[2]}")
        # A dim of size 1 is never stepped over: its stride is the
        # contiguous one, whatever the view says.
        row = int(strides[1]) if rows > 1 else cols
        byte_strides = (row * element_size,
                        (int(strides[0]) if batch > 1 else rows * row)
                        * element_size)
        address = ptr
    for what, stride in zip(("row", "batch"), byte_strides):
        if stride >= TMA_STRIDE_LIMIT:
            raise ValueError(f"{where}a {what} stride of {stride} bytes "
                             f"reaches the TMA limit of 2^40 bytes")
        if stride % 16:
            raise ValueError(f"{where}the {what} stride {stride} bytes is not "
                             f"a multiple of 16 bytes, as TMA needs")
    if address % 16:
        raise ValueError(f"{where}the address of {'q' if empty else name} "
                         f"must be 16-byte aligned (TMA)")
    return TensorMapArgs(
        operand=name, dtype=dtype, address=address, global_dim=dims,
        global_strides=byte_strides,
        box_dim=(tensor_map.box_cols, tensor_map.box_rows, 1),
        swizzle=tensor_map.swizzle)

