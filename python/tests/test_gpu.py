"""On a CUDA GPU: fa_opt's kernels against a float64 reference, the stride
rule in practice, streams, CUDA graphs, the SDPA drop-in and autograd.

Kernels come from fa-opt (compiled on demand) or, on a machine without it,
from precompiled folders in FA_OPT_KERNEL_DIRS (tests/gpu_kernels.sh makes
the set these tests use)."""

import math

import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")

import fa_opt  # noqa: E402
from fa_opt import ops  # noqa: E402
from fa_opt.config import SHORT_FORWARD_MAX_SEQLEN_K  # noqa: E402

TOL = {torch.float32: 1e-5, torch.float16: 5e-3, torch.bfloat16: 2e-2}
DTYPES = [torch.float16, torch.bfloat16, torch.float32]
CAUSAL = ["none", "top_left", "bottom_right"]


def reference(q, k, v, causal="none", scale=None):
    """float64 attention and lse on the same (rounded) inputs."""
    qd, kd, vd = (t.double() for t in (q, k, v))
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = (qd @ kd.transpose(-1, -2)) * scale
    tq, tk = q.shape[-2], k.shape[-2]
    if causal != "none":
        offset = 0 if causal == "top_left" else tk - tq
        i = torch.arange(tq, device=q.device)[:, None]
        j = torch.arange(tk, device=q.device)[None, :]
        s = s.masked_fill(j > i + offset, -math.inf)
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    return p @ vd, lse


def rel(a, b):
    a, b = a.double(), b.double()
    assert not torch.isnan(a).any(), "NaN in the output"
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def grads_or_skip(o, inputs, do):
    """torch.autograd.grad(o, inputs, do); skips the test when the kernel
    set has no backward (fa_opt raises NotImplementedError then)."""
    try:
        return torch.autograd.grad(o, inputs, do)
    except NotImplementedError as err:
        assert "backward is not available" in str(err)
        pytest.skip(f"no backward kernels: {err}")


def rand(*shape, dtype=torch.bfloat16):
    return torch.randn(*shape, device="cuda", dtype=torch.float32).to(dtype)


@pytest.fixture(params=["short", "default"])
def forward_kind(request, monkeypatch):
    """Runs a test with the short forward where the kernel set has one
    (head dim 64, seqlen_k <= SHORT_FORWARD_MAX_SEQLEN_K), and again with
    FA_OPT_SHORT_FORWARD=0, so that the default forward is checked on the
    same small shapes."""
    if request.param == "default":
        monkeypatch.setenv("FA_OPT_SHORT_FORWARD", "0")
    else:
        monkeypatch.delenv("FA_OPT_SHORT_FORWARD", raising=False)
    return request.param


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d)[6:])
@pytest.mark.parametrize("causal", CAUSAL)
def test_forward_matches_float64(dtype, causal, forward_kind):
    q, k, v = rand(2, 3, 77, 64, dtype=dtype), rand(2, 3, 131, 64, dtype=dtype), \
        rand(2, 3, 131, 64, dtype=dtype)
    o, lse = fa_opt.attention(q, k, v, causal=causal, return_lse=True)
    ref_o, ref_lse = reference(q, k, v, causal)
    assert o.shape == (2, 3, 77, 64) and o.dtype == dtype
    assert lse.shape == (2, 3, 77) and lse.dtype == torch.float32
    assert rel(o, ref_o) < TOL[dtype]
    assert (lse.double() - ref_lse).abs().max().item() < 1e-3


@pytest.mark.parametrize("dtype", DTYPES[:2], ids=lambda d: str(d)[6:])
@pytest.mark.parametrize("causal", CAUSAL)
@pytest.mark.parametrize("tk", [SHORT_FORWARD_MAX_SEQLEN_K,
                                SHORT_FORWARD_MAX_SEQLEN_K + 1])
