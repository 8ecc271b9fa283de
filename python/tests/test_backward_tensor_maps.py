"""Backward manifests with TMA tensor maps (version 4) without a GPU: the
`tensor_map` lines of kernel sections and every rule of theirs, the encode
arguments of a backward kernel's maps (fa_opt.runtime.tensor_maps_for on a
kernel view), and fa_opt.runtime.launch passing them per batch chunk."""

import pytest

from fa_opt import runtime
from fa_opt.layout import TensorMapArgs
from fa_opt.manifest import (BackwardManifest, ManifestError, TensorMap,
                             parse_any_manifest, parse_backward_manifest)
from fa_opt.runtime import KernelSet, launch, tensor_maps_for

from test_manifest import BACKWARD

# The deterministic tensor-core backward on sm_90a as fa-to-ptx will write
# it with TMA loads: _delta without maps, _dkdv and _dq with maps of q, k,
# v, do. The header is test_manifest's BACKWARD's with head_dim_v 32, so
# that do's D is not q's.
V4 = (BACKWARD[:BACKWARD.index("scratch ")]
      .replace("version 2", "version 4")
      .replace("head_dim_v 64", "head_dim_v 32")
      .replace("deterministic 0", "deterministic 1") + """\
row_align 16
scratch delta f32 batch seqlen_q
kernel bwd_attention_backward_0_delta
threads 128
block_m 32
shared_bytes 0
params o do delta
grid ceil_div(seqlen_q,block_m) batch 1
kernel bwd_attention_backward_0_dkdv
threads 256
block_m 64
block_n 128
shared_bytes 99999
params q k v do lse delta dk dv
tensor_map q 64 64 128
tensor_map k 64 128 128
tensor_map v 32 128 64
tensor_map do 32 64 64
grid ceil_div(seqlen_k,block_n) batch 1
kernel bwd_attention_backward_0_dq
threads 256
block_m 128
block_n 128
shared_bytes 99999
params q k v do lse delta dq
tensor_map q 64 128 128
tensor_map k 64 128 none
tensor_map do 32 128 64
grid ceil_div(seqlen_q,block_m) batch 1
""")


def line_of(text, needle, nth=1):
    """The 1-based number of the nth line of text that starts with needle."""
    hits = [i for i, line in enumerate(text.split("\n"), 1)
            if line.startswith(needle)]
    return hits[nth - 1]


def test_version_4_maps_per_section(tmp_path):
    path = str(tmp_path / "b.manifest")
    m = parse_any_manifest(V4, path)
    assert isinstance(m, BackwardManifest) and m.version == 4
    delta, dkdv, dq = m.kernels
    assert delta.tensor_maps == []
    q1 = line_of(V4, "tensor_map q")
    assert dkdv.tensor_maps == [TensorMap("q", 64, 64, 128, q1),
                                TensorMap("k", 64, 128, 128, q1 + 1),
                                TensorMap("v", 32, 128, 64, q1 + 2),
                                TensorMap("do", 32, 64, 64, q1 + 3)]
    q2 = line_of(V4, "tensor_map q", 2)
    assert dq.tensor_maps == [TensorMap("q", 64, 128, 128, q2),
                              TensorMap("k", 64, 128, 0, q2 + 1),
                              TensorMap("do", 32, 128, 64, q2 + 2)]
    # The sections' other keys read as in version 2.
    assert dkdv.params == "q k v do lse delta dk dv".split()
    assert dkdv.grid_for(3, 1000, 300) == (3, 3, 1)
    assert all(k.version == 4 and k.do_dtype == "bf16" for k in m.kernels)
    # Version 2 (no map) still reads, and reads none.
    v2 = V4.replace("version 4", "version 2")
    v2 = "\n".join(line for line in v2.split("\n")
                   if not line.startswith("tensor_map"))
    assert all(k.tensor_maps == [] for k in parse_any_manifest(v2).kernels)
    # A comment after a line, and a line after grid, are fine.
    text = V4.replace("tensor_map k 64 128 none",
                      "tensor_map k 64 128 none  # no swizzle")
    assert parse_backward_manifest(text).kernels[2].tensor_maps[1].swizzle == 0
    moved = V4.replace("tensor_map do 32 128 64\n", "").replace(
        "grid ceil_div(seqlen_q,block_m) batch 1\n",
        "grid ceil_div(seqlen_q,block_m) batch 1\ntensor_map do 32 128 64\n")
    assert [t.operand for t in parse_backward_manifest(moved).kernels[2]
            .tensor_maps] == ["q", "k", "do"]


