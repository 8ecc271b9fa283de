import re

import pytest

from fa_opt.manifest import ManifestError, parse_manifest

# The example of docs/ARTIFACTS.md.
DOC_EXAMPLE = """\
# fa kernel manifest
version 1
kernel main_attention_0
ptx main_attention_0.ptx
chip sm_90a
dtype bf16          # q/k/v element type: f16 | bf16 | f32
o_dtype bf16        # o element type
causal top_left     # none | top_left | bottom_right
scale 0.125         # the scale the kernel applies
batch 16            # product of the batch dims, or ?
batch_shape 2 8     # the batch dims of the source op, each a number or ?
seqlen_q ?
seqlen_k ?
head_dim 64
head_dim_v 64
has_lse 1
block_m 64
block_n 64
threads 64
shared_bytes 0
params q k v o lse
grid ceil_div(seqlen_q,block_m) batch 1
"""


def test_doc_example(tmp_path):
    m = parse_manifest(DOC_EXAMPLE, str(tmp_path / "main_attention_0.manifest"))
    assert m.kernel == "main_attention_0"
    assert m.ptx == str(tmp_path / "main_attention_0.ptx")
    assert (m.dtype, m.o_dtype, m.causal, m.scale) == ("bf16", "bf16", "top_left", 0.125)
    assert (m.batch, m.batch_shape, m.seqlen_q, m.seqlen_k) == (16, [2, 8], None, None)
    assert (m.head_dim, m.head_dim_v, m.has_lse) == (64, 64, True)
    assert (m.block_m, m.block_n, m.threads, m.shared_bytes) == (64, 64, 64, 0)
    assert m.params == ["q", "k", "v", "o", "lse"]
    assert m.grid_for(16, 1000, 5) == (16, 16, 1)
    assert m.grid_for(16, 64, 5) == (1, 16, 1)
    assert m.grid_for(16, 0, 5) == (0, 16, 1)
    assert m.accepts(16, 3, 4) and not m.accepts(8, 3, 4)
    assert m.config().batch == 16 and m.config().seqlen_q is None


def test_unknown_keys_are_kept_not_fatal():
    m = parse_manifest(DOC_EXAMPLE + "tma_descriptors 0\nscratch delta f32 batch seqlen_q\n")
    assert m.extra["tma_descriptors"] == ["0"]
    assert m.extra["scratch"] == ["delta", "f32", "batch", "seqlen_q"]


@pytest.mark.parametrize("edit,match", [
    (lambda t: t.replace("kernel main_attention_0\n", ""), "missing required key 'kernel'"),
    (lambda t: t + "dtype f16\n", "duplicate key 'dtype'"),
    (lambda t: t.replace("version 1", "version 2"), "unsupported manifest version 2"),
    (lambda t: t.replace("dtype bf16 ", "dtype f64 "), "unknown dtype 'f64'"),
    (lambda t: t.replace("seqlen_q ?", "seqlen_q x"), "expected a dim"),
    (lambda t: t.replace("batch 1\n", "batch\n"), "expected 3 grid expressions"),
    (lambda t: t.replace("ceil_div(seqlen_q,block_m)", "ceil_div(seqlen_q,nope)"), "unknown name 'nope'"),
    # Grid names as the C++ reader takes them: sizes and the block shape,
    # not other manifest keys; ceil_div, min and mul of two terms.
    (lambda t: t.replace("ceil_div(seqlen_q,block_m)", "version"), "unknown name 'version'"),
    (lambda t: t.replace("ceil_div(seqlen_q,block_m)", "ceil_div(seqlen_q,shared_bytes)"), "unknown name 'shared_bytes'"),
    (lambda t: t.replace("ceil_div(seqlen_q,block_m)", "has_lse"), "unknown name 'has_lse'"),
    (lambda t: t.replace("ceil_div(seqlen_q,block_m)", "max(seqlen_q,block_m)"), "unknown name 'max'"),
    (lambda t: t.replace("ceil_div(seqlen_q,block_m)", "min(seqlen_q)"), "expected ','"),
    (lambda t: t.replace("ceil_div(seqlen_q,block_m)", "mul(seqlen_q,2"), "expected '\\)'"),
    (lambda t: t.replace("ceil_div(seqlen_q,block_m)", "min(seqlen_q,2)x"), "unexpected trailing text"),
    (lambda t: t.replace("ceil_div(seqlen_q,block_m)", "1234567890123456789"),
     "'1234567890123456789' is not an integer of at most 18 digits"),
    (lambda t: t.replace("params q k v o lse", "params q k v o"),
     "x.manifest:21: expected params 'q k v o lse' \\(has_lse 1\\), got 'q k v o'"),
    # The value ranges of the C++ runtime.
    (lambda t: t.replace("block_m 64", "block_m 0"), "positive integer for 'block_m', got 0"),
    (lambda t: t.replace("head_dim 64", "head_dim -64"), "positive integer for 'head_dim', got -64"),
    (lambda t: t.replace("head_dim_v 64", "head_dim_v 0"), "positive integer for 'head_dim_v', got 0"),
    (lambda t: t.replace("threads 64", "threads 2048"), "at most 1024 threads, got 2048"),
    # Integers as the C++ runtime reads them: ASCII digits, at most 18.
    (lambda t: t.replace("threads 64", "threads 99999999999999999999"), "expected an integer for 'threads'"),
    (lambda t: t.replace("head_dim 64", "head_dim 6_4"), "expected an integer for 'head_dim'"),
    (lambda t: t.replace("threads 64", "threads +64"), "expected an integer for 'threads'"),
    (lambda t: t.replace("shared_bytes 0", "shared_bytes -1"), "non-negative integer for 'shared_bytes'"),
    (lambda t: t.replace("scale 0.125 ", "scale nan "), "finite number for 'scale', got nan"),
])
def test_malformed(edit, match):
    with pytest.raises(ManifestError, match=match):
        parse_manifest(edit(DOC_EXAMPLE), "x.manifest")


