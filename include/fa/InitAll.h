//===- InitAll.h - register every fa dialect and pass -----------*- C++ -*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#ifndef FA_INITALL_H
#define FA_INITALL_H

#include "fa/Conversion/Passes.h"
#include "fa/Dialect/FA/IR/FA.h"
#include "fa/Dialect/FA/Transforms/Passes.h"
#include "fa/Pipelines/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

namespace mlir {
namespace fa {

/// Adds the fa dialect to `registry`.
inline void registerAllDialects(DialectRegistry &registry) {
  registry.insert<FADialect>();
}

/// Registers every fa pass and pipeline with the global registry, so that
/// they parse from the command line and from textual pipelines. Safe to call
/// more than once: only the first call registers.
inline void registerAllPasses() {
  static const bool registered = [] {
    registerFAPasses();
    registerFAConversionPasses();
    registerFAPipelines();
    return true;
  }();
  (void)registered;
}

/// Adds to `registry` what a host compiler needs to run the fa pipelines on
/// IR it parsed: every upstream dialect and extension (the bufferization and
/// deallocation models of func/arith/tensor/linalg/scf that fa-to-cpu relies
/// on, the NVVM target attribute of fa-to-ptx) and the LLVM IR translations
/// gpu-module-to-binary serializes kernels with. mlir-opt and fa-opt
/// register all of this already; an embedding compiler calls this next to
/// registerAllDialects.
inline void registerPipelineDependencies(DialectRegistry &registry) {
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllGPUToLLVMIRTranslations(registry);
}

} // namespace fa
} // namespace mlir

#endif // FA_INITALL_H
