"""TMA tensor maps of forward manifests without a GPU: the encode arguments
(fa_opt.layout.tensor_map_args, fa_opt.runtime.tensor_maps_for) and how
Function.prepare / launch_prepared pass the 128-byte maps by value
(through a stand-in for cuda.bindings.driver)."""

import ctypes
import types

import pytest

from fa_opt import cuda_driver
from fa_opt.layout import TMA_MAX_DIM, TensorMapArgs, tensor_map_args
from fa_opt.manifest import TensorMap, parse_manifest
from fa_opt.runtime import batch_chunk, tensor_maps_for

from test_manifest import DOC_EXAMPLE, V3

# q/k bf16 [B, T, 64]; v bf16 [B, Tk, 32]; o f32 [B, Tq, 32].
MANIFEST = (V3.replace("head_dim_v 64", "head_dim_v 32")
            .replace("o_dtype bf16", "o_dtype f32")
            + "tensor_map q 64 128 128\ntensor_map k 64 64 none\n"
              "tensor_map v 32 64 64\ntensor_map o 8 32 none\n")


def contiguous(sizes):
    b, t, d = sizes
    return [t * d, d, 1]


def tensors(batch, tq, tk, ptrs=(0x1000, 0x2000, 0x3000, 0x4000, 0x5000)):
    """launch()'s tensors: (ptr, sizes, strides, element size) by name."""
    shapes = {"q": ([batch, tq, 64], 2), "k": ([batch, tk, 64], 2),
              "v": ([batch, tk, 32], 2), "o": ([batch, tq, 32], 4)}
    out = {n: (p, s, contiguous(s), e)
           for (n, (s, e)), p in zip(shapes.items(), ptrs)}
    out["lse"] = (ptrs[4], [batch, tq], [tq, 1], 4)
    return out


def test_encode_args_of_contiguous_operands():
    m = parse_manifest(MANIFEST)
    got = tensor_maps_for(m, tensors(16, 100, 7))
    # The C++ runtime's buildTensorMapArgs gives the same (unit test
    # kernel-params): dims (D, T, batch), strides (D*esize, T*D*esize).
    assert got == [
        TensorMapArgs("q", "bf16", 0x1000, (64, 100, 16), (128, 12800),
                      (64, 128, 1), (1, 1, 1), 128),
        TensorMapArgs("k", "bf16", 0x2000, (64, 7, 16), (128, 896),
                      (64, 64, 1), (1, 1, 1), 0),
        TensorMapArgs("v", "bf16", 0x3000, (32, 7, 16), (64, 448),
                      (32, 64, 1), (1, 1, 1), 64),
        TensorMapArgs("o", "f32", 0x4000, (32, 100, 16), (128, 12800),
                      (8, 32, 1), (1, 1, 1), 0)]
    assert tensor_maps_for(parse_manifest(DOC_EXAMPLE), tensors(1, 1, 1)) == []


def test_zero_element_operands_are_clamped_and_take_q():
    m = parse_manifest(MANIFEST)
    got = tensor_maps_for(m, tensors(16, 100, 0, (0x1000, 0, 0, 0x4000, 0)))
    assert [(a.operand, a.address, a.global_dim, a.global_strides)
            for a in got] == [
        ("q", 0x1000, (64, 100, 16), (128, 12800)),
        ("k", 0x1000, (64, 1, 16), (128, 128)),
        ("v", 0x1000, (32, 1, 16), (64, 64)),
        ("o", 0x4000, (32, 100, 16), (128, 12800))]


def test_batch_chunks_advance_the_address():
    """launch() splits batches over 65535 (grid y): each chunk's maps start
    at the chunk (q's too, for an empty operand) and span its batches."""
    m = parse_manifest(MANIFEST)
    got = tensor_maps_for(m, tensors(70000, 100, 0), start=65535, chunk=4465)
    q_start = 0x1000 + 65535 * 6400 * 2
    assert got[0].address == q_start
    assert got[0].global_dim == (64, 100, 4465)
    assert got[1].address == q_start and got[1].global_dim == (64, 1, 4465)
    assert got[3].address == 0x4000 + 65535 * 3200 * 4


