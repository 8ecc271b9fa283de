import os

import pytest

from fa_opt import __version__, cache
from fa_opt.compiler import key_material, make_mlir
from fa_opt.config import AttentionConfig, CompileOptions

TOOL = {"sha256": "0" * 64, "version": "LLVM 22.1.8"}


def key(config=None, options=None, tool=None):
    return cache.cache_key(key_material(config or AttentionConfig("bf16", 64),
                                        options or CompileOptions(), tool or TOOL))


def test_cache_dir_from_env(monkeypatch, tmp_path):
    monkeypatch.setenv("FA_OPT_CACHE_DIR", str(tmp_path))
    assert cache.cache_dir() == str(tmp_path)
    monkeypatch.delenv("FA_OPT_CACHE_DIR")
    assert cache.cache_dir() == os.path.join(os.path.expanduser("~"), ".cache", "fa_opt")


def test_key_is_stable_and_hex():
    assert key() == key() and len(key()) == 64
    int(key(), 16)


def test_key_changes_with_everything_that_changes_the_code(monkeypatch):
    base = key()
    changed = [
        key(config=AttentionConfig("f16", 64)),
        key(config=AttentionConfig("bf16", 128)),
        key(config=AttentionConfig("bf16", 64, head_dim_v=32)),
        key(config=AttentionConfig("bf16", 64, causal="top_left")),
        key(config=AttentionConfig("bf16", 64, causal="bottom_right")),
        key(config=AttentionConfig("bf16", 64, scale=0.3)),
        key(config=AttentionConfig("bf16", 64, batch=16)),
        key(config=AttentionConfig("bf16", 64, seqlen_q=128, seqlen_k=128)),
        key(config=AttentionConfig("bf16", 64, o_dtype="f32")),
        key(options=CompileOptions(chip="sm_80")),
        key(options=CompileOptions(block_m=128)),
        key(options=CompileOptions(block_n=32)),
        key(tool={"sha256": "1" * 64, "version": "LLVM 22.1.8"}),
        key(tool={"sha256": "0" * 64, "version": "LLVM 23.0.0"}),
    ]
    assert len(set(changed + [base])) == len(changed) + 1
    import fa_opt.compiler as compiler
    monkeypatch.setattr(compiler, "__version__", "9.9.9")
    assert key() != base


def test_key_ignores_what_does_not_change_the_code():
    # The default scale spelled out, and the default head_dim_v / o_dtype.
    assert key(config=AttentionConfig("bf16", 64, scale=0.125, head_dim_v=64,
                                      o_dtype="bf16")) == key()


def test_mlir_names_the_config():
    text = make_mlir(AttentionConfig("f16", 128, causal=True, seqlen_q=7))
    assert "tensor<?x7x128xf16>" in text and "causal(top_left)" in text
    assert f"fa_opt {__version__}" in text


def test_publish_is_atomic_and_first_writer_wins(tmp_path):
    root = str(tmp_path)
    a = cache.new_staging_dir(root)
    open(os.path.join(a, "x.ptx"), "w").write("first")
    b = cache.new_staging_dir(root)
    open(os.path.join(b, "x.ptx"), "w").write("second")
    assert cache.lookup("k", root) is None
    cache.publish(a, "k", {"who": "a"}, root)
    cache.publish(b, "k", {"who": "b"}, root)
    assert cache.lookup("k", root) == {"who": "a"}
    assert open(os.path.join(root, "k", "x.ptx")).read() == "first"
    assert not os.path.exists(b)


def test_unwritable_cache_folder_is_named(tmp_path, monkeypatch):
    """An OSError from creating the cache folder names the folder and, when
    it comes from the environment, $FA_OPT_CACHE_DIR."""
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("FA_OPT_CACHE_DIR", str(blocker / "cache"))
    with pytest.raises(OSError, match=r"cannot write the cache folder "
                       r"\(\$FA_OPT_CACHE_DIR\) '.*a_file/cache'"):
        cache.new_staging_dir()
    with pytest.raises(OSError, match=r"cannot write the cache folder '"):
        cache.new_staging_dir(str(blocker / "other"))


def test_publish_replaces_a_broken_entry(tmp_path):
    root = str(tmp_path)
    os.makedirs(os.path.join(root, "k"))
    open(os.path.join(root, "k", cache.ENTRY_FILE), "w").write("{broken")
    a = cache.new_staging_dir(root)
    cache.publish(a, "k", {"who": "a"}, root)
    assert cache.lookup("k", root) == {"who": "a"}
    # A check that refuses the entry: the next publish replaces it.
    b = cache.new_staging_dir(root)
    cache.publish(b, "k", {"who": "b"}, root,
                  check=lambda d, e: "bad" if e["who"] == "a" else None)
    assert cache.lookup("k", root) == {"who": "b"}
    assert cache.lookup("k", root, check=lambda d, e: "no") is None
    assert sorted(os.listdir(root)) == ["k"]


def test_staging_folders_follow_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        d = cache.new_staging_dir(str(tmp_path))
    finally:
        os.umask(old)
    assert os.stat(d).st_mode & 0o777 == 0o755


def test_discard_puts_back_a_good_entry_that_arrived_meanwhile(tmp_path):
    """install found the entry broken, but another process replaced it with
    a good one before the rename aside: the good one is kept."""
    root = str(tmp_path)
    good = cache.new_staging_dir(root)
    cache.publish(good, "k", {"who": "good"}, root)
    cache.discard(os.path.join(root, "k"),
                  check=lambda d, e: None if e["who"] == "good" else "bad")
    assert cache.lookup("k", root) == {"who": "good"}
    assert sorted(os.listdir(root)) == ["k"]
    cache.discard(os.path.join(root, "k"), check=lambda d, e: "bad")
    assert os.listdir(root) == []
