"""Loading and launching PTX kernels with the CUDA driver API, through
cuda-bindings (``cuda.bindings.driver``).

A module is loaded once per (PTX file, device) into the device's primary
context -- the one PyTorch uses -- and its function kept. A launch is
``cuLaunchKernel`` on the caller's stream with the kernel parameters packed
as 64-bit values; it never synchronizes.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Dict, Sequence, Tuple


class FaCudaError(RuntimeError):
    """A failed CUDA driver call; the message names the call and the error."""


_cu = None


def driver():
    """The ``cuda.bindings.driver`` module (imported on first use)."""
    global _cu
    if _cu is None:
        try:
            from cuda.bindings import driver as cu
        except ImportError:
            try:  # cuda-python < 12.6 spelled it cuda.cuda
                from cuda import cuda as cu  # type: ignore
            except ImportError as err:
                raise ImportError(
                    "fa_opt needs cuda-bindings to launch kernels "
                    "(pip install cuda-bindings)") from err
        _cu = cu
    return _cu


def _text(value) -> str:
    return value.decode() if isinstance(value, (bytes, bytearray)) else str(value)


def check(result, what: str):
    """Unpacks a cuda-bindings result tuple, raising on an error."""
    cu = driver()
    err = result[0] if isinstance(result, tuple) else result
    if err != cu.CUresult.CUDA_SUCCESS:
        try:
            name = _text(cu.cuGetErrorName(err)[1])
            desc = _text(cu.cuGetErrorString(err)[1])
        except Exception:  # pragma: no cover - best effort
            name, desc = str(err), ""
        raise FaCudaError(f"{what} failed: {name}: {desc}")
    if not isinstance(result, tuple) or len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


_lock = threading.Lock()
_inited = False
_contexts: Dict[int, object] = {}


def primary_context(device: int):
    """Retains (once) and returns device ``device``'s primary context."""
    global _inited
    ctx = _contexts.get(device)
    if ctx is None:
        cu = driver()
        with _lock:
            if not _inited:
                check(cu.cuInit(0), "cuInit")
                _inited = True
            ctx = _contexts.get(device)
            if ctx is None:
                dev = check(cu.cuDeviceGet(device), f"cuDeviceGet({device})")
                ctx = check(cu.cuDevicePrimaryCtxRetain(dev),
                            f"cuDevicePrimaryCtxRetain({device})")
                _contexts[device] = ctx
    return ctx


class _Current:
    """Makes ``ctx`` current for a block (no-op when it already is)."""

    __slots__ = ("ctx", "pushed")

    def __init__(self, ctx):
        self.ctx = ctx
        self.pushed = False

    def __enter__(self):
        cu = driver()
        current = check(cu.cuCtxGetCurrent(), "cuCtxGetCurrent")
        if current is None or int(current) != int(self.ctx):
            check(cu.cuCtxPushCurrent(self.ctx), "cuCtxPushCurrent")
            self.pushed = True
        return self

    def __exit__(self, *exc):
        if self.pushed:
            check(driver().cuCtxPopCurrent(), "cuCtxPopCurrent")


# Dynamic shared memory past this needs an opt-in attribute.
_DEFAULT_SHARED_LIMIT = 48 * 1024


class Module:
    """One PTX module loaded on one device (into its primary context)."""

    def __init__(self, ptx_path: str, device: int):
        cu = driver()
        self.path = ptx_path
        self.device = device
        self.ctx = primary_context(device)
        with open(ptx_path, "rb") as f:
            image = ctypes.create_string_buffer(f.read())  # NUL-terminated
        with _Current(self.ctx):
            self.module = check(cu.cuModuleLoadData(ctypes.addressof(image)),
                                f"cuModuleLoadData({ptx_path})")

    def function(self, name: str, shared_bytes: int = 0) -> "Function":
        return Function(self, name, shared_bytes)


class Function:
    """One kernel of a loaded module."""

    def __init__(self, module: Module, name: str, shared_bytes: int = 0):
        cu = driver()
        self.name = name
        self.ctx = module.ctx
        self.module = module  # keeps the CUmodule alive
        self.shared_bytes = int(shared_bytes)
        with _Current(self.ctx):
            self.function = check(
                cu.cuModuleGetFunction(module.module, name.encode()),
                f"cuModuleGetFunction({name})")
            if self.shared_bytes > _DEFAULT_SHARED_LIMIT:
                attr = cu.CUfunction_attribute \
                    .CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
                check(cu.cuFuncSetAttribute(self.function, attr,
                                            self.shared_bytes),
                      f"cuFuncSetAttribute({name}, max dynamic shared)")

    def launch(self, grid: Tuple[int, int, int], block: Tuple[int, int, int],
               params: Sequence[int], stream: int) -> None:
        """Asynchronous launch on ``stream`` (a CUstream handle as int).
        ``params`` are 64-bit values, one per kernel parameter."""
        cu = driver()
        n = len(params)
        values = (ctypes.c_uint64 * n)(*[p & 0xFFFFFFFFFFFFFFFF for p in params])
        base = ctypes.addressof(values)
        pointers = (ctypes.c_void_p * n)(*range(base, base + 8 * n, 8))
        with _Current(self.ctx):
            check(cu.cuLaunchKernel(
                self.function, grid[0], grid[1], grid[2], block[0], block[1],
                block[2], self.shared_bytes, cu.CUstream(stream),
                ctypes.addressof(pointers), 0), f"cuLaunchKernel({self.name})")
