//===- FAToPTX.cpp - the fa-to-ptx pipeline -----------------------------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#include "PipelineErrors.h"
#include "fa/Conversion/FAToGPU/FAToGPU.h"
#include "fa/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/Transforms/OptimizeForNVVM.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdlib>
#include <optional>

using namespace mlir;

#ifndef FA_DEFAULT_CUDA_PATH
#define FA_DEFAULT_CUDA_PATH "/usr/local/cuda"
#endif

/// The CUDA toolkit whose libdevice the kernels link (math.exp and math.log
/// lower to libdevice calls): the option, else $CUDA_ROOT, $CUDA_HOME,
/// $CUDA_PATH, else the toolkit found when fa-opt was configured.
/// `source`, when given, receives where the path came from.
static std::string resolveCudaPath(StringRef option,
                                   std::string *source = nullptr) {
  auto from = [&](StringRef what) {
    if (source)
      *source = what.str();
  };
  if (!option.empty()) {
    from("cuda-path");
    return option.str();
  }
  for (const char *var : {"CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"})
    if (const char *value = std::getenv(var); value && *value) {
      from(std::string("$") + var);
      return value;
    }
  from("the toolkit found when fa-opt was configured");
  return FA_DEFAULT_CUDA_PATH;
}

/// The chips fa-to-ptx compiles for with PTX 8.0 (CUDA 12+): Volta to
/// Hopper. sm_90a enables the Hopper-only instructions.
static constexpr llvm::StringLiteral kChips[] = {
    "sm_70", "sm_72", "sm_75", "sm_80", "sm_86",
    "sm_87", "sm_89", "sm_90", "sm_90a"};

/// The PTX ISA versions (8.0 and later) that LLVM 22's NVPTX backend
/// knows; it ignores others with a warning and falls back to an older one.
static constexpr llvm::StringLiteral kFeatures[] = {
    "+ptx80", "+ptx81", "+ptx82", "+ptx83", "+ptx84",
    "+ptx85", "+ptx86", "+ptx87", "+ptx88", "+ptx90"};

/// The workgroup memory one block may use on `chip` after opting in, in
/// bytes (CUDA C++ Programming Guide, "Technical Specifications per
/// Compute Capability").
static int64_t maxSharedBytesPerBlock(StringRef chip) {
  if (chip.starts_with("sm_90"))
    return 232448; // 227 KiB
  if (chip == "sm_86" || chip == "sm_89")
    return 101376; // 99 KiB
  if (chip == "sm_80" || chip == "sm_87")
    return 166912; // 163 KiB
  if (chip == "sm_75")
    return 65536;
  return 98304; // sm_70, sm_72: 96 KiB
}

/// True for the chips with mma.sync m16n8k16 on f16/bf16 (sm_80 on).
static bool isTensorCoreChip(StringRef chip) {
  unsigned version = 0;
  return chip.consume_front("sm_") &&
         !chip.take_while(llvm::isDigit).getAsInteger(10, version) &&
         version >= 80;
}

/// The error for a false|auto|true option given another value.
static std::string unknownChoice(StringRef name, StringRef value) {
  return ("fa-to-ptx: expected " + name + " false, auto or true, got '" +
          value + "'")
      .str();
}

