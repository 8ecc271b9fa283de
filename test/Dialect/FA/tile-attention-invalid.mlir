// RUN: not fa-opt %s --fa-tile-attention="block-m=0" 2>&1 | FileCheck %s --check-prefix=ZERO

// ZERO: error: fa-tile-attention: expected positive block-m and block-n, got 0 and 64

func.func @block_m_zero(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %o = fa.attention %q, %k, %v : tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32> -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}
