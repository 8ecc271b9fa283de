//===- CudaDriver.h - the CUDA driver API, loaded at run time ----*- C++
//-*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// The runtime reaches the CUDA driver through a table of function pointers
// filled from libcuda.so.1 on first use, not by linking libcuda. A program
// built here then starts on a machine without an NVIDIA driver and reports
// a clean error instead of failing in the dynamic loader, and the unit tests
// run in CI without a GPU. Only cuda.h (the declarations) is needed to build.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_CUDADRIVER_H
#define FA_RUNTIME_CUDADRIVER_H

#include "fa/Runtime/FaRuntime.h"

#include <cuda.h>

/// Every driver entry point the runtime and fa-run use. cuda.h maps most of
/// these names to versioned symbols (cuMemAlloc -> cuMemAlloc_v2); the table
/// member and the looked-up symbol follow the same mapping.
#define FA_RT_CUDA_DRIVER_FUNCTIONS(X)                                         \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease)                                                 \
  X(cuCtxGetCurrent)                                                           \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxSynchronize)                                                          \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuFuncGetAttribute)                                                        \
  X(cuFuncSetAttribute)                                                        \
  X(cuLaunchKernel)                                                            \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                               \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemGetInfo)                                                              \
  X(cuMemcpyHtoD)                                                              \
  X(cuMemcpyDtoH)                                                              \
  X(cuMemsetD8)                                                                \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy)                                                           \
  X(cuStreamSynchronize)                                                       \
  X(cuEventCreate)                                                             \
  X(cuEventDestroy)                                                            \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)                                                        \
  X(cuEventElapsedTime)                                                        \
  X(cuTensorMapEncodeTiled)

namespace fa::rt {

/// Pointers to the driver entry points, named as cuda.h names them.
struct CudaDriver {
#define FA_RT_DECLARE_MEMBER(fn) decltype(&::fn) fn = nullptr;
  FA_RT_CUDA_DRIVER_FUNCTIONS(FA_RT_DECLARE_MEMBER)
#undef FA_RT_DECLARE_MEMBER
};

/// Loads libcuda (once per process; later calls return the first result) and
/// calls cuInit(0). Returns FA_RT_SUCCESS, or FA_RT_ERROR_NO_DRIVER when the
/// library or a symbol is missing, or FA_RT_ERROR_NO_DEVICE / FA_RT_ERROR_CUDA
/// when cuInit fails; the message is in faRtGetLastError().
faRtStatus loadCudaDriver();

/// The table; valid only after loadCudaDriver() returned FA_RT_SUCCESS.
const CudaDriver &cudaDriver();

/// The CUDA enums of a tensor map's element type and swizzle (0, 32, 64 or
/// 128 bytes; see TensorMapSpec).
CUtensorMapDataType tensorMapDataType(faRtDtype dtype);
CUtensorMapSwizzle tensorMapSwizzle(int64_t swizzleBytes);

/// Records "<call> failed: <CUDA_ERROR_NAME> (<description>)" as the thread's
/// last error and returns the matching status.
faRtStatus reportCudaError(const char *call, CUresult result);

} // namespace fa::rt

/// Calls driver function `fn` with the remaining arguments through the loaded
/// table; on failure records an error naming `fn` and the CUDA error, and
/// returns the faRtStatus from the enclosing function.
#define FA_RT_CUDA_CHECK(fn, ...)                                              \
  do {                                                                         \
    CUresult faRtResult_ = ::fa::rt::cudaDriver().fn(__VA_ARGS__);             \
    if (faRtResult_ != CUDA_SUCCESS)                                           \
      return ::fa::rt::reportCudaError(#fn, faRtResult_);                      \
  } while (false)

#endif // FA_RUNTIME_CUDADRIVER_H
