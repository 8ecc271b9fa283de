//===- Registration.cpp - register the fa pipelines ---------------------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#include "fa/Pipelines/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void mlir::fa::registerFAPipelines() {
  PassPipelineRegistration<FAToCPUPipelineOptions>(
      "fa-to-cpu",
      "Tile fa.attention with the online softmax, bufferize and lower to the "
      "LLVM dialect for CPU execution (mlir-runner, ExecutionEngine)",
      buildFAToCPUPipeline);
  PassPipelineRegistration<FAToPTXPipelineOptions>(
      "fa-to-ptx",
      "Lower each fa.attention to a FlashAttention GPU kernel, compile it to "
      "PTX and write <kernel>.ptx and <kernel>.manifest to output-dir",
      buildFAToPTXPipeline);
}
