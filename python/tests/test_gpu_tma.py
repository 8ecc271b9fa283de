"""On an sm_90 GPU: TMA tensor maps passed by value, through both launchers
(fa_opt.runtime.launch, and the C++ runtime's faRtKernelLaunch through
ctypes when libfa_runtime.so is built), with the self-test kernels of
runtime/selftest/tma_echo.cu: each writes o = q + 2 k + 4 v (f32) from
tiles it loads with cp.async.bulk.tensor through the maps of its manifest's
tensor_map lines, rows past seqlen_k reading as zeros.

Needs nvcc (for the PTX) and libfa_runtime.so for the C++ half
($FA_RUNTIME_LIB, else build/lib or build-rt/lib of the repository)."""

import ctypes
import os
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")

from fa_opt.manifest import read_manifest  # noqa: E402
from fa_opt.runtime import KernelSet, launch  # noqa: E402
from fa_opt.layout import rank2, rank3  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SOURCE = os.path.join(REPO, "runtime", "selftest", "tma_echo.cu")
ELT = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
WIDTH = {"bf16": 64, "f16": 64, "f32": 32}  # 128-byte rows


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """The PTX (params declared `.align 64`, as the compiler's) and one
    manifest per dtype."""
    if torch.cuda.is_available() and torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("TMA needs sm_90 or later")
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not os.access(nvcc, os.X_OK):
        pytest.skip("nvcc not found")
    out = tmp_path_factory.mktemp("tma")
    ptx = out / "tma_echo.ptx"
    subprocess.run([nvcc, "-ptx", "-arch=sm_90a", "-o", str(ptx), SOURCE],
                   check=True)
    ptx.write_text(ptx.read_text().replace(".param .align 128 .b8",
                                           ".param .align 64 .b8"))
    paths = {}
    for dtype, d in WIDTH.items():
        path = out / f"tma_echo_{dtype}.manifest"
        path.write_text(f"""\
version 3
kernel tma_echo_{dtype}
ptx tma_echo.ptx
chip sm_90a
dtype {dtype}
o_dtype f32
causal none
scale 1
batch ?
seqlen_q ?
seqlen_k ?
head_dim {d}
head_dim_v {d}
has_lse 1
block_m 32
threads 128
shared_bytes 0
row_align 16
params q k v o lse
grid ceil_div(seqlen_q,block_m) batch 1
tensor_map q {d} 32 128
tensor_map k {d} 32 none
tensor_map v {d // 2} 32 64
""")
        paths[dtype] = str(path)
    return paths


def expected(q, k, v):
    """o = q + 2 k + 4 v, k and v rows past seqlen_k (and all of them when
    it is 0) as zeros; lse[b, t] = t."""
    tq, tk = q.shape[-2], k.shape[-2]
    o = q.double().clone()
    rows = min(tq, tk)
    o[..., :rows, :] += 2 * k[..., :rows, :].double() \
        + 4 * v[..., :rows, :].double()
    lse = torch.arange(tq, device=q.device, dtype=torch.float64) \
        .expand(*q.shape[:-1])
    return o, lse


def inputs(dtype, batch, tq, tk):
    d = WIDTH[dtype]
    gen = torch.Generator(device="cuda").manual_seed(tq * 1000 + tk)
    def rand(t):
        return torch.randint(-8, 8, (batch, t, d), device="cuda",
                             generator=gen).to(ELT[dtype])
    return rand(tq), rand(tk), rand(tk)


def outputs(q):
    o = torch.full((*q.shape[:-1], q.shape[-1]), float("nan"),
                   device="cuda", dtype=torch.float32)
    lse = torch.full(q.shape[:-1], float("nan"), device="cuda",
                     dtype=torch.float32)
    return o, lse


def memref(t, view):
    sizes, strides = view
    return t.data_ptr(), sizes, strides, t.element_size()


