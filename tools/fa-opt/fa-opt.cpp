//===- fa-opt.cpp - the fa-opt driver -----------------------------------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// mlir-opt with the fa dialect, its passes and its pipelines registered on
// top of all of upstream MLIR. Unlike a stock mlir-opt, every command-line
// problem (unknown option, unreadable input) is reported as an `error:` line
// with a non-zero exit.
//
//===----------------------------------------------------------------------===//

#include "fa/InitAll.h"

#include "mlir/Debug/Counter.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

/// Prints `message` line by line as `fa-opt: error: ...`.
static void printErrors(llvm::StringRef message) {
  llvm::SmallVector<llvm::StringRef> lines;
  message.trim().split(lines, '\n');
  for (llvm::StringRef line : lines) {
    // llvm::cl prefixes its messages with the program name.
    line.consume_front("fa-opt: ");
    llvm::errs() << "fa-opt: error: " << line.trim() << "\n";
  }
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  registerAllPasses();
  fa::registerAllPasses();

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllGPUToLLVMIRTranslations(registry);
  fa::registerAllDialects(registry);

  // The options of mlir-opt, registered as registerAndParseCLIOptions does,
  // but parsed here so that a parse error can be reported as an error.
  static llvm::cl::opt<std::string> inputFilename(
      llvm::cl::Positional, llvm::cl::desc("<input file>"),
      llvm::cl::init("-"));
  static llvm::cl::opt<std::string> outputFilename(
      "o", llvm::cl::desc("Output filename"),
      llvm::cl::value_desc("filename"), llvm::cl::init("-"));
  MlirOptMainConfig::registerCLOptions(registry);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  tracing::DebugCounter::registerCLOptions();

  std::string overview =
      "fa-opt: the FlashAttention compiler driver (mlir-opt with the fa "
      "dialect, its passes and pipelines)\n";
  std::string parseErrors;
  llvm::raw_string_ostream parseErrorStream(parseErrors);
  if (!llvm::cl::ParseCommandLineOptions(argc, argv, overview,
                                         &parseErrorStream)) {
    printErrors(parseErrors);
    return 1;
  }

  if (inputFilename != "-" && !llvm::sys::fs::exists(inputFilename)) {
    llvm::errs() << "fa-opt: error: cannot open input file '"
                 << inputFilename << "': no such file\n";
    return 1;
  }
  if (inputFilename != "-" && llvm::sys::fs::is_directory(inputFilename)) {
    llvm::errs() << "fa-opt: error: input '" << inputFilename
                 << "' is a directory, not an MLIR file\n";
    return 1;
  }

  if (outputFilename != "-") {
    llvm::StringRef parent = llvm::sys::path::parent_path(outputFilename);
    if (!parent.empty() && !llvm::sys::fs::is_directory(parent)) {
      llvm::errs() << "fa-opt: error: cannot open output file '"
                   << outputFilename << "': no directory '" << parent
                   << "'\n";
      return 1;
    }
  }

  return asMainReturnCode(
      MlirOptMain(argc, argv, inputFilename, outputFilename, registry));
}
