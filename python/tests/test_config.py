import math

import pytest

from fa_opt.config import (SHORT_FORWARD_MAX_SEQLEN_K, AttentionConfig,
                           CompileOptions, chip_for_capability,
                           normalize_causal, short_forward_options)


def test_defaults_are_resolved():
    c = AttentionConfig("bf16", 64)
    assert c.head_dim_v == 64 and c.o_dtype == "bf16" and c.causal == "none"
    assert c.scale == 0.125
    assert c.batch is None and c.seqlen_q is None and c.seqlen_k is None
    # An explicit default scale is the same config (the same kernel).
    assert c == AttentionConfig("bf16", 64, scale=1 / math.sqrt(64))


@pytest.mark.parametrize("given,want", [(True, "top_left"), (False, "none"),
                                        (None, "none"),
                                        ("bottom_right", "bottom_right")])
def test_causal_spellings(given, want):
    assert normalize_causal(given) == want
    assert AttentionConfig("f16", 64, causal=given).causal == want


@pytest.mark.parametrize("kwargs,match", [
    (dict(dtype="f64", head_dim=64), "dtype must be one of"),
    (dict(dtype="bf16", head_dim=0), "head_dim must be > 0"),
    (dict(dtype="bf16", head_dim=64, causal="diagonal"), "causal must be"),
    (dict(dtype="bf16", head_dim=64, scale=-1.0), "scale must be finite and positive"),
    (dict(dtype="bf16", head_dim=64, scale=float("nan")), "scale must be finite"),
    # Finite and positive, but zero or infinite in f32 (the verifier's rule).
    (dict(dtype="bf16", head_dim=64, scale=1e-300), "scale must be representable in f32"),
    (dict(dtype="bf16", head_dim=64, scale=1e-46), "scale must be representable in f32"),
    (dict(dtype="bf16", head_dim=64, scale=1e39), "scale must be representable in f32"),
    (dict(dtype="bf16", head_dim=64, seqlen_q=-3), "seqlen_q must be >= 0"),
    (dict(dtype="bf16", head_dim=64, o_dtype="f16"), "o_dtype must be"),
])
def test_invalid_configs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AttentionConfig(**kwargs)


def test_shape_policies():
    args = ("f16", 16, 1000, 77, 128, 128, True, None)
    dyn = AttentionConfig.for_call(*args, policy="dynamic")
    assert (dyn.batch, dyn.seqlen_q, dyn.seqlen_k) == (None, None, None)
    sb = AttentionConfig.for_call(*args, policy="static_batch")
    assert (sb.batch, sb.seqlen_q, sb.seqlen_k) == (16, None, None)
    st = AttentionConfig.for_call(*args, policy="static")
    assert (st.batch, st.seqlen_q, st.seqlen_k) == (16, 1000, 77)
    assert dyn.accepts(3, 5, 7) and sb.accepts(16, 5, 7)
    assert not sb.accepts(8, 5, 7) and not st.accepts(16, 1000, 78)
    with pytest.raises(ValueError, match="shape policy"):
        AttentionConfig.for_call(*args, policy="buckets")


