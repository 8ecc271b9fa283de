"""Shared fixtures. Tests needing fa-opt skip when it is not found (FA_OPT,
PATH, then the repository's build folders); tests marked ``gpu`` skip
without torch, a CUDA device or cuda-bindings."""

import os
import shutil

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _find_tool():
    env = os.environ.get("FA_OPT")
    if env and os.access(env, os.X_OK):
        return os.path.abspath(env)
    found = shutil.which("fa-opt")
    if found:
        return os.path.abspath(found)
    for build in (os.environ.get("BUILD_DIR", "build"), "build"):
        path = os.path.join(REPO, build, "bin", "fa-opt")
        if os.access(path, os.X_OK):
            return path
    return None


@pytest.fixture
def fa_opt_tool(monkeypatch):
    tool = _find_tool()
    if tool is None:
        pytest.skip("fa-opt not found (set FA_OPT or put it on PATH)")
    monkeypatch.setenv("FA_OPT", tool)
    return tool


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("FA_OPT_CACHE_DIR", str(root))
    return str(root)


def gpu_skip_reason():
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device"
    import importlib
    for name in ("cuda.bindings.driver", "cuda.cuda"):
        try:
            importlib.import_module(name)
            break
        except ImportError:
            continue
    else:
        return "cuda-bindings is not installed"
    return None


def pytest_collection_modifyitems(config, items):
    reason = None
    for item in items:
        if "gpu" in item.keywords:
            if reason is None:
                reason = gpu_skip_reason() or ""
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


class FakeDevice:
    def __init__(self, spec):
        self.type = spec.split(":")[0]
        self.index = int(spec.split(":")[1]) if ":" in spec else None
        self._spec = spec

    def __str__(self):
        return self._spec


class FakeTensor:
    """Stands in for a torch tensor in the validation tests (no torch)."""

    def __init__(self, shape, strides=None, dtype="torch.bfloat16",
                 device="cuda:0"):
        self.shape = tuple(shape)
        if strides is None:
            strides, acc = [], 1
            for s in reversed(self.shape):
                strides.insert(0, acc)
                acc *= max(s, 1)
        self._strides = tuple(strides)
        self.dtype = dtype
        self.device = FakeDevice(device)

    def stride(self):
        return self._strides

    def dim(self):
        return len(self.shape)
