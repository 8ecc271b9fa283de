//===- naive_attention.cu - self-test kernels with the fa kernel ABI -----===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// Plain CUDA attention kernels (one thread per query row, online softmax in
// f32) with the parameter ABI of docs/ARTIFACTS.md: every tensor a memref
// descriptor (allocated ptr, aligned ptr, offset, sizes[R], strides[R]).
// They read sizes, strides and offsets from the descriptors, so running them
// through fa-run checks the runtime's parameter building, launch geometry
// and fa-run's reference end to end, before the compiler emits any kernel.
// scripts/gpu-check.sh --selftest compiles them with nvcc -ptx and writes
// their manifests. Not a fast kernel and not part of the product.
//
//===----------------------------------------------------------------------===//

#include "KernelAbi.cuh"

#include <math_constants.h>

namespace {

enum Causal { kNone = 0, kTopLeft = 1, kBottomRight = 2 };

template <typename T> __device__ T fromFloat(float x);
template <> __device__ float fromFloat<float>(float x) { return x; }
template <> __device__ __half fromFloat<__half>(float x) {
  return __float2half_rn(x);
}
template <> __device__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

template <typename T> struct MemRef3 {
  const T *data;
  long long offset, size[3], stride[3];
  __device__ const T &at(long long b, long long i, long long c) const {
    return data[offset + b * stride[0] + i * stride[1] + c * stride[2]];
  }
};

template <typename T, typename OT, int D, int DV, int CAUSAL, bool LSE>
__device__ void attentionRow(MemRef3<T> q, MemRef3<T> k, MemRef3<T> v,
                             OT *o, long long oOff, const long long *oStride,
                             float *lse, long long lseOff,
                             const long long *lseStride) {
  const long long b = blockIdx.y;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long tq = q.size[1], tk = k.size[1];
  if (i >= tq)
    return;
  long long visible = tk;
  if (CAUSAL == kTopLeft)
    visible = i + 1;
  else if (CAUSAL == kBottomRight)
    visible = i + tk - tq + 1;
  visible = visible < 0 ? 0 : (visible > tk ? tk : visible);

  const float scale = 1.0f / sqrtf((float)D);
  float qRow[D], acc[DV];
  for (int c = 0; c < D; ++c)
    qRow[c] = toFloat(q.at(b, i, c));
  for (int c = 0; c < DV; ++c)
    acc[c] = 0.0f;
  float m = -CUDART_INF_F, l = 0.0f;
  for (long long j = 0; j < visible; ++j) {
    float s = 0.0f;
    for (int c = 0; c < D; ++c)
      s += qRow[c] * toFloat(k.at(b, j, c));
    s *= scale;
    float mNew = fmaxf(m, s);
    float rescale = expf(m - mNew); // m = -inf only before the first key
    float p = expf(s - mNew);
    l = l * rescale + p;
    for (int c = 0; c < DV; ++c)
      acc[c] = acc[c] * rescale + p * toFloat(v.at(b, j, c));
    m = mNew;
  }
  for (int c = 0; c < DV; ++c)
    o[oOff + b * oStride[0] + i * oStride[1] + c * oStride[2]] =
        fromFloat<OT>(visible ? acc[c] / l : 0.0f);
  if (LSE)
    lse[lseOff + b * lseStride[0] + i * lseStride[1]] =
        visible ? m + logf(l) : -CUDART_INF_F;
}

} // namespace

#define MEMREF3(T, n)                                                          \
  MemRef3<T> {                                                                 \
    n##Aligned, n##Off, {n##S0, n##S1, n##S2}, { n##St0, n##St1, n##St2 }      \
  }

#define DEFINE_KERNEL(NAME, T, OT, D, DV, CAUSAL)                              \
  extern "C" __global__ void NAME(                                             \
      MEMREF3_PARAMS(const T, q), MEMREF3_PARAMS(const T, k),                  \
      MEMREF3_PARAMS(const T, v), MEMREF3_PARAMS(OT, o), float *lseAlloc,      \
      float *lseAligned, long long lseOff, long long lseS0, long long lseS1,   \
      long long lseSt0, long long lseSt1) {                                    \
    const long long oStride[3] = {oSt0, oSt1, oSt2};                           \
    const long long lseStride[2] = {lseSt0, lseSt1};                           \
    attentionRow<T, OT, D, DV, CAUSAL, true>(                                  \
        MEMREF3(T, q), MEMREF3(T, k), MEMREF3(T, v),         \
        oAligned, oOff, oStride, lseAligned, lseOff, lseStride);               \
  }

#define DEFINE_KERNEL_NO_LSE(NAME, T, OT, D, DV, CAUSAL)                       \
  extern "C" __global__ void NAME(                                             \
      MEMREF3_PARAMS(const T, q), MEMREF3_PARAMS(const T, k),                  \
      MEMREF3_PARAMS(const T, v), MEMREF3_PARAMS(OT, o)) {                     \
    const long long oStride[3] = {oSt0, oSt1, oSt2};                           \
    attentionRow<T, OT, D, DV, CAUSAL, false>(                                 \
        MEMREF3(T, q), MEMREF3(T, k), MEMREF3(T, v),         \
        oAligned, oOff, oStride, nullptr, 0, nullptr);                         \
  }

DEFINE_KERNEL(selftest_f32_none, float, float, 64, 64, kNone)
DEFINE_KERNEL(selftest_bf16_top_left, __nv_bfloat16, __nv_bfloat16, 128, 128,
              kTopLeft)
DEFINE_KERNEL(selftest_f16_bottom_right, __half, __half, 64, 64, kBottomRight)
DEFINE_KERNEL_NO_LSE(selftest_bf16_bottom_right_dv80, __nv_bfloat16,
                     __nv_bfloat16, 96, 80, kBottomRight)