def test_compile_options_command_line():
    assert CompileOptions().pipeline_options() == ["chip=sm_90a"]
    assert CompileOptions(chip="sm_80", block_m=128, block_n=32) \
        .pipeline_options() == ["chip=sm_80", "block-m=128", "block-n=32"]
    # tma only when given: otherwise fa-to-ptx's default applies.
    assert CompileOptions(tma=True).pipeline_options() == \
        ["chip=sm_90a", "tma=true"]
    assert CompileOptions(tma=False).pipeline_options() == \
        ["chip=sm_90a", "tma=false"]
    assert CompileOptions(tma=False).to_dict()["tma"] is False
    assert CompileOptions(**CompileOptions(tma=True).to_dict()).tma is True
    with pytest.raises(TypeError, match="tma must be True, False or None"):
        CompileOptions(tma="false")
    # producer_warp likewise.
    assert CompileOptions(producer_warp=False).pipeline_options() == \
        ["chip=sm_90a", "producer-warp=false"]
    assert CompileOptions(tma=True, producer_warp=True).pipeline_options() \
        == ["chip=sm_90a", "tma=true", "producer-warp=true"]
    assert CompileOptions(
        **CompileOptions(producer_warp=False).to_dict()).producer_warp is False
    with pytest.raises(TypeError,
                       match="producer_warp must be True, False or None"):
        CompileOptions(producer_warp=1)
    # index_bitwidth: 0 (fa-to-ptx's default), 32 or 64.
    assert CompileOptions(index_bitwidth=32).pipeline_options() == \
        ["chip=sm_90a", "index-bitwidth=32"]
    assert CompileOptions(**CompileOptions(
        index_bitwidth=64).to_dict()).index_bitwidth == 64
    for bad in (True, 32.0, "32"):
        with pytest.raises(TypeError, match="index_bitwidth must be an "
                           "integer"):
            CompileOptions(index_bitwidth=bad)
    for bad in (16, -1, 128):
        with pytest.raises(ValueError,
                           match="index_bitwidth must be 0, 32 or 64"):
            CompileOptions(index_bitwidth=bad)
    # tiles_per_block: 0 (fa-to-ptx's default), 1 or 2.
    assert CompileOptions(tiles_per_block=2).pipeline_options() == \
        ["chip=sm_90a", "tiles-per-block=2"]
    assert CompileOptions(tiles_per_block=0, producer_warp=True) \
        .pipeline_options() == ["chip=sm_90a", "producer-warp=true",
                                "tiles-per-block=0"]
    assert CompileOptions(
        **CompileOptions(tiles_per_block=1).to_dict()).tiles_per_block == 1
    for bad in (True, "2", 2.0):
        with pytest.raises(TypeError, match="tiles_per_block must be an "
                           "integer"):
            CompileOptions(tiles_per_block=bad)
    for bad in (3, -1):
        with pytest.raises(ValueError,
                           match="tiles_per_block must be 0, 1 or 2"):
            CompileOptions(tiles_per_block=bad)
    with pytest.raises(ValueError, match="tiles_per_block=2 needs the "
                       "producer warpgroup"):
        CompileOptions(tiles_per_block=2, producer_warp=False)
    # dq_atomics likewise.
    assert CompileOptions(dq_atomics=False).pipeline_options() == \
        ["chip=sm_90a", "dq-atomics=false"]
    assert CompileOptions(
        **CompileOptions(dq_atomics=True).to_dict()).dq_atomics is True
    with pytest.raises(TypeError,
                       match="dq_atomics must be True, False or None"):
        CompileOptions(dq_atomics="true")
    # backward_producer_warp: True, False or "auto" (fa-to-ptx's default).
    assert CompileOptions(backward_producer_warp=True).pipeline_options() \
        == ["chip=sm_90a", "backward-producer-warp=true"]
    assert CompileOptions(backward_producer_warp=False).pipeline_options() \
        == ["chip=sm_90a", "backward-producer-warp=false"]
    assert CompileOptions(backward_producer_warp="auto") \
        .pipeline_options() == ["chip=sm_90a", "backward-producer-warp=auto"]
    assert CompileOptions(**CompileOptions(
        backward_producer_warp="auto").to_dict()).backward_producer_warp \
        == "auto"
    for conflict, name in (({"deterministic": True}, "deterministic=True"),
                           ({"dq_atomics": False}, "dq_atomics=False")):
        with pytest.raises(ValueError, match="backward_producer_warp=True is "
                           "a form of the dq-atomics backward: it cannot be "
                           "combined with " + name):
            CompileOptions(backward_producer_warp=True, **conflict)
    assert CompileOptions(backward_producer_warp="auto",
                          deterministic=True).deterministic
    for bad in (1, 0, "true", "on"):
        with pytest.raises(TypeError, match="backward_producer_warp must be "
                           "True, False, 'auto' or None"):
            CompileOptions(backward_producer_warp=bad)
    # deterministic likewise; with dq_atomics=True it is a conflict.
    assert CompileOptions(deterministic=True).pipeline_options() == \
        ["chip=sm_90a", "deterministic=true"]
    assert CompileOptions(dq_atomics=False, deterministic=True) \
        .pipeline_options() == ["chip=sm_90a", "dq-atomics=false",
                                "deterministic=true"]
    assert CompileOptions(
        **CompileOptions(deterministic=True).to_dict()).deterministic is True
    with pytest.raises(TypeError,
                       match="deterministic must be True, False or None"):
        CompileOptions(deterministic=1)
    with pytest.raises(ValueError, match="cannot be combined with "
                       "deterministic=True"):
        CompileOptions(dq_atomics=True, deterministic=True)


def test_chip_for_capability():
    assert chip_for_capability(9, 0) == "sm_90a"
    assert chip_for_capability(8, 0) == "sm_80"
    assert chip_for_capability(8, 6) == "sm_86"


def test_compile_options_extra():
    """Further fa-to-ptx options: key=value strings, appended sorted by key
    (the order they were given in changes neither equality nor the cache
    key); a key that a field sets, a repeated key or a malformed item is
    refused (it would override the field silently, split a string into
    characters or break the pipeline string)."""
    options = CompileOptions(extra=["stages=3", "pair-key-blocks=true"])
    assert options.extra == ("pair-key-blocks=true", "stages=3")
    assert options.pipeline_options()[-2:] == ["pair-key-blocks=true",
                                               "stages=3"]
    assert CompileOptions(**options.to_dict()) == options
    assert options == CompileOptions(extra=("pair-key-blocks=true",
                                            "stages=3"))
    # Sorted by key, not by text: "a-b" sorts before "a=" as a key.
    assert CompileOptions(extra=("a=1", "a-b=2")).extra == ("a=1", "a-b=2")
    for extra, error, match in (
            ("pair-key-blocks=true", TypeError, "extra must be a tuple"),
            ((1,), TypeError, "got the item 1"),
            (("tma=false",), ValueError,
             r"tma has its own field: use CompileOptions\(tma=...\)"),
            (("output-dir=/tmp",), ValueError,
             "output-dir is chosen by the compile driver"),
            (("stages=3", "stages=2"), ValueError, "stages given twice"),
            (("stages",), ValueError, "expected KEY=VALUE"),
            (("Stages=3",), ValueError, "expected KEY=VALUE"),
            (("stages=3 tma=false",), ValueError, "expected KEY=VALUE"),
            (('stages="3"',), ValueError, "expected KEY=VALUE"),
            (("stages=",), ValueError, "expected KEY=VALUE")):
        with pytest.raises(error, match=match):
            CompileOptions(extra=extra)


