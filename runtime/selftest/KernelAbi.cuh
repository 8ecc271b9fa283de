//===- KernelAbi.cuh - what the self-test kernels share ------------*- CUDA -*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// The element conversions and the memref parameter list of
// docs/ARTIFACTS.md's kernel ABI, for naive_attention.cu and tma_echo.cu.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_SELFTEST_KERNELABI_CUH
#define FA_RUNTIME_SELFTEST_KERNELABI_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

template <typename T> __device__ float toFloat(T x);
template <> __device__ float toFloat<float>(float x) { return x; }
template <> __device__ float toFloat<__half>(__half x) {
  return __half2float(x);
}
template <> __device__ float toFloat<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

} // namespace

// The expanded memref descriptors, as the MLIR calling convention passes
// them: 9 scalars per rank-3 memref, 7 per rank-2.
#define MEMREF3_PARAMS(T, n)                                                   \
  T *n##Alloc, T *n##Aligned, long long n##Off, long long n##S0,               \
      long long n##S1, long long n##S2, long long n##St0, long long n##St1,    \
      long long n##St2

#endif // FA_RUNTIME_SELFTEST_KERNELABI_CUH
