//===- Pipelines.h - fa end-to-end pass pipelines ---------------*- C++ -*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#ifndef FA_PIPELINES_PIPELINES_H
#define FA_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

#include <cstdint>

namespace mlir {
class OpPassManager;
namespace fa {

/// Options of `fa-to-cpu`.
struct FAToCPUPipelineOptions
    : public PassPipelineOptions<FAToCPUPipelineOptions> {
  PassOptions::Option<int64_t> blockM{
      *this, "block-m",
      llvm::cl::desc("Query rows per block (block_m) of fa-tile-attention"),
      llvm::cl::init(64)};
  PassOptions::Option<int64_t> blockN{
      *this, "block-n",
      llvm::cl::desc("Key/value rows per block (block_n) of "
                     "fa-tile-attention"),
      llvm::cl::init(64)};
};

/// Builds `fa-to-cpu`: fa-tile-attention (a no-op on IR already tiled),
/// one-shot bufferization with function boundaries (identity layouts),
/// ownership-based deallocation, linalg to loops, and the upstream
/// conversions to the LLVM dialect. The result runs under mlir-runner or
/// the ExecutionEngine.
void buildFAToCPUPipeline(OpPassManager &pm,
                          const FAToCPUPipelineOptions &options);

/// Registers `fa-to-cpu` and `fa-to-ptx` with the global pipeline registry.
void registerFAPipelines();

} // namespace fa
} // namespace mlir

#endif // FA_PIPELINES_PIPELINES_H
