//===- PipelineErrors.cpp - how the fa pipelines report bad uses --------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#include "PipelineErrors.h"

#include "mlir/IR/BuiltinOps.h"

using namespace mlir;

namespace {
/// Fails with `message` at the operation it runs on: how a pipeline reports
/// an option it cannot take, before any upstream pass sees it.
struct RejectOptionPass : PassWrapper<RejectOptionPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(RejectOptionPass)
  explicit RejectOptionPass(std::string message)
      : message(std::move(message)) {}
  StringRef getArgument() const override { return "fa-reject-option"; }
  void runOnOperation() override {
    mlir::emitError(getOperation()->getLoc()) << message;
    signalPassFailure();
  }
  std::string message;
};
} // namespace

std::unique_ptr<Pass> mlir::fa::createRejectPipelinePass(std::string message) {
  return std::make_unique<RejectOptionPass>(std::move(message));
}

bool mlir::fa::checkModuleAnchor(OpPassManager &pm, StringRef pipeline) {
  // An op-agnostic pass manager (a C++ PassManager's default) takes the
  // module passes; they are checked against the op it runs on.
  if (pm.getOpAnchorName() == ModuleOp::getOperationName() ||
      pm.getOpAnchorName() == OpPassManager::getAnyOpAnchorName())
    return true;
  pm.addPass(createRejectPipelinePass(
      (pipeline + " runs on the top-level builtin.module, not nested in '" +
       pm.getOpAnchorName() + "' (write it as builtin.module(" + pipeline +
       ") or pass --" + pipeline + ")")
          .str()));
  return false;
}