def test_do_takes_do_dtype_and_head_dim_v():
    """do's box is checked against do_dtype (not dtype) and head_dim_v."""
    f32 = V4.replace("do_dtype bf16", "do_dtype f32")
    with pytest.raises(ManifestError) as info:
        parse_backward_manifest(f32, "x.manifest")
    assert str(info.value) == (
        f"x.manifest:{line_of(V4, 'tensor_map do')}: tensor_map 'do': "
        f"BOX_COLS 32 x 4 bytes (f32) = 128 bytes exceeds the 64-byte "
        f"swizzle span")
    ok = f32.replace("tensor_map do 32 64 64", "tensor_map do 16 64 64") \
        .replace("tensor_map do 32 128 64", "tensor_map do 32 128 128")
    m = parse_backward_manifest(ok)
    assert m.do_dtype == "f32" and m.kernels[1].do_dtype == "f32"
    with pytest.raises(ManifestError, match="tensor_map 'do': BOX_COLS 64 "
                       "exceeds head_dim_v 32"):
        parse_backward_manifest(V4.replace("tensor_map do 32 64 64",
                                           "tensor_map do 64 64 128"))
    with pytest.raises(ManifestError, match="tensor_map 'k': BOX_COLS 12 x 2 "
                       "bytes \\(bf16\\) = 24 bytes is not a multiple of 16"):
        parse_backward_manifest(V4.replace("tensor_map k 64 128 128",
                                           "tensor_map k 12 128 none"))


def _error(text):
    with pytest.raises(ManifestError) as info:
        parse_any_manifest(text, "x.manifest")
    return str(info.value)


def test_version_rules():
    q1 = line_of(V4, "tensor_map q")
    assert _error(V4.replace("version 4", "version 2")) == (
        f"x.manifest:{q1}: tensor_map needs manifest version 4 (this "
        f"backward manifest is version 2)")
    no_maps = "\n".join(line for line in V4.split("\n")
                        if not line.startswith("tensor_map"))
    assert _error(no_maps) == (
        "x.manifest:2: backward manifest version 4 needs at least one "
        "'tensor_map' line in a kernel section (version 2 is the format "
        "without tensor maps)")
    # Another version of an attention_backward manifest: the backward
    # reader says which it knows (through either entry point).
    for version in ("1", "3", "5"):
        text = V4.replace("version 4", f"version {version}")
        want = (f"x.manifest:2: unsupported backward manifest version "
                f"{version} (this reader knows 1 and 3 forward and 2 and 4 "
                f"attention_backward manifests)")
        if version == "5":
            assert _error(text) == want
        with pytest.raises(ManifestError) as info:
            parse_backward_manifest(text, "x.manifest")
        assert str(info.value) == want


def _in_dkdv(lines):
    """V4 with the tensor_map lines of _dkdv replaced by ``lines``."""
    old = ("tensor_map q 64 64 128\ntensor_map k 64 128 128\n"
           "tensor_map v 32 128 64\ntensor_map do 32 64 64\n")
    assert old in V4
    return V4.replace(old, lines)


Q1 = line_of(V4, "tensor_map q")