def test_short_forward_either_side_of_its_bound(dtype, causal, tk,
                                               monkeypatch):
    """Head dim 64: up to SHORT_FORWARD_MAX_SEQLEN_K keys the short forward
    (fa_opt.config.short_forward_options: 64-query tiles, one warpgroup
    per block) runs, past it the default one; both against float64 (Tq 300:
    a partial last tile of either)."""
    monkeypatch.delenv("FA_OPT_SHORT_FORWARD", raising=False)
    q = rand(2, 2, 300, 64, dtype=dtype)
    k, v = rand(2, 2, tk, 64, dtype=dtype), rand(2, 2, tk, 64, dtype=dtype)
    ks = ops._kernels(q, ops._checked(q, k, v, "test"), causal, None)
    launched = []
    real_launch = ops.launch
    monkeypatch.setattr(ops, "launch", lambda kernels, manifest, *rest: (
        launched.append(manifest), real_launch(kernels, manifest, *rest)))
    o, lse = fa_opt.attention(q, k, v, causal=causal, return_lse=True)
    short = tk <= SHORT_FORWARD_MAX_SEQLEN_K
    assert len(launched) == 1
    if ks.short_forward is None:  # a set compiled with shape options
        assert launched[0] is ks.forward
    else:
        assert launched[0] is (ks.short_forward[1] if short else ks.forward)
        assert (launched[0].block_m == 64) == short
    ref_o, ref_lse = reference(q, k, v, causal)
    assert rel(o, ref_o) < TOL[dtype]
    seen = torch.isfinite(ref_lse)
    assert torch.equal(torch.isfinite(lse), seen)
    assert (lse.double() - ref_lse)[seen].abs().max().item() < 1e-3


@pytest.mark.parametrize("head_dim,causal", [
    (128, "none"), (128, "top_left"), (64, "none"), (64, "top_left"),
    (64, "bottom_right")])
def test_more_query_tiles_than_resident_blocks(head_dim, causal,
                                              forward_kind):
    """More query tiles than the device holds blocks at once (4 x 12 x 1000
    queries: 384 tiles of 128 rows, 288 of 192, 768 of the short forward's
    64), so that a persistent
    kernel's blocks (fa-to-ptx persistent=true; tests/gpu_kernels.sh
    DIR --option persistent=true makes such a set) take several tiles each,
    across both Q buffers; bottom_right with Tq > Tk leaves the first tiles
    without keys (o = 0, lse = -inf there)."""
    tk = 600 if causal == "bottom_right" else 1000
    q = rand(4, 12, 1000, head_dim)
    k, v = rand(4, 12, tk, head_dim), rand(4, 12, tk, head_dim)
    o, lse = fa_opt.attention(q, k, v, causal=causal, return_lse=True)
    ref_o, ref_lse = reference(q, k, v, causal)
    assert rel(o, ref_o) < TOL[torch.bfloat16]
    seen = torch.isfinite(ref_lse)
    assert torch.equal(torch.isfinite(lse), seen)
    assert (lse.double() - ref_lse)[seen].abs().max().item() < 1e-3
    if causal == "bottom_right":
        assert not seen.all() and (o[~seen] == 0).all()


def test_fully_masked_rows_give_zero_and_minus_inf(forward_kind):
    # bottom_right with Tq > Tk: the first Tq - Tk rows see no key.
    q, k, v = rand(1, 2, 100, 64), rand(1, 2, 40, 64), rand(1, 2, 40, 64)
    o, lse = fa_opt.attention(q, k, v, causal="bottom_right", return_lse=True)
    assert torch.all(o[:, :, :60] == 0) and torch.all(lse[:, :, :60] == -math.inf)
    ref_o, _ = reference(q, k, v, "bottom_right")
    assert rel(o, ref_o) < TOL[torch.bfloat16]


