// RUN: not fa-opt %s --fa-tile-attention="block-m=0" 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: fa-opt %s --fa-tile-attention --split-input-file --verify-diagnostics

// ZERO: error: fa-tile-attention: expected positive block-m and block-n, got 0 and 64

func.func @dynamic_mask_batch(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %m: tensor<?x8x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{expected static mask batch dims (1 to broadcast, or the size of q's) for tiling, got a dynamic dim 0}}
  %o = fa.attention %q, %k, %v mask(%m : tensor<?x8x8xf32>) : tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32> -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}
