//===- Passes.h - fa conversion passes --------------------------*- C++ -*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#ifndef FA_CONVERSION_PASSES_H
#define FA_CONVERSION_PASSES_H

#include "fa/Conversion/FAToGPU/FAToGPU.h"

namespace mlir {
namespace fa {

#define GEN_PASS_REGISTRATION
#include "fa/Conversion/Passes.h.inc"

} // namespace fa
} // namespace mlir

#endif // FA_CONVERSION_PASSES_H
