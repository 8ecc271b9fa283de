//===- tma_echo.cu - self-test kernels that take TMA tensor maps ---------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// Kernels with the forward kernel ABI of docs/ARTIFACTS.md (memrefs q, k, v,
// o, lse) followed by three by-value CUtensorMaps, those of the manifest
// lines (so its manifests say `version 3`)
//
//   tensor_map q D 32 128     (128-byte rows, 128-byte swizzle)
//   tensor_map k D 32 none
//   tensor_map v D/2 32 64    (64-byte half rows, 64-byte swizzle)
//
// Block (x, b) loads rows [32x, 32x + 32) of batch b of q, k and v with
// cp.async.bulk.tensor and writes o[b, t, c] = q + 2 k + 4 v (f32) and
// lse[b, t] = t for its rows t < seqlen_q. Rows past seqlen_k read as zeros
// (the maps' out-of-bounds fill); with seqlen_k = 0 the k and v maps are not
// read. So o checks the runtime's tensor-map encoding (dims, strides, box,
// swizzle, element type), the parameter order and the by-value passing,
// before the compiler emits a TMA kernel. python/tests/test_gpu_tma.py
// compiles them with nvcc -ptx (sm_90a) and launches them through both
// launchers. Not part of the product.
//
//===----------------------------------------------------------------------===//

#include "KernelAbi.cuh"

#include <cuda.h>
#include <stdint.h>

namespace {

constexpr int kRows = 32;        // BOX_ROWS of every map
constexpr int kRowBytes = 128;   // D * esize
constexpr int kTileBytes = kRows * kRowBytes;

__device__ uint32_t smemAddress(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ void tmaLoad(void *dst, const CUtensorMap *map, int c0, int c1,
                        int c2, uint64_t *bar) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile"
               ".mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
               :
               : "r"(smemAddress(dst)), "l"(reinterpret_cast<uint64_t>(map)),
                 "r"(c0), "r"(c1), "r"(c2), "r"(smemAddress(bar))
               : "memory");
}

/// Byte offset of (row, byte) of a tile of `rowBytes`-byte rows stored with
/// a `span`-byte swizzle (16-byte chunks XORed with the row's bits).
__device__ int swizzled(int row, int byte, int rowBytes, int span) {
  int offset = row * rowBytes + byte;
  if (span == 0)
    return offset;
  // Swizzle<log2(span/16), 4, 3>: address bits [4, 4+n) ^= bits [7, 7+n).
  int mask = span / 16 - 1;
  return offset ^ (((offset >> 7) & mask) << 4);
}

template <typename T>
__device__ void echo(long long qRows, long long kRows_,
                     const CUtensorMap *qMap, const CUtensorMap *kMap,
                     const CUtensorMap *vMap, float *o, long long oOff,
                     long long oSt0, long long oSt1, long long oSt2,
                     float *lse, long long lseOff, long long lseSt0,
                     long long lseSt1) {
  constexpr int d = kRowBytes / sizeof(T);
  __shared__ alignas(1024) uint8_t tiles[3][kTileBytes];
  __shared__ alignas(8) uint64_t bar;
  const int row0 = blockIdx.x * kRows, b = blockIdx.y;
  const bool readKv = kRows_ > 0;
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(
                     smemAddress(&bar))
                 : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t bytes = readKv ? 3 * kTileBytes : kTileBytes;
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::
                     "r"(smemAddress(&bar)),
                 "r"(bytes)
                 : "memory");
    tmaLoad(tiles[0], qMap, 0, row0, b, &bar);
    if (readKv) {
      tmaLoad(tiles[1], kMap, 0, row0, b, &bar);
      tmaLoad(tiles[2], vMap, 0, row0, b, &bar);
      tmaLoad(tiles[2] + kTileBytes / 2, vMap, d / 2, row0, b, &bar);
    }
  }
  uint32_t done = 0;
  while (!done)
    asm volatile("{\n .reg .pred p;\n"
                 " mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n"
                 " selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done)
                 : "r"(smemAddress(&bar))
                 : "memory");

  for (int i = threadIdx.x; i < kRows * d; i += blockDim.x) {
    const int r = i / d, c = i % d;
    const long long t = row0 + r;
    if (t >= qRows)
      continue;
    const int byte = c * static_cast<int>(sizeof(T));
    float value = toFloat(*reinterpret_cast<const T *>(
        tiles[0] + swizzled(r, byte, kRowBytes, 128)));
    if (readKv) {
      value += 2 * toFloat(*reinterpret_cast<const T *>(
                       tiles[1] + swizzled(r, byte, kRowBytes, 0)));
      // v: two boxes of half rows (64 bytes), each 64-byte swizzled.
      const int half = byte / (kRowBytes / 2);
      value += 4 * toFloat(*reinterpret_cast<const T *>(
                       tiles[2] + half * (kTileBytes / 2) +
                       swizzled(r, byte % (kRowBytes / 2), kRowBytes / 2,
                                64)));
    }
    o[oOff + b * oSt0 + t * oSt1 + c * oSt2] = value;
    if (c == 0)
      lse[lseOff + b * lseSt0 + t * lseSt1] = static_cast<float>(t);
  }
}

} // namespace

// The memref parameters (KernelAbi.cuh), then the maps.
#define DEFINE_ECHO(NAME, T)                                                   \
  extern "C" __global__ void NAME(                                             \
      MEMREF3_PARAMS(const T, q), MEMREF3_PARAMS(const T, k),                  \
      MEMREF3_PARAMS(const T, v), MEMREF3_PARAMS(float, o), float *lseAlloc,   \
      float *lseAligned, long long lseOff, long long lseS0, long long lseS1,   \
      long long lseSt0, long long lseSt1,                                      \
      const __grid_constant__ CUtensorMap qMap,                                \
      const __grid_constant__ CUtensorMap kMap,                                \
      const __grid_constant__ CUtensorMap vMap) {                              \
    echo<T>(qS1, kS1, &qMap, &kMap, &vMap, oAligned, oOff, oSt0,     \
            oSt1, oSt2, lseAligned, lseOff, lseSt0, lseSt1);                   \
  }

DEFINE_ECHO(tma_echo_bf16, __nv_bfloat16)
DEFINE_ECHO(tma_echo_f16, __half)
DEFINE_ECHO(tma_echo_f32, float)
