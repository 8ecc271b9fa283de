//===- FaRuntime.cpp - load and launch fa kernels ------------------------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#include "fa/Runtime/FaRuntime.h"

#include "Errors.h"
#include "fa/Runtime/CudaDriver.h"
#include "fa/Runtime/Manifest.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

struct faRtKernel_st {
  fa::rt::Manifest manifest;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  /// resident_blocks of a persistent kernel's grid, once queried (0: not
  /// yet).
  std::atomic<int64_t> residentBlocks{0};
};

static thread_local std::string lastError;

faRtStatus fa::rt::reportError(faRtStatus status, std::string message) {
  lastError = std::move(message);
  return status;
}

const char *faRtGetLastError(void) { return lastError.c_str(); }

const char *faRtStatusName(faRtStatus status) {
  switch (status) {
  case FA_RT_SUCCESS:
    return "FA_RT_SUCCESS";
  case FA_RT_ERROR_INVALID_ARGUMENT:
    return "FA_RT_ERROR_INVALID_ARGUMENT";
  case FA_RT_ERROR_IO:
    return "FA_RT_ERROR_IO";
  case FA_RT_ERROR_MANIFEST:
    return "FA_RT_ERROR_MANIFEST";
  case FA_RT_ERROR_SHAPE:
    return "FA_RT_ERROR_SHAPE";
  case FA_RT_ERROR_NO_DRIVER:
    return "FA_RT_ERROR_NO_DRIVER";
  case FA_RT_ERROR_NO_DEVICE:
    return "FA_RT_ERROR_NO_DEVICE";
  case FA_RT_ERROR_PTX_LOAD:
    return "FA_RT_ERROR_PTX_LOAD";
  case FA_RT_ERROR_CUDA:
    return "FA_RT_ERROR_CUDA";
  }
  return "FA_RT_ERROR_UNKNOWN";
}

/// Retains `device`'s primary context into *context and makes it current.
static faRtStatus retainContext(int device, CUdevice *cuDevice,
                                CUcontext *context) {
  if (faRtStatus status = fa::rt::loadCudaDriver())
    return status;
  int count = 0;
  FA_RT_CUDA_CHECK(cuDeviceGetCount, &count);
  if (count == 0)
    return fa::rt::reportError(FA_RT_ERROR_NO_DEVICE,
                               "no CUDA device found (cuDeviceGetCount is 0)");
  if (device < 0 || device >= count)
    return fa::rt::reportError(FA_RT_ERROR_NO_DEVICE,
                               "no CUDA device " + std::to_string(device) +
                                   " (this machine has " +
                                   std::to_string(count) + ")");
  FA_RT_CUDA_CHECK(cuDeviceGet, cuDevice, device);
  FA_RT_CUDA_CHECK(cuDevicePrimaryCtxRetain, context, *cuDevice);
  CUresult result = fa::rt::cudaDriver().cuCtxSetCurrent(*context);
  if (result != CUDA_SUCCESS) {
    fa::rt::cudaDriver().cuDevicePrimaryCtxRelease(*cuDevice);
    return fa::rt::reportCudaError("cuCtxSetCurrent", result);
  }
  return FA_RT_SUCCESS;
}

faRtStatus faRtInit(int device) {
  // The first successful call keeps one reference to the primary context for
  // the process' lifetime; later calls only make it current.
  static std::mutex mutex;
  static std::vector<CUcontext> retained;
  std::lock_guard<std::mutex> lock(mutex);
  if (device >= 0 && static_cast<size_t>(device) < retained.size() &&
      retained[device]) {
    FA_RT_CUDA_CHECK(cuCtxSetCurrent, retained[device]);
    return FA_RT_SUCCESS;
  }
  CUdevice cuDevice;
  CUcontext context;
  if (faRtStatus status = retainContext(device, &cuDevice, &context))
    return status;
  if (retained.size() <= static_cast<size_t>(device))
    retained.resize(device + 1, nullptr);
  retained[device] = context;
  return FA_RT_SUCCESS;
}

/// Parses "sm_90a" into 90 and whether it is arch-specific ('a').
static bool parseChip(const std::string &chip, int &number, bool &specific) {
  if (chip.rfind("sm_", 0) != 0)
    return false;
  size_t i = 3;
  number = 0;
  while (i < chip.size() && chip[i] >= '0' && chip[i] <= '9')
    number = number * 10 + (chip[i++] - '0');
  if (i == 3)
    return false;
  specific = i < chip.size() && chip[i] == 'a';
  return true;
}