def test_empty_sizes():
    q, k = rand(2, 3, 0, 64), rand(2, 3, 5, 64)
    assert fa_opt.attention(q, k, k).shape == (2, 3, 0, 64)
    q, k = rand(2, 3, 7, 64), rand(2, 3, 0, 64)
    o, lse = fa_opt.attention(q, k, k, return_lse=True)
    assert torch.all(o == 0) and torch.all(lse == -math.inf)


def test_other_head_dims_and_scale():
    q, k, v = rand(2, 4, 200, 128), rand(2, 4, 300, 128), rand(2, 4, 300, 128)
    assert rel(fa_opt.attention(q, k, v, causal=True),
               reference(q, k, v, "top_left")[0]) < TOL[torch.bfloat16]
    v32 = rand(2, 4, 300, 32)
    q64, k64 = rand(2, 4, 200, 64), rand(2, 4, 300, 64)
    o = fa_opt.attention(q64, k64, v32)
    assert o.shape == (2, 4, 200, 32)
    assert rel(o, reference(q64, k64, v32)[0]) < TOL[torch.bfloat16]
    f = [rand(3, 2, 65, 64, dtype=torch.float32) for _ in range(3)]
    assert rel(fa_opt.attention(*f, scale=0.3),
               reference(*f, scale=0.3)[0]) < TOL[torch.float32]


def _copies(fn):
    before = ops.copy_count
    out = fn()
    return out, ops.copy_count - before


def test_layouts_and_the_copy_rule():
    B, H, T, D = 2, 4, 96, 64
    # [B, H, T, D] contiguous: no copy.
    q, k, v = rand(B, H, T, D), rand(B, H, T, D), rand(B, H, T, D)
    ref = reference(q, k, v, "top_left")[0]
    o, n = _copies(lambda: fa_opt.attention(q, k, v, causal=True))
    assert n == 0 and rel(o, ref) < TOL[torch.bfloat16]
    # [B, T, H, D] memory seen as [B, H, T, D], B > 1: sB != H*sH -> copies.
    qt, kt, vt = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in (q, k, v))
    assert qt.stride() == (T * H * D, D, H * D, 1)
    o, n = _copies(lambda: fa_opt.attention(qt, kt, vt, causal=True))
    assert n == 3 and rel(o, ref) < TOL[torch.bfloat16]
    # The same layout with B == 1 flattens: no copy.
    q1, k1, v1 = (t[:1] for t in (qt, kt, vt))
    o, n = _copies(lambda: fa_opt.attention(q1, k1, v1, causal=True))
    assert n == 0 and rel(o, ref[:1]) < TOL[torch.bfloat16]
    # Slices along T of a longer KV cache, and storage offsets: no copy.
    cache_k, cache_v = rand(B, H, 4 * T, D), rand(B, H, 4 * T, D)
    ks, vs = cache_k[:, :, T:2 * T], cache_v[:, :, T:2 * T]
    o, n = _copies(lambda: fa_opt.attention(q, ks, vs))
    assert n == 0 and rel(o, reference(q, ks, vs)[0]) < TOL[torch.bfloat16]
    # Head-major memory permuted to [B, H, T, D]: copies.
    qp = q.permute(1, 0, 2, 3).contiguous().permute(1, 0, 2, 3)
    o, n = _copies(lambda: fa_opt.attention(qp, k, v))
    assert n == 1 and rel(o, reference(q, k, v)[0]) < TOL[torch.bfloat16]
    # A contiguous view at an odd storage offset (rows not 16-byte
    # aligned): copied into fresh storage, forward and backward.
    flat = rand(B * H * T * D + 1)
    qo = flat[1:].view(B, H, T, D).requires_grad_()
    assert qo.data_ptr() % 16 != 0
    o, n = _copies(lambda: fa_opt.attention(qo, k, v))
    assert n == 1 and rel(o, reference(qo, k, v)[0]) < TOL[torch.bfloat16]
    do = rand(B, H, T, D)
    dq, = torch.autograd.grad(o, (qo,), do)
    qd = qo.detach().double().requires_grad_()
    rq, = torch.autograd.grad(reference(qd, k.double(), v.double())[0],
                              (qd,), do.double())
    assert rel(dq, rq) < 3e-2
    # Rank 3 [N, T, D] and rank 5 batch dims.
    r3 = [rand(6, 50, 64) for _ in range(3)]
    assert rel(fa_opt.attention(*r3), reference(*r3)[0]) < TOL[torch.bfloat16]
    r5 = [rand(2, 2, 3, 50, 64) for _ in range(3)]
    assert rel(fa_opt.attention(*r5), reference(*r5)[0]) < TOL[torch.bfloat16]


