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
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <string>
#include <unistd.h>

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

/// Runs `parse` with the process's stderr (fd 2) sent to a temporary file
/// and returns what was written there.
static std::string captureStderr(llvm::function_ref<void()> parse) {
  llvm::errs().flush();
  std::fflush(stderr);
  FILE *tmp = std::tmpfile();
  int saved = tmp ? dup(2) : -1;
  if (saved < 0 || dup2(fileno(tmp), 2) < 0) {
    // Cannot redirect: parse anyway, its messages go where they would.
    if (saved >= 0)
      close(saved);
    if (tmp)
      std::fclose(tmp);
    parse();
    return "";
  }
  parse();
  llvm::errs().flush();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::string text;
  std::rewind(tmp);
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), tmp))
    text.append(buffer, n);
  std::fclose(tmp);
  return text;
}

/// Parses the options of every pass or pipeline given as `--name=options`
/// once before MlirOptMain does: their parser (llvm::cl inside PassOptions)
/// writes a bad value or an unknown option straight to stderr with no
/// `error:` prefix. Prints such a complaint as `fa-opt: error:` lines and
/// returns false.
static bool checkPassOptions(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    if (arg == "--")
      break;
    // The value of `-o FILE` is not a pass.
    if (arg == "-o" || arg == "--o") {
      ++i;
      continue;
    }
    if (!arg.consume_front("-"))
      continue;
    arg.consume_front("-");
    if (!arg.contains('='))
      continue;
    auto [name, options] = arg.split('=');
    const PassRegistryEntry *entry = PassPipelineInfo::lookup(name);
    if (!entry)
      entry = PassInfo::lookup(name);
    if (!entry)
      continue;
    std::string handlerMessage;
    LogicalResult result = success();
    std::string captured = captureStderr([&] {
      OpPassManager pm;
      result = entry->addToPipeline(pm, options, [&](const llvm::Twine &msg) {
        handlerMessage = msg.str();
        return failure();
      });
    });
    if (succeeded(result))
      continue;
    std::string message = captured;
    if (!handlerMessage.empty())
      message += "\n" + handlerMessage;
    llvm::SmallVector<llvm::StringRef> lines;
    llvm::StringRef(message).trim().split(lines, '\n');
    for (llvm::StringRef line : lines) {
      line = line.trim();
      line.consume_front("fa-opt: ");
      line.consume_front("<Pass-Options-Parser>: ");
      if (!line.empty())
        llvm::errs() << "fa-opt: error: --" << name << ": " << line << "\n";
    }
    if (lines.empty() || message.empty())
      llvm::errs() << "fa-opt: error: --" << name
                   << ": cannot parse its options '" << options << "'\n";
    return false;
  }
  return true;
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

  if (!checkPassOptions(argc, argv))
    return 1;

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