def test_strided_views_keep_their_strides():
    """Python passes views without copying where the batch dims flatten:
    the map takes the view's row and batch strides ([1, T, H, D] memory
    seen as [1, H, T, D]: batch stride D, row stride H*D)."""
    tm = TensorMap("k", 64, 64, 0)
    h, t, d = 8, 100, 64
    a = tensor_map_args(tm, "bf16", 2, 0x1000, [h, t, d], [d, h * d, 1],
                        0x1000)
    assert a.global_dim == (64, 100, 8)
    assert a.global_strides == (h * d * 2, d * 2)
    # A dim of size 1 takes the contiguous stride, whatever the view says.
    a = tensor_map_args(tm, "bf16", 2, 0x1000, [1, 1, d], [3, 5, 1], 0x1000)
    assert a.global_strides == (128, 128)


def test_launch_errors_name_the_operand():
    tm = TensorMap("q", 64, 64, 0)
    with pytest.raises(ValueError, match="tensor map for 'q' \\(kernel 'f'\\): "
                       "seqlen_q = 4294967296 exceeds the TMA limit of "
                       "2\\^32 - 1 \\(4294967295\\)"):
        tensor_map_args(tm, "bf16", 2, 0x1000, [1, 2**32, 64],
                        [2**32 * 64, 64, 1], 0x1000, "f")
    with pytest.raises(ValueError, match="batch = 4294967296 exceeds"):
        tensor_map_args(tm, "bf16", 2, 0x1000, [2**32, 1, 64], [64, 64, 1],
                        0x1000)
    assert TMA_MAX_DIM == 2**32 - 1
    tensor_map_args(tm, "bf16", 2, 0x1000, [1, 2**32 - 1, 64],
                    [(2**32 - 1) * 64, 64, 1], 0x1000)
    # head_dim 256 bf16: 2^31 rows of 512 bytes are 2^40 bytes.
    wide = TensorMap("q", 64, 64, 0)
    with pytest.raises(ValueError, match="a batch stride of 1099511627776 "
                       "bytes reaches the TMA limit of 2\\^40 bytes"):
        tensor_map_args(wide, "bf16", 2, 0x1000, [2, 2**31, 256],
                        [2**31 * 256, 256, 1], 0x1000)
    with pytest.raises(ValueError, match="the row stride 40 bytes is not a "
                       "multiple of 16 bytes"):
        tensor_map_args(tm, "bf16", 2, 0x1000, [1, 10, 20], [200, 20, 1],
                        0x1000)
    with pytest.raises(ValueError, match="tensor map for 'k' \\(kernel ''\\): "
                       "the address of k must be 16-byte aligned"):
        tensor_map_args(TensorMap("k", 8, 8, 0), "bf16", 2, 0x1008,
                        [1, 10, 64], [640, 64, 1], 0x1000)
    with pytest.raises(ValueError, match="the last dim must have stride 1"):
        tensor_map_args(tm, "bf16", 2, 0x1000, [1, 10, 64], [1280, 128, 2],
                        0x1000)


# --- Function.prepare / launch_prepared through a stand-in driver -------------

def _enum(**members):
    return types.SimpleNamespace(**members)


