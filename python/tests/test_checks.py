"""Input validation, on stand-in tensors (no torch needed) and, when torch
is installed, on CPU and meta tensors."""

import pytest

from conftest import FakeTensor
from fa_opt.checks import (FaOptInputError, FaOptUnsupportedError,
                           check_inputs, check_sdpa_args)


def qkv(q=(2, 8, 100, 64), k=(2, 8, 120, 64), v=(2, 8, 120, 32), **kw):
    return FakeTensor(q, **kw), FakeTensor(k, **kw), FakeTensor(v, **kw)


def test_valid_problem():
    p = check_inputs(*qkv())
    assert (p.dtype, p.batch_shape, p.batch) == ("bf16", (2, 8), 16)
    assert (p.seqlen_q, p.seqlen_k, p.head_dim, p.head_dim_v) == (100, 120, 64, 32)


@pytest.mark.parametrize("make,match", [
    (lambda: qkv(device="cpu"), "Expected query, key and value to be on a CUDA device, but got query.device: cpu"),
    (lambda: (FakeTensor((2, 8, 4, 64)), FakeTensor((2, 8, 4, 64), device="cuda:1"), FakeTensor((2, 8, 4, 64))),
     "to be on the same device, but got query.device: cuda:0, key.device: cuda:1"),
    (lambda: (FakeTensor((2, 8, 4, 64)), FakeTensor((2, 8, 4, 64), dtype="torch.float16"), FakeTensor((2, 8, 4, 64))),
     "to have the same dtype, but got query.dtype: torch.bfloat16, key.dtype: torch.float16"),
    (lambda: qkv(dtype="torch.float64"), "torch.float16, torch.bfloat16 or torch.float32, but got torch.float64"),
    (lambda: qkv(q=(8, 64), k=(8, 64), v=(8, 64)), "at least 3"),
    (lambda: qkv(k=(2, 4, 120, 64), v=(2, 4, 120, 64)), "same batch dimensions"),
    (lambda: qkv(v=(2, 8, 119, 64)), "key.size\\(-2\\): 120 and value.size\\(-2\\): 119"),
    (lambda: qkv(k=(2, 8, 120, 32)), "query.size\\(-1\\): 64 and key.size\\(-1\\): 32"),
    (lambda: (FakeTensor((2, 8, 4, 64), strides=(4096, 512, 128, 2)), FakeTensor((2, 8, 4, 64)), FakeTensor((2, 8, 4, 64))),
     "last dimension of query to be contiguous \\(stride 1\\), but got query.stride\\(-1\\): 2"),
])
def test_invalid_inputs(make, match):
    with pytest.raises(FaOptInputError, match=match) as info:
        check_inputs(*make())
    assert isinstance(info.value, RuntimeError)  # as PyTorch raises


def test_sdpa_unsupported_arguments_are_named():
    q, k, _ = qkv()
    with pytest.raises(FaOptUnsupportedError, match="attn_mask is not supported"):
        check_sdpa_args(q, k, object(), 0.0, False)
    with pytest.raises(NotImplementedError, match="dropout_p=0.1 is not supported"):
        check_sdpa_args(q, k, None, 0.1, False)
    with pytest.raises(NotImplementedError, match="enable_gqa=True with 8 query heads and 2"):
        check_sdpa_args(q, FakeTensor((2, 2, 120, 64)), None, 0.0, True)
    check_sdpa_args(q, k, None, 0.0, True)  # equal heads: nothing to group


def test_torch_cpu_and_meta_tensors():
    torch = pytest.importorskip("torch")
    q = torch.randn(2, 4, 16, 64)
    with pytest.raises(FaOptInputError, match="to be on a CUDA device, but got query.device: cpu"):
        check_inputs(q, q, q)
    m = torch.empty(2, 4, 16, 64, device="meta", dtype=torch.float64)
    with pytest.raises(FaOptInputError, match="CUDA device"):
        check_inputs(m, m, m)
    import fa_opt
    with pytest.raises(NotImplementedError, match="attn_mask"):
        fa_opt.scaled_dot_product_attention(q, q, q, attn_mask=torch.ones(16, 16, dtype=torch.bool))
    with pytest.raises(FaOptInputError, match="CUDA device"):
        fa_opt.attention(q, q, q)