@pytest.mark.parametrize("text,message", [
    # In the header, before any kernel section.
    (V4.replace("scratch delta", "tensor_map q 64 64 128\nscratch delta"),
     f"x.manifest:{line_of(V4, 'scratch delta')}: 'tensor_map' outside a "
     f"kernel section (a tensor map belongs to the kernel that takes it: "
     f"after its 'params' line)"),
    # Not an operand a backward kernel maps.
    (_in_dkdv("tensor_map q 64 64 128\ntensor_map o 32 64 none\n"),
     f"x.manifest:{Q1 + 1}: invalid value 'o' for 'tensor_map' OPERAND: "
     f"expected q, k, v, do or dq_accum"),
    (_in_dkdv("tensor_map dk 64 64 128\n"),
     f"x.manifest:{Q1}: invalid value 'dk' for 'tensor_map' OPERAND: "
     f"expected q, k, v, do or dq_accum"),
    # Not in the section's params (_delta takes no q).
    (V4.replace("params o do delta\n",
                "params o do delta\ntensor_map do 32 32 64\n"
                "tensor_map q 64 32 128\n"),
     f"x.manifest:{line_of(V4, 'params o do delta') + 2}: tensor_map for "
     f"'q', which is not in the params of kernel "
     f"'bwd_attention_backward_0_delta'"),
    # (reported before an order error of the same section, as the C++
    # runtime does)
    (V4.replace("params o do delta\n",
                "params o do delta\ntensor_map q 64 32 128\n"
                "tensor_map do 32 32 64\n"),
     f"x.manifest:{line_of(V4, 'params o do delta') + 1}: tensor_map for "
     f"'q', which is not in the params of kernel "
     f"'bwd_attention_backward_0_delta'"),
    # Out of params order.
    (_in_dkdv("tensor_map k 64 128 128\ntensor_map q 64 64 128\n"),
     f"x.manifest:{Q1 + 1}: tensor_map for 'q' after the one for 'k' (line "
     f"{Q1}): tensor_map lines must be in the order of the params of kernel "
     f"'bwd_attention_backward_0_dkdv'"),
    (_in_dkdv("tensor_map do 32 64 64\ntensor_map v 32 128 64\n"),
     f"x.manifest:{Q1 + 1}: tensor_map for 'v' after the one for 'do' "
     f"(line {Q1}): tensor_map lines must be in the order of the params of "
     f"kernel 'bwd_attention_backward_0_dkdv'"),
    # Duplicate in one section.
    (_in_dkdv("tensor_map q 64 64 128\ntensor_map k 64 128 128\n"
              "tensor_map q 64 64 128\n"),
     f"x.manifest:{Q1 + 2}: duplicate tensor_map for 'q' in kernel "
     f"'bwd_attention_backward_0_dkdv' (first on line {Q1})"),
    # The forward's line rules hold too.
    (_in_dkdv("tensor_map q 64 64\n"),
     f"x.manifest:{Q1}: expected 4 values for 'tensor_map' (OPERAND "
     f"BOX_COLS BOX_ROWS SWIZZLE), got 3"),
    (_in_dkdv("tensor_map q 64 257 128\n"),
     f"x.manifest:{Q1}: invalid value '257' for 'tensor_map' BOX_ROWS: "
     f"expected an integer in [1, 256]"),
    (_in_dkdv("tensor_map q 64 64 16\n"),
     f"x.manifest:{Q1}: invalid value '16' for 'tensor_map' SWIZZLE: "
     f"expected none, 32, 64 or 128"),
    (_in_dkdv("tensor_map q 72 64 none\n"),
     f"x.manifest:{Q1}: tensor_map 'q': BOX_COLS 72 exceeds head_dim 64"),
])
def test_malformed_tensor_maps(text, message):
    """Each rule, the file and line first."""
    assert _error(text) == message


def test_the_same_operand_in_two_sections_is_no_duplicate():
    m = parse_backward_manifest(V4)
    assert [t.operand for t in m.kernels[1].tensor_maps][:2] == \
        [t.operand for t in m.kernels[2].tensor_maps][:2] == ["q", "k"]


# --- encode arguments and launch --------------------------------------------

def contiguous(sizes):
    return [sizes[1] * sizes[2], sizes[2], 1]


def backward_tensors(batch, tq, tk, do_esize=2):
    """_run_backward's tensors: (ptr, sizes, strides, element size)."""
    shapes = {"q": ([batch, tq, 64], 2), "k": ([batch, tk, 64], 2),
              "v": ([batch, tk, 32], 2), "do": ([batch, tq, 32], do_esize),
              "dk": ([batch, tk, 64], 2), "dv": ([batch, tk, 32], 2),
              "dq": ([batch, tq, 64], 2), "o": ([batch, tq, 32], 2)}
    out = {n: (0x10000 * (i + 1), s, contiguous(s), e)
           for i, (n, (s, e)) in enumerate(shapes.items())}
    out["lse"] = (0x90000, [batch, tq], [tq, 1], 4)
    out["delta"] = (0xa0000, [batch, tq], [tq, 1], 4)
    return out


