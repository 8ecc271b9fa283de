//===- fa-api-test.cpp - the C++ pipeline API as a downstream uses it -----===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// A downstream compiler fills FAToPTXPipelineOptions in C++ rather than
// parsing option text. The option checks of fa-to-ptx must treat a value
// assigned in C++ as given, like one parsed from `--fa-to-ptx="..."`: an
// option that cannot apply is an error, not a silently different kernel.
// Each case builds the pipeline into a pass manager and prints whether it
// was accepted, or runs it and prints the error it reports. Run by
// fa-api.test.
//
//===----------------------------------------------------------------------===//

#include "fa/InitAll.h"
#include "fa/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

using namespace mlir;

static const char *const kInput = R"mlir(
func.func @attention(%q: tensor<2x64x64xf16>, %k: tensor<2x64x64xf16>,
                     %v: tensor<2x64x64xf16>) -> tensor<2x64x64xf16> {
  %o = fa.attention %q, %k, %v
      : tensor<2x64x64xf16>, tensor<2x64x64xf16>, tensor<2x64x64xf16>
      -> tensor<2x64x64xf16>
  return %o : tensor<2x64x64xf16>
}
)mlir";

/// Builds fa-to-ptx with the options `set` assigns. A pipeline whose
/// options are refused holds the pass that reports why; that one is run on
/// the input to print the error. An accepted one is not run (it would need
/// the CUDA toolkit's libdevice).
static void check(MLIRContext &context, const char *name,
                  llvm::function_ref<void(fa::FAToPTXPipelineOptions &)> set) {
  llvm::outs() << "CASE " << name << ": ";
  fa::FAToPTXPipelineOptions options;
  set(options);
  PassManager pm(&context);
  fa::buildFAToPTXPipeline(pm, options);
  std::string pipeline;
  llvm::raw_string_ostream os(pipeline);
  pm.printAsTextualPipeline(os);
  if (pipeline.find("fa-reject-option") == std::string::npos) {
    llvm::outs() << "accepted\n";
    return;
  }
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kInput, &context);
  std::string error;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    error = diag.str();
    return success();
  });
  if (!module || succeeded(pm.run(*module)))
    llvm::outs() << "refused but the pipeline ran\n";
  else
    llvm::outs() << "refused: " << error << "\n";
}

int main() {
  DialectRegistry registry;
  fa::registerAllDialects(registry);
  fa::registerPipelineDependencies(registry);
  MLIRContext context(registry);

  // Defaults are not "given": an sm_80 chip takes the mma.sync kernels.
  check(context, "sm80_defaults", [](auto &o) { o.chip = "sm_80"; });
  check(context, "sm80_wgmma_false", [](auto &o) {
    o.chip = "sm_80";
    o.wgmma = false;
  });
  check(context, "sm90a_all_true", [](auto &o) {
    o.chip = "sm_90a";
    o.tensorCores = true;
    o.wgmma = true;
    o.tma = true;
    o.producerWarp = true;
    o.stages = 2;
  });
  // Options assigned where they cannot apply.
  check(context, "sm80_wgmma_true", [](auto &o) {
    o.chip = "sm_80";
    o.wgmma = true;
  });
  check(context, "sm75_tensor_cores_true", [](auto &o) {
    o.chip = "sm_75";
    o.tensorCores = true;
  });
  check(context, "sm80_tma_true", [](auto &o) {
    o.chip = "sm_80";
    o.tma = true;
  });
  check(context, "sm80_stages", [](auto &o) {
    o.chip = "sm_80";
    o.stages = 3;
  });
  check(context, "sm90a_tma_false_producer_warp_true", [](auto &o) {
    o.chip = "sm_90a";
    o.tma = false;
    o.producerWarp = true;
  });
  check(context, "sm90a_pingpong_without_producer_warp", [](auto &o) {
    o.chip = "sm_90a";
    o.producerWarp = false;
    o.pingpong = true;
  });
  return 0;
}
