// RUN: fa-opt %s --fa-tile-attention-backward --canonicalize --cse | FileCheck %s
// RUN: fa-opt %s --fa-to-cpu | FileCheck %s --check-prefix=LOWERED

// At Tq = Tk = 4096 no value of the tiled (or lowered) backward holds the
// Tq x Tk scores, probabilities or their gradients: those tiles are
// min(block_m, rows left) x min(block_n, keys left), dynamically sized; dq
// is accumulated in one f32 [2, 4096, 64] tensor (linear in Tq).

// CHECK-LABEL: func.func @backward_no_quadratic_4096
// CHECK-NOT: 4096x4096
// CHECK: tensor<2x4096x64xf32>
// CHECK-NOT: 4096x4096
// CHECK: linalg.generic {{.+}} outs(%{{.+}} : tensor<?x?xf32>)
// CHECK-NOT: 4096x4096
// CHECK: return
// LOWERED-LABEL: llvm.func @backward_no_quadratic_4096
// LOWERED-NOT: 16777216
// LOWERED-NOT: 4096x4096
// LOWERED-NOT: fa.attention_backward
// LOWERED: llvm.return
func.func @backward_no_quadratic_4096(%q: tensor<2x4096x64xf16>, %k: tensor<2x4096x64xf16>, %v: tensor<2x4096x64xf16>, %o: tensor<2x4096x64xf16>, %do: tensor<2x4096x64xf16>, %lse: tensor<2x4096xf32>) -> (tensor<2x4096x64xf16>, tensor<2x4096x64xf16>, tensor<2x4096x64xf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(top_left) : tensor<2x4096x64xf16>, tensor<2x4096x64xf16>, tensor<2x4096x64xf16>, tensor<2x4096x64xf16>, tensor<2x4096x64xf16>, tensor<2x4096xf32> -> tensor<2x4096x64xf16>, tensor<2x4096x64xf16>, tensor<2x4096x64xf16>
  return %dq, %dk, %dv : tensor<2x4096x64xf16>, tensor<2x4096x64xf16>, tensor<2x4096x64xf16>
}
