//===- FAToPTX.cpp - the fa-to-ptx pipeline -----------------------------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#include "fa/Conversion/FAToGPU/FAToGPU.h"
#include "fa/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/Transforms/OptimizeForNVVM.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include <cstdlib>

using namespace mlir;

#ifndef FA_DEFAULT_CUDA_PATH
#define FA_DEFAULT_CUDA_PATH "/usr/local/cuda"
#endif

/// The CUDA toolkit whose libdevice the kernels link (math.exp and math.log
/// lower to libdevice calls): the option, else $CUDA_ROOT, $CUDA_HOME,
/// $CUDA_PATH, else the toolkit found when fa-opt was configured.
static std::string resolveCudaPath(StringRef option) {
  if (!option.empty())
    return option.str();
  for (const char *var : {"CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"})
    if (const char *value = std::getenv(var); value && *value)
      return value;
  return FA_DEFAULT_CUDA_PATH;
}

void mlir::fa::buildFAToPTXPipeline(OpPassManager &pm,
                                    const FAToPTXPipelineOptions &options) {
  ConvertFAToGPUOptions kernel;
  kernel.blockM = options.blockM;
  kernel.blockN = options.blockN;
  kernel.deterministic = options.deterministic;
  pm.addPass(createConvertFAToGPU(kernel));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  // The device side of upstream's gpu-lower-to-nvvm-pipeline (nothing of the
  // host is left: convert-fa-to-gpu erased the host functions).
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  pm.addPass(createGpuNVVMAttachTarget(target));
  OpPassManager &device = pm.nest<gpu::GPUModuleOp>();
  device.addPass(createStripDebugInfoPass());
  device.addPass(createConvertGpuOpsToNVVMOps());
  device.addPass(LLVM::createNVVMOptimizeForTargetPass());
  device.addPass(createCanonicalizerPass());
  device.addPass(createCSEPass());
  device.addPass(createReconcileUnrealizedCastsPass());

  // Serialize each gpu.module to PTX text in a gpu.binary.
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  binary.toolkitPath = resolveCudaPath(options.cudaPath);
  pm.addPass(createGpuModuleToBinaryPass(binary));

  FAExportKernelsOptions exportOptions;
  exportOptions.outputDir = options.outputDir;
  pm.addPass(createFAExportKernels(exportOptions));
}