def test_encode_args_of_a_backward_kernel():
    m = parse_backward_manifest(V4)
    dkdv, dq = m.kernels[1], m.kernels[2]
    t = backward_tensors(6, 100, 7)
    # dims (D, T, batch) innermost first; strides (row, batch) in bytes;
    # box (BOX_COLS, BOX_ROWS, 1); do's D is head_dim_v, its T seqlen_q.
    assert tensor_maps_for(dkdv, t) == [
        TensorMapArgs("q", "bf16", 0x10000, (64, 100, 6), (128, 12800),
                      (64, 64, 1), (1, 1, 1), 128),
        TensorMapArgs("k", "bf16", 0x20000, (64, 7, 6), (128, 896),
                      (64, 128, 1), (1, 1, 1), 128),
        TensorMapArgs("v", "bf16", 0x30000, (32, 7, 6), (64, 448),
                      (32, 128, 1), (1, 1, 1), 64),
        TensorMapArgs("do", "bf16", 0x40000, (32, 100, 6), (64, 6400),
                      (32, 64, 1), (1, 1, 1), 64)]
    assert [(a.operand, a.box_dim, a.swizzle)
            for a in tensor_maps_for(dq, t)] == [
        ("q", (64, 128, 1), 128), ("k", (64, 128, 1), 0),
        ("do", (32, 128, 1), 64)]
    assert tensor_maps_for(m.kernels[0], t) == []


# The dq-atomics backward with TMA reductions: _dkdv adds dq through a map
# of the f32 dq_accum scratch (the section's last), _dq_convert has none.
V4_ATOMIC = (V4.replace("deterministic 1", "deterministic 0")
             .replace("scratch delta f32 batch seqlen_q\n",
                      "scratch delta f32 batch seqlen_q\n"
                      "scratch dq_accum f32 batch seqlen_q head_dim\n")
             .replace("params o do delta\n", "params o do delta dq_accum\n")
             .replace("params q k v do lse delta dk dv\n",
                      "params q k v do lse delta dk dv dq_accum\n")
             .replace("tensor_map do 32 64 64\n",
                      "tensor_map do 32 64 64\n"
                      "tensor_map dq_accum 32 16 128\n"))
V4_ATOMIC = V4_ATOMIC[:V4_ATOMIC.index("kernel bwd_attention_backward_0_dq\n")] \
    + """kernel bwd_attention_backward_0_dq_convert
threads 128
block_m 16
shared_bytes 0
params dq_accum dq
grid ceil_div(seqlen_q,block_m) batch 1
"""


def test_dq_accum_map_is_f32_over_query_rows():
    m = parse_backward_manifest(V4_ATOMIC)
    dkdv = m.kernels[1]
    assert [tm.operand for tm in dkdv.tensor_maps] == [
        "q", "k", "v", "do", "dq_accum"]
    t = backward_tensors(6, 100, 7)
    t["dq_accum"] = (0xb0000, [6, 100, 64], contiguous([6, 100, 64]), 4)
    # f32 whatever q's type: rows of 64 x 4 bytes, seqlen_q rows.
    assert tensor_maps_for(dkdv, t)[4] == TensorMapArgs(
        "dq_accum", "f32", 0xb0000, (64, 100, 6), (256, 25600),
        (32, 16, 1), (1, 1, 1), 128)
    assert tensor_maps_for(m.kernels[2], t) == []
    # The producer _dkdv's unswizzled boxes: 64 f32 (256 bytes) x 64 rows,
    # one warpgroup's (no swizzle span to exceed).
    wide = parse_backward_manifest(V4_ATOMIC.replace(
        "tensor_map dq_accum 32 16 128", "tensor_map dq_accum 64 64 none"))
    assert tensor_maps_for(wide.kernels[1], t)[4] == TensorMapArgs(
        "dq_accum", "f32", 0xb0000, (64, 100, 6), (256, 25600),
        (64, 64, 1), (1, 1, 1), 0)
    # 64 f32 a box row (256 bytes) exceed the 128-byte swizzle span.
    with pytest.raises(ManifestError, match="tensor_map 'dq_accum': BOX_COLS "
                       r"64 x 4 bytes \(f32\) = 256 bytes exceeds the "
                       "128-byte swizzle span"):
        parse_backward_manifest(V4_ATOMIC.replace(
            "tensor_map dq_accum 32 16 128", "tensor_map dq_accum 64 16 128"))


