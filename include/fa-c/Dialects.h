/*===- Dialects.h - C API of the fa dialect -----------------------*- C -*-===*\
|*                                                                            *|
|* Part of the fa-opt project.                                                *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef FA_C_DIALECTS_H
#define FA_C_DIALECTS_H

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Declares `MlirDialectHandle mlirGetDialectHandle__fa__(void)`: insert the
/// fa dialect into a registry with mlirDialectHandleInsertDialect, or load it
/// into a context with mlirDialectHandleLoadDialect.
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(FA, fa);

#ifdef __cplusplus
}
#endif

#endif /* FA_C_DIALECTS_H */