class FakeDriver:
    """The parts of cuda.bindings.driver that a launch uses; records
    the encode calls and what cuLaunchKernel's kernelParams point to."""

    # cuTensorMapEncodeTiled takes lists of these, not of ints.
    cuuint64_t = type("cuuint64_t", (int,), {})
    cuuint32_t = type("cuuint32_t", (int,), {})
    CUresult = _enum(CUDA_SUCCESS=0)
    CUtensorMapDataType = _enum(
        CU_TENSOR_MAP_DATA_TYPE_FLOAT16="FLOAT16",
        CU_TENSOR_MAP_DATA_TYPE_BFLOAT16="BFLOAT16",
        CU_TENSOR_MAP_DATA_TYPE_FLOAT32="FLOAT32")
    CUtensorMapSwizzle = _enum(
        CU_TENSOR_MAP_SWIZZLE_NONE="SWIZZLE_NONE",
        CU_TENSOR_MAP_SWIZZLE_32B="SWIZZLE_32B",
        CU_TENSOR_MAP_SWIZZLE_64B="SWIZZLE_64B",
        CU_TENSOR_MAP_SWIZZLE_128B="SWIZZLE_128B")
    CUtensorMapInterleave = _enum(CU_TENSOR_MAP_INTERLEAVE_NONE="INTERLEAVE_NONE")
    CUtensorMapL2promotion = _enum(
        CU_TENSOR_MAP_L2_PROMOTION_L2_128B="L2_128B")
    CUtensorMapFloatOOBfill = _enum(
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE="OOB_FILL_NONE")

    def __init__(self, n_params, n_maps, fail=None):
        self.n_params, self.n_maps, self.fail = n_params, n_maps, fail
        self.encoded, self.launched = [], None

    def CUstream(self, handle):
        return handle

    def cuCtxGetCurrent(self):
        return 0, 7  # the function's context: nothing pushed

    def cuGetErrorName(self, err):
        return 0, b"CUDA_ERROR_INVALID_VALUE"

    def cuGetErrorString(self, err):
        return 0, b"invalid argument"

    def cuTensorMapEncodeTiled(self, *args):
        for values, kind in zip(args[3:7], (self.cuuint64_t, self.cuuint64_t,
                                            self.cuuint32_t,
                                            self.cuuint32_t)):
            if not all(type(x) is kind for x in values):
                raise TypeError(f"Cannot convert int to {kind.__name__}")
        self.encoded.append(args)
        if self.fail is not None and len(self.encoded) == self.fail:
            return 1, None
        # 128 recognizable bytes: the map's index, then its operand's dims.
        blob = ctypes.create_string_buffer(128)
        blob.raw = bytes([len(self.encoded)] * 128)
        return 0, types.SimpleNamespace(getPtr=lambda: ctypes.addressof(blob),
                                        keep=blob)

    def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, shared, stream,
                       kernel_params, extra):
        count = self.n_params + self.n_maps
        pointers = (ctypes.c_void_p * count).from_address(kernel_params)
        self.launched = {
            "grid": (gx, gy, gz), "block": (bx, by, bz),
            "values": [ctypes.c_uint64.from_address(p).value
                       for p in pointers[:self.n_params]],
            "map_addresses": list(pointers[self.n_params:]),
            "maps": [ctypes.string_at(p, 128)
                     for p in pointers[self.n_params:]]}
        return (0,)


@pytest.fixture(autouse=True)
def _fresh_map_cache():
    """Every test starts without cached maps (encode counts are asserted)."""
    cuda_driver.clear_tensor_map_cache()
    yield
    cuda_driver.clear_tensor_map_cache()


class _Launcher:
    """A cuda_driver.Function on no module (the stand-in driver's), launched
    as runtime.launch does: prepare, then launch_prepared."""

    def __init__(self):
        self.fn = object.__new__(cuda_driver.Function)
        self.fn.name, self.fn.ctx, self.fn.function, self.fn.shared_bytes = \
            "main_attention_0", 7, 1, 0

    def launch(self, grid, block, params, stream, tensor_maps=()):
        self.fn.launch_prepared(
            self.fn.prepare(grid, block, params, tensor_maps), stream)


def _function():
    return _Launcher()


