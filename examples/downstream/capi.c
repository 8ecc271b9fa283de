/*===- capi.c - a C client of the installed fa C API --------------*- C -*-===*\
|*                                                                            *|
|* Part of the fa-opt project.                                                *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

/* Lowers fa.attention with faRunPipeline("fa-to-cpu") through libFACAPI.so
 * and checks that the printed result holds no fa.attention. */

#include "fa-c/Dialects.h"
#include "fa-c/Passes.h"

#include "mlir-c/IR.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *kInput =
    "func.func @attention(%q: tensor<1x64x16xf32>, %k: tensor<1x64x16xf32>,\n"
    "                     %v: tensor<1x64x16xf32>) -> tensor<1x64x16xf32> {\n"
    "  %o = fa.attention %q, %k, %v causal(top_left)\n"
    "      : tensor<1x64x16xf32>, tensor<1x64x16xf32>, tensor<1x64x16xf32>\n"
    "      -> tensor<1x64x16xf32>\n"
    "  return %o : tensor<1x64x16xf32>\n"
    "}\n";

/* Accumulates printed IR into a growing NUL-terminated buffer. */
struct Buffer {
  char *data;
  size_t size;
};

static void append(MlirStringRef text, void *userData) {
  struct Buffer *buffer = (struct Buffer *)userData;
  char *grown = realloc(buffer->data, buffer->size + text.length + 1);
  if (!grown)
    abort();
  memcpy(grown + buffer->size, text.data, text.length);
  buffer->data = grown;
  buffer->size += text.length;
  buffer->data[buffer->size] = '\0';
}

static void printError(MlirStringRef text, void *userData) {
  (void)userData;
  fprintf(stderr, "%.*s", (int)text.length, text.data);
}

int main(void) {
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirDialectHandleInsertDialect(mlirGetDialectHandle__fa__(), registry);
  faRegisterPipelineDependencies(registry);
  MlirContext context = mlirContextCreateWithRegistry(registry, false);
  mlirDialectRegistryDestroy(registry);

  MlirModule module =
      mlirModuleCreateParse(context, mlirStringRefCreateFromCString(kInput));
  if (mlirModuleIsNull(module)) {
    fprintf(stderr, "fa-downstream-c: error: could not parse the input\n");
    return 1;
  }
  if (mlirLogicalResultIsFailure(faRunPipeline(
          module, mlirStringRefCreateFromCString("fa-to-cpu{block-m=16}"),
          printError, NULL))) {
    fprintf(stderr, "fa-downstream-c: error: fa-to-cpu failed\n");
    return 1;
  }

  struct Buffer printed = {NULL, 0};
  mlirOperationPrint(mlirModuleGetOperation(module), append, &printed);
  int ok = printed.data && strstr(printed.data, "llvm.func @attention") &&
           !strstr(printed.data, "fa.attention");
  free(printed.data);
  mlirModuleDestroy(module);
  mlirContextDestroy(context);
  if (!ok) {
    fprintf(stderr, "fa-downstream-c: error: expected llvm.func @attention "
                    "and no fa.attention in the result\n");
    return 1;
  }
  printf("fa-downstream-c: OK: faRunPipeline lowered fa.attention through "
         "the installed libFACAPI.so\n");
  return 0;
}
