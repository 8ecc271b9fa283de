//===- PipelineErrors.h - how the fa pipelines report bad uses -*- C++ -*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// A pipeline builder cannot fail; it reports an option it cannot take, or
// a pass manager it cannot fill, by adding a pass that fails with the
// message on the operation it runs on.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_PIPELINES_PIPELINEERRORS_H
#define FA_LIB_PIPELINES_PIPELINEERRORS_H

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include <memory>
#include <string>

namespace mlir::fa {

/// A pass (on any operation) that emits `message` as an error at the
/// operation and fails.
std::unique_ptr<Pass> createRejectPipelinePass(std::string message);

/// True where `pm` runs on builtin.module or on any op (the module passes
/// of pipeline `pipeline` can be added); else adds a pass that fails saying
/// that the pipeline is nested in another op and returns false: the
/// module passes cannot be added there (MLIR aborts on that).
bool checkModuleAnchor(OpPassManager &pm, llvm::StringRef pipeline);

} // namespace mlir::fa

#endif // FA_LIB_PIPELINES_PIPELINEERRORS_H