@pytest.mark.parametrize("kwargs, error, text", [
    ({"chip": "sm_90a block-m=7"}, ValueError, "chip must be a CUDA"),
    ({"chip": "SM90"}, ValueError, "chip must be a CUDA"),
    ({"chip": 90}, ValueError, "chip must be a CUDA"),
    ({"features": "+ptx80 tma=false"}, ValueError, "features must be"),
    ({"features": ""}, ValueError, "features must be"),
    ({"block_m": float("nan")}, TypeError, "block_m must be a positive"),
    ({"block_m": "64"}, TypeError, "block_m must be a positive"),
    ({"block_n": True}, TypeError, "block_n must be a positive"),
    ({"block_n": 0}, ValueError, "block_n must be a positive"),
])
def test_compile_options_refuse_what_would_not_be_one_option(kwargs, error,
                                                             text):
    """chip and features go into --fa-to-ptx="..." as they are: they may
    not smuggle in other options (hostile-user pass, thirty-eighth
    session)."""
    with pytest.raises(error, match=text):
        CompileOptions(**kwargs)


def test_compile_options_accept_chips_and_features():
    for chip in ("sm_70", "sm_80", "sm_90a", "sm_100a"):
        assert CompileOptions(chip=chip).pipeline_options()[0] == f"chip={chip}"
    assert "features=+ptx80" in CompileOptions(
        features="+ptx80").pipeline_options()
    assert "block-m=64" in CompileOptions(block_m=64).pipeline_options()


def test_scale_refuses_bools():
    with pytest.raises(TypeError, match="scale must be a real number"):
        AttentionConfig("bf16", 64, scale=True)


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("causal", ["none", "top_left", "bottom_right"])
@pytest.mark.parametrize("seqlen_k", [None, 1, SHORT_FORWARD_MAX_SEQLEN_K])
def test_short_forward_applies(dtype, causal, seqlen_k):
    """sm_90a, head dim 64, bf16/f16, a dynamic or short seqlen_k, and
    options that leave the forward's shape to fa-to-ptx: the short forward's
    options are those with 64-query, 128-key tiles and no producer."""
    options = CompileOptions(index_bitwidth=32, dq_atomics=False,
                             features="+ptx80")
    short = short_forward_options(
        AttentionConfig(dtype, 64, causal=causal, seqlen_k=seqlen_k), options)
    assert short == CompileOptions(index_bitwidth=32, dq_atomics=False,
                                   features="+ptx80", block_m=64,
                                   block_n=128, producer_warp=False,
                                   short_forward=False)


@pytest.mark.parametrize("config,options", [
    (AttentionConfig("f32", 64), CompileOptions()),
    (AttentionConfig("bf16", 128), CompileOptions()),
    (AttentionConfig("bf16", 64, head_dim_v=32), CompileOptions()),
    (AttentionConfig("bf16", 64, seqlen_k=SHORT_FORWARD_MAX_SEQLEN_K + 1),
     CompileOptions()),
    (AttentionConfig("bf16", 64), CompileOptions(chip="sm_80")),
    (AttentionConfig("bf16", 64), CompileOptions(short_forward=False)),
    (AttentionConfig("bf16", 64), CompileOptions(block_m=128)),
    (AttentionConfig("bf16", 64), CompileOptions(block_n=64)),
    (AttentionConfig("bf16", 64), CompileOptions(producer_warp=True)),
    (AttentionConfig("bf16", 64), CompileOptions(producer_warp=False)),
    (AttentionConfig("bf16", 64), CompileOptions(tiles_per_block=1)),
    (AttentionConfig("bf16", 64), CompileOptions(tma=False)),
    (AttentionConfig("bf16", 64), CompileOptions(extra=("stages=3",))),
], ids=["f32", "d128", "dv32", "long-static-seqlen-k", "sm_80", "off",
        "block-m", "block-n", "producer-warp", "no-producer-warp",
        "tiles-per-block", "no-tma",
        "extra"])
def test_short_forward_does_not_apply(config, options):
    assert short_forward_options(config, options) is None


def test_short_forward_must_be_a_bool():
    with pytest.raises(TypeError, match="short_forward must be True or "
                       "False, got 'yes'"):
        CompileOptions(short_forward="yes")


def test_short_forward_with_the_default_tiles_per_block():
    """tiles_per_block=0 is fa-to-ptx's default: the short forward applies,
    and its own options leave the field unset (one tile per block)."""
    short = short_forward_options(AttentionConfig("bf16", 64),
                                  CompileOptions(tiles_per_block=0))
    assert short is not None and short.tiles_per_block is None