def test_validation_on_cuda_tensors():
    q = rand(2, 4, 16, 64)
    with pytest.raises(RuntimeError, match="same dtype"):
        fa_opt.attention(q, q.half(), q)
    with pytest.raises(RuntimeError, match="to be on a CUDA device"):
        fa_opt.attention(q, q.cpu(), q)
    with pytest.raises(RuntimeError, match="stride\\(-1\\): 2"):
        fa_opt.attention(rand(2, 4, 16, 128)[..., ::2], q, q)
    with pytest.raises(RuntimeError, match="same head dim"):
        fa_opt.attention(q, rand(2, 4, 16, 32), q)


def test_sdpa_drop_in():
    F = torch.nn.functional
    q, k, v = rand(2, 8, 128, 64), rand(2, 8, 128, 64), rand(2, 8, 128, 64)
    for causal in (False, True):
        ours = fa_opt.scaled_dot_product_attention(q, k, v, is_causal=causal)
        theirs = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        ref = reference(q, k, v, "top_left" if causal else "none")[0]
        assert rel(ours, ref) <= max(2 * rel(theirs, ref), 1e-3)
    with pytest.raises(NotImplementedError, match="attn_mask"):
        fa_opt.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(128, 128, dtype=torch.bool, device="cuda"))
    with pytest.raises(NotImplementedError, match="dropout_p=0.5"):
        fa_opt.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    with pytest.raises(NotImplementedError, match="enable_gqa"):
        fa_opt.scaled_dot_product_attention(q, k[:, :2], v[:, :2], enable_gqa=True)


def test_current_stream_and_cuda_graph():
    q, k, v = rand(2, 4, 256, 64), rand(2, 4, 256, 64), rand(2, 4, 256, 64)
    ref = reference(q, k, v, "top_left")[0]
    fa_opt.attention(q, k, v, causal=True)  # load the module outside capture
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        o = fa_opt.attention(q, k, v, causal=True)
    torch.cuda.current_stream().wait_stream(side)
    assert rel(o, ref) < TOL[torch.bfloat16]
    # No host synchronization on the launch path: it captures into a graph.
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        og = fa_opt.attention(q, k, v, causal=True)
    q.copy_(rand(2, 4, 256, 64))
    graph.replay()
    torch.cuda.synchronize()
    assert rel(og, reference(q, k, v, "top_left")[0]) < TOL[torch.bfloat16]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "f32"])
@pytest.mark.parametrize("causal", CAUSAL)
def test_backward(dtype, causal):
    q, k, v = (rand(2, 3, n, 64, dtype=dtype).requires_grad_() for n in (77, 131, 131))
    do = rand(2, 3, 77, 64, dtype=dtype)
    o = fa_opt.attention(q, k, v, causal=causal)
    dq, dk, dv = grads_or_skip(o, (q, k, v), do)
    qd, kd, vd = (t.detach().double().requires_grad_() for t in (q, k, v))
    ref_o, _ = reference(qd, kd, vd, causal)
    rq, rk, rv = torch.autograd.grad(ref_o, (qd, kd, vd), do.double())
    tol = 1e-4 if dtype == torch.float32 else 3e-2
    for name, ours, ref in (("dq", dq, rq), ("dk", dk, rk), ("dv", dv, rv)):
        assert ours.dtype == dtype and ours.shape == ref.shape
        assert rel(ours, ref) < tol, name


