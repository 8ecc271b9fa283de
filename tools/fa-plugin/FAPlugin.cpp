//===- FAPlugin.cpp - the fa dialect and passes as an mlir-opt plugin ----===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// A shared object that any MLIR 22 tool built on libMLIR.so loads with
//
//   mlir-opt --load-dialect-plugin=FAPlugin.so --load-pass-plugin=FAPlugin.so \
//     --pass-pipeline="builtin.module(fa-tile-attention{block-m=32})"
//
// The dialect entry point adds the fa dialect to the tool's registry; the
// pass entry point registers every fa pass and the fa-to-cpu / fa-to-ptx
// pipelines. Pass plugins load after the command line is parsed, so the
// passes are reached through --pass-pipeline, not as --flags.
//
//===----------------------------------------------------------------------===//

#include "fa/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

/// Called by the host tool when the dialect plugin loads: adds the fa dialect
/// to the registry the tool parses its input with. A host that links fa
/// itself (fa-opt, a tool on FA::Compiler) has it already, with type ids of
/// its own copy: registering the plugin's copy too would abort the host
/// (DialectRegistry refuses two dialects for one namespace), so the host's
/// fa is kept and the plugin adds nothing.
static void registerFADialectPlugin(mlir::DialectRegistry *registry) {
  if (registry->getDialectAllocator("fa"))
    return;
  mlir::fa::registerAllDialects(*registry);
}

/// Called by the host tool when the pass plugin loads: registers the fa
/// passes and pipelines with the global pass registry, unless the host
/// registered its own (as above: a second registration of a pass name with
/// another allocator aborts the host).
static void registerFAPassPlugin() {
  if (mlir::PassInfo::lookup("fa-tile-attention"))
    return;
  mlir::fa::registerAllPasses();
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "FA", LLVM_VERSION_STRING,
          registerFADialectPlugin};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "FAPasses", LLVM_VERSION_STRING,
          registerFAPassPlugin};
}