def test_grid_nested_and_persistent():
    """Nested ceil_div/min/mul, and the persistent forward's grid, whose
    resident_blocks the launcher gives (an error without it)."""
    m = parse_manifest(DOC_EXAMPLE.replace(
        "grid ceil_div(seqlen_q,block_m) batch 1",
        "grid ceil_div(mul(seqlen_q,2),min(block_m,48)) min(batch,4) mul(2,3)"),
        "x.manifest")
    assert not m.uses_resident_blocks()
    assert m.grid_for(16, 100, 5) == (5, 4, 6)
    m = parse_manifest(DOC_EXAMPLE.replace(
        "grid ceil_div(seqlen_q,block_m) batch 1",
        "grid min(mul(ceil_div(seqlen_q,block_m),batch),resident_blocks) 1 1"),
        "x.manifest")
    assert m.uses_resident_blocks()
    assert m.grid_for(16, 1000, 5, 132) == (132, 1, 1)
    assert m.grid_for(2, 300, 5, 132) == (2 * -(-300 // m.block_m), 1, 1)
    with pytest.raises(ManifestError, match="names resident_blocks, which "
                       "the launcher did not give"):
        m.grid_for(2, 300, 5)


def test_grid_dividing_by_zero_is_a_manifest_error():
    """As the C++ runtime's computeGrid: at launch, with the file's name."""
    m = parse_manifest(DOC_EXAMPLE.replace("ceil_div(seqlen_q,block_m)",
                                           "ceil_div(seqlen_q,0)"), "x.manifest")
    with pytest.raises(ManifestError, match=re.escape(
            "x.manifest: grid expression 'ceil_div(seqlen_q,0)' divides by 0")):
        m.grid_for(1, 64, 64)


# A backward manifest (version 2) in the form fa-export-kernels writes.
BACKWARD = """\
# fa backward manifest
version 2
op attention_backward
name bwd_attention_backward_0
ptx bwd_attention_backward_0.ptx
chip sm_90a
dtype bf16
o_dtype bf16
do_dtype bf16
dq_dtype bf16
dk_dtype bf16
dv_dtype bf16
causal top_left
scale 0.125
batch ?
batch_shape ?
seqlen_q ?
seqlen_k ?
head_dim 64
head_dim_v 64
deterministic 0
scratch delta f32 batch seqlen_q
scratch dq_accum f32 batch seqlen_q head_dim
kernel bwd_attention_backward_0_delta
threads 128
shared_bytes 0
params o do delta dq_accum
grid ceil_div(seqlen_q,threads) batch 1
kernel bwd_attention_backward_0_dkdv
threads 64
block_m 64
block_n 64
shared_bytes 0
params q k v do lse delta dk dv dq_accum
grid ceil_div(seqlen_k,block_n) batch 1
kernel bwd_attention_backward_0_dq_convert
threads 128
shared_bytes 0
params dq_accum dq
grid ceil_div(seqlen_q,threads) batch 1
"""


def test_backward_manifest(tmp_path):
    from fa_opt.manifest import BackwardManifest, parse_any_manifest
    m = parse_any_manifest(BACKWARD, str(tmp_path / "b.manifest"))
    assert isinstance(m, BackwardManifest)
    assert m.ptx == str(tmp_path / "bwd_attention_backward_0.ptx")
    assert (m.dtype, m.dq_dtype, m.causal, m.scale, m.deterministic) == \
        ("bf16", "bf16", "top_left", 0.125, False)
    assert [(s.name, s.dtype, s.dims) for s in m.scratch] == [
        ("delta", "f32", ["batch", "seqlen_q"]),
        ("dq_accum", "f32", ["batch", "seqlen_q", "head_dim"])]
    assert [k.kernel.rsplit("_0_", 1)[1] for k in m.kernels] == \
        ["delta", "dkdv", "dq_convert"]
    delta, dkdv, conv = m.kernels
    assert delta.params == ["o", "do", "delta", "dq_accum"]
    assert delta.grid_for(16, 1000, 300) == (8, 16, 1)
    assert dkdv.grid_for(16, 1000, 300) == (5, 16, 1)
    assert all(k.ptx == m.ptx for k in m.kernels)
    assert isinstance(parse_any_manifest(DOC_EXAMPLE), type(delta))
    with pytest.raises(ManifestError, match="duplicate key 'threads'"):
        parse_any_manifest(BACKWARD.replace("threads 64\n", "threads 64\nthreads 2\n"))
    with pytest.raises(ManifestError, match="kernel bwd_attention_backward_0_delta: expected at most 1024 threads, got 2048"):
        parse_any_manifest(BACKWARD.replace("threads 128\n", "threads 2048\n"))
    with pytest.raises(ManifestError, match="no kernel section"):
        parse_any_manifest(BACKWARD[:BACKWARD.index("kernel ")])
    # A backward manifest that says a forward version goes to the forward
    # reader, which names the mismatch (the C++ reader's message).
    for version in ("1", "3"):
        with pytest.raises(ManifestError, match=re.escape(
                "x:3: 'op attention_backward' needs manifest version 2 or 4 "
                "(the backward format); versions 1 and 3 are forward "
                "manifests, which have no 'op' key")):
            parse_any_manifest(BACKWARD.replace("version 2",
                                                f"version {version}"), "x")
    # delta and dq_accum take one declaration each (the C++ reader's
    # message, line 23 of the same text).
    with pytest.raises(ManifestError, match=re.escape(
            "x:23: scratch buffer 'dq_accum' must be 'f32 batch seqlen_q "
            "head_dim' (the shape its kernels take), got 'f32 batch "
            "seqlen_k head_dim'")):
        parse_any_manifest(BACKWARD.replace(
            "dq_accum f32 batch seqlen_q head_dim",
            "dq_accum f32 batch seqlen_k head_dim"), "x")
    with pytest.raises(ManifestError, match="scratch buffer 'dq_accum' "
                       "must be 'f32 batch seqlen_q head_dim'"):
        parse_any_manifest(BACKWARD.replace(
            "dq_accum f32 batch", "dq_accum f16 batch"))
    with pytest.raises(ManifestError, match=re.escape(
            "scratch buffer 'delta' must be 'f32 batch seqlen_q' (the shape "
            "its kernels take), got 'f32 batch'")):
        parse_any_manifest(BACKWARD.replace(
            "delta f32 batch seqlen_q", "delta f32 batch"))
    # Batch chunks take each scratch buffer's rows of their batches: batch
    # first and only there, sizes of the op or integers after it (the C++
    # reader's messages).
    for line, message in (
            ("ends f32 1", "invalid value '1' for 'scratch': expected batch "
                           "(a scratch buffer's first dim)"),
            ("ends f32 batch batch", "invalid value 'batch' for 'scratch': "
                                     "expected seqlen_q, seqlen_k, head_dim, "
                                     "head_dim_v or an integer"),
            ("ends f32 batch block_m", "invalid value 'block_m' for "
                                       "'scratch'"),
            ("ends f32", "scratch buffer 'ends' has no dims (expected batch "
                         "first)"),
            ("lse f32 batch seqlen_q", "scratch buffer 'lse' shadows an "
                                       "operand of the op"),
            ("delta f32 seqlen_q", "invalid value 'seqlen_q' for 'scratch': "
                                   "expected batch")):
        with pytest.raises(ManifestError, match=re.escape(message)):
            parse_any_manifest(BACKWARD.replace(
                "scratch delta", f"scratch {line}\nscratch delta", 1))
    ends = parse_any_manifest(BACKWARD.replace(
        "scratch delta", "scratch ends f32 batch 2\nscratch delta"))
    assert [(s.name, s.dims) for s in ends.scratch][0] == ("ends",
                                                          ["batch", "2"])
    # The C++ reader's structural rules, with its messages.
    first_kernel = "kernel bwd_attention_backward_0_delta\n"
    for text, message in (
            (BACKWARD.replace(first_kernel, first_kernel
                              + "scratch extra f32 batch\n"),
             "'scratch' after the first kernel section"),
            (BACKWARD.replace(first_kernel,
                              "scratch delta f32 batch seqlen_q\n"
                              + first_kernel),
             "duplicate scratch buffer 'delta'"),
            (BACKWARD.replace(first_kernel, first_kernel + "chip sm_80\n"),
             "header key 'chip' after the first kernel section"),
            (BACKWARD.replace("chip sm_90a\n", "chip sm_90a sm_80\n"),
             "expected 1 value for 'chip', got 2"),
            (BACKWARD.replace("ptx bwd_attention_backward_0.ptx\n", "ptx\n"),
             "expected 1 value for 'ptx', got 0"),
            (BACKWARD.replace("params o do delta dq_accum\n",
                              "params o do delta dq_accum scores\n"),
             "kernel 'bwd_attention_backward_0_delta' takes 'scores', which "
             "is neither an operand, a result nor a scratch buffer of the "
             "manifest")):
        with pytest.raises(ManifestError, match=re.escape(message)):
            parse_any_manifest(text)


# --- tensor_map lines (TMA forward kernels) ------------------------------------
# DOC_EXAMPLE is bf16, head_dim 64, head_dim_v 64, 22 lines: appended lines
# are 23, 24, ... (the C++ runtime's unit tests use the same texts). A
# manifest with tensor_map lines is version 3: V3 is DOC_EXAMPLE so.

V3 = DOC_EXAMPLE.replace("\nversion 1\n", "\nversion 3\n")

def test_tensor_maps(tmp_path):
    from fa_opt.manifest import TensorMap
    m = parse_manifest(V3 + "tensor_map q 64 128 128\n"
                       "tensor_map k 8 64 none  # x\n"
                       "tensor_map v 16 64 32\ntensor_map o 32 1 64\n")
    assert m.tensor_maps == [TensorMap("q", 64, 128, 128, 23),
                             TensorMap("k", 8, 64, 0, 24),
                             TensorMap("v", 16, 64, 32, 25),
                             TensorMap("o", 32, 1, 64, 26)]
    assert "tensor_map" not in m.extra
    assert m.params == ["q", "k", "v", "o", "lse"]
    assert parse_manifest(DOC_EXAMPLE).tensor_maps == []
    # A line may come before the keys it is checked against.
    m = parse_manifest("tensor_map k 256 256 none\n"
                       + V3.replace("head_dim 64", "head_dim 256"))
    assert m.tensor_maps == [TensorMap("k", 256, 256, 0, 1)]
    # f32: 4 columns are 16 bytes; o takes o_dtype.
    m = parse_manifest(V3.replace("dtype bf16 ", "dtype f32 ")
                       + "tensor_map q 32 64 128\ntensor_map k 4 64 none\n")
    assert [t.box_cols for t in m.tensor_maps] == [32, 4]


def _o_dtype(dtype):
    return lambda t: t.replace("o_dtype bf16", f"o_dtype {dtype}")


def _head_dim(key, value):
    return lambda t: t.replace(f"{key} 64", f"{key} {value}")


@pytest.mark.parametrize("extra,edit,message", [
    ("tensor_map q 8 128\n", None,
     "x.manifest:23: expected 4 values for 'tensor_map' (OPERAND BOX_COLS "
     "BOX_ROWS SWIZZLE), got 3"),
    ("tensor_map lse 8 128 none\n", None,
     "x.manifest:23: invalid value 'lse' for 'tensor_map' OPERAND: expected "
     "q, k, v or o"),
    ("tensor_map k 8 128 none\ntensor_map q 8 128 none\n"
     "tensor_map k 8 64 none\n", None,
     "x.manifest:25: duplicate tensor_map for 'k' (first on line 23)"),
    ("tensor_map q 0 128 none\n", None,
     "x.manifest:23: invalid value '0' for 'tensor_map' BOX_COLS: expected "
     "an integer in [1, 256]"),
    ("tensor_map q 264 128 none\n", None,
     "invalid value '264' for 'tensor_map' BOX_COLS"),
    ("tensor_map q -8 128 none\n", None,
     "invalid value '-8' for 'tensor_map' BOX_COLS"),
    ("tensor_map q +8 128 none\n", None,
     "invalid value '+8' for 'tensor_map' BOX_COLS"),
    ("tensor_map q 8.0 128 none\n", None,
     "invalid value '8.0' for 'tensor_map' BOX_COLS"),
    ("tensor_map q 8 0 none\n", None,
     "invalid value '0' for 'tensor_map' BOX_ROWS: expected an integer in "
     "[1, 256]"),
    ("tensor_map q 8 257 none\n", None,
     "invalid value '257' for 'tensor_map' BOX_ROWS"),
    ("tensor_map q 8 1x none\n", None,
     "invalid value '1x' for 'tensor_map' BOX_ROWS"),
    ("tensor_map q 8 64 16\n", None,
     "x.manifest:23: invalid value '16' for 'tensor_map' SWIZZLE: expected "
     "none, 32, 64 or 128"),
    ("tensor_map q 8 64 128B\n", None,
     "invalid value '128B' for 'tensor_map' SWIZZLE"),
    ("tensor_map q 8 64 NONE\n", None,
     "invalid value 'NONE' for 'tensor_map' SWIZZLE"),
    ("tensor_map q 8 64 none\ntensor_map k 12 64 none\n", None,
     "x.manifest:24: tensor_map 'k': BOX_COLS 12 x 2 bytes (bf16) = 24 "
     "bytes is not a multiple of 16 bytes"),
    ("tensor_map q 2 64 none\n",
     lambda t: t.replace("dtype bf16 ", "dtype f32 "),
     "tensor_map 'q': BOX_COLS 2 x 4 bytes (f32) = 8 bytes is not a "
     "multiple of 16 bytes"),
    ("tensor_map q 72 64 none\n", None,
     "x.manifest:23: tensor_map 'q': BOX_COLS 72 exceeds head_dim 64"),
    ("tensor_map v 64 64 none\n", _head_dim("head_dim_v", 32),
     "tensor_map 'v': BOX_COLS 64 exceeds head_dim_v 32"),
    ("tensor_map o 64 64 none\n", _head_dim("head_dim_v", 32),
     "tensor_map 'o': BOX_COLS 64 exceeds head_dim_v 32"),
    ("tensor_map k 64 64 none\n", _head_dim("head_dim", 32),
     "tensor_map 'k': BOX_COLS 64 exceeds head_dim 32"),
    ("tensor_map k 64 64 64\n", None,
     "x.manifest:23: tensor_map 'k': BOX_COLS 64 x 2 bytes (bf16) = 128 "
     "bytes exceeds the 64-byte swizzle span"),
    ("tensor_map v 24 64 32\n", None,
     "tensor_map 'v': BOX_COLS 24 x 2 bytes (bf16) = 48 bytes exceeds "
     "the 32-byte swizzle span"),
    ("tensor_map o 64 64 128\n", _o_dtype("f32"),
     "tensor_map 'o': BOX_COLS 64 x 4 bytes (f32) = 256 bytes exceeds "
     "the 128-byte swizzle span"),
])
def test_tensor_map_malformed(extra, edit, message):
    """Each rule, with the C++ runtime's message (file:line first)."""
    text = V3 if edit is None else edit(V3)
    with pytest.raises(ManifestError) as info:
        parse_manifest(text + extra, "x.manifest")
    assert message in str(info.value)


def test_forward_versions():
    """Version 1 without tensor_map lines, 3 with them (so that a reader
    that predates tensor maps rejects a TMA kernel by its version instead of
    launching it without its maps); the maps in params order. The C++
    runtime's messages (its manifest-versions unit test)."""
    from fa_opt.manifest import parse_any_manifest
    m = parse_manifest(V3 + "tensor_map q 64 128 128\ntensor_map k 64 64 128\n"
                       "tensor_map v 64 64 128\n")
    assert m.version == 3 and len(m.tensor_maps) == 3
    assert parse_manifest(DOC_EXAMPLE).version == 1
    assert isinstance(parse_any_manifest(V3 + "tensor_map q 64 128 128\n"),
                      type(m))
    # Any subset in order.
    for maps in ("k", "q v", "v o"):
        parse_manifest(V3 + "".join(f"tensor_map {x} 64 64 none\n"
                                    for x in maps.split()))

    def error(text):
        with pytest.raises(ManifestError) as info:
            parse_manifest(text, "x.manifest")
        return str(info.value)

    assert error(DOC_EXAMPLE + "tensor_map q 64 128 128\n"
                 "tensor_map k 64 64 128\n") == (
        "x.manifest:23: tensor_map needs manifest version 3 (this manifest "
        "is version 1)")
    assert error(V3) == (
        "x.manifest:2: manifest version 3 needs at least one 'tensor_map' "
        "line (version 1 is the format without tensor maps)")
    assert error(V3 + "tensor_map k 64 64 none\ntensor_map q 64 128 none\n") \
        == ("x.manifest:24: tensor_map for 'q' after the one for 'k' (line "
            "23): tensor_map lines must be in the order of params (q, k, v, o)")
    assert error(V3 + "tensor_map q 64 128 none\ntensor_map v 64 64 none\n"
                 "tensor_map k 64 64 none\n").startswith(
        "x.manifest:25: tensor_map for 'k' after the one for 'v' (line 24)")
    assert "tensor_map for 'v' after the one for 'o'" in error(
        V3 + "tensor_map o 64 64 none\ntensor_map v 64 64 none\n")
    # A duplicate is reported as such, not as an order error.
    assert error(V3 + "tensor_map q 64 64 none\ntensor_map q 64 64 none\n") \
        .startswith("x.manifest:24: duplicate tensor_map for 'q'")
    for version in ("0", "2", "4", "5"):
        assert error(DOC_EXAMPLE.replace("version 1", f"version {version}")) \
            == (f"x.manifest:2: unsupported manifest version {version} (this "
                f"reader knows 1 and 3 forward and 2 and 4 "
                f"attention_backward manifests)")


@pytest.mark.parametrize("params,has_lse", [
    ("q k v o", 1), ("q k v o lse", 0), ("k q v o lse", 1), ("q k v o", None),
    ("q k o v lse", 1), ("q k v o lse lse", 1), ("q k v o lse extra", 1),
    ("q k v lse", 1), ("o k v q", 0),
])
def test_params_must_be_the_kernel_order(params, has_lse):
    """params is exactly q k v o, then lse when has_lse is 1, as the C++
    runtime requires: the memrefs are launched in that order, so a reordered
    or longer list would pass them to the wrong parameters."""
    text = DOC_EXAMPLE.replace("params q k v o lse", f"params {params}")
    if has_lse is not None:
        text = text.replace("has_lse 1", f"has_lse {has_lse}")
    lse = 1 if has_lse is None else has_lse
    want = "q k v o lse" if lse else "q k v o"
    with pytest.raises(ManifestError) as info:
        parse_manifest(text, "x.manifest")
    assert str(info.value) == (f"x.manifest:21: expected params '{want}' "
                               f"(has_lse {lse}), got '{params}'")
    good = text.replace(f"params {params}", f"params {want}")
    assert parse_manifest(good).params == want.split()


@pytest.mark.parametrize("separator", ["\x0b", "\x0c", "\x1c", "\x85",
                                       "\u2028", "\xa0"])
def test_words_and_lines_split_as_the_runtime_splits_them(separator):
    """Lines break at '\\n' only and words at spaces and tabs only, as in
    runtime/lib/Manifest.cpp: other Unicode whitespace stays in the word, so
    the manifest is rejected, as the C++ runtime rejects it."""
    with pytest.raises(ManifestError,
                       match="x.manifest:23: invalid value '128.*SWIZZLE"):
        parse_manifest(V3 + "tensor_map q 64 128 128" + separator
                       + "\n", "x.manifest")
    # A line break other than '\n' does not end a line either.
    with pytest.raises(ManifestError):
        parse_manifest(DOC_EXAMPLE.replace("\n", separator), "x.manifest")


def test_crlf_tabs_and_comments_still_read():
    text = (V3 + "tensor_map\tq 64\t128 128   # TMA\n").replace(
        "\n", "\r\n")
    m = parse_manifest(text, "x.manifest")
    assert [(t.operand, t.box_cols, t.swizzle, t.line)
            for t in m.tensor_maps] == [("q", 64, 128, 23)]


def test_files_are_read_without_newline_translation(tmp_path):
    """A file whose lines end in '\\r' alone is one line to the C++ runtime;
    read_manifest must not turn the '\\r's into line breaks."""
    from fa_opt.manifest import read_any_manifest, read_manifest
    path = tmp_path / "x.manifest"
    path.write_bytes(DOC_EXAMPLE.replace("\n", "\r").encode())
    for read in (read_manifest, read_any_manifest):
        with pytest.raises(ManifestError, match="missing required key"):
            read(str(path))
    path.write_bytes(DOC_EXAMPLE.replace("\n", "\r\n").encode())
    assert read_manifest(str(path)).kernel == "main_attention_0"


def test_index_bits():
    assert parse_manifest(DOC_EXAMPLE).index_bits == 64
    assert parse_manifest(DOC_EXAMPLE + "index_bits 32\n").index_bits == 32
    # Exactly 32 or 64, as the C++ runtime reads it.
    for bad in ("16", "032", "0x20", "+32"):
        with pytest.raises(ManifestError, match=r":23: expected 32 or 64 "
                           f"for 'index_bits', got {re.escape(bad)}"):
            parse_manifest(DOC_EXAMPLE + f"index_bits {bad}\n")
    # Backward manifests: the header's value for every kernel view.
    from fa_opt.manifest import parse_any_manifest
    wide = parse_any_manifest(BACKWARD)
    assert wide.index_bits == 64
    assert {k.index_bits for k in wide.kernels} == {64}
    narrow = BACKWARD.replace("deterministic 0\n",
                              "deterministic 0\nindex_bits 32\n")
    assert parse_any_manifest(narrow).index_bits == 32
    assert {k.index_bits for k in parse_any_manifest(narrow).kernels} == {32}
    # The error names the header line, as the forward's does.
    line = narrow.splitlines().index("index_bits 32") + 1
    with pytest.raises(ManifestError, match=f"manifest>:{line}: expected 32 "
                       "or 64 for 'index_bits', got 16"):
        parse_any_manifest(narrow.replace("index_bits 32", "index_bits 16"))


@pytest.mark.parametrize("key", ["causal", "scale", "batch", "seqlen_q",
                                 "seqlen_k", "has_lse"])
def test_forward_keys_the_cpp_reader_requires(key):
    """A forward manifest without one of them is refused (it was read as
    non-causal or dynamic), as by the C++ runtime."""
    text = "".join(line for line in DOC_EXAMPLE.splitlines(True)
                   if not line.startswith(key + " "))
    with pytest.raises(ManifestError, match=f"missing required key '{key}'"):
        parse_manifest(text, "x.manifest")


def test_forward_flags_and_defaults_as_the_cpp_reader():
    with pytest.raises(ManifestError, match=re.escape(
            "x.manifest:16: invalid value '2' for 'has_lse': expected 0 or 1")):
        parse_manifest(DOC_EXAMPLE.replace("has_lse 1", "has_lse 2"),
                       "x.manifest")
    # params and grid have the C++ reader's defaults.
    text = DOC_EXAMPLE.replace("params q k v o lse\n", "").replace(
        "grid ceil_div(seqlen_q,block_m) batch 1\n", "")
    m = parse_manifest(text, "x.manifest")
    assert m.params == ["q", "k", "v", "o", "lse"]
    assert m.grid == ("ceil_div(seqlen_q,block_m)", "batch", "1")
    assert m.grid_for(16, 100, 7) == (2, 16, 1)


@pytest.mark.parametrize("key", ["causal", "scale", "batch", "seqlen_q",
                                 "seqlen_k"])
def test_backward_keys_the_cpp_reader_requires(key):
    from fa_opt.manifest import parse_any_manifest
    text = "".join(line for line in BACKWARD.splitlines(True)
                   if not line.startswith(key + " "))
    with pytest.raises(ManifestError, match=f"missing required key '{key}'"):
        parse_any_manifest(text, "b.manifest")


def test_backward_deterministic_is_0_or_1():
    from fa_opt.manifest import parse_any_manifest
    with pytest.raises(ManifestError, match="invalid value '2' for "
                       "'deterministic': expected 0 or 1"):
        parse_any_manifest(BACKWARD.replace("deterministic 0",
                                            "deterministic 2"), "b.manifest")