def test_backward_keys_past_seqlen_k_add_nothing_to_dq():
    """A ragged seqlen_k (300: the last 128-key block is partly past Tk) with
    strongly negative scores (lse about -26): the keys past Tk, whose K/V
    rows load as zeros, must be hidden. Unmasked, their probability is
    exp(-lse) (S = 0), about 2.6e11, and their dS overflowed f16; inf times
    the zero K rows made dq NaN in the sm_90a backward with dq atomics."""
    torch.manual_seed(0)
    shape = (1, 2, 64, 64)
    q = (-4 + 0.1 * torch.randn(*shape, device="cuda")).half().requires_grad_()
    k = (1 + 0.1 * torch.randn(1, 2, 300, 64, device="cuda")).half().requires_grad_()
    v = rand(1, 2, 300, 64, dtype=torch.float16).requires_grad_()
    do = rand(*shape, dtype=torch.float16)
    o = fa_opt.attention(q, k, v)
    dq, dk, dv = grads_or_skip(o, (q, k, v), do)
    qd, kd, vd = (t.detach().double().requires_grad_() for t in (q, k, v))
    ref_o, ref_lse = reference(qd, kd, vd)
    assert ref_lse.max().item() < -20
    rq, rk, rv = torch.autograd.grad(ref_o, (qd, kd, vd), do.double())
    for name, ours, ref in (("dq", dq, rq), ("dk", dk, rk), ("dv", dv, rv)):
        assert torch.isfinite(ours).all(), name
        assert rel(ours, ref) < 3e-2, name


def test_backward_under_torch_deterministic_algorithms():
    """Under torch.use_deterministic_algorithms(True) the backward takes
    kernels whose manifest says `deterministic 1` (compiled with
    deterministic=true where the default adds dq with atomics): the
    gradients are bitwise identical across runs and right against
    float64."""
    q, k, v = (rand(2, 3, 300, 64).requires_grad_() for _ in range(3))
    do = rand(2, 3, 300, 64)
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        runs = [torch.autograd.grad(fa_opt.attention(q, k, v, causal=True),
                                    (q, k, v), do) for _ in range(2)]
    except NotImplementedError as err:
        assert "backward is not available" in str(err)
        pytest.skip(f"no backward kernels: {err}")
    except RuntimeError as err:
        if "no deterministic backward could be had" not in str(err):
            raise
        pytest.skip(f"no deterministic backward kernels: {err}")
    finally:
        torch.use_deterministic_algorithms(was)
    ks = ops._kernels(q, ops.check_inputs(q, k, v), "top_left", None,
                      deterministic=True)
    assert ks.backward.deterministic
    for name, a, b in zip(("dq", "dk", "dv"), *runs):
        assert torch.equal(a, b), name
    qd, kd, vd = (t.detach().double().requires_grad_() for t in (q, k, v))
    ref_o, _ = reference(qd, kd, vd, "top_left")
    refs = torch.autograd.grad(ref_o, (qd, kd, vd), do.double())
    for name, ours, ref in zip(("dq", "dk", "dv"), runs[0], refs):
        assert rel(ours, ref) < 3e-2, name


def _grads_vs_float64(leaves, make, do, causal):
    """fa_opt's gradients of ``leaves`` through ``make(*leaves) -> (q, k,
    v)`` against float64 autograd through the same ``make``; returns the
    copies fa_opt made."""
    before = ops.copy_count
    o = fa_opt.attention(*make(*leaves), causal=causal)
    grads = grads_or_skip(o, leaves, do)
    copies = ops.copy_count - before
    doubles = [t.detach().double().requires_grad_() for t in leaves]
    ref_o, _ = reference(*make(*doubles), causal)
    refs = torch.autograd.grad(ref_o, doubles, do.double())
    for name, ours, ref in zip(("q", "k", "v"), grads, refs):
        assert ours.shape == ref.shape
        assert rel(ours, ref) < 3e-2, f"d{name}"
    return copies


