/*===- fa-capi-test.c - exercise the fa C API ---------------------*- C -*-===*\
|*                                                                            *|
|* Part of the fa-opt project.                                                *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

/* A C client of libFACAPI.so: registers the fa dialect and the pipeline
 * dependencies in a fresh context, parses a module holding fa.attention,
 * lowers it with faRunPipeline("fa-to-cpu{...}") and prints the result;
 * also runs an fa pass through upstream's C pass manager, and checks that a
 * bad pipeline and a pass error are reported through the error callback.
 * fa-capi.test runs it under FileCheck. */

#include "fa-c/Dialects.h"
#include "fa-c/Passes.h"

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/Support.h"

#include <stdio.h>
#include <string.h>

static const char *kAttentionModule =
    "func.func @attention(%q: tensor<2x64x32xf32>, %k: tensor<2x48x32xf32>,\n"
    "                     %v: tensor<2x48x16xf32>) -> tensor<2x64x16xf32> {\n"
    "  %o = fa.attention %q, %k, %v\n"
    "      : tensor<2x64x32xf32>, tensor<2x48x32xf32>, tensor<2x48x16xf32>\n"
    "      -> tensor<2x64x16xf32>\n"
    "  return %o : tensor<2x64x16xf32>\n"
    "}\n";

static void printToFile(MlirStringRef text, void *userData) {
  fwrite(text.data, 1, text.length, (FILE *)userData);
}

/* Creates a context holding the fa dialect and what its pipelines need. */
static MlirContext createContext(void) {
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirDialectHandleInsertDialect(mlirGetDialectHandle__fa__(), registry);
  faRegisterPipelineDependencies(registry);
  MlirContext context = mlirContextCreateWithRegistry(registry, false);
  mlirDialectRegistryDestroy(registry);
  return context;
}

static MlirModule parse(MlirContext context) {
  return mlirModuleCreateParse(context,
                               mlirStringRefCreateFromCString(kAttentionModule));
}

static void printModule(MlirModule module) {
  mlirOperationPrint(mlirModuleGetOperation(module), printToFile, stdout);
  fprintf(stdout, "\n");
}

/* fa-to-cpu through faRunPipeline. */
static int testRunPipeline(void) {
  fprintf(stdout, "TEST: run_pipeline\n");
  MlirContext context = createContext();
  MlirModule module = parse(context);
  if (mlirModuleIsNull(module)) {
    fprintf(stderr, "error: could not parse the attention module\n");
    return 1;
  }
  MlirLogicalResult result = faRunPipeline(
      module, mlirStringRefCreateFromCString("fa-to-cpu{block-m=32 block-n=16}"),
      printToFile, stderr);
  if (mlirLogicalResultIsFailure(result)) {
    fprintf(stderr, "error: fa-to-cpu failed\n");
    return 1;
  }
  printModule(module);
  mlirModuleDestroy(module);
  mlirContextDestroy(context);
  return 0;
}

/* fa-tile-attention added to upstream's C pass manager by its textual name,
 * once faRegisterAllPasses has registered it. */
static int testUpstreamPassManager(void) {
  fprintf(stdout, "TEST: upstream_pass_manager\n");
  faRegisterAllPasses();
  MlirContext context = createContext();
  MlirModule module = parse(context);
  MlirPassManager pm = mlirPassManagerCreate(context);
  MlirOpPassManager opm = mlirPassManagerGetAsOpPassManager(pm);
  MlirLogicalResult added = mlirOpPassManagerAddPipeline(
      opm,
      mlirStringRefCreateFromCString("fa-tile-attention{block-m=16 block-n=16}"),
      printToFile, stderr);
  if (mlirLogicalResultIsFailure(added)) {
    fprintf(stderr, "error: could not add fa-tile-attention\n");
    return 1;
  }
  MlirLogicalResult ran =
      mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module));
  if (mlirLogicalResultIsFailure(ran)) {
    fprintf(stderr, "error: fa-tile-attention failed\n");
    return 1;
  }
  printModule(module);
  mlirPassManagerDestroy(pm);
  mlirModuleDestroy(module);
  mlirContextDestroy(context);
  return 0;
}

/* Runs `pipeline`, which must fail, printing what the callback reports. */
static int expectFailure(const char *test, const char *pipeline) {
  fprintf(stdout, "TEST: %s\n", test);
  MlirContext context = createContext();
  MlirModule module = parse(context);
  MlirLogicalResult result = faRunPipeline(
      module, mlirStringRefCreateFromCString(pipeline), printToFile, stdout);
  fprintf(stdout, "\nresult: %s\n",
          mlirLogicalResultIsFailure(result) ? "failure" : "success");
  mlirModuleDestroy(module);
  mlirContextDestroy(context);
  return mlirLogicalResultIsFailure(result) ? 0 : 1;
}

int main(void) {
  /* A pipeline that does not parse fails and says why; so does a pass, as
     file:line:col: error: ... */
  if (testRunPipeline() || testUpstreamPassManager() ||
      expectFailure("bad_pipeline", "fa-to-cpu{block-q=32}") ||
      expectFailure("pass_error", "fa-to-ptx{chip=sm_999}"))
    return 1;
  fprintf(stdout, "fa-capi-test: OK\n");
  return 0;
}
