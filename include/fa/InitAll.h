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

namespace mlir {
namespace fa {

/// Adds the fa dialect to `registry`.
inline void registerAllDialects(DialectRegistry &registry) {
  registry.insert<FADialect>();
}

/// Registers every fa pass and pipeline with the global registry, so that
/// they parse from the command line and from textual pipelines.
inline void registerAllPasses() {
  registerFAPasses();
  registerFAConversionPasses();
  registerFAPipelines();
}

} // namespace fa
} // namespace mlir

#endif // FA_INITALL_H