def test_do_maps_take_do_dtype():
    text = V4.replace("do_dtype bf16", "do_dtype f32") \
        .replace("tensor_map do 32 64 64", "tensor_map do 16 64 64") \
        .replace("tensor_map do 32 128 64", "tensor_map do 32 128 128")
    dkdv = parse_backward_manifest(text).kernels[1]
    do = tensor_maps_for(dkdv, backward_tensors(2, 10, 20, do_esize=4))[3]
    assert do == TensorMapArgs("do", "f32", 0x40000, (32, 10, 2), (128, 1280),
                               (16, 64, 1), (1, 1, 1), 64)
    f16 = parse_backward_manifest(text.replace("dtype bf16\n",
                                               "dtype f16\n", 1)).kernels[2]
    assert [a.dtype for a in tensor_maps_for(
        f16, backward_tensors(2, 10, 20, do_esize=4))] == ["f16", "f16", "f32"]


def test_views_and_chunks():
    """Views keep their strides (a [1, T, H, D] layout seen as [1, H, T, D],
    k/v heads broadcast with stride 0), and a chunk's maps start at its
    first batch and span its batches."""
    dkdv = parse_backward_manifest(V4).kernels[1]
    h, tq, tk = 8, 100, 40
    t = backward_tensors(h, tq, tk)
    t["q"] = (0x10000, [h, tq, 64], [64, h * 64, 1], 2)
    t["k"] = (0x20000, [h, tk, 64], [0, 64, 1], 2)
    got = tensor_maps_for(dkdv, t)
    assert got[0].global_strides == (h * 64 * 2, 64 * 2)
    assert got[1].global_strides == (128, 0)
    batch, start, chunk = 70000, 65535, 4465
    t = backward_tensors(batch, tq, tk)
    got = tensor_maps_for(dkdv, t, start=start, chunk=chunk)
    assert [(a.operand, a.address, a.global_dim[2]) for a in got] == [
        ("q", 0x10000 + start * tq * 64 * 2, chunk),
        ("k", 0x20000 + start * tk * 64 * 2, chunk),
        ("v", 0x30000 + start * tk * 32 * 2, chunk),
        ("do", 0x40000 + start * tq * 32 * 2, chunk)]


class _Recorder:
    """Stands in for a loaded kernel: records each prepared launch and
    each launch of one."""

    def __init__(self):
        self.launches = []
        self.prepared = 0

    def prepare(self, grid, block, params, tensor_maps=()):
        self.prepared += 1
        return (grid, block, list(params), list(tensor_maps))

    def launch_prepared(self, prepared, stream):
        self.launches.append(prepared)


@pytest.fixture(autouse=True)
def _fresh_launch_cache():
    """Every test starts without cached launches (prepare counts are
    asserted)."""
    runtime.clear_launch_cache()
    yield
    runtime.clear_launch_cache()


def test_launch_passes_each_kernels_maps_per_chunk(monkeypatch):
    """runtime.launch, as ops._run_backward calls it for each kernel of the
    backward manifest: memref params, then that kernel's maps, for every
    batch chunk (grid y <= 65535)."""
    m = parse_backward_manifest(V4)
    recorders = {}

    def function(self, manifest, device):
        return recorders.setdefault(manifest.kernel, _Recorder())

    monkeypatch.setattr(KernelSet, "function", function)
    ks = KernelSet(config=None, forward=None, backward=m)
    batch, tq, tk = 70000, 100, 40
    t = backward_tensors(batch, tq, tk)
    for kernel in m.kernels:
        launch(ks, kernel, 0, t, batch, tq, tk, stream=5)
    delta, dkdv, dq = (recorders[k.kernel].launches for k in m.kernels)
    assert [len(x) for x in (delta, dkdv, dq)] == [2, 2, 2]
    assert all(maps == [] for *_, maps in delta)
    for launches, kernel in ((dkdv, m.kernels[1]), (dq, m.kernels[2])):
        assert [g[1] for g, *_ in launches] == [65535, 4465]
        for (_, _, params, maps), (start, chunk) in zip(
                launches, ((0, 65535), (65535, 4465))):
            assert maps == tensor_maps_for(kernel, t, start, chunk)
            # 2 + 1 + 2R values per memref: rank 3 for q..dv, 2 for lse.
            assert len(params) == sum(9 if n not in ("lse", "delta") else 7
                                      for n in kernel.params)
            assert params[0] == 0x10000 + start * tq * 64 * 2
    assert runtime.MAX_GRID_Y == 65535


