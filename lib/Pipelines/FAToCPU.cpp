//===- FAToCPU.cpp - the fa-to-cpu pipeline -----------------------------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/Transforms/Passes.h"
#include "fa/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::fa::buildFAToCPUPipeline(OpPassManager &pm,
                                    const FAToCPUPipelineOptions &options) {
  FATileAttentionOptions tiling;
  tiling.blockM = options.blockM;
  tiling.blockN = options.blockN;
  pm.addPass(createFATileAttention(tiling));
  FATileAttentionBackwardOptions backwardTiling;
  backwardTiling.blockM = options.blockM;
  backwardTiling.blockN = options.blockN;
  pm.addPass(createFATileAttentionBackward(backwardTiling));
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
}
