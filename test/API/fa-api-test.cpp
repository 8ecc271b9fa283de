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

#include "llvm/Support/raw_ostream.h"

#include <optional>
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

/// One case: the options a downstream compiler assigns in C++ (unset ones
/// keep their defaults).
struct Case {
  const char *name;
  const char *chip;
  std::optional<bool> tensorCores, wgmma, tma, producerWarp, pingpong;
  std::optional<int64_t> stages;
};

/// Builds fa-to-ptx with the case's options assigned. A pipeline whose
/// options are refused holds the pass that reports why; that one is run on
/// the input to print the error. An accepted one is not run (it would need
/// the CUDA toolkit's libdevice).
static void check(MLIRContext &context, const Case &c) {
  llvm::outs() << "CASE " << c.name << ": ";
  fa::FAToPTXPipelineOptions options;
  options.chip = c.chip;
  auto assign = [](auto &option, const auto &value) {
    if (value)
      option = *value;
  };
  assign(options.tensorCores, c.tensorCores);
  assign(options.wgmma, c.wgmma);
  assign(options.tma, c.tma);
  assign(options.producerWarp, c.producerWarp);
  assign(options.pingpong, c.pingpong);
  assign(options.stages, c.stages);
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

  const std::optional<bool> yes = true, no = false, unset;
  const Case cases[] = {
      // name, chip, tensor-cores, wgmma, tma, producer-warp, pingpong, stages
      // Defaults are not "given": an sm_80 chip takes the mma.sync kernels.
      {"sm80_defaults", "sm_80", unset, unset, unset, unset, unset, {}},
      {"sm80_wgmma_false", "sm_80", unset, no, unset, unset, unset, {}},
      {"sm90a_all_true", "sm_90a", yes, yes, yes, yes, unset, 2},
      // Options assigned where they cannot apply.
      {"sm80_wgmma_true", "sm_80", unset, yes, unset, unset, unset, {}},
      {"sm75_tensor_cores_true", "sm_75", yes, unset, unset, unset, unset, {}},
      {"sm80_tma_true", "sm_80", unset, unset, yes, unset, unset, {}},
      {"sm80_stages", "sm_80", unset, unset, unset, unset, unset, 3},
      {"sm90a_no_tma_producer", "sm_90a", unset, unset, no, yes, unset, {}},
      {"sm90a_pingpong_alone", "sm_90a", unset, unset, unset, no, yes, {}},
  };
  for (const Case &c : cases)
    check(context, c);
  return 0;
}