/// An error message for an option of fa-to-ptx it cannot take, or "".
static std::string checkPTXOptions(const fa::FAToPTXPipelineOptions &options) {
  std::string chip = options.chip;
  if (!llvm::is_contained(kChips, chip)) {
    std::string message = "fa-to-ptx: unsupported chip '" + chip +
                          "', expected one of";
    for (StringRef c : kChips)
      message += " " + c.str();
    return message;
  }
  if (!llvm::is_contained(kFeatures, StringRef(options.features))) {
    std::string message = "fa-to-ptx: unsupported features '" +
                          options.features +
                          "', expected a PTX ISA version that LLVM 22 "
                          "knows, 8.0 or later:";
    for (StringRef f : kFeatures)
      message += " " + f.str();
    return message;
  }
  // Given: parsed from the option text, or assigned in C++ (a downstream
  // compiler filling FAToPTXPipelineOptions); a default is not given.
  auto given = [](const auto &option) { return option.hasValue(); };
  // Tensor cores or wgmma asked for by name where they cannot apply: an
  // error, not a silent scalar or mma.sync kernel (the defaults,
  // tensor-cores=true and wgmma=true, apply where they can).
  if (given(options.tensorCores) && options.tensorCores &&
      !isTensorCoreChip(chip))
    return "fa-to-ptx: tensor-cores=true needs chip sm_80 or later "
           "(mma.sync with f16/bf16 operands), got chip=" +
           chip;
  if (given(options.wgmma) && options.wgmma && chip != "sm_90a")
    return "fa-to-ptx: wgmma=true needs chip=sm_90a (wgmma exists only on "
           "the architecture-specific Hopper target), got chip=" +
           chip;
  if (given(options.wgmma) && options.wgmma && !options.tensorCores)
    return "fa-to-ptx: wgmma=true needs tensor-cores=true (the wgmma "
           "kernels are tensor-core kernels), got tensor-cores=false";
  // Options that only the wgmma kernels (needTma: their TMA forms) take,
  // given with a chip or option that rules those out: what rules them out,
  // as " with tensor-cores=false" etc. after the chip, or "" when they
  // are in effect.
  auto ruledOut = [&](bool needTma) -> std::optional<std::string> {
    std::string got = "got chip=" + chip;
    if (!options.tensorCores)
      return got + " with tensor-cores=false";
    if (!options.wgmma)
      return got + " with wgmma=false";
    if (chip != "sm_90a")
      return got;
    if (needTma && !options.tma)
      return got + " with tma=false";
    return std::nullopt;
  };
  // Likewise TMA, which only the wgmma kernels use.
  if (given(options.tma) && options.tma)
    if (auto why = ruledOut(/*needTma=*/false))
      return "fa-to-ptx: tma=true needs the wgmma kernels (chip=sm_90a, "
             "wgmma=true, tensor-cores=true), " +
             *why;
  // And stages, which only the wgmma kernels take (2 or 3).
  if (!fa::AttentionKernelOptions::isValidStages(options.stages))
    return "fa-to-ptx: expected stages 2 or 3, or 0 for the default, got " +
           std::to_string(options.stages);
  if (given(options.stages) && options.stages != 0)
    if (auto why = ruledOut(/*needTma=*/false))
      return "fa-to-ptx: stages=" + std::to_string(options.stages) +
             " applies to the wgmma kernels only (chip=sm_90a, wgmma=true, "
             "tensor-cores=true), " +
             *why;
  // The producer warpgroup and pingpong scheduling belong to the TMA
  // forward (pingpong with producer-warp at its default as well).
  if (given(options.producerWarp) && options.producerWarp)
    if (auto why = ruledOut(/*needTma=*/true))
      return "fa-to-ptx: producer-warp=true needs the TMA wgmma kernels "
             "(chip=sm_90a, wgmma=true, tensor-cores=true, tma=true), " +
             *why;
  if (given(options.pingpong) && options.pingpong) {
    if (!options.producerWarp)
      return "fa-to-ptx: pingpong=true needs producer-warp=true (the "
             "consumer warpgroups must not share a block barrier)";
    if (auto why = ruledOut(/*needTma=*/true))
      return "fa-to-ptx: pingpong=true needs the TMA wgmma kernels with the "
             "producer warpgroup (chip=sm_90a, wgmma=true, "
             "tensor-cores=true, tma=true), " +
             *why;
  }
  if (options.indexBitwidth != 0 && options.indexBitwidth != 32 &&
      options.indexBitwidth != 64)
    return "fa-to-ptx: expected index-bitwidth 32 or 64, or 0 for the "
           "kernel's choice, got " +
           std::to_string(options.indexBitwidth);
  // Query tiles per block: 0 (the kernel's choice), 1, or 2 with the
  // producer warpgroup and without pingpong.
  if (options.tilesPerBlock < 0 || options.tilesPerBlock > 2)
    return "fa-to-ptx: expected tiles-per-block 1 or 2, or 0 for the "
           "default, got " +
           std::to_string(options.tilesPerBlock);
  if (options.tilesPerBlock == 2) {
    if (!options.producerWarp || options.pingpong)
      return "fa-to-ptx: tiles-per-block=2 needs producer-warp=true and "
             "pingpong=false";
    if (auto why = ruledOut(/*needTma=*/true))
      return "fa-to-ptx: tiles-per-block=2 needs the TMA wgmma kernels "
             "with the producer warpgroup (chip=sm_90a, wgmma=true, "
             "tensor-cores=true, tma=true), " +
             *why;
  }
  std::optional<fa::FeatureChoice> persistent =
      fa::parseFeatureChoice(options.persistent);
  if (!persistent)
    return unknownChoice("persistent", options.persistent);
  if (*persistent == fa::FeatureChoice::On) {
    if (!options.producerWarp || options.pingpong || options.tilesPerBlock == 2)
      return "fa-to-ptx: persistent=true needs producer-warp=true, "
             "pingpong=false and tiles-per-block other than 2";
    if (auto why = ruledOut(/*needTma=*/true))
      return "fa-to-ptx: persistent=true needs the TMA wgmma kernels "
             "with the producer warpgroup (chip=sm_90a, wgmma=true, "
             "tensor-cores=true, tma=true), " +
             *why;
  }
  // The backward's producer warpgroup: a known value, and true only where
  // the dq-atomics _dkdv with TMA can exist.
  std::optional<fa::BackwardProducerWarp> backwardProducer =
      fa::parseFeatureChoice(options.backwardProducerWarp);
  if (!backwardProducer)
    return unknownChoice("backward-producer-warp",
                         options.backwardProducerWarp);
  if (*backwardProducer == fa::BackwardProducerWarp::On) {
    if (auto why = ruledOut(/*needTma=*/true))
      return "fa-to-ptx: backward-producer-warp=true needs the TMA wgmma "
             "kernels (chip=sm_90a, wgmma=true, tensor-cores=true, "
             "tma=true), " +
             *why;
    if (options.deterministic || !options.dqAtomics ||
        options.features == "+ptx80")
      return std::string("fa-to-ptx: backward-producer-warp=true needs the "
                         "dq-atomics backward (dq-atomics=true, "
                         "deterministic=false, PTX ISA 8.1 or later), "
                         "got ") +
             (options.deterministic ? "deterministic=true"
              : !options.dqAtomics  ? "dq-atomics=false"
                                    : "features=+ptx80");
  }
  // dq-atomics asked for by name where it cannot apply.
  if (given(options.dqAtomics) && options.dqAtomics) {
    if (options.deterministic)
      return "fa-to-ptx: dq-atomics=true adds dq with f32 atomics, which is "
             "not bitwise reproducible: it cannot be combined with "
             "deterministic=true";
    if (auto why = ruledOut(/*needTma=*/false))
      return "fa-to-ptx: dq-atomics=true needs the wgmma backward "
             "(chip=sm_90a, wgmma=true, tensor-cores=true), " +
             *why;
    // Pairs of dq columns go out with red.global.add.v2.f32 (PTX ISA 8.1).
    if (options.features == "+ptx80")
      return "fa-to-ptx: dq-atomics=true needs PTX ISA 8.1 or later "
             "(red.global.add.v2.f32), got features=+ptx80";
  }
  // Checked here rather than by gpu-module-to-binary, which would report it
  // with the whole lowered module attached.
  std::string source;
  std::string cudaPath = resolveCudaPath(options.cudaPath, &source);
  if (!cudaPath.empty()) {
    llvm::SmallString<256> libdevice(cudaPath);
    llvm::sys::path::append(libdevice, "nvvm", "libdevice",
                            "libdevice.10.bc");
    if (!llvm::sys::fs::is_regular_file(libdevice))
      return "fa-to-ptx: the CUDA toolkit folder '" + cudaPath + "' (from " +
             source +
             (llvm::sys::fs::is_directory(cudaPath)
                  ? ") has no nvvm/libdevice/libdevice.10.bc"
                  : ") does not exist") +
             "; give cuda-path=<toolkit>, the folder holding "
             "nvvm/libdevice/libdevice.10.bc";
  }
  return "";
}