def test_backward_views_chunks_and_tensor_maps():
    """The backward on views passed without copies (their strides go into
    the memrefs and, for the sm_90a TMA kernels of a version 4 backward
    manifest, into the tensor maps of q, k, v, do), and on a batch over
    65535 (launched in chunks, each with its own maps)."""
    H, T, D = 4, 200, 64
    # [1, T, H, D] memory seen as [1, H, T, D]: batch stride D, row H*D.
    leaves = [rand(1, T, H, D).requires_grad_() for _ in range(3)]
    do = rand(1, T, H, D).transpose(1, 2)

    def transposed(*ts):
        return [t.transpose(1, 2) for t in ts]
    q, k, v = transposed(*leaves)
    assert q.stride() == (T * H * D, D, H * D, 1) == do.stride()
    assert _grads_vs_float64(leaves, transposed, do, "top_left") == 0
    ks = ops._kernels(q, ops.check_inputs(q, k, v), "top_left", None)
    if ks.backward is not None and ks.backward.version == 4:
        # Kernel names end in _attention_backward_<n>_<kernel>: delta, dkdv
        # and dq, or with dq atomics (the default) dq_convert, no maps.
        maps = {m.kernel.split("_attention_backward_")[-1].split("_", 1)[-1]:
                [t.operand for t in m.tensor_maps]
                for m in ks.backward.kernels}
        assert maps.get("dkdv"), maps
        if ks.backward.deterministic:
            assert maps.get("dq"), maps
        else:
            assert maps.get("dq_convert") == [], maps
    # k/v heads broadcast with stride 0 (batch 1).
    leaves = [rand(1, H, T, D).requires_grad_(),
              rand(1, 1, T, D).requires_grad_(),
              rand(1, 1, T, D).requires_grad_()]

    def broadcast(q, k, v):
        return q, k.expand(1, H, T, D), v.expand(1, H, T, D)
    assert _grads_vs_float64(leaves, broadcast, rand(1, H, T, D), "none") == 0
    # 65540 batches of 24 x 64: two chunks (grid y <= 65535).
    leaves = [rand(65540, 24, 64).requires_grad_() for _ in range(3)]
    _grads_vs_float64(leaves, lambda *ts: ts, rand(65540, 24, 64),
                      "bottom_right")


def test_repeated_calls_reuse_nothing_stale():
    """The per-call memos (input checks, views, config, prepared launch)
    are keyed by all they read: calls that alternate tensors of one shape,
    a strided view of the same shape, new data in place and another causal
    mode each give their own float64-matching result; a bad call raises
    every time."""
    from fa_opt import runtime
    q, k, v = (rand(2, 3, 200, 64) for _ in range(3))
    q2 = rand(2, 3, 200, 64)
    kt = rand(2, 200, 3, 64).transpose(1, 2)  # [B, H, T, D] view of [B, T, H, D]
    cases = [(q, k, v, "none"), (q2, k, v, "none"), (q, kt, v, "none"),
             (q, k, v, "top_left"), (q, k, v, "none")]
    for qq, kk, vv, causal in cases:
        o = fa_opt.attention(qq, kk, vv, causal=causal)
        assert rel(o, reference(qq, kk, vv, causal)[0]) < TOL[torch.bfloat16]
    k.copy_(rand(2, 3, 200, 64))  # same pointer, new values
    o = fa_opt.attention(q, k, v)
    assert rel(o, reference(q, k, v)[0]) < TOL[torch.bfloat16]
    assert 0 < len(runtime._plans) <= runtime._plans.limit
    for _ in range(2):
        with pytest.raises(ValueError, match="same head dim"):
            fa_opt.attention(q, rand(2, 3, 200, 32), v)