def test_launch_appends_maps_by_value(monkeypatch):
    m = parse_manifest(MANIFEST)
    maps = tensor_maps_for(m, tensors(16, 100, 7))
    fake = FakeDriver(n_params=3, n_maps=4)
    monkeypatch.setattr(cuda_driver, "_cu", fake)
    _function().launch((1, 16, 1), (128, 1, 1), [5, 6, -1], 0, maps)
    # The encode calls: rank 3, the fixed interleave/L2/OOB modes.
    assert [call[0] for call in fake.encoded] == \
        ["BFLOAT16", "BFLOAT16", "BFLOAT16", "FLOAT32"]
    q = fake.encoded[0]
    assert q[1:7] == (3, 0x1000, [64, 100, 16], [128, 12800], [64, 128, 1],
                      [1, 1, 1])
    assert q[7:] == ("INTERLEAVE_NONE", "SWIZZLE_128B", "L2_128B",
                     "OOB_FILL_NONE")
    assert [call[8] for call in fake.encoded] == \
        ["SWIZZLE_128B", "SWIZZLE_NONE", "SWIZZLE_64B", "SWIZZLE_NONE"]
    # The memref values first, then one pointer per map, in manifest order,
    # each 64-byte aligned, to that map's 128 bytes.
    got = fake.launched
    assert got["values"] == [5, 6, 2**64 - 1]
    assert [a % 64 for a in got["map_addresses"]] == [0, 0, 0, 0]
    assert got["maps"] == [bytes([i] * 128) for i in (1, 2, 3, 4)]


def test_launch_without_maps_is_unchanged(monkeypatch):
    fake = FakeDriver(n_params=2, n_maps=0)
    monkeypatch.setattr(cuda_driver, "_cu", fake)
    _function().launch((1, 1, 1), (32, 1, 1), [1, 2], 0)
    assert fake.encoded == [] and fake.launched["values"] == [1, 2]


def test_encode_failure_names_the_operand(monkeypatch):
    m = parse_manifest(MANIFEST)
    fake = FakeDriver(n_params=1, n_maps=4, fail=2)
    monkeypatch.setattr(cuda_driver, "_cu", fake)
    with pytest.raises(cuda_driver.FaCudaError,
                       match="cuTensorMapEncodeTiled \\(tensor map for 'k' of "
                       "kernel 'main_attention_0'\\) failed: "
                       "CUDA_ERROR_INVALID_VALUE"):
        _function().launch((1, 1, 1), (32, 1, 1), [1], 0,
                           tensor_maps_for(m, tensors(16, 100, 7)))
    assert fake.launched is None


def test_launch_reuses_maps_of_the_same_arguments(monkeypatch):
    m = parse_manifest(MANIFEST)
    fake = FakeDriver(n_params=1, n_maps=4)
    monkeypatch.setattr(cuda_driver, "_cu", fake)
    maps = tensor_maps_for(m, tensors(16, 100, 7))
    _function().launch((1, 1, 1), (32, 1, 1), [1], 0, maps)
    first = fake.launched["maps"]
    _function().launch((1, 1, 1), (32, 1, 1), [1], 0,
                       tensor_maps_for(m, tensors(16, 100, 7)))
    # Equal arguments: no encode call, the same bytes launched.
    assert len(fake.encoded) == 4
    assert fake.launched["maps"] == first
    # Another q address (and seqlen): those maps are encoded again.
    moved = tensor_maps_for(
        m, tensors(16, 100, 9, ptrs=(0x9000, 0x2000, 0x3000, 0x4000,
                                     0x5000)))
    _function().launch((1, 1, 1), (32, 1, 1), [1], 0, moved)
    assert [call[2] for call in fake.encoded[4:]] == [0x9000, 0x2000, 0x3000]
    assert fake.launched["maps"][3] == first[3]


def test_map_cache_is_bounded_and_keeps_no_failure(monkeypatch):
    monkeypatch.setattr(cuda_driver._encoded, "limit", 2)
    fake = FakeDriver(n_params=1, n_maps=1, fail=1)
    monkeypatch.setattr(cuda_driver, "_cu", fake)
    args = [TensorMapArgs("q", "bf16", 0x1000 * (i + 1), (64, 8, 1),
                          (128, 1024), (64, 8, 1)) for i in range(3)]
    with pytest.raises(cuda_driver.FaCudaError):
        cuda_driver.encode_tensor_map(args[0])
    assert len(cuda_driver._encoded) == 0
    for a in args:
        cuda_driver.encode_tensor_map(a)
    # The oldest went first.
    assert list(cuda_driver._encoded) == args[1:]
    cuda_driver.encode_tensor_map(args[0])
    assert len(fake.encoded) == 5


