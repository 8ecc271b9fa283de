//===- CudaDriver.cpp - the CUDA driver API, loaded at run time ----------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#include "fa/Runtime/CudaDriver.h"

#include "Errors.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>

// Symbol names after cuda.h's versioning macros: "cuMemAlloc_v2", ...
#define FA_RT_STRINGIFY_EXPANDED(x) FA_RT_STRINGIFY(x)
#define FA_RT_STRINGIFY(x) #x

namespace {
struct DriverState {
  fa::rt::CudaDriver table;
  faRtStatus status = FA_RT_SUCCESS;
  std::string message;
};
} // namespace

static DriverState &driverState() {
  static DriverState state;
  return state;
}

static void loadOnce() {
  DriverState &state = driverState();
  auto fail = [&](faRtStatus status, std::string message) {
    state.status = status;
    state.message = std::move(message);
  };

  // FA_RT_LIBCUDA names another driver library (a test double, say).
  const char *override = std::getenv("FA_RT_LIBCUDA");
  const char *names[] = {override, "libcuda.so.1", "libcuda.so"};
  void *handle = nullptr;
  std::string dlError;
  for (const char *name : names) {
    if (!name || !*name)
      continue;
    handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle)
      break;
    if (dlError.empty()) {
      const char *why = dlerror();
      dlError = why ? why : name;
    }
    if (name == override)
      break; // An explicit choice gets no fallback.
  }
  if (!handle)
    return fail(FA_RT_ERROR_NO_DRIVER,
                "cannot load the CUDA driver library (" + dlError +
                    "): no NVIDIA driver on this machine?");

#define FA_RT_LOAD_SYMBOL(fn)                                                  \
  {                                                                            \
    void *symbol = dlsym(handle, FA_RT_STRINGIFY_EXPANDED(fn));                \
    if (!symbol)                                                               \
      return fail(FA_RT_ERROR_NO_DRIVER,                                       \
                  "the CUDA driver library lacks " FA_RT_STRINGIFY_EXPANDED(   \
                      fn) ": driver older than CUDA " +                        \
                      std::to_string(CUDA_VERSION / 1000) + "." +              \
                      std::to_string(CUDA_VERSION % 1000 / 10) + "?");         \
    state.table.fn = reinterpret_cast<decltype(state.table.fn)>(symbol);       \
  }
  FA_RT_CUDA_DRIVER_FUNCTIONS(FA_RT_LOAD_SYMBOL)
#undef FA_RT_LOAD_SYMBOL

  CUresult result = state.table.cuInit(0);
  if (result != CUDA_SUCCESS) {
    state.status = fa::rt::reportCudaError("cuInit", result);
    state.message = faRtGetLastError();
  }
}

faRtStatus fa::rt::loadCudaDriver() {
  static std::once_flag once;
  std::call_once(once, loadOnce);
  const DriverState &state = driverState();
  if (state.status != FA_RT_SUCCESS)
    return reportError(state.status, state.message);
  return FA_RT_SUCCESS;
}

const fa::rt::CudaDriver &fa::rt::cudaDriver() { return driverState().table; }

faRtStatus fa::rt::reportCudaError(const char *call, CUresult result) {
  const CudaDriver &table = driverState().table;
  const char *name = nullptr;
  const char *description = nullptr;
  if (table.cuGetErrorName &&
      table.cuGetErrorName(result, &name) != CUDA_SUCCESS)
    name = nullptr;
  if (table.cuGetErrorString &&
      table.cuGetErrorString(result, &description) != CUDA_SUCCESS)
    description = nullptr;
  if (result == CUDA_ERROR_STUB_LIBRARY && !name) {
    name = "CUDA_ERROR_STUB_LIBRARY";
    description = "the CUDA toolkit's stub libcuda was loaded instead of the "
                  "driver's: take lib64/stubs out of LD_LIBRARY_PATH";
  }
  std::string message = std::string(call) + " failed: " +
                        (name ? name : "CUresult " + std::to_string(result));
  if (description)
    message += std::string(" (") + description + ")";
  faRtStatus status = FA_RT_ERROR_CUDA;
  if (result == CUDA_ERROR_NO_DEVICE || result == CUDA_ERROR_INVALID_DEVICE)
    status = FA_RT_ERROR_NO_DEVICE;
  else if (result == CUDA_ERROR_STUB_LIBRARY ||
           result == CUDA_ERROR_NOT_INITIALIZED)
    status = FA_RT_ERROR_NO_DRIVER;
  return reportError(status, std::move(message));
}

CUtensorMapDataType fa::rt::tensorMapDataType(faRtDtype dtype) {
  switch (dtype) {
  case FA_RT_DTYPE_F16:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  case FA_RT_DTYPE_BF16:
    return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  case FA_RT_DTYPE_F32:
    break;
  }
  return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
}

CUtensorMapSwizzle fa::rt::tensorMapSwizzle(int64_t swizzleBytes) {
  switch (swizzleBytes) {
  case 32:
    return CU_TENSOR_MAP_SWIZZLE_32B;
  case 64:
    return CU_TENSOR_MAP_SWIZZLE_64B;
  case 128:
    return CU_TENSOR_MAP_SWIZZLE_128B;
  default:
    return CU_TENSOR_MAP_SWIZZLE_NONE;
  }
}