static faRtStatus checkChip(const fa::rt::Manifest &manifest, CUdevice device) {
  int target = 0;
  bool specific = false;
  if (!parseChip(manifest.chip, target, specific))
    return FA_RT_SUCCESS; // No or unknown chip: let the JIT decide.
  int major = 0, minor = 0;
  FA_RT_CUDA_CHECK(cuDeviceGetAttribute, &major,
                   CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  FA_RT_CUDA_CHECK(cuDeviceGetAttribute, &minor,
                   CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  int have = major * 10 + minor;
  if (have < target || (specific && have != target)) {
    char name[256] = "";
    fa::rt::cudaDriver().cuDeviceGetName(name, sizeof(name), device);
    return fa::rt::reportError(FA_RT_ERROR_PTX_LOAD,
                               manifest.path + ": kernel '" + manifest.kernel +
                                   "' targets " + manifest.chip +
                                   ", but the device (" + name + ") is sm_" +
                                   std::to_string(have));
  }
  return FA_RT_SUCCESS;
}

/// Reads the PTX at `ptxPath` and JIT-loads it into *module.
static faRtStatus loadPtxModule(const std::string &ptxPath,
                                const std::string &manifestPath,
                                CUmodule *module) {
  std::ifstream file(ptxPath, std::ios::binary);
  if (!file)
    return fa::rt::reportError(FA_RT_ERROR_IO, "cannot open PTX file '" +
                                                   ptxPath + "' (named by " +
                                                   manifestPath + ")");
  std::ostringstream text;
  text << file.rdbuf();
  std::string ptx = text.str();

  std::vector<char> errorLog(1 << 16, '\0'), infoLog(1 << 14, '\0');
  CUjit_option options[] = {
      CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
      CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {
      errorLog.data(),
      reinterpret_cast<void *>(static_cast<uintptr_t>(errorLog.size() - 1)),
      infoLog.data(),
      reinterpret_cast<void *>(static_cast<uintptr_t>(infoLog.size() - 1))};
  CUresult result = fa::rt::cudaDriver().cuModuleLoadDataEx(
      module, ptx.c_str(), 4, options, values);
  if (result != CUDA_SUCCESS) {
    fa::rt::reportCudaError("cuModuleLoadDataEx", result);
    std::string message =
        "cannot load PTX '" + ptxPath + "': " + faRtGetLastError();
    if (errorLog[0])
      message += "\nJIT error log:\n" + std::string(errorLog.data());
    *module = nullptr;
    return fa::rt::reportError(FA_RT_ERROR_PTX_LOAD, std::move(message));
  }
  return FA_RT_SUCCESS;
}

/// Loads the PTX and looks the kernel up; fills kernel->module/function.
static faRtStatus loadModule(faRtKernel kernel) {
  const fa::rt::Manifest &manifest = kernel->manifest;
  const std::string ptxPath = manifest.ptxPath();
  if (faRtStatus status = checkChip(manifest, kernel->device))
    return status;
  if (faRtStatus status =
          loadPtxModule(ptxPath, manifest.path, &kernel->module))
    return status;

  CUresult result;
  result = fa::rt::cudaDriver().cuModuleGetFunction(
      &kernel->function, kernel->module, manifest.kernel.c_str());
  if (result == CUDA_ERROR_NOT_FOUND)
    return fa::rt::reportError(FA_RT_ERROR_PTX_LOAD,
                               "kernel '" + manifest.kernel + "' (from " +
                                   manifest.path + ") not found in '" +
                                   ptxPath + "'");
  if (result != CUDA_SUCCESS)
    return fa::rt::reportCudaError("cuModuleGetFunction", result);

  int maxThreads = 0;
  FA_RT_CUDA_CHECK(cuFuncGetAttribute, &maxThreads,
                   CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, kernel->function);
  if (manifest.threads > maxThreads)
    return fa::rt::reportError(
        FA_RT_ERROR_PTX_LOAD,
        "kernel '" + manifest.kernel + "' launches " +
            std::to_string(manifest.threads) +
            " threads, but its compiled code allows at most " +
            std::to_string(maxThreads) + " (register pressure?)");
  if (manifest.sharedBytes > 0)
    FA_RT_CUDA_CHECK(cuFuncSetAttribute, kernel->function,
                     CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                     static_cast<int>(manifest.sharedBytes));
  return FA_RT_SUCCESS;
}

faRtStatus fa::rt::loadKernel(const Manifest &manifest, int device,
                              faRtKernel *kernel) {
  if (!kernel)
    return reportError(FA_RT_ERROR_INVALID_ARGUMENT,
                       "faRtKernelLoad: kernel is null");
  *kernel = nullptr;
  auto loaded = std::make_unique<faRtKernel_st>();
  loaded->manifest = manifest;
  if (faRtStatus status = faRtInit(device))
    return status;
  if (faRtStatus status =
          retainContext(device, &loaded->device, &loaded->context))
    return status;
  if (faRtStatus status = loadModule(loaded.get())) {
    faRtKernelUnload(loaded.release());
    return status;
  }
  *kernel = loaded.release();
  return FA_RT_SUCCESS;
}

faRtStatus faRtKernelLoad(const char *manifestPath, int device,
                          faRtKernel *kernel) {
  if (kernel)
    *kernel = nullptr;
  if (!manifestPath || !kernel)
    return fa::rt::reportError(FA_RT_ERROR_INVALID_ARGUMENT,
                               "faRtKernelLoad: null argument");
  fa::rt::Manifest manifest;
  if (faRtStatus status = fa::rt::readManifestFile(manifestPath, manifest))
    return status;
  return fa::rt::loadKernel(manifest, device, kernel);
}

void faRtKernelUnload(faRtKernel kernel) {
  if (!kernel)
    return;
  const fa::rt::CudaDriver &driver = fa::rt::cudaDriver();
  if (kernel->context) {
    CUcontext current = nullptr;
    driver.cuCtxGetCurrent(&current);
    if (current != kernel->context)
      driver.cuCtxSetCurrent(kernel->context);
    if (kernel->module)
      driver.cuModuleUnload(kernel->module);
    driver.cuDevicePrimaryCtxRelease(kernel->device);
  }
  delete kernel;
}

const fa::rt::Manifest &fa::rt::getManifest(faRtKernel kernel) {
  return kernel->manifest;
}

faRtStatus faRtKernelGetInfo(faRtKernel kernel, faRtKernelInfo *info) {
  if (!kernel || !info)
    return fa::rt::reportError(FA_RT_ERROR_INVALID_ARGUMENT,
                               "faRtKernelGetInfo: null argument");
  const fa::rt::Manifest &m = kernel->manifest;
  info->name = m.kernel.c_str();
  info->dtype = m.dtype;
  info->oDtype = m.oDtype;
  info->causal = m.causal;
  info->scale = m.scale;
  info->batch = m.batch;
  info->seqlenQ = m.seqlenQ;
  info->seqlenK = m.seqlenK;
  info->headDim = m.headDim;
  info->headDimV = m.headDimV;
  info->hasLse = m.hasLse ? 1 : 0;
  return FA_RT_SUCCESS;
}

/// Encodes the tensor maps of kernel `kernelName` (buildTensorMapArgs or
/// buildBackwardTensorMapArgs) into `maps`: each CUtensorMap is 128 bytes,
/// 128-byte aligned (cuda.h), and must live until cuLaunchKernel has copied
/// the parameters. A failed encode names the operand and the kernel.
static faRtStatus
encodeTensorMaps(const std::vector<fa::rt::TensorMapEncodeArgs> &mapArgs,
                 const std::string &kernelName,
                 std::vector<CUtensorMap> &maps) {
  maps.assign(mapArgs.size(), CUtensorMap());
  for (size_t i = 0; i < mapArgs.size(); ++i) {
    const fa::rt::TensorMapEncodeArgs &a = mapArgs[i];
    CUresult result = fa::rt::cudaDriver().cuTensorMapEncodeTiled(
        &maps[i], fa::rt::tensorMapDataType(a.dtype), 3,
        reinterpret_cast<void *>(static_cast<uintptr_t>(a.address)),
        a.globalDim.data(), a.globalStrides.data(), a.boxDim.data(),
        a.elementStrides.data(), CU_TENSOR_MAP_INTERLEAVE_NONE,
        fa::rt::tensorMapSwizzle(a.swizzleBytes),
        CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (result != CUDA_SUCCESS)
      return fa::rt::reportCudaError(
          ("cuTensorMapEncodeTiled (tensor map for '" + a.operand +
           "' of kernel '" + kernelName + "')")
              .c_str(),
          result);
  }
  return FA_RT_SUCCESS;
}

namespace {
/// One kernel launch with everything it passes ready: the grid, the memref
/// values and the encoded tensor maps. The launchers prepare every launch
/// of a call before they make the first, so that a bad shape or a failed
/// encode launches nothing.
struct PreparedLaunch {
  CUfunction function = nullptr;
  std::array<uint32_t, 3> grid{};
  unsigned threads = 0, sharedBytes = 0;
  std::vector<uint64_t> values;
  std::vector<CUtensorMap> maps;
};
} // namespace

/// Launches `launches` on `stream` in order; each kernel's kernelParams are
/// its memref values, then its tensor maps passed by value.
static faRtStatus launchPrepared(std::vector<PreparedLaunch> &launches,
                                 void *stream) {
  for (PreparedLaunch &launch : launches) {
    std::vector<void *> args;
    args.reserve(launch.values.size() + launch.maps.size());
    for (uint64_t &value : launch.values)
      args.push_back(&value);
    for (CUtensorMap &map : launch.maps)
      args.push_back(&map);
    FA_RT_CUDA_CHECK(cuLaunchKernel, launch.function, launch.grid[0],
                     launch.grid[1], launch.grid[2], launch.threads, 1, 1,
                     launch.sharedBytes, static_cast<CUstream>(stream),
                     args.data(), nullptr);
  }
  return FA_RT_SUCCESS;
}

/// The blocks of `function` (`threads` threads, `sharedBytes` of dynamic
/// workgroup memory) that `device` holds at once: the value of a
/// persistent kernel's `resident_blocks` grid term.
static faRtStatus residentBlocks(CUfunction function, CUdevice device,
                                 unsigned threads, unsigned sharedBytes,
                                 const std::string &kernelName,
                                 int64_t &blocks) {
  int perMultiprocessor = 0, multiprocessors = 0;
  FA_RT_CUDA_CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor,
                   &perMultiprocessor, function, static_cast<int>(threads),
                   sharedBytes);
  FA_RT_CUDA_CHECK(cuDeviceGetAttribute, &multiprocessors,
                   CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
  if (perMultiprocessor < 1 || multiprocessors < 1)
    return fa::rt::reportError(FA_RT_ERROR_CUDA,
                               "kernel '" + kernelName + "' (" +
                                   std::to_string(threads) + " threads, " +
                                   std::to_string(sharedBytes) +
                                   " bytes of workgroup memory) fits no "
                                   "multiprocessor of the device");
  blocks = int64_t(perMultiprocessor) * multiprocessors;
  return FA_RT_SUCCESS;
}

/// Whether `grid` launches no block.
static bool emptyGrid(const std::array<uint32_t, 3> &grid) {
  return grid[0] == 0 || grid[1] == 0 || grid[2] == 0;
}

faRtStatus faRtKernelLaunch(faRtKernel kernel, uint64_t q, uint64_t k,
                            uint64_t v, uint64_t o, uint64_t lse, int64_t batch,
                            int64_t seqlenQ, int64_t seqlenK, void *stream) {
  if (!kernel)
    return fa::rt::reportError(FA_RT_ERROR_INVALID_ARGUMENT,
                               "faRtKernelLaunch: kernel is null");
  const fa::rt::Manifest &m = kernel->manifest;
  fa::rt::LaunchShape shape{batch, seqlenQ, seqlenK};
  // Batches over the chunk (grid y, 32-bit indices) go in several launches.
  const int64_t step = fa::rt::batchChunk(m, shape);
  if (faRtStatus status = fa::rt::checkChunkedLaunchShape(m, shape))
    return status;

  // A tensor with elements needs a pointer.
  struct Operand {
    const char *name;
    uint64_t ptr;
    int64_t elements;
  } operands[] = {{"q", q, batch * seqlenQ * m.headDim},
                  {"k", k, batch * seqlenK * m.headDim},
                  {"v", v, batch * seqlenK * m.headDimV},
                  {"o", o, batch * seqlenQ * m.headDimV},
                  {"lse", lse, m.hasLse ? batch * seqlenQ : 0}};
  for (const Operand &operand : operands)
    if (operand.elements > 0 && operand.ptr == 0)
      return fa::rt::reportError(FA_RT_ERROR_INVALID_ARGUMENT,
                                 std::string("faRtKernelLaunch: ") +
                                     operand.name + " is a null pointer");
  // The tensor-core kernels copy q/k/v/o rows with 16-byte cp.async: every
  // row (contiguous [batch, T, D]) must start at a multiple of row_align.
  if (m.rowAlign > 0)
    for (const Operand &operand : {operands[0], operands[1], operands[2],
                                   operands[3]})
      if (operand.ptr % static_cast<uint64_t>(m.rowAlign) != 0)
        return fa::rt::reportError(
            FA_RT_ERROR_INVALID_ARGUMENT,
            std::string("faRtKernelLaunch: ") + operand.name +
                " must be " + std::to_string(m.rowAlign) +
                "-byte aligned for kernel '" + m.kernel + "' (row_align)");

  CUcontext current = nullptr;
  FA_RT_CUDA_CHECK(cuCtxGetCurrent, &current);
  if (current != kernel->context)
    FA_RT_CUDA_CHECK(cuCtxSetCurrent, kernel->context);

  // A persistent kernel's grid holds min(tiles, resident blocks) blocks.
  int64_t resident = kernel->residentBlocks.load(std::memory_order_relaxed);
  if (resident == 0 && fa::rt::gridUsesResidentBlocks(m)) {
    if (faRtStatus status = residentBlocks(
            kernel->function, kernel->device, static_cast<unsigned>(m.threads),
            static_cast<unsigned>(m.sharedBytes), m.kernel, resident))
      return status;
    kernel->residentBlocks.store(resident, std::memory_order_relaxed);
  }
  std::vector<PreparedLaunch> launches;
  const uint64_t esize = fa::rt::dtypeSize(m.dtype),
                 oSize = fa::rt::dtypeSize(m.oDtype);
  for (int64_t start = 0; start < batch; start += step) {
    const fa::rt::LaunchShape chunk{std::min(step, batch - start), seqlenQ,
                                    seqlenK};
    PreparedLaunch launch;
    launch.function = kernel->function;
    launch.threads = static_cast<unsigned>(m.threads);
    launch.sharedBytes = static_cast<unsigned>(m.sharedBytes);
    if (faRtStatus status =
            fa::rt::computeGrid(m, chunk, launch.grid, resident))
      return status;
    if (emptyGrid(launch.grid))
      return FA_RT_SUCCESS; // Nothing to compute.
    // Contiguous [batch, T, D]: batch `start` begins T x D elements on.
    const uint64_t b = static_cast<uint64_t>(start);
    const fa::rt::TensorPointers pointers{
        q + b * seqlenQ * m.headDim * esize,
        k + b * seqlenK * m.headDim * esize,
        v + b * seqlenK * m.headDimV * esize,
        o + b * seqlenQ * m.headDimV * oSize,
        lse ? lse + b * seqlenQ * sizeof(float) : 0};
    std::vector<fa::rt::TensorMapEncodeArgs> mapArgs;
    if (faRtStatus status =
            fa::rt::buildTensorMapArgs(m, chunk, pointers, mapArgs))
      return status;
    launch.values = fa::rt::buildKernelParams(m, chunk, pointers);
    if (faRtStatus status = encodeTensorMaps(mapArgs, m.kernel, launch.maps))
      return status;
    launches.push_back(std::move(launch));
  }
  return launchPrepared(launches, stream);
}

//===----------------------------------------------------------------------===//
// Backward: several kernels from one manifest
//===----------------------------------------------------------------------===//

struct faRtBackward_st {
  fa::rt::BackwardManifest manifest;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  std::vector<CUfunction> functions; ///< one per manifest kernel, in order
};

faRtStatus fa::rt::loadBackward(const BackwardManifest &manifest, int device,
                                faRtBackward *backward) {
  if (!backward)
    return reportError(FA_RT_ERROR_INVALID_ARGUMENT,
                       "faRtBackwardLoad: backward is null");
  *backward = nullptr;
  auto loaded = std::make_unique<faRtBackward_st>();
  loaded->manifest = manifest;
  if (faRtStatus status = faRtInit(device))
    return status;
  if (faRtStatus status =
          retainContext(device, &loaded->device, &loaded->context))
    return status;
  auto fail = [&](faRtStatus status) {
    faRtBackwardUnload(loaded.release());
    return status;
  };
  if (faRtStatus status =
          checkChip(manifest.kernelView(0), loaded->device))
    return fail(status);
  if (faRtStatus status = loadPtxModule(manifest.ptxPath(), manifest.path,
                                        &loaded->module))
    return fail(status);
  for (const KernelLaunch &kernel : manifest.kernels) {
    CUfunction function = nullptr;
    CUresult result = cudaDriver().cuModuleGetFunction(
        &function, loaded->module, kernel.kernel.c_str());
    if (result == CUDA_ERROR_NOT_FOUND)
      return fail(reportError(FA_RT_ERROR_PTX_LOAD,
                              "kernel '" + kernel.kernel + "' (from " +
                                  manifest.path + ") not found in '" +
                                  manifest.ptxPath() + "'"));
    if (result != CUDA_SUCCESS)
      return fail(reportCudaError("cuModuleGetFunction", result));
    int maxThreads = 0;
    result = cudaDriver().cuFuncGetAttribute(
        &maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function);
    if (result != CUDA_SUCCESS)
      return fail(reportCudaError("cuFuncGetAttribute", result));
    if (kernel.threads > maxThreads)
      return fail(reportError(
          FA_RT_ERROR_PTX_LOAD,
          "kernel '" + kernel.kernel + "' launches " +
              std::to_string(kernel.threads) +
              " threads, but its compiled code allows at most " +
              std::to_string(maxThreads) + " (register pressure?)"));
    if (kernel.sharedBytes > 0) {
      result = cudaDriver().cuFuncSetAttribute(
          function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
          static_cast<int>(kernel.sharedBytes));
      if (result != CUDA_SUCCESS)
        return fail(reportCudaError("cuFuncSetAttribute", result));
    }
    loaded->functions.push_back(function);
  }
  *backward = loaded.release();
  return FA_RT_SUCCESS;
}

faRtStatus faRtBackwardLoad(const char *manifestPath, int device,
                            faRtBackward *backward) {
  if (backward)
    *backward = nullptr;
  if (!manifestPath || !backward)
    return fa::rt::reportError(FA_RT_ERROR_INVALID_ARGUMENT,
                               "faRtBackwardLoad: null argument");
  fa::rt::BackwardManifest manifest;
  if (faRtStatus status =
          fa::rt::readBackwardManifestFile(manifestPath, manifest))
    return status;
  return fa::rt::loadBackward(manifest, device, backward);
}

void faRtBackwardUnload(faRtBackward backward) {
  if (!backward)
    return;
  const fa::rt::CudaDriver &driver = fa::rt::cudaDriver();
  if (backward->context) {
    CUcontext current = nullptr;
    driver.cuCtxGetCurrent(&current);
    if (current != backward->context)
      driver.cuCtxSetCurrent(backward->context);
    if (backward->module)
      driver.cuModuleUnload(backward->module);
    driver.cuDevicePrimaryCtxRelease(backward->device);
  }
  delete backward;
}

const fa::rt::BackwardManifest &fa::rt::getManifest(faRtBackward backward) {
  return backward->manifest;
}

faRtStatus faRtBackwardWorkspaceSize(faRtBackward backward, int64_t batch,
                                     int64_t seqlenQ, int64_t seqlenK,
                                     uint64_t *bytes) {
  if (!backward || !bytes)
    return fa::rt::reportError(FA_RT_ERROR_INVALID_ARGUMENT,
                               "faRtBackwardWorkspaceSize: null argument");
  const fa::rt::BackwardManifest &m = backward->manifest;
  fa::rt::LaunchShape shape{batch, seqlenQ, seqlenK};
  if (faRtStatus status = fa::rt::checkBackwardChunkedLaunchShape(m, shape))
    return status;
  fa::rt::WorkspaceLayout layout;
  if (faRtStatus status = fa::rt::backwardWorkspaceLayout(m, shape, layout))
    return status;
  *bytes = layout.bytes;
  return FA_RT_SUCCESS;
}

faRtStatus faRtBackwardLaunch(faRtBackward backward,
                              const faRtBackwardTensors *tensors,
                              int64_t batch, int64_t seqlenQ, int64_t seqlenK,
                              void *stream) {
  if (!backward || !tensors)
    return fa::rt::reportError(FA_RT_ERROR_INVALID_ARGUMENT,
                               "faRtBackwardLaunch: null argument");
  const fa::rt::BackwardManifest &m = backward->manifest;
  fa::rt::LaunchShape shape{batch, seqlenQ, seqlenK};
  // Batches over the chunk (grid y, 32-bit indices) go in several launches
  // of every kernel.
  const int64_t step = fa::rt::backwardBatchChunk(m, shape);
  if (faRtStatus status = fa::rt::checkBackwardChunkedLaunchShape(m, shape))
    return status;
  fa::rt::WorkspaceLayout layout;
  if (faRtStatus status = fa::rt::backwardWorkspaceLayout(m, shape, layout))
    return status;
  if (layout.bytes > 0 && tensors->workspace == 0)
    return fa::rt::reportError(
        FA_RT_ERROR_INVALID_ARGUMENT,
        "faRtBackwardLaunch: workspace is a null pointer, expected " +
            std::to_string(layout.bytes) +
            " bytes (faRtBackwardWorkspaceSize)");

  std::vector<std::pair<std::string, uint64_t>> pointers = {
      {"q", tensors->q},   {"k", tensors->k},   {"v", tensors->v},
      {"o", tensors->o},   {"do", tensors->dout}, {"lse", tensors->lse},
      {"dq", tensors->dq}, {"dk", tensors->dk}, {"dv", tensors->dv}};
  for (size_t i = 0; i < m.scratch.size(); ++i)
    pointers.emplace_back(m.scratch[i].name,
                          tensors->workspace + layout.offsets[i]);
  for (const auto &[name, ptr] : pointers) {
    std::vector<int64_t> sizes = fa::rt::backwardTensorSizes(m, name, shape);
    int64_t elements = 1;
    for (int64_t size : sizes)
      elements *= size;
    if (elements > 0 && ptr == 0)
      return fa::rt::reportError(FA_RT_ERROR_INVALID_ARGUMENT,
                                 "faRtBackwardLaunch: " + name +
                                     " is a null pointer");
    // The tensor-core kernels copy rows with 16-byte cp.async.
    if (m.rowAlign > 0 && name != "lse" && sizes.size() == 3 &&
        ptr % static_cast<uint64_t>(m.rowAlign) != 0)
      return fa::rt::reportError(
          FA_RT_ERROR_INVALID_ARGUMENT,
          "faRtBackwardLaunch: " + name + " must be " +
              std::to_string(m.rowAlign) + "-byte aligned for '" + m.name +
              "' (row_align)");
  }

  CUcontext current = nullptr;
  FA_RT_CUDA_CHECK(cuCtxGetCurrent, &current);
  if (current != backward->context)
    FA_RT_CUDA_CHECK(cuCtxSetCurrent, backward->context);
  // Each chunk's kernels in manifest order; the scratch of a chunk is the
  // workspace's rows of its batches.
  std::vector<PreparedLaunch> launches;
  for (int64_t start = 0; start < batch; start += step) {
    const fa::rt::LaunchShape chunk{std::min(step, batch - start), seqlenQ,
                                    seqlenK};
    const std::vector<std::pair<std::string, uint64_t>> chunkPointers =
        fa::rt::backwardChunkPointers(m, pointers, shape, start);
    for (size_t i = 0; i < m.kernels.size(); ++i) {
      PreparedLaunch launch;
      launch.function = backward->functions[i];
      launch.threads = static_cast<unsigned>(m.kernels[i].threads);
      launch.sharedBytes = static_cast<unsigned>(m.kernels[i].sharedBytes);
      const fa::rt::Manifest view = m.kernelView(i);
      int64_t resident = 0;
      if (fa::rt::gridUsesResidentBlocks(view))
        if (faRtStatus status = residentBlocks(
                launch.function, backward->device, launch.threads,
                launch.sharedBytes, view.kernel, resident))
          return status;
      if (faRtStatus status =
              fa::rt::computeGrid(view, chunk, launch.grid, resident))
        return status;
      if (emptyGrid(launch.grid))
        continue; // Nothing for this kernel to compute.
      std::vector<fa::rt::TensorMapEncodeArgs> mapArgs;
      if (faRtStatus status = fa::rt::buildBackwardTensorMapArgs(
              m, i, chunk, chunkPointers, mapArgs))
        return status;
      if (faRtStatus status =
              encodeTensorMaps(mapArgs, m.kernels[i].kernel, launch.maps))
        return status;
      launch.values =
          fa::rt::buildBackwardKernelParams(m, i, chunk, chunkPointers);
      launches.push_back(std::move(launch));
    }
  }
  return launchPrepared(launches, stream);
}
