//===- Passes.h - fa dialect transformation passes --------------*- C++ -*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FA_TRANSFORMS_PASSES_H
#define FA_DIALECT_FA_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace fa {

#define GEN_PASS_DECL
#include "fa/Dialect/FA/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "fa/Dialect/FA/Transforms/Passes.h.inc"

} // namespace fa
} // namespace mlir

#endif // FA_DIALECT_FA_TRANSFORMS_PASSES_H