def launch_and_check(manifest, q, k, v, views=None):
    """Launches through fa_opt.runtime.launch over rank-3 q, k, v (views
    given or taken from their strides) and checks o and lse."""
    ks = KernelSet(config=manifest.config(), forward=manifest,
                   source=manifest.path)
    views = views or {n: rank3(t.shape, t.stride())
                      for n, t in (("q", q), ("k", k), ("v", v))}
    (batch, tq, d), tk = views["q"][0], views["k"][0][1]
    o, lse = outputs(torch.empty(batch, tq, d, device="cuda"))
    tensors = {n: memref(t, views[n]) for n, t in
               (("q", q), ("k", k), ("v", v))}
    tensors["o"] = memref(o, rank3(o.shape, o.stride()))
    tensors["lse"] = memref(lse, rank2(lse.shape, lse.stride()))
    launch(ks, manifest, torch.cuda.current_device(), tensors, batch, tq, tk,
           torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    want_o, want_lse = expected(*(t.reshape(batch, -1, d)
                                  for t in (q, k, v)))
    assert torch.equal(o.double(), want_o)
    assert torch.equal(lse.double(), want_lse)


SIZES = [(3, 100, 70), (2, 40, 0), (2, 33, 200), (1, 32, 32)]


@pytest.mark.parametrize("dtype", list(WIDTH))
@pytest.mark.parametrize("batch,tq,tk", SIZES)
def test_python_launcher(kernels, dtype, batch, tq, tk):
    launch_and_check(read_manifest(kernels[dtype]),
                     *inputs(dtype, batch, tq, tk))


def test_python_launcher_strided_views(kernels):
    """A [1, T, H, D] tensor seen as [1, H, T, D] (no copy: batch stride D,
    row stride H*D) gets a map with those strides."""
    h, tq, tk, d = 4, 70, 45, 64
    gen = torch.Generator(device="cuda").manual_seed(5)
    def bthd(t):
        return torch.randint(-8, 8, (1, t, h, d), device="cuda",
                             generator=gen).to(torch.bfloat16).transpose(1, 2)
    q, k, v = bthd(tq), bthd(tk), bthd(tk)
    assert rank3(q.shape, q.stride()) == ([h, tq, d], [d, h * d, 1])
    launch_and_check(read_manifest(kernels["bf16"]), q, k, v)


def test_python_launcher_broadcast_batch_stride_0(kernels):
    """Heads broadcast with stride 0 (``expand``, batch 1): a map whose
    batch stride is 0 reads the same rows for every head."""
    h, tq, tk, d = 3, 50, 40, 64
    gen = torch.Generator(device="cuda").manual_seed(9)
    def rand(heads, t):
        return torch.randint(-8, 8, (1, heads, t, d), device="cuda",
                             generator=gen).to(torch.float16)
    q, k, v = rand(h, tq), rand(1, tk).expand(1, h, tk, d), \
        rand(1, tk).expand(1, h, tk, d)
    assert rank3(k.shape, k.stride()) == ([h, tk, d], [0, d, 1])
    launch_and_check(read_manifest(kernels["f16"]), q, k, v)


def _runtime_library():
    candidates = [os.environ.get("FA_RUNTIME_LIB", "")] + [
        os.path.join(REPO, b, "lib", "libfa_runtime.so")
        for b in (os.environ.get("BUILD_DIR", "build"), "build", "build-rt")]
    for path in candidates:
        if path and os.path.exists(path):
            lib = ctypes.CDLL(path)
            lib.faRtGetLastError.restype = ctypes.c_char_p
            lib.faRtKernelLoad.argtypes = [ctypes.c_char_p, ctypes.c_int,
                                           ctypes.POINTER(ctypes.c_void_p)]
            lib.faRtKernelLaunch.argtypes = (
                [ctypes.c_void_p] + [ctypes.c_uint64] * 5
                + [ctypes.c_int64] * 3 + [ctypes.c_void_p])
            lib.faRtKernelUnload.argtypes = [ctypes.c_void_p]
            return lib
    pytest.skip("libfa_runtime.so not found (build the runtime, or set "
                "FA_RUNTIME_LIB)")


@pytest.mark.parametrize("dtype", list(WIDTH))
@pytest.mark.parametrize("batch,tq,tk", SIZES)
def test_cpp_launcher(kernels, dtype, batch, tq, tk):
    lib = _runtime_library()
    kernel = ctypes.c_void_p()
    device = torch.cuda.current_device()
    torch.cuda.init()
    assert lib.faRtKernelLoad(kernels[dtype].encode(), device,
                              ctypes.byref(kernel)) == 0, \
        lib.faRtGetLastError().decode()
    try:
        q, k, v = inputs(dtype, batch, tq, tk)
        o, lse = outputs(q)
        status = lib.faRtKernelLaunch(
            kernel, q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
            lse.data_ptr(), batch, tq, tk,
            torch.cuda.current_stream().cuda_stream)
        assert status == 0, lib.faRtGetLastError().decode()
        torch.cuda.synchronize()
        want_o, want_lse = expected(q, k, v)
        assert torch.equal(o.double(), want_o)
        assert torch.equal(lse.double(), want_lse)
    finally:
        lib.faRtKernelUnload(kernel)
