/*===- Passes.h - C API of the fa passes and pipelines ------------*- C -*-===*\
|*                                                                            *|
|* Part of the fa-opt project.                                                *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef FA_C_PASSES_H
#define FA_C_PASSES_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Registers every fa pass and the fa-to-cpu / fa-to-ptx pipelines with the
/// global pass registry, after which textual pipelines (mlirParsePassPipeline,
/// mlirOpPassManagerAddPipeline) may name them. Idempotent.
MLIR_CAPI_EXPORTED void faRegisterAllPasses(void);

/// Adds to `registry` the upstream dialects, extensions and LLVM IR
/// translations the fa pipelines need (func/arith/tensor/linalg/scf and
/// their bufferization models, gpu, nvvm, ...). The fa dialect itself comes
/// from mlirGetDialectHandle__fa__().
MLIR_CAPI_EXPORTED void
faRegisterPipelineDependencies(MlirDialectRegistry registry);

/// Runs `pipeline` on `module` in place. `pipeline` is a textual pass
/// pipeline nested under builtin.module, such as "fa-to-cpu{block-m=32}" or
/// "fa-tile-attention{block-m=64 block-n=32},canonicalize"; the anchored form
/// "builtin.module(...)" is accepted too. Registers the fa passes first. On
/// failure returns a failed result and, when `errorCallback` is not null,
/// calls it (possibly in several pieces) with the pipeline parse error or
/// the diagnostics emitted while running, one per line. The context must
/// hold the dialects the pipeline creates or converts: see
/// faRegisterPipelineDependencies.
MLIR_CAPI_EXPORTED MlirLogicalResult faRunPipeline(
    MlirModule module, MlirStringRef pipeline,
    MlirStringCallback errorCallback, void *userData);

#ifdef __cplusplus
}
#endif

#endif /* FA_C_PASSES_H */
