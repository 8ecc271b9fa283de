//===- fa-opt.cpp - the fa-opt driver -----------------------------------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// mlir-opt with the fa dialect, its passes and its pipelines registered on
// top of all of upstream MLIR.
//
//===----------------------------------------------------------------------===//

#include "fa/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::fa::registerAllPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllGPUToLLVMIRTranslations(registry);
  mlir::fa::registerAllDialects(registry);

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "fa-opt: FlashAttention compiler driver\n", registry));
}
