//===- Passes.td - fa conversion passes --------------------*- tablegen -*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#ifndef FA_CONVERSION_PASSES_TD
#define FA_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

#endif // FA_CONVERSION_PASSES_TD
