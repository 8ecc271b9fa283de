//===- Dialects.cpp - C API of the fa dialect ----------------------------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#include "fa-c/Dialects.h"

#include "fa/Dialect/FA/IR/FA.h"

#include "mlir/CAPI/Registration.h"

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(FA, fa, mlir::fa::FADialect)
