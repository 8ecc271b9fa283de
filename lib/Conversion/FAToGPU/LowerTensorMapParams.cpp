//===- LowerTensorMapParams.cpp - by-value CUtensorMap kernel params -----===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// Implements `fa-lower-tensor-map-params`: the last N arguments of a TMA
// kernel (N from its `fa.tensor_map_params` attribute) become by-value,
// 64-byte-aligned, grid-constant 128-byte parameters, which is how a
// CUtensorMap reaches a kernel (PTX ISA, "Tensor Map"; CUDA Programming
// Guide, "Using TMA to transfer multi-dimensional arrays").
//
//===----------------------------------------------------------------------===//

#include "fa/Conversion/FAToGPU/FAToGPU.h"

#include "TensorCoreKernels.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir {
namespace fa {
#define GEN_PASS_DEF_FALOWERTENSORMAPPARAMS
#include "fa/Conversion/Passes.h.inc"
} // namespace fa
} // namespace mlir

using namespace mlir;

namespace {

/// Bytes and alignment of a CUtensorMap (cuda.h: 16 x 64-bit, alignas 64).
constexpr int64_t kTensorMapBytes = 128;
constexpr int64_t kTensorMapAlign = 64;
/// Alignment of the workgroup memory of a TMA kernel: a TMA destination
/// needs 128 bytes (PTX ISA, cp.async.bulk.tensor), and the 128-byte
/// swizzle pattern repeats every 1024 bytes, which TMA and wgmma both
/// apply from the address bits, so the tiles start at 1024-byte multiples.
constexpr uint64_t kTmaSharedAlign = 1024;

/// Gives the last N arguments of `func` (N from its attribute) the
/// by-value tensor-map attributes; false after an error.
static bool lowerKernel(LLVM::LLVMFuncOp func, Attribute attr) {
  StringRef attrName = fa::gpukernel::kTensorMapParamsAttrName;
  auto count = dyn_cast<IntegerAttr>(attr);
  int64_t numArgs = func.getNumArguments();
  if (!count || count.getInt() < 0 || count.getInt() > numArgs) {
    func.emitError() << "fa-lower-tensor-map-params: expected '" << attrName
                     << "' to be an integer in [0, " << numArgs
                     << "] (the number of tensor-map arguments that close "
                        "the argument list), got "
                     << attr;
    return false;
  }
  if (!func->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName())) {
    func.emitError() << "fa-lower-tensor-map-params: '" << attrName
                     << "' on a function that is not a kernel (no '"
                     << NVVM::NVVMDialect::getKernelFuncAttrName()
                     << "'): only kernel parameters can be grid constants";
    return false;
  }
  MLIRContext *ctx = func.getContext();
  Builder b(ctx);
  auto mapType =
      LLVM::LLVMArrayType::get(IntegerType::get(ctx, 8), kTensorMapBytes);
  for (int64_t i = numArgs - count.getInt(); i < numArgs; ++i) {
    if (!isa<LLVM::LLVMPointerType>(func.getArgument(i).getType())) {
      func.emitError() << "fa-lower-tensor-map-params: expected argument " << i
                       << " (a tensor map) to be an !llvm.ptr, got "
                       << func.getArgument(i).getType();
      return false;
    }
    func.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                    TypeAttr::get(mapType));
    func.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                    b.getI64IntegerAttr(kTensorMapAlign));
    func.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                    b.getUnitAttr());
  }
  func->removeAttr(attrName);
  return true;
}

struct LowerTensorMapParamsPass
    : fa::impl::FALowerTensorMapParamsBase<LowerTensorMapParamsPass> {
  void runOnOperation() override {
    gpu::GPUModuleOp module = getOperation();
    bool anyTma = false;
    for (auto func : module.getOps<LLVM::LLVMFuncOp>()) {
      Attribute attr =
          func->getAttr(fa::gpukernel::kTensorMapParamsAttrName);
      if (!attr)
        continue;
      if (!lowerKernel(func, attr))
        return signalPassFailure();
      anyTma = true;
    }
    // The tiles are at 1024-byte multiples from the start of the dynamic
    // workgroup memory, whose symbol convert-gpu-to-nvvm aligns to 16 only.
    if (!anyTma)
      return;
    for (auto global : module.getOps<LLVM::GlobalOp>())
      if (global.getAddrSpace() ==
              static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared) &&
          global.getAlignment().value_or(0) < kTmaSharedAlign)
        global.setAlignment(kTmaSharedAlign);
  }
};

} // namespace