void mlir::fa::buildFAToPTXPipeline(OpPassManager &pm,
                                    const FAToPTXPipelineOptions &options) {
  if (!checkModuleAnchor(pm, "fa-to-ptx"))
    return;
  if (std::string error = checkPTXOptions(options); !error.empty()) {
    pm.addPass(createRejectPipelinePass(std::move(error)));
    return;
  }
  ConvertFAToGPUOptions kernel;
  kernel.blockM = options.blockM;
  kernel.blockN = options.blockN;
  kernel.deterministic = options.deterministic;
  // The dq-atomics kernels use PTX ISA 8.1's red.global.add.v2.f32.
  kernel.dqAtomics = options.dqAtomics && options.features != "+ptx80";
  kernel.numWarps = options.numWarps;
  kernel.stages = options.stages;
  // mma.sync m16n8k16 with f16/bf16 operands exists from sm_80 on.
  kernel.tensorCores = options.tensorCores && isTensorCoreChip(options.chip);
  // wgmma exists only on the architecture-specific sm_90a target.
  kernel.wgmma = kernel.tensorCores && options.wgmma && options.chip == "sm_90a";
  // TMA loads (the wgmma forward and backward kernels).
  kernel.tma = kernel.wgmma && options.tma;
  kernel.producerWarp = kernel.tma && options.producerWarp;
  kernel.pingpong = kernel.producerWarp && options.pingpong;
  kernel.tilesPerBlock = kernel.producerWarp ? options.tilesPerBlock : 1;
  kernel.persistent =
      kernel.producerWarp ? options.persistent.getValue() : "false";
  kernel.backwardProducerWarp =
      kernel.tma ? options.backwardProducerWarp.getValue() : "false";
  kernel.pairKeyBlocks = options.pairKeyBlocks;
  kernel.maxSharedBytes = maxSharedBytesPerBlock(options.chip);
  kernel.indexBitwidth = options.indexBitwidth;
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
  device.addPass(fa::createFAConvertBF16MmaSyncToNVVM());
  device.addPass(createConvertNVGPUToNVVMPass());
  device.addPass(createConvertGpuOpsToNVVMOps());
  device.addPass(fa::createFALowerTensorMapParams());
  device.addPass(LLVM::createNVVMOptimizeForTargetPass());
  device.addPass(createCanonicalizerPass());
  device.addPass(createCSEPass());
  device.addPass(createReconcileUnrealizedCastsPass());
  // Locations stay until here, so that the checks above (a malformed
  // `fa.tensor_map_params` on a hand-written kernel) point at the source;
  // the PTX carries no debug lines.
  device.addPass(createStripDebugInfoPass());

  // Serialize each gpu.module to PTX text in a gpu.binary.
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  binary.toolkitPath = resolveCudaPath(options.cudaPath);
  pm.addPass(createGpuModuleToBinaryPass(binary));

  FAExportKernelsOptions exportOptions;
  exportOptions.outputDir = options.outputDir;
  pm.addPass(createFAExportKernels(exportOptions));
}
