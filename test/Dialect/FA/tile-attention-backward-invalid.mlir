// RUN: not fa-opt %s --fa-tile-attention-backward="block-n=0" 2>&1 | FileCheck %s

// CHECK: error: fa-tile-attention-backward: expected positive block-m and block-n, got 64 and 0

func.func @zero_block(%q: tensor<8x4xf32>, %k: tensor<8x4xf32>, %v: tensor<8x4xf32>, %o: tensor<8x4xf32>, %do: tensor<8x4xf32>, %lse: tensor<8xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8xf32> -> tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
  return %dq, %dk, %dv : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}
