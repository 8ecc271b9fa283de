//===- main.cpp - a downstream compiler embedding fa ---------------------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// Parses a module holding fa.attention, lowers it in this program's own
// PassManager with the fa-to-cpu pipeline added through the C++ API
// (buildFAToCPUPipeline), and checks that no fa.attention and no tensor is
// left: what a compiler that owns its pass pipeline would do.
//
//===----------------------------------------------------------------------===//

#include "fa/InitAll.h"
#include "fa/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/raw_ostream.h"

static const char *const kInput = R"mlir(
func.func @attention(%q: tensor<2x4x128x64xf16>, %k: tensor<2x4x96x64xf16>,
                     %v: tensor<2x4x96x32xf16>)
    -> (tensor<2x4x128x32xf16>, tensor<2x4x128xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(bottom_right)
      : tensor<2x4x128x64xf16>, tensor<2x4x96x64xf16>, tensor<2x4x96x32xf16>
      -> tensor<2x4x128x32xf16>, tensor<2x4x128xf32>
  return %o, %lse : tensor<2x4x128x32xf16>, tensor<2x4x128xf32>
}
)mlir";

int main() {
  mlir::DialectRegistry registry;
  mlir::fa::registerAllDialects(registry);
  mlir::fa::registerPipelineDependencies(registry);
  mlir::MLIRContext context(registry);

  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(kInput, &context);
  if (!module) {
    llvm::errs() << "fa-downstream: error: could not parse the input\n";
    return 1;
  }

  // The host's own pipeline, with fa's spliced in through the C++ API.
  mlir::PassManager pm(&context);
  pm.addPass(mlir::createCanonicalizerPass());
  mlir::fa::FAToCPUPipelineOptions options;
  options.blockM = 32;
  options.blockN = 32;
  mlir::fa::buildFAToCPUPipeline(pm, options);
  if (mlir::failed(pm.run(*module))) {
    llvm::errs() << "fa-downstream: error: fa-to-cpu failed\n";
    return 1;
  }

  int attentionOps = 0, funcs = 0;
  module->walk([&](mlir::Operation *op) {
    if (op->getName().getStringRef() == "fa.attention")
      ++attentionOps;
    if (op->getName().getStringRef() == "llvm.func")
      ++funcs;
  });
  if (attentionOps != 0 || funcs == 0) {
    llvm::errs() << "fa-downstream: error: expected no fa.attention and an "
                    "llvm.func, got "
                 << attentionOps << " fa.attention and " << funcs
                 << " llvm.func\n";
    return 1;
  }
  llvm::outs() << "fa-downstream: OK: fa-to-cpu lowered fa.attention to "
               << funcs << " llvm.func through the installed FA package\n";
  return 0;
}