def test_repeated_launch_prepares_once(monkeypatch):
    """A launch on the tensors and sizes of an earlier one reuses its
    packed arguments; a moved tensor, other sizes or another kernel
    prepare again; the cache keeps at most its limit of launches."""
    m = parse_backward_manifest(V4)
    rec = _Recorder()
    monkeypatch.setattr(KernelSet, "function", lambda self, man, dev: rec)
    ks = KernelSet(config=None, forward=None, backward=m)
    dkdv = m.kernels[1]
    t = backward_tensors(3, 100, 40)
    for _ in range(3):
        launch(ks, dkdv, 0, t, 3, 100, 40, stream=5)
    assert rec.prepared == 1 and len(rec.launches) == 3
    assert rec.launches[2] == rec.launches[0]
    moved = dict(t, k=(t["k"][0] + 4096, *t["k"][1:]))
    launch(ks, dkdv, 0, moved, 3, 100, 40, stream=5)
    assert rec.prepared == 2
    assert rec.launches[3][3] == tensor_maps_for(dkdv, moved)
    assert rec.launches[3][3] != rec.launches[0][3]
    launch(ks, m.kernels[2], 0, t, 3, 100, 40, stream=5)
    launch(ks, dkdv, 1, t, 3, 100, 40, stream=5)
    assert rec.prepared == 4
    monkeypatch.setattr(runtime._plans, "limit", 2)
    runtime.clear_launch_cache()
    for k in (0x1000, 0x2000, 0x3000):
        launch(ks, dkdv, 0, dict(t, k=(k, *t["k"][1:])), 3, 100, 40, stream=5)
    assert len(runtime._plans) == 2
    launch(ks, dkdv, 0, dict(t, k=(0x1000, *t["k"][1:])), 3, 100, 40,
           stream=5)
    assert rec.prepared == 8


def test_cached_launches_equal_fresh_ones(monkeypatch):
    """Random calls over small pools of pointers, strides and sizes (many
    cache hits, batch chunks of 3): each launch, or its error, equals what
    preparing it afresh gives."""
    import random
    rng = random.Random(6)
    monkeypatch.setattr(runtime, "MAX_GRID_Y", 3)
    rec = _Recorder()
    monkeypatch.setattr(KernelSet, "function", lambda self, man, dev: rec)
    kernels = [*parse_backward_manifest(V4).kernels,
               *parse_backward_manifest(V4_ATOMIC).kernels]
    ks = KernelSet(config=None, forward=None, backward=None)
    hits = 0
    for _ in range(1500):
        m = rng.choice(kernels)
        batch, tq, tk = (rng.choice([0, 1, 4, 7]), rng.choice([0, 1, 100]),
                         rng.choice([0, 1, 40]))
        t = backward_tensors(batch, tq, tk)
        t["dq_accum"] = (0xb0000, [batch, tq, 64], contiguous([batch, tq, 64]),
                         4)
        for name in rng.sample(sorted(t), 2):  # move or restride two
            ptr, sizes, strides, esize = t[name]
            t[name] = (ptr + rng.choice([0, 16, 8]), sizes,
                       [rng.choice([strides[0], strides[0] + 64, 0]),
                        *strides[1:]], esize)
        device = rng.choice([0, 1])
        try:
            want = [p for _, p in runtime._prepare(ks, m, device, t, batch,
                                                   tq, tk)]
        except ValueError as err:
            want = str(err)
        before, plans = len(rec.launches), len(runtime._plans)
        try:
            launch(ks, m, device, t, batch, tq, tk, stream=5)
            got = rec.launches[before:]
        except ValueError as err:
            got = str(err)
        hits += isinstance(got, list) and len(runtime._plans) == plans
        assert got == want
    assert hits > 100


def test_rejected_launch_is_not_cached(monkeypatch):
    """Sizes the manifest rejects raise ValueError every time."""
    m = parse_backward_manifest(V4.replace("seqlen_k ?", "seqlen_k 40"))
    rec = _Recorder()
    monkeypatch.setattr(KernelSet, "function", lambda self, man, dev: rec)
    ks = KernelSet(config=None, forward=None, backward=m)
    t = backward_tensors(3, 100, 41)
    for _ in range(2):
        with pytest.raises(ValueError, match="was compiled for"):
            launch(ks, m.kernels[1], 0, t, 3, 100, 41, stream=5)
    assert rec.prepared == 0 and len(runtime._plans) == 0


