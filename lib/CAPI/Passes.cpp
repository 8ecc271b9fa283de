//===- Passes.cpp - C API of the fa passes and pipelines -----------------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#include "fa-c/Passes.h"

#include "fa/InitAll.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

using namespace mlir;

void faRegisterAllPasses(void) { fa::registerAllPasses(); }

void faRegisterPipelineDependencies(MlirDialectRegistry registry) {
  fa::registerPipelineDependencies(*unwrap(registry));
}

/// Hands `message` to the caller's callback, if there is one.
static void reportError(MlirStringCallback callback, void *userData,
                        llvm::StringRef message) {
  if (callback && !message.empty())
    callback(wrap(message), userData);
}

/// Prints `diag` as `<location>: <severity>: <message>` on one line.
static void printDiagnostic(llvm::raw_ostream &os, Diagnostic &diag) {
  // file:line:col as fa-opt prints it, where the location has one.
  Location loc = diag.getLocation();
  if (auto fileLoc = loc->findInstanceOf<FileLineColLoc>())
    os << fileLoc.getFilename().getValue() << ":" << fileLoc.getLine() << ":"
       << fileLoc.getColumn() << ": ";
  else
    os << loc << ": ";
  switch (diag.getSeverity()) {
  case DiagnosticSeverity::Error:
    os << "error: ";
    break;
  case DiagnosticSeverity::Warning:
    os << "warning: ";
    break;
  case DiagnosticSeverity::Note:
    os << "note: ";
    break;
  case DiagnosticSeverity::Remark:
    os << "remark: ";
    break;
  }
  os << diag << "\n";
}

MlirLogicalResult faRunPipeline(MlirModule module, MlirStringRef pipeline,
                                MlirStringCallback errorCallback,
                                void *userData) {
  fa::registerAllPasses();
  ModuleOp moduleOp = unwrap(module);
  MLIRContext *context = moduleOp.getContext();

  // Accept both "fa-to-cpu{...}" and "builtin.module(fa-to-cpu{...})".
  llvm::StringRef text = unwrap(pipeline).trim();
  llvm::StringRef anchor = ModuleOp::getOperationName();
  llvm::StringRef body = text;
  if (body.consume_front(anchor) && body.ltrim().starts_with("(") &&
      body.ends_with(")"))
    text = body.ltrim().drop_front().drop_back();

  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  PassManager pm(context, anchor);
  if (failed(parsePassPipeline(text, pm, errorStream))) {
    reportError(errorCallback, userData, errors);
    return mlirLogicalResultFailure();
  }

  // Collect what the passes emit instead of printing it to stderr.
  LogicalResult result = success();
  {
    ScopedDiagnosticHandler handler(context, [&](Diagnostic &diag) {
      printDiagnostic(errorStream, diag);
      for (Diagnostic &note : diag.getNotes())
        printDiagnostic(errorStream, note);
      return success();
    });
    result = pm.run(moduleOp);
  }
  if (failed(result)) {
    if (errors.empty())
      errors = "pipeline '" + text.str() + "' failed\n";
    reportError(errorCallback, userData, errors);
    return mlirLogicalResultFailure();
  }
  return mlirLogicalResultSuccess();
}
