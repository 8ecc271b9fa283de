// RUN: fa-opt %s --fa-tile-attention --canonicalize --cse | FileCheck %s
// RUN: fa-opt %s --fa-to-cpu | FileCheck %s --check-prefix=LOWERED

// At Tq = Tk = 4096 no value of the tiled (or lowered) IR holds the Tq x Tk
// scores or probabilities: score tiles are min(block_m, rows left) x
// min(block_n, keys left), dynamically sized.

// CHECK-LABEL: func.func @no_quadratic_4096
// CHECK-NOT: 4096x4096
// CHECK: linalg.generic {{.+}} outs(%{{.+}} : tensor<?x?xf32>)
// CHECK-NOT: 4096x4096
// CHECK: return
// LOWERED-LABEL: llvm.func @no_quadratic_4096
// LOWERED-NOT: 16777216
// LOWERED-NOT: 4096x4096
// LOWERED: llvm.return
func.func @no_quadratic_4096(%q: tensor<2x4096x64xf16>, %k: tensor<2x4096x64xf16>, %v: tensor<2x4096x64xf16>) -> (tensor<2x4096x64xf16>, tensor<2x4096xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(top_left) : tensor<2x4096x64xf16>, tensor<2x4096x64xf16>, tensor<2x4096x64xf16> -> tensor<2x4096x64xf16>, tensor<2x4096xf32>
  return %o, %lse : tensor<2x4096x64xf16>, tensor<2x4096xf32>
}
