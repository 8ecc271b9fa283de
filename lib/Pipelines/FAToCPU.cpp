//===- FAToCPU.cpp - the fa-to-cpu pipeline -----------------------------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#include "PipelineErrors.h"
#include "fa/Dialect/FA/Transforms/Passes.h"
#include "fa/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace {
/// Fails on a function in a nested `builtin.module`: the pipeline's
/// bufferization and LLVM conversions handle the top-level module's
/// functions only, and such a function would otherwise end in an unrelated
/// legalization error ("failed to legalize operation 'cf.br'").
struct CheckTopLevelFunctions
    : PassWrapper<CheckTopLevelFunctions, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CheckTopLevelFunctions)
  StringRef getArgument() const final { return "fa-to-cpu-check-modules"; }
  void runOnOperation() override {
    ModuleOp top = getOperation();
    top.walk([&](ModuleOp nested) {
      if (nested == top || nested.getOps<func::FuncOp>().empty())
        return WalkResult::advance();
      nested.emitError()
          << "fa-to-cpu lowers the functions of the top-level module; this "
             "nested module holds functions: run the pipeline on it "
             "(--pass-pipeline='builtin.module(builtin.module(fa-to-cpu))')";
      signalPassFailure();
      return WalkResult::skip();
    });
    // An fa op in another symbol table (a gpu.module's device code) would
    // end in the same unrelated legalization error.
    top.walk([&](Operation *op) {
      if (op->getName().getDialectNamespace() != "fa")
        return;
      Operation *scope = op->getParentWithTrait<OpTrait::SymbolTable>();
      if (!scope || isa<ModuleOp>(scope))
        return;
      mlir::emitError(op->getLoc())
          << "fa-to-cpu lowers fa ops in the functions of builtin modules; "
             "this '"
          << op->getName() << "' lies in a '" << scope->getName()
          << "' (neither fa-to-cpu nor fa-to-ptx lowers one there): move "
             "its function to a builtin module";
      signalPassFailure();
    });
  }
};

/// Decomposes the linalg ops that are aggregates of others
/// (AggregatedOpInterface: linalg.softmax, which a chain left unraised keeps)
/// into the ops they stand for, so that linalg-to-loops lowers them.
struct DecomposeAggregatedOps
    : PassWrapper<DecomposeAggregatedOps, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(DecomposeAggregatedOps)
  StringRef getArgument() const final {
    return "fa-to-cpu-decompose-aggregates";
  }
  void runOnOperation() override {
    SmallVector<linalg::AggregatedOpInterface> ops;
    getOperation().walk(
        [&](linalg::AggregatedOpInterface op) { ops.push_back(op); });
    for (linalg::AggregatedOpInterface op : ops) {
      OpBuilder b(op);
      FailureOr<SmallVector<Value>> parts = op.decomposeOperation(b);
      if (failed(parts)) {
        op->emitError() << "fa-to-cpu cannot decompose this op into ops it "
                           "lowers";
        return signalPassFailure();
      }
      op->replaceAllUsesWith(*parts);
      op->erase();
    }
  }
};

/// Fails on any op the pipeline left outside the LLVM dialect (one it does
/// not lower), naming it, rather than returning IR that no LLVM
/// translation or runner accepts.
struct CheckLoweredToLLVM
    : PassWrapper<CheckLoweredToLLVM, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CheckLoweredToLLVM)
  StringRef getArgument() const final { return "fa-to-cpu-check-lowered"; }
  void runOnOperation() override {
    getOperation().walk([&](Operation *op) {
      Dialect *dialect = op->getDialect();
      if (isa<ModuleOp>(op) || (dialect && isa<LLVM::LLVMDialect>(dialect)))
        return WalkResult::advance();
      op->emitError() << "fa-to-cpu does not lower '" << op->getName()
                      << "' to the LLVM dialect";
      signalPassFailure();
      return WalkResult::skip();
    });
  }
};
} // namespace

void mlir::fa::buildFAToCPUPipeline(OpPassManager &pm,
                                    const FAToCPUPipelineOptions &options) {
  if (!checkModuleAnchor(pm, "fa-to-cpu"))
    return;
  pm.addPass(std::make_unique<CheckTopLevelFunctions>());
  FATileAttentionOptions tiling;
  tiling.blockM = options.blockM;
  tiling.blockN = options.blockN;
  pm.addPass(createFATileAttention(tiling));
  FATileAttentionBackwardOptions backwardTiling;
  backwardTiling.blockM = options.blockM;
  backwardTiling.blockN = options.blockN;
  pm.addPass(createFATileAttentionBackward(backwardTiling));
  pm.addPass(std::make_unique<DecomposeAggregatedOps>());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  bufferization::OneShotBufferizePassOptions bufferization;
  bufferization.bufferizeFunctionBoundaries = true;
  // The running max is read (for the rescale factor) after the new max is
  // computed, so the key loop yields fresh buffers.
  bufferization.allowReturnAllocsFromLoops = true;
  bufferization.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferization));
  bufferization::buildBufferDeallocationPipeline(pm);
  // The deallocation pipeline keeps a loop's yielded buffers alive with
  // bufferization.clone (scf.for with tensor iter_args in the caller's
  // code); lower those to memref.alloc + memref.copy.
  pm.addPass(createConvertBufferizationToMemRefPass());

  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(std::make_unique<CheckLoweredToLLVM>());
}
