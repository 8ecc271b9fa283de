"""The stride rule of fa_opt.layout: [B, H, T, D] flattens to batch B*H
without a copy iff sB == H * sH (size-1 dims aside)."""

import pytest

from fa_opt.layout import flatten_batch, memref_params, rank2, rank3


def contiguous(shape):
    strides, acc = [], 1
    for s in reversed(shape):
        strides.insert(0, acc)
        acc *= s
    return strides


def permuted(shape_in_memory, perm):
    """Strides of x.permute(perm) for a contiguous x of shape_in_memory."""
    st = contiguous(shape_in_memory)
    return [shape_in_memory[p] for p in perm], [st[p] for p in perm]


B, H, T, D = 2, 8, 100, 64


def test_contiguous_bhtd():
    assert rank3([B, H, T, D], contiguous([B, H, T, D])) == \
        ([B * H, T, D], [T * D, D, 1])


def test_bthd_transposed_view_needs_a_copy_when_batch_gt_1():
    sizes, strides = permuted([B, T, H, D], [0, 2, 1, 3])  # x.transpose(1, 2)
    assert strides == [T * H * D, D, H * D, 1]
    # sB = T*H*D but H * sH = H*D: one batch stride cannot address (b, h).
    assert rank3(sizes, strides) is None


def test_bthd_transposed_view_with_batch_1_needs_no_copy():
    sizes, strides = permuted([1, T, H, D], [0, 2, 1, 3])
    assert rank3(sizes, strides) == ([H, T, D], [D, H * D, 1])


def test_slices_along_t_and_d_need_no_copy():
    # kv_cache[:, :, :T] and x[..., :32] of a contiguous [B, H, 4T, D] tensor.
    st = contiguous([B, H, 4 * T, D])
    assert rank3([B, H, T, D], st) == ([B * H, T, D], [4 * T * D, D, 1])
    assert rank3([B, H, 4 * T, 32], st) == ([B * H, 4 * T, 32], [4 * T * D, D, 1])


def test_slice_of_fused_qkv_needs_a_copy():
    # qkv.view(B, T, 3, H, D)[:, :, 0].transpose(1, 2)
    st = contiguous([B, T, 3, H, D])
    assert rank3([B, H, T, D], [st[0], st[3], st[1], st[4]]) is None
    # ... unless B == 1.
    st1 = contiguous([1, T, 3, H, D])
    assert rank3([1, H, T, D], [st1[0], st1[3], st1[1], st1[4]]) == \
        ([H, T, D], [D, 3 * H * D, 1])


def test_head_major_memory_needs_a_copy():
    # x of shape [H, B, T, D] seen as [B, H, T, D]: sB = T*D != H * sH.
    sizes, strides = permuted([H, B, T, D], [1, 0, 2, 3])
    assert flatten_batch(sizes, strides) is None
    assert rank3(sizes, strides) is None


@pytest.mark.parametrize("sizes,strides,want", [
    ([1, H, T, D], [999, T * D, D, 1], (H, T * D)),      # B == 1: sB is free
    ([B, 1, T, D], [T * D, 12345, D, 1], (B, T * D)),    # H == 1: sH is free
    ([1, H, T, D], [0, 0, D, 1], (H, 0)),                # broadcast heads
    ([B, H, T, D], [0, 0, D, 1], (B * H, 0)),            # fully broadcast
    ([B, H, T, D], [T * D, 0, D, 1], None),              # expanded heads, B > 1
    ([0, H, T, D], [5, 7, D, 1], (0, T * D)),            # empty batch
    ([T, D], [D, 1], (1, T * D)),                        # no batch dims
    ([2, 3, 4, T, D], contiguous([2, 3, 4, T, D]), (24, T * D)),
])
def test_flatten_cases(sizes, strides, want):
    assert flatten_batch(sizes, strides) == want


def test_lse_rank2_and_params():
    assert rank2([B, H, T], [H * T, T, 1]) == ([B * H, T], [T, 1])
    assert memref_params(0x1000, [16, T, D], [T * D, D, 1]) == \
        [0x1000, 0x1000, 0, 16, T, D, T * D, D, 1]
    assert len(memref_params(1, [16, T], [T, 1])) == 2 + 1 + 2 * 2


def test_one_batch_span():
    from fa_opt.layout import one_batch_span
    # Contiguous [B, T, D]: T x D; a [1, T, H, D] view read as [H, T, D]:
    # (T - 1) H D + D; no element: 0.
    assert one_batch_span([4, 100, 64], [6400, 64, 1]) == 6400
    assert one_batch_span([32, 1000, 128], [128, 32 * 128, 1]) == \
        999 * 32 * 128 + 128
    assert one_batch_span([4, 0, 64], [0, 64, 1]) == 0
    assert one_batch_span([3, 5], [5, 1]) == 5
