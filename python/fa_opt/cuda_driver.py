"""Loading and launching PTX kernels with the CUDA driver API, through
cuda-bindings (``cuda.bindings.driver``).

A module is loaded once per (PTX file, device) into the device's primary
context -- the one PyTorch uses -- and its function kept. A launch is
``cuLaunchKernel`` on the caller's stream with the kernel parameters packed
as 64-bit values, then the manifest's TMA tensor maps (128-byte CUtensorMaps,
by value); it never synchronizes.
"""

from __future__ import annotations

import ctypes
import threading
from typing import TYPE_CHECKING, Dict, Sequence, Tuple

from .memo import BoundedMemo

if TYPE_CHECKING:  # pragma: no cover
    from .layout import TensorMapArgs


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


# A CUtensorMap: 16 opaque 64-bit words, passed by value.
_TENSOR_MAP_BYTES = 128


def _tensor_map_enums(cu, args):
    """The CUDA enums of a map's element type and swizzle."""
    data_type = getattr(cu.CUtensorMapDataType, {
        "f16": "CU_TENSOR_MAP_DATA_TYPE_FLOAT16",
        "bf16": "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16",
        "f32": "CU_TENSOR_MAP_DATA_TYPE_FLOAT32"}[args.dtype])
    swizzle = getattr(cu.CUtensorMapSwizzle, {
        0: "CU_TENSOR_MAP_SWIZZLE_NONE", 32: "CU_TENSOR_MAP_SWIZZLE_32B",
        64: "CU_TENSOR_MAP_SWIZZLE_64B",
        128: "CU_TENSOR_MAP_SWIZZLE_128B"}[args.swizzle])
    return data_type, swizzle


# Encoded maps by their arguments (a map is a function of them alone: the
# address, dims, strides, box and swizzle): where runtime.launch must
# prepare a launch again (a new output address, another kernel of the
# backward on the same inputs), only the maps that changed are encoded;
# the oldest dropped first.
_encoded = BoundedMemo(4096)


def clear_tensor_map_cache() -> None:
    """Drops every cached encoded tensor map (encode_tensor_map)."""
    _encoded.clear()


def encode_tensor_map(args, kernel: str = "") -> bytes:
    """The 128 bytes of the CUtensorMap that ``cuTensorMapEncodeTiled``
    makes of ``args`` (fa_opt.layout.TensorMapArgs): rank 3, interleave
    none, L2 promotion 128B, out-of-bounds elements read as zeros. The
    bytes of arguments already encoded come from a cache, so that a
    launch on the tensors of an earlier one makes no driver call here.
    Raises FaCudaError (naming the operand and ``kernel``) when the driver
    rejects the arguments; failures are not cached."""
    return _encoded.get_or_make(args, lambda: _encode_tensor_map(args, kernel))


def _encode_tensor_map(args, kernel: str) -> bytes:
    cu = driver()
    data_type, swizzle = _tensor_map_enums(cu, args)
    u64 = [cu.cuuint64_t(x) for x in (*args.global_dim, *args.global_strides)]
    u32 = [cu.cuuint32_t(x) for x in (*args.box_dim, *args.element_strides)]
    tensor_map = check(cu.cuTensorMapEncodeTiled(
        data_type, 3, args.address, u64[:3], u64[3:], u32[:3], u32[3:],
        cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
        cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        f"cuTensorMapEncodeTiled (tensor map for '{args.operand}' of kernel "
        f"'{kernel}')")
    return ctypes.string_at(tensor_map.getPtr(), _TENSOR_MAP_BYTES)


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

    def resident_blocks(self, threads: int) -> int:
        """The blocks of this kernel (``threads`` threads, its dynamic
        workgroup memory) that its device holds at once: multiprocessors x
        blocks per multiprocessor (cuOccupancyMaxActiveBlocksPerMultiprocessor),
        cached; the value of a persistent kernel's ``resident_blocks`` grid
        term. Raises FaCudaError when the driver fails or no block fits."""
        cached = getattr(self, "_resident", None)
        if cached is not None and cached[0] == threads:
            return cached[1]
        cu = driver()
        with _Current(self.ctx):
            per_sm = check(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                self.function, threads, self.shared_bytes),
                f"cuOccupancyMaxActiveBlocksPerMultiprocessor({self.name})")
            dev = check(cu.cuCtxGetDevice(), "cuCtxGetDevice")
            attr = cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
            sms = check(cu.cuDeviceGetAttribute(attr, dev),
                        "cuDeviceGetAttribute(multiprocessor count)")
        if int(per_sm) < 1 or int(sms) < 1:
            raise FaCudaError(
                f"kernel {self.name} ({threads} threads, {self.shared_bytes} "
                f"bytes of workgroup memory) fits no multiprocessor")
        self._resident = (threads, int(per_sm) * int(sms))
        return self._resident[1]

    def prepare(self, grid: Tuple[int, int, int],
                block: Tuple[int, int, int], params: Sequence[int],
                tensor_maps: Sequence["TensorMapArgs"] = ()
                ) -> "PreparedLaunch":
        """The packed arguments of one launch, to pass to :meth:`launch_prepared`
        as often as needed: ``params`` are 64-bit values, one per kernel
        parameter (negative ones wrap, as two's complement); then one
        128-byte CUtensorMap per ``tensor_maps`` entry (fa_opt.layout
        TensorMapArgs), encoded here (encode_tensor_map). Raises
        FaCudaError when the driver rejects a map."""
        n, m = len(params), len(tensor_maps)
        values = (ctypes.c_uint64 * max(n, 1))(*params)
        base = ctypes.addressof(values)
        addresses = list(range(base, base + 8 * n, 8))
        # The maps, each 64-byte aligned inside one buffer (kept with the
        # values: the driver copies the parameters at each launch).
        maps = ctypes.create_string_buffer(_TENSOR_MAP_BYTES * m + 64)
        maps_base = (ctypes.addressof(maps) + 63) & ~63
        if m:
            with _Current(self.ctx):
                for i, args in enumerate(tensor_maps):
                    blob = encode_tensor_map(args, self.name)
                    ctypes.memmove(maps_base + _TENSOR_MAP_BYTES * i, blob,
                                   _TENSOR_MAP_BYTES)
                    addresses.append(maps_base + _TENSOR_MAP_BYTES * i)
        pointers = (ctypes.c_void_p * max(n + m, 1))(*addresses)
        return PreparedLaunch(tuple(grid), tuple(block), values, maps,
                              pointers)

    def launch_prepared(self, prepared: "PreparedLaunch", stream: int) -> None:
        """Asynchronous launch of ``prepared`` (from :meth:`prepare`) on
        ``stream`` (a CUstream handle as int); raises FaCudaError when
        cuLaunchKernel fails."""
        cu = driver()
        grid, block = prepared.grid, prepared.block
        with _Current(self.ctx):
            check(cu.cuLaunchKernel(
                self.function, grid[0], grid[1], grid[2], block[0], block[1],
                block[2], self.shared_bytes, cu.CUstream(stream),
                ctypes.addressof(prepared.pointers), 0),
                f"cuLaunchKernel({self.name})")


class PreparedLaunch:
    """The packed kernel arguments of one launch (Function.prepare): the
    grid, the block, and the buffers that cuLaunchKernel's kernelParams
    point into (64-bit values, then 64-byte aligned CUtensorMaps)."""

    __slots__ = ("grid", "block", "values", "maps", "pointers")

    def __init__(self, grid, block, values, maps, pointers):
        self.grid, self.block = grid, block
        self.values, self.maps, self.pointers = values, maps, pointers
