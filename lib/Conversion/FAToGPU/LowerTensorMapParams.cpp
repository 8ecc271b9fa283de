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

#include "llvm/ADT/SetVector.h"

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

/// An error at `op`'s location (one line: no dump of the op).
static InFlightDiagnostic passError(Operation *op) {
  return mlir::emitError(op->getLoc()) << "fa-lower-tensor-map-params: ";
}

/// Gives the last N arguments of `func` (N from its attribute) the
/// by-value tensor-map attributes; false after an error.
static bool lowerKernel(LLVM::LLVMFuncOp func, Attribute attr) {
  StringRef attrName = fa::gpukernel::kTensorMapParamsAttrName;
  auto count = dyn_cast<IntegerAttr>(attr);
  ArrayRef<Type> params = func.getFunctionType().getParams();
  int64_t numArgs = params.size();
  if (!count || count.getInt() < 0 || count.getInt() > numArgs) {
    passError(func) << "expected '" << attrName << "' on '" << func.getName()
                    << "' to be an integer in [0, " << numArgs
                    << "] (the number of tensor-map arguments that close "
                       "the argument list), got "
                    << attr;
    return false;
  }
  if (!func->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName())) {
    passError(func) << "'" << attrName << "' on '" << func.getName()
                    << "', which is not a kernel (no '"
                    << NVVM::NVVMDialect::getKernelFuncAttrName()
                    << "'): only kernel parameters can be grid constants";
    return false;
  }
  MLIRContext *ctx = func.getContext();
  Builder b(ctx);
  auto mapType =
      LLVM::LLVMArrayType::get(IntegerType::get(ctx, 8), kTensorMapBytes);
  for (int64_t i = numArgs - count.getInt(); i < numArgs; ++i) {
    auto ptr = dyn_cast<LLVM::LLVMPointerType>(params[i]);
    if (!ptr || ptr.getAddressSpace() != 0) {
      passError(func) << "expected argument " << i << " of '"
                      << func.getName()
                      << "' (a tensor map) to be a generic !llvm.ptr, got "
                      << params[i];
      return false;
    }
    if (Attribute byval =
            func.getArgAttr(i, LLVM::LLVMDialect::getByValAttrName());
        byval && byval != TypeAttr::get(mapType)) {
      passError(func) << "argument " << i << " of '" << func.getName()
                      << "' (a tensor map) is already by-value of another "
                         "type: "
                      << byval;
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
    StringRef attrName = fa::gpukernel::kTensorMapParamsAttrName;
    // The symbol tables (gpu.module, builtin.module) that hold a TMA kernel.
    llvm::SetVector<Operation *> tmaScopes;
    WalkResult result = getOperation()->walk([&](Operation *op) {
      Attribute attr = op->getAttr(attrName);
      if (!attr)
        return WalkResult::advance();
      auto func = dyn_cast<LLVM::LLVMFuncOp>(op);
      if (!func) {
        passError(op) << "'" << attrName << "' on '" << op->getName()
                      << "': the pass lowers llvm.func kernels, so run it "
                         "after convert-gpu-to-nvvm";
        return WalkResult::interrupt();
      }
      if (!lowerKernel(func, attr))
        return WalkResult::interrupt();
      if (Operation *scope = func->getParentOp())
        tmaScopes.insert(scope);
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    // The tiles are at 1024-byte multiples from the start of the dynamic
    // workgroup memory, whose symbol convert-gpu-to-nvvm aligns to 16 only.
    for (Operation *scope : tmaScopes)
      for (Region &region : scope->getRegions())
        for (auto global : region.getOps<LLVM::GlobalOp>())
          if (global.getAddrSpace() ==
                  static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared) &&
              global.getAlignment().value_or(0) < kTmaSharedAlign)
            global.setAlignment(kTmaSharedAlign);
  }
};

} // namespace