@pytest.mark.parametrize("head_dim,causal,layout", [
    (128, "none", "bhtd"), (64, "top_left", "bhtd"), (128, "none", "bthd")])
def test_32_bit_index_kernels_split_large_batches(head_dim, causal, layout):
    """The sm_90a forward kernels at head dim 128, and at 64 with a causal
    mask, are compiled with 32-bit indices (index_bits 32): q, k, v and o
    of 2^31 elements or more go in batch chunks whose offsets fit in 32
    bits (fa_opt.runtime.batch_chunk). Here 2.25e9 elements each (4.5 GB
    in bf16); batches at both ends and across a chunk boundary are checked
    against float64. A [1, T, H, D] layout (one flattened batch entry spans
    them all) is copied to a contiguous one, o allocated contiguous."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the 32-bit index kernels are the sm_90a defaults")
    if torch.cuda.mem_get_info()[0] < 40 * 2**30:
        pytest.skip("needs 40 GiB of free GPU memory")
    t = 16384
    heads = (2**31 // (t * head_dim)) * 17 // 16
    if layout == "bhtd":
        q, k, v = (rand(1, heads, t, head_dim) for _ in range(3))
    else:
        q, k, v = (rand(1, t, heads, head_dim).transpose(1, 2)
                   for _ in range(3))
    assert q.numel() >= 2**31
    o = fa_opt.attention(q, k, v, causal=causal)
    # The first chunk holds 2^31 / (t * head_dim) - 1 batches (fewer than
    # 2^31 elements): batch `first` starts the second.
    first = 2**31 // (t * head_dim) - 1
    for h in (0, first - 1, first, heads - 1):
        ref_o, _ = reference(q[:, h], k[:, h], v[:, h], causal)
        assert rel(o[:, h], ref_o) < TOL[torch.bfloat16], h
    del q, k, v, o
    torch.cuda.empty_cache()


@pytest.mark.parametrize("head_dim,causal", [(128, "none"), (64, "top_left")])
def test_32_bit_index_backward_splits_large_batches(head_dim, causal):
    """The sm_90a TMA backward kernels are compiled with 32-bit indices
    (index_bits 32 in the backward manifest): q, k, v, o, do, dq, dk, dv
    and the f32 dq_accum scratch of 2^31 elements or more go in batch
    chunks whose offsets fit in 32 bits, each of the three kernels over
    every chunk. Here 2.28e9 elements each; the gradients of batches at
    both ends and across a chunk boundary are checked against float64."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the 32-bit index kernels are the sm_90a defaults")
    if torch.cuda.mem_get_info()[0] < 64 * 2**30:
        pytest.skip("needs 64 GiB of free GPU memory")
    t = 4096
    step = 2**31 // (t * head_dim)
    heads = step * 17 // 16
    q, k, v = (rand(1, heads, t, head_dim).requires_grad_() for _ in range(3))
    do = rand(1, heads, t, head_dim)
    assert q.numel() >= 2**31
    o = fa_opt.attention(q, k, v, causal=causal)
    dq, dk, dv = grads_or_skip(o, (q, k, v), do)
    ks = ops._kernels(q, ops.check_inputs(q, k, v), causal, None)
    assert ks.backward is not None
    assert all(m.index_bits == 32 for m in ks.backward.kernels)
    del o
    # The first chunk holds step - 1 batches (fewer than 2^31 elements):
    # batch step - 1 starts the second.
    for h in (0, step - 2, step - 1, heads - 1):
        leaves = [x[:, h].detach().double().requires_grad_()
                  for x in (q, k, v)]
        ref_o, _ = reference(*leaves, causal)
        refs = torch.autograd.grad(ref_o, leaves, do[:, h].double())
        for name, ours, ref in zip(("dq", "dk", "dv"), (dq, dk, dv), refs):
            assert rel(ours[:, h], ref) < 3e-2, (name, h)
    del q, k, v, do, dq, dk, dv
    torch.cuda.empty_cache()