# --- agreement with the C++ runtime ------------------------------------------
# The version 4 manifest of the C++ runtime's unit tests
# (runtime/unittests/RuntimeUnitTests.cpp, testBackwardTensorMapErrors), do
# in f16, and its cases: the same edits give the same messages here.

CPP_V4 = (V4.replace("head_dim_v 32", "head_dim_v 64")
          .replace("do_dtype bf16", "do_dtype f16")
          .replace("bwd_attention", "main_attention")
          .replace("batch ?\nbatch_shape ?", "batch 16\nbatch_shape 2 8")
          .replace("block_m 32\n", "block_m 16\n")
          .replace("tensor_map v 32 128 64\ntensor_map do 32 64 64\n",
                   "tensor_map v 64 128 128\ntensor_map do 64 64 128\n")
          .replace("tensor_map k 64 128 none\ntensor_map do 32 128 64\n",
                   "tensor_map k 64 128 128\ntensor_map v 64 128 128\n"
                   "tensor_map do 64 128 128\n"))


def _cpp(old, new):
    assert old in CPP_V4, old
    return CPP_V4.replace(old, new, 1)


def test_cpp_manifest_reads():
    m = parse_any_manifest(CPP_V4, "dir/b.manifest")
    assert [[(t.operand, t.line) for t in k.tensor_maps] for k in m.kernels] \
        == [[], [("q", 36), ("k", 37), ("v", 38), ("do", 39)],
            [("q", 47), ("k", 48), ("v", 49), ("do", 50)]]
    assert m.do_dtype == "f16"
    for text in (_cpp("tensor_map q 64 128 128\ntensor_map k 64 128 128\n"
                      "tensor_map v 64 128 128\ntensor_map do 64 128 128\n",
                      ""),
                 _cpp("tensor_map k 64 128 128\n", ""),
                 _cpp("params o do delta\n",
                      "tensor_map do 64 16 128\nparams o do delta\n")):
        parse_any_manifest(text)


@pytest.mark.parametrize("text,message", [
    (_cpp("version 4", "version 2"),
     "dir/b.manifest:36: tensor_map needs manifest version 4 (this backward "
     "manifest is version 2)"),
    (_cpp("scratch delta", "tensor_map q 64 64 128\nscratch delta"),
     "dir/b.manifest:23: 'tensor_map' outside a kernel section"),
    (_cpp("tensor_map do 64 64 128", "tensor_map o 64 64 128"),
     "dir/b.manifest:39: invalid value 'o' for 'tensor_map' OPERAND: "
     "expected q, k, v, do or dq_accum"),
    (_cpp("params o do delta\n", "params o do delta\ntensor_map q 64 16 128\n"),
     "dir/b.manifest:29: tensor_map for 'q', which is not in the params of "
     "kernel 'main_attention_backward_0_delta'"),
    (_cpp("tensor_map q 64 128 128\ntensor_map k 64 128 128\n",
          "tensor_map k 64 128 128\ntensor_map q 64 128 128\n"),
     "dir/b.manifest:48: tensor_map for 'q' after the one for 'k' (line 47): "
     "tensor_map lines must be in the order of the params of kernel "
     "'main_attention_backward_0_dq'"),
    (_cpp("tensor_map v 64 128 128\n", "tensor_map k 64 128 128\n"),
     "dir/b.manifest:38: duplicate tensor_map for 'k' in kernel "
     "'main_attention_backward_0_dkdv' (first on line 37)"),
    (_cpp("do_dtype f16", "do_dtype f32"),
     "dir/b.manifest:39: tensor_map 'do': BOX_COLS 64 x 4 bytes (f32) = 256 "
     "bytes exceeds the 128-byte swizzle span"),
    (_cpp("head_dim_v 64", "head_dim_v 32"),
     "dir/b.manifest:38: tensor_map 'v': BOX_COLS 64 exceeds head_dim_v 32"),
    (_cpp("head_dim 64", "head_dim 32"),
     "dir/b.manifest:36: tensor_map 'q': BOX_COLS 64 exceeds head_dim 32"),
])
def test_cpp_messages(text, message):
    with pytest.raises(ManifestError) as info:
        parse_any_manifest(text, "dir/b.manifest")
    assert str(info.value).startswith(message)
