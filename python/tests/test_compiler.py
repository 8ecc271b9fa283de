"""The compile driver running the real fa-opt."""

import os
import subprocess
import sys

import pytest

from fa_opt import compiler
from fa_opt.compiler import (CompilationError, FaOptNotFoundError,
                             compile_attention, find_fa_opt)
from fa_opt.config import (SHORT_FORWARD_MAX_SEQLEN_K, AttentionConfig,
                           CompileOptions)
from fa_opt.runtime import KernelSet, Registry


def test_find_fa_opt_env_first(monkeypatch, tmp_path, fa_opt_tool):
    assert find_fa_opt() == fa_opt_tool
    monkeypatch.setenv("FA_OPT", str(tmp_path / "missing"))
    with pytest.raises(FaOptNotFoundError, match="FA_OPT is set to"):
        find_fa_opt()
    monkeypatch.delenv("FA_OPT")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(FaOptNotFoundError, match="fa-opt not found"):
        find_fa_opt()


def test_compile_dynamic_config(fa_opt_tool, cache_root):
    config = AttentionConfig("bf16", 64, causal=True)
    art = compile_attention(config)
    assert art.directory.startswith(cache_root)
    m = art.forward_manifest()
    assert m.kernel == compiler.func_name(config) + "_attention_0"
    assert os.path.isfile(m.ptx) and ".entry " + m.kernel in open(m.ptx).read()
    assert (m.chip, m.dtype, m.o_dtype, m.causal) == ("sm_90a", "bf16", "bf16", "top_left")
    assert (m.batch, m.seqlen_q, m.seqlen_k) == (None, None, None)
    assert (m.head_dim, m.head_dim_v, m.has_lse, m.scale) == (64, 64, True, 0.125)
    assert m.params == ["q", "k", "v", "o", "lse"]
    assert m.grid_for(16, 1000, 1000) == (-(-1000 // m.block_m), 16, 1)
    assert os.path.isfile(os.path.join(art.directory, "forward.mlir"))
    # The backward is compiled when fa-opt can, else the reason is kept.
    assert art.entry["backward"] or "error" in art.backward_error


def test_short_forward_is_compiled_and_chosen_by_seqlen_k(fa_opt_tool,
                                                         cache_root):
    """At head dim 64 the entry holds a second forward (64-query tiles, one
    warpgroup per block) under a kernel name of its own; the kernel set
    launches it up to SHORT_FORWARD_MAX_SEQLEN_K keys, the default one
    above. Where it does not apply (head dim 128) there is none."""
    config = AttentionConfig("bf16", 64, causal="top_left")
    art = compile_attention(config, backward=False)
    limit, short = art.short_forward()
    assert limit == SHORT_FORWARD_MAX_SEQLEN_K
    assert short.kernel == compiler.func_name(config, "fwd_short") + \
        "_attention_0"
    default = art.forward_manifest()
    assert short.kernel != default.kernel and short.ptx != default.ptx
    assert ".entry " + short.kernel in open(short.ptx).read()
    assert (short.block_m, short.block_n, short.threads) == (64, 128, 128)
    assert (default.block_m, default.threads) == (192, 512)
    assert (short.params, short.causal, short.scale) == (
        default.params, default.causal, default.scale)
    reg = Registry()
    reg.add_kernel_dir(os.path.dirname(art.directory))
    ks = reg.kernels_for(config, "sm_90a", 2, 100, 100)
    assert ks.forward_for(1).kernel == short.kernel
    assert ks.forward_for(SHORT_FORWARD_MAX_SEQLEN_K).kernel == short.kernel
    assert ks.forward_for(SHORT_FORWARD_MAX_SEQLEN_K + 1).kernel == \
        default.kernel
    assert KernelSet(config=config, forward=default).forward_for(1) is default
    wide = compile_attention(AttentionConfig("bf16", 128), backward=False)
    assert wide.short_forward() is None and "forward_short" not in wide.entry
    off = compile_attention(config, CompileOptions(short_forward=False),
                            backward=False)
    assert off.short_forward() is None and off.directory != art.directory


def test_short_forward_from_an_on_demand_compile(fa_opt_tool, cache_root,
                                                monkeypatch):
    """With no precompiled folder the registry compiles the set, and it
    launches the short forward as well; FA_OPT_SHORT_FORWARD=0 turns it off
    at launch."""
    monkeypatch.delenv("FA_OPT_KERNEL_DIRS", raising=False)
    config = AttentionConfig("f16", 64, causal="bottom_right")
    ks = Registry().kernels_for(config, "sm_90a", 2, 100, 100)
    assert ks.short_forward is not None
    assert ks.forward_for(100) is ks.short_forward[1]
    monkeypatch.setenv("FA_OPT_SHORT_FORWARD", "0")
    assert ks.forward_for(100) is ks.forward


def test_short_forward_in_the_cache_key(fa_opt_tool, cache_root):
    """The key covers the short forward where it applies (its own entry
    with short_forward=False), and nothing where it does not (head dim 128:
    one entry either way)."""
    off = CompileOptions(short_forward=False)
    wide = AttentionConfig("bf16", 128)
    assert compile_attention(wide, backward=False).directory == \
        compile_attention(wide, off, backward=False).directory
    narrow = AttentionConfig("bf16", 64)
    assert compile_attention(narrow, backward=False).directory != \
        compile_attention(narrow, off, backward=False).directory
    identity = {"fa_opt": "x"}
    material = compiler.key_material(narrow, CompileOptions(), identity)
    assert material["short_forward"]["max_seqlen_k"] == \
        SHORT_FORWARD_MAX_SEQLEN_K
    assert "fa_fwd_short_" in material["short_forward"]["mlir"]
    assert compiler.key_material(narrow, off, identity)["short_forward"] \
        is None


def test_a_set_with_a_short_forward_comes_first(fa_opt_tool, cache_root,
                                                tmp_path):
    """Two entries of one config in a folder, with and without the short
    forward: the lookup takes the one with it, whatever the folder order."""
    from fa_opt.compiler import export_artifact
    config = AttentionConfig("bf16", 64)
    out = str(tmp_path / "k")
    export_artifact(compile_attention(config, CompileOptions(
        short_forward=False)), out)
    export_artifact(compile_attention(config), out)
    reg = Registry()
    reg.add_kernel_dir(out)
    assert reg.kernels_for(config, "sm_90a", 1, 10, 10).short_forward


@pytest.mark.parametrize("short", [
    "x.manifest", {"manifest": 3, "max_seqlen_k": 2048},
    {"manifest": "x.manifest"}, {"manifest": "x.manifest",
                                 "max_seqlen_k": True},
    {"manifest": "x.manifest", "max_seqlen_k": -1}])
def test_a_malformed_short_forward_leaves_the_default(fa_opt_tool,
                                                      cache_root, short):
    art = compile_attention(AttentionConfig("bf16", 64), backward=False)
    entry = dict(art.entry, forward_short=short)
    assert compiler.entry_problem(entry) is None
    assert compiler.artifact_problem(art.directory, entry) is None
    broken = compiler.Artifact(art.directory, entry, art.config)
    assert broken.short_forward() is None
    assert "'forward_short' is not an object" in broken.short_forward_error


def test_a_broken_short_forward_leaves_the_default(fa_opt_tool, cache_root,
                                                   tmp_path):
    """A short manifest that is missing, names a missing PTX file or does
    not match the default forward leaves the entry usable without it; the
    CLI's list says why."""
    import contextlib
    import io
    from fa_opt.__main__ import main
    from fa_opt.compiler import export_artifact
    art = compile_attention(AttentionConfig("f16", 64), backward=False)
    assert art.short_forward_error is None
    name = art.entry["forward_short"]["manifest"]

    def broken(edit):
        out = str(tmp_path / f"k{len(os.listdir(tmp_path))}")
        folder = export_artifact(art, out)
        edit(os.path.join(folder, name))
        assert compiler.artifact_problem(folder, art.entry) is None
        copy = compiler.Artifact(folder, art.entry, art.config)
        assert copy.short_forward() is None
        return out, copy.short_forward_error

    _, why = broken(os.remove)
    assert why.startswith(f"short forward manifest '{name}': ")
    _, why = broken(lambda path: os.remove(path[:-len(".manifest")] +
                                           ".ptx"))
    assert why.endswith("which is missing")

    def rescale(path):
        text = open(path).read().replace("scale 0.125", "scale 0.5")
        open(path, "w").write(text)
    out, why = broken(rescale)
    assert why == (f"the short forward '{name}' has scale 0.5, the default "
                   "forward 0.125")
    reg = Registry()
    reg.add_kernel_dir(out)
    ks = reg.kernels_for(AttentionConfig("f16", 64), "sm_90a", 1, 10, 10)
    assert ks.short_forward is None and ks.forward_for(10) is ks.forward
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["list", out]) == 0
    assert "short_forward unusable (the short forward" in buf.getvalue()


@pytest.mark.parametrize("how", ["fails", "bad-manifest"])
def test_a_failed_short_compile_keeps_the_rest(fa_opt_tool, cache_root,
                                               tmp_path, monkeypatch, how):
    """fa-opt failing on the short forward only (exit 1, or exit 0 with a
    manifest that does not parse): the entry keeps the default forward and
    the backward, with the reason in forward_short_error."""
    fake = tmp_path / "fa-opt"
    bad = ("echo 'x.mlir:1:1: error: no short' >&2; exit 1" if how == "fails"
           else "printf 'garbage\\n' > fa_fwd_short_x.manifest; exit 0")
    fake.write_text("#!/bin/sh\ncase \"$*\" in *block-m=64*) " + bad +
                    ";; esac\nexec " + fa_opt_tool + " \"$@\"\n")
    fake.chmod(0o755)
    monkeypatch.setenv("FA_OPT", str(fake))
    art = compile_attention(AttentionConfig("bf16", 64, causal="top_left"))
    assert art.entry["backward"] and art.forward_manifest().block_m == 192
    assert "forward_short" not in art.entry and art.short_forward() is None
    if how == "fails":
        assert art.entry["forward_short_error"].endswith("error: no short")
    else:
        assert "short forward manifest 'fa_fwd_short_x.manifest'" in \
            art.entry["forward_short_error"]
    assert art.short_forward_error == art.entry["forward_short_error"]
    assert not [n for n in os.listdir(art.directory) if "short" in n and
                not n.endswith(".mlir")]


def test_second_compile_hits_the_cache(fa_opt_tool, cache_root, monkeypatch):
    config = AttentionConfig("f16", 128, causal="bottom_right", scale=0.3)
    first = compile_attention(config)
    calls = []
    real_run = subprocess.run
    monkeypatch.setattr(compiler.subprocess, "run",
                        lambda *a, **k: calls.append(a) or real_run(*a, **k))
    second = compile_attention(config)
    assert second.directory == first.directory and calls == []
    assert second.forward_manifest().scale == pytest.approx(0.3)
    # Other options, another entry.
    third = compile_attention(config, CompileOptions(chip="sm_80", block_m=32))
    assert third.directory != first.directory
    m = third.forward_manifest()
    assert (m.chip, m.block_m) == ("sm_80", 32)


def test_static_config(fa_opt_tool, cache_root):
    config = AttentionConfig("f32", 80, head_dim_v=48, batch=12, seqlen_q=77,
                             seqlen_k=1031)
    m = compile_attention(config).forward_manifest()
    assert (m.batch, m.seqlen_q, m.seqlen_k) == (12, 77, 1031)
    assert (m.head_dim, m.head_dim_v, m.dtype) == (80, 48, "f32")
    assert m.accepts(12, 77, 1031) and not m.accepts(12, 78, 1031)


def test_fa_opt_failure_is_reported(tmp_path, monkeypatch, cache_root):
    fake = tmp_path / "fa-opt"
    fake.write_text("#!/bin/sh\n[ \"$1\" = --version ] && exit 0\n"
                    "echo 'input.mlir:1:1: error: boom' >&2; exit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("FA_OPT", str(fake))
    with pytest.raises(CompilationError, match="(?s)fa-opt failed \\(exit 1\\).*error: boom"):
        compile_attention(AttentionConfig("bf16", 64))
    # Nothing half-written is left in the cache.
    assert [n for n in os.listdir(cache_root) if not n.startswith(".")] == []
    assert [n for n in os.listdir(cache_root) if n.startswith(".staging")] == []


def test_precompiled_folder_without_fa_opt(fa_opt_tool, cache_root, tmp_path,
                                          monkeypatch):
    """Compile, export with the CLI, then resolve with no fa-opt around."""
    from fa_opt.__main__ import main
    out = tmp_path / "kernels"
    assert main(["compile", "--dtype", "bf16", "f16", "--causal", "top_left",
                 "--out", str(out)]) == 0
    assert len(os.listdir(out)) == 2
    monkeypatch.setenv("FA_OPT", str(tmp_path / "no-such-fa-opt"))
    reg = Registry()
    reg.add_kernel_dir(str(out))
    ks = reg.kernels_for(AttentionConfig("bf16", 64, causal=True), "sm_90a",
                         16, 1000, 333)
    assert ks.forward.dtype == "bf16" and ks.source.startswith(str(out))
    with pytest.raises(FaOptNotFoundError, match="no kernel for dtype f32"):
        reg.kernels_for(AttentionConfig("f32", 64), "sm_90a", 1, 2, 3)
    with pytest.raises(FaOptNotFoundError, match="no kernel"):  # another chip
        reg.kernels_for(AttentionConfig("bf16", 64, causal=True), "sm_80", 1, 2, 3)


def test_index_reads_each_manifest_once(fa_opt_tool, cache_root, tmp_path,
                                       monkeypatch):
    """The registry's index checks an entry's manifests by parsing them;
    the lookups that follow use those parses rather than reading the files
    again."""
    import builtins
    from fa_opt import manifest as manifest_module
    from fa_opt.__main__ import main
    out = tmp_path / "kernels"
    assert main(["compile", "--dtype", "bf16", "--out", str(out)]) == 0
    reads = []

    def counting_open(path, *args, **kwargs):
        if str(path).endswith(".manifest"):
            reads.append(os.path.basename(str(path)))
        return builtins.open(path, *args, **kwargs)

    monkeypatch.setattr(manifest_module, "open", counting_open, raising=False)
    reg = Registry()
    reg.add_kernel_dir(str(out))
    for _ in range(2):
        ks = reg.kernels_for(AttentionConfig("bf16", 64), "sm_90a", 4, 100, 90)
        assert ks.forward.dtype == "bf16" and ks.backward is not None
    assert reads and len(reads) == len(set(reads)), reads


def test_bare_manifests_from_fa_opt(fa_opt_tool, tmp_path, monkeypatch):
    """Folders that fa-opt --fa-to-ptx wrote directly (no fa_opt.json),
    e.g. bench/make_gpu_check_kernels.sh's, serve calls they fit."""
    src = tmp_path / "a.mlir"
    t = "tensor<2x8x?x64xbf16>"
    src.write_text(
        f"func.func @gc(%q: {t}, %k: {t}, %v: {t}) -> ({t}, tensor<2x8x?xf32>) {{\n"
        f"  %o, %lse = fa.attention %q, %k, %v causal(top_left) : {t}, {t}, {t} -> {t}, tensor<2x8x?xf32>\n"
        f"  return %o, %lse : {t}, tensor<2x8x?xf32>\n}}\n")
    out = tmp_path / "bare"
    subprocess.run([fa_opt_tool, str(src), f"--fa-to-ptx=chip=sm_90a output-dir={out}",
                    "-o", os.devnull], check=True)
    monkeypatch.setenv("FA_OPT", str(tmp_path / "no-such-fa-opt"))
    reg = Registry()
    reg.add_kernel_dir(str(out))
    config = AttentionConfig("bf16", 64, causal="top_left")
    ks = reg.kernels_for(config, "sm_90a", 16, 100, 100)
    assert ks.forward.kernel == "gc_attention_0" and ks.backward is None
    with pytest.raises(FaOptNotFoundError):  # batch 16 only
        reg.kernels_for(config, "sm_90a", 4, 100, 100)


def test_a_set_with_backward_comes_first(fa_opt_tool, tmp_path, monkeypatch):
    """A forward-only entry and a full one of the same config in one
    folder (compile --no-backward, then compile): the registry gives the
    one with a backward, whatever the folder order."""
    out = tmp_path / "kernels"
    monkeypatch.setenv("FA_OPT_CACHE_DIR", str(tmp_path / "cache"))
    env = dict(os.environ, FA_OPT=fa_opt_tool,
               PYTHONPATH=os.path.dirname(os.path.dirname(
                   os.path.abspath(__file__))))
    for extra in (["--no-backward"], []):
        subprocess.run([sys.executable, "-m", "fa_opt", "compile", "--dtype",
                        "f32", "--head-dim", "32", "--out", str(out), *extra],
                       check=True, env=env, stdout=subprocess.DEVNULL)
    assert len(os.listdir(out)) == 2
    monkeypatch.setenv("FA_OPT", str(tmp_path / "no-such-fa-opt"))
    reg = Registry()
    reg.add_kernel_dir(str(out))
    ks = reg.kernels_for(AttentionConfig("f32", 32), "sm_90a", 2, 100, 100)
    assert ks.backward is not None


# --- the scale literal --------------------------------------------------------

SCALES = [1e-5, 5e-5, 1e16, 0.125, 1 / 3, 2.0, 1e-30, 1e-40, 3e38]


@pytest.mark.parametrize("scale", SCALES)
def test_scale_literal_is_mlir_float_and_round_trips(scale):
    import re
    config = AttentionConfig("bf16", 64, scale=scale)
    for text in (compiler.make_mlir(config), compiler.make_backward_mlir(config)):
        (literal,) = re.findall(r"scale\(([^)]*)\)", text)
        # MLIR's float literal: digits '.' digits [e[+-]digits]; repr's
        # '5e-05' or '1e+16' (no '.') is rejected by the parser.
        assert re.fullmatch(r"[0-9]+\.[0-9]+(e[+-][0-9]+)?", literal), literal
        assert float(literal) == scale


def test_mlir_float_rejects_non_finite():
    for bad in (float("inf"), float("nan")):
        with pytest.raises(ValueError):
            compiler.mlir_float(bad)


@pytest.mark.parametrize("scale", [1e-5, 1e16, 0.125, 1 / 3])
def test_compile_with_any_scale(fa_opt_tool, cache_root, scale):
    config = AttentionConfig("f32", 64, scale=scale)
    art = compile_attention(config, backward=False)
    assert art.forward_manifest().scale == pytest.approx(scale, rel=1e-6)


def test_deterministic_kernels_from_the_registry(fa_opt_tool, cache_root):
    """kernels_for(..., deterministic=True) compiles the split backward
    (manifest `deterministic 1`, a `_dq` kernel, no dq_accum) next to the
    default dq-atomics one, and memoizes it separately."""
    reg = Registry()
    config = AttentionConfig("bf16", 64)
    default = reg.kernels_for(config, "sm_90a", 2, 300, 257)
    assert default.backward is not None
    assert not default.backward.deterministic
    assert [s.name for s in default.backward.scratch] == ["delta", "dq_accum"]
    det = reg.kernels_for(config, "sm_90a", 2, 300, 257, deterministic=True)
    assert det.backward.deterministic
    assert [s.name for s in det.backward.scratch] == ["delta"]
    assert det.backward.kernels[-1].kernel.endswith("_dq")
    assert det.source != default.source
    assert reg.kernels_for(config, "sm_90a", 2, 300, 257,
                           deterministic=True) is det
    assert reg.kernels_for(config, "sm_90a", 2, 300, 257) is default


def test_deterministic_kernels_drop_the_backward_producer(fa_opt_tool,
                                                         cache_root):
    """Registry options asking for the backward's producer warpgroup (a
    dq-atomics kernel) still give deterministic kernels: the producer is
    dropped for them, and kept (384 threads in _dkdv) otherwise."""
    reg = Registry()
    reg.options = CompileOptions(backward_producer_warp=True)
    config = AttentionConfig("bf16", 128)
    det = reg.kernels_for(config, "sm_90a", 1, 300, 257, deterministic=True)
    assert det.backward.deterministic
    assert all(k.threads == 256 for k in det.backward.kernels
               if k.kernel.endswith("_dkdv"))
    plain = reg.kernels_for(config, "sm_90a", 1, 300, 257)
    assert [k.threads for k in plain.backward.kernels
            if k.kernel.endswith("_dkdv")] == [384]


def test_deterministic_kernels_need_a_deterministic_backward(
        fa_opt_tool, cache_root, tmp_path, monkeypatch):
    """A precompiled folder whose backward uses dq atomics serves plain
    calls but not deterministic ones when fa-opt is missing; one compiled
    with --deterministic true serves both."""
    from fa_opt.__main__ import main
    atomics, det = tmp_path / "atomics", tmp_path / "det"
    assert main(["compile", "--dtype", "bf16", "--out", str(atomics)]) == 0
    assert main(["compile", "--dtype", "bf16", "--deterministic", "true",
                 "--out", str(det)]) == 0
    monkeypatch.setenv("FA_OPT", str(tmp_path / "no-such-fa-opt"))
    config = AttentionConfig("bf16", 64)
    reg = Registry()
    reg.add_kernel_dir(str(atomics))
    assert not reg.kernels_for(config, "sm_90a", 1, 8, 8).backward.deterministic
    with pytest.raises(FaOptNotFoundError,
                       match="no kernel with a deterministic backward for "
                       "dtype bf16"):
        reg.kernels_for(config, "sm_90a", 1, 8, 8, deterministic=True)
    reg = Registry()
    reg.add_kernel_dir(str(det))
    ks = reg.kernels_for(config, "sm_90a", 1, 8, 8, deterministic=True)
    assert ks.backward.deterministic and ks.source.startswith(str(det))


def _kernel_set(deterministic):
    """A KernelSet stand-in: deterministic_backward reads only these."""
    from types import SimpleNamespace
    backward = None if deterministic is None else SimpleNamespace(
        deterministic=deterministic)
    return SimpleNamespace(backward=backward, source="/kernels/x")


@pytest.mark.parametrize("deterministic", [True, None])
def test_deterministic_backward_keeps_what_is_already_reproducible(
        deterministic):
    from fa_opt.runtime import deterministic_backward
    ks = _kernel_set(deterministic)

    def fetch():
        raise AssertionError("fetched although not needed")
    assert deterministic_backward(ks, fetch) is ks


def test_deterministic_backward_replaces_atomics():
    from fa_opt.runtime import deterministic_backward
    replacement = _kernel_set(True)
    assert deterministic_backward(_kernel_set(False),
                                  lambda: replacement) is replacement


@pytest.mark.parametrize("error", [
    FaOptNotFoundError("fa-opt not found"),
    CompilationError("fa-opt failed (exit 1)"),
    ValueError("dq_atomics=True ... cannot be combined with "
               "deterministic=True"),
])
def test_deterministic_backward_raises_or_warns(error):
    """Where no deterministic backward can be had: RuntimeError naming the
    cause; with warn_only a UserWarning and the atomics kernels."""
    from fa_opt.runtime import deterministic_backward
    ks = _kernel_set(False)

    def fetch():
        raise error
    with pytest.raises(RuntimeError, match="(?s)add dq with f32 atomics.*"
                       "torch.use_deterministic_algorithms\\(True\\) is set"
                       ".*" + str(error).split()[0]):
        deterministic_backward(ks, fetch)
    with pytest.warns(UserWarning, match="not deterministic"):
        assert deterministic_backward(ks, fetch, warn_only=True) is ks


def _break_json(directory, text):
    with open(os.path.join(directory, "fa_opt.json"), "w") as f:
        f.write(text)


@pytest.mark.parametrize("how", ["not json", "list", "empty object",
                                 "manifest deleted", "manifest truncated",
                                 "ptx deleted", "backward deleted"])
def test_broken_cache_entry_is_compiled_again(fa_opt_tool, cache_root, how):
    """An entry damaged after it was written (by hand, a full disk) reads
    as missing: the next compile replaces it, and the CLI prints no
    traceback (hostile-user pass, thirty-eighth session)."""
    from fa_opt.__main__ import main
    config = AttentionConfig("bf16", 32)
    first = compile_attention(config)
    d = first.directory
    fwd = os.path.join(d, first.entry["forward"][0])
    if how == "not json":
        _break_json(d, "{broken")
    elif how == "list":
        _break_json(d, "[]")
    elif how == "empty object":
        _break_json(d, "{}")
    elif how == "manifest deleted":
        os.remove(fwd)
    elif how == "manifest truncated":
        with open(fwd, "w") as f:
            f.write("version 3\n")
    elif how == "ptx deleted":
        os.remove(first.forward_manifest().ptx)
    else:
        os.remove(os.path.join(d, first.entry["backward"][0]))
    assert compiler.artifact_problem(d, compiler.cache._read_entry(d) or
                                     "unreadable") is not None
    second = compile_attention(config)
    assert second.directory == d
    assert compiler.artifact_problem(d, second.entry) is None
    assert second.forward_manifest().kernel == first.forward_manifest().kernel
    # Nothing left aside, and the CLI finds the entry whole.
    assert [n for n in os.listdir(cache_root) if n.startswith(".")] == []
    if how != "list":
        _break_json(d, "[]")
    assert main(["compile", "--dtype", "bf16", "--head-dim", "32"]) == 0


def test_fa_opt_writing_a_bad_manifest_is_not_cached(tmp_path, monkeypatch,
                                                     cache_root):
    fake = tmp_path / "fa-opt"
    fake.write_text("#!/bin/sh\n[ \"$1\" = --version ] && exit 0\n"
                    "printf 'garbage\\n' > fake.manifest; exit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("FA_OPT", str(fake))
    with pytest.raises(CompilationError,
                       match="wrote kernels that cannot be used for "
                             "bf16_d64_none: forward manifest 'fake.manifest'"):
        compile_attention(AttentionConfig("bf16", 64), backward=False)
    assert os.listdir(cache_root) == []


def test_export_is_atomic_and_repairs_a_partial_copy(fa_opt_tool, cache_root,
                                                     tmp_path):
    import threading
    art = compile_attention(AttentionConfig("f16", 32))
    out = str(tmp_path / "out")
    errors, results = [], []

    def export():
        try:
            results.append(compiler.export_artifact(art, out))
        except Exception as err:  # noqa: BLE001 (collected for the assert)
            errors.append(err)

    threads = [threading.Thread(target=export) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(set(results)) == 1
    target = results[0]
    assert sorted(os.listdir(out)) == [os.path.basename(target)]
    assert sorted(os.listdir(target)) == sorted(os.listdir(art.directory))
    # An interrupted copy (manifests and PTX gone) is made whole again.
    for name in os.listdir(target):
        if name.endswith((".manifest", ".ptx")):
            os.remove(os.path.join(target, name))
    assert compiler.export_artifact(art, out) == target
    assert sorted(os.listdir(target)) == sorted(os.listdir(art.directory))
    assert sorted(os.listdir(out)) == [os.path.basename(target)]


def test_list_warns_about_a_broken_entry(fa_opt_tool, cache_root, tmp_path,
                                         capsys):
    from fa_opt.__main__ import main
    out = tmp_path / "kernels"
    assert main(["compile", "--head-dim", "32", "--out", str(out)]) == 0
    (entry,) = os.listdir(out)
    for name in os.listdir(out / entry):
        if name.startswith("fa_bwd") and name.endswith(".manifest"):
            os.remove(out / entry / name)
    capsys.readouterr()
    assert main(["list", str(out)]) == 0
    captured = capsys.readouterr()
    assert "backward yes" not in captured.out
    assert f"warning: skipped {out / entry / 'fa_opt.json'}: backward " \
        "manifest" in captured.err


def test_list_does_not_read_a_fifo_named_as_a_manifest(fa_opt_tool,
                                                       cache_root, tmp_path,
                                                       capsys):
    """artifact_problem stats a manifest before reading it: a FIFO would
    block the read (review of the cache check, thirty-eighth session)."""
    from fa_opt.__main__ import main
    out = tmp_path / "kernels"
    assert main(["compile", "--head-dim", "32", "--no-backward", "--out",
                 str(out)]) == 0
    (entry,) = os.listdir(out)
    (manifest,) = [n for n in os.listdir(out / entry)
                   if n.endswith(".manifest")]
    os.remove(out / entry / manifest)
    os.mkfifo(out / entry / manifest)
    capsys.readouterr()
    assert main(["list", str(out)]) == 0
    assert "is not a regular file" in capsys.readouterr().err


def test_module_setters_check_their_arguments(tmp_path, monkeypatch):
    """fa_opt.set_compile_options and fa_opt.add_kernel_dir refuse a bad
    argument at the call, not at the first launch that reads it."""
    import fa_opt
    from fa_opt import runtime
    reg = Registry()
    monkeypatch.setattr(runtime, "registry", reg)
    for bad in ("sm_90a", {"chip": "sm_90a"}, CompileOptions):
        with pytest.raises(TypeError, match="expected a CompileOptions or "
                           "None"):
            fa_opt.set_compile_options(bad)
    assert reg.options is None
    options = CompileOptions(block_m=64)
    fa_opt.set_compile_options(options)
    assert reg.options is options
    fa_opt.set_compile_options(None)
    assert reg.options is None

    with pytest.raises(NotADirectoryError, match="not a folder"):
        fa_opt.add_kernel_dir(str(tmp_path / "missing"))
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError, match="not a folder"):
        fa_opt.add_kernel_dir(tmp_path / "file")
    with pytest.raises(TypeError, match="str or os.PathLike"):
        fa_opt.add_kernel_dir(3)
    fa_opt.add_kernel_dir(tmp_path)
    assert str(tmp_path) in reg.kernel_dirs()