# --- batch chunks of kernels with 32-bit indices (runtime.batch_chunk) -------

def test_batch_chunk_of_64_bit_kernels_is_the_grid_limit():
    m = parse_manifest(MANIFEST)
    assert m.index_bits == 64
    assert batch_chunk(m, tensors(70000, 4096, 4096)) == 65535


def test_batch_chunk_keeps_32_bit_extents_below_2_31():
    m = parse_manifest(MANIFEST + "index_bits 32\n")
    assert m.index_bits == 32
    t = tensors(70000, 4096, 4096)
    step = batch_chunk(m, t)
    # q and k (bf16 [B, 4096, 64], 2^18 elements a batch) bound it: 8191
    # batches hold 2^31 - 2^18 elements, 8192 would hold 2^31 (the C++
    # runtime's batchChunk takes 8191 too); o (f32 [B, 4096, 32]) would
    # allow 16383.
    assert step == 8191
    for name in m.params:
        _, sizes, strides, _ = t[name]
        extent = (step - 1) * strides[0] + 1 + sum(
            (n - 1) * s for n, s in zip(sizes[1:], strides[1:]))
        assert extent <= 2**31 - 1
    # One more batch would reach 2^31 elements of q.
    assert (step + 1) * t["q"][2][0] > 2**31 - 1


def test_batch_chunk_rejects_one_batch_of_2_31_elements():
    m = parse_manifest(MANIFEST + "index_bits 32\n")
    # q: 2^25 - 1 rows of 64 fit (2^31 - 64 elements); 2^25 rows are 2^31
    # elements, one too many, as for the compiler's static check.
    assert batch_chunk(m, tensors(3, 2**25 - 1, 8)) == 1
    with pytest.raises(ValueError, match="compiled with 32-bit indices "
                       r"\(index_bits 32\): one batch of 'q' spans 2147483648 "
                       "elements, expected fewer than 2\\^31"):
        batch_chunk(m, tensors(3, 2**25, 8))


# --- Function.resident_blocks through a stand-in driver ------------------------

class OccupancyDriver:
    """The driver calls of Function.resident_blocks; counts them."""

    CUresult = _enum(CUDA_SUCCESS=0)
    CUdevice_attribute = _enum(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT="SMS")

    def __init__(self, per_sm):
        self.per_sm, self.calls = per_sm, []

    def cuCtxGetCurrent(self):
        return 0, 7

    def cuOccupancyMaxActiveBlocksPerMultiprocessor(self, fn, threads, shared):
        self.calls.append(("occupancy", fn, threads, shared))
        return 0, self.per_sm

    def cuCtxGetDevice(self):
        return 0, 3

    def cuDeviceGetAttribute(self, attr, dev):
        self.calls.append(("attribute", attr, dev))
        return 0, 132


def test_resident_blocks_is_occupancy_times_multiprocessors(monkeypatch):
    """A persistent kernel's resident_blocks: blocks per multiprocessor for
    its threads and workgroup memory x the device's multiprocessors, asked
    once per Function and thread count."""
    fake = OccupancyDriver(per_sm=1)
    monkeypatch.setattr(cuda_driver, "_cu", fake)
    fn = _function().fn
    fn.shared_bytes = 229472
    assert fn.resident_blocks(384) == 132
    assert fn.resident_blocks(384) == 132
    assert fake.calls == [("occupancy", 1, 384, 229472),
                          ("attribute", "SMS", 3)]
    fake.per_sm = 2
    assert fn.resident_blocks(128) == 264


def test_resident_blocks_when_no_block_fits(monkeypatch):
    monkeypatch.setattr(cuda_driver, "_cu", OccupancyDriver(per_sm=0))
    with pytest.raises(cuda_driver.FaCudaError,
                       match="kernel main_attention_0 \\(384 threads, 0 bytes "
                       "of workgroup memory\\) fits no multiprocessor"):
        _function().fn.resident_blocks(384)
