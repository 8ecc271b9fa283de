// RUN: fa-opt %s | fa-opt | FileCheck %s
// RUN: fa-opt %s --mlir-print-op-generic | fa-opt | FileCheck %s
// RUN: fa-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @backward_default
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<2x8x128x64xf16>, %[[K:[a-zA-Z0-9_]+]]: tensor<2x8x256x64xf16>, %[[V:[a-zA-Z0-9_]+]]: tensor<2x8x256x32xf16>, %[[O:[a-zA-Z0-9_]+]]: tensor<2x8x128x32xf16>, %[[DO:[a-zA-Z0-9_]+]]: tensor<2x8x128x32xf16>, %[[LSE:[a-zA-Z0-9_]+]]: tensor<2x8x128xf32>)
// CHECK: %[[DQ:[a-zA-Z0-9_]+]], %[[DK:[a-zA-Z0-9_]+]], %[[DV:[a-zA-Z0-9_]+]] = fa.attention_backward %[[Q]], %[[K]], %[[V]], %[[O]], %[[DO]], %[[LSE]] : tensor<2x8x128x64xf16>, tensor<2x8x256x64xf16>, tensor<2x8x256x32xf16>, tensor<2x8x128x32xf16>, tensor<2x8x128x32xf16>, tensor<2x8x128xf32> -> tensor<2x8x128x64xf16>, tensor<2x8x256x64xf16>, tensor<2x8x256x32xf16>
// CHECK: return %[[DQ]], %[[DK]], %[[DV]]
// GENERIC-LABEL: sym_name = "backward_default"
// GENERIC: "fa.attention_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{causal = 0 : i32}> : (tensor<2x8x128x64xf16>, tensor<2x8x256x64xf16>, tensor<2x8x256x32xf16>, tensor<2x8x128x32xf16>, tensor<2x8x128x32xf16>, tensor<2x8x128xf32>) -> (tensor<2x8x128x64xf16>, tensor<2x8x256x64xf16>, tensor<2x8x256x32xf16>)
func.func @backward_default(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x256x64xf16>, %v: tensor<2x8x256x32xf16>, %o: tensor<2x8x128x32xf16>, %do: tensor<2x8x128x32xf16>, %lse: tensor<2x8x128xf32>) -> (tensor<2x8x128x64xf16>, tensor<2x8x256x64xf16>, tensor<2x8x256x32xf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x128x64xf16>, tensor<2x8x256x64xf16>, tensor<2x8x256x32xf16>, tensor<2x8x128x32xf16>, tensor<2x8x128x32xf16>, tensor<2x8x128xf32> -> tensor<2x8x128x64xf16>, tensor<2x8x256x64xf16>, tensor<2x8x256x32xf16>
  return %dq, %dk, %dv : tensor<2x8x128x64xf16>, tensor<2x8x256x64xf16>, tensor<2x8x256x32xf16>
}

// f32 gradients and an f32 output gradient for bf16 inputs; explicit scale
// and bottom-right causal alignment.

// CHECK-LABEL: func.func @backward_scale_causal_f32_grads
// CHECK: fa.attention_backward %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} scale(1.250000e-01) causal(bottom_right) : tensor<4x100x64xbf16>, tensor<4x300x64xbf16>, tensor<4x300x48xbf16>, tensor<4x100x48xbf16>, tensor<4x100x48xf32>, tensor<4x100xf32> -> tensor<4x100x64xf32>, tensor<4x300x64xf32>, tensor<4x300x48xf32>
// GENERIC-LABEL: sym_name = "backward_scale_causal_f32_grads"
// GENERIC: "fa.attention_backward"
// GENERIC-SAME: causal = 2 : i32
// GENERIC-SAME: scale = 1.250000e-01 : f64
func.func @backward_scale_causal_f32_grads(%q: tensor<4x100x64xbf16>, %k: tensor<4x300x64xbf16>, %v: tensor<4x300x48xbf16>, %o: tensor<4x100x48xbf16>, %do: tensor<4x100x48xf32>, %lse: tensor<4x100xf32>) -> (tensor<4x100x64xf32>, tensor<4x300x64xf32>, tensor<4x300x48xf32>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse scale(0.125) causal(bottom_right) : tensor<4x100x64xbf16>, tensor<4x300x64xbf16>, tensor<4x300x48xbf16>, tensor<4x100x48xbf16>, tensor<4x100x48xf32>, tensor<4x100xf32> -> tensor<4x100x64xf32>, tensor<4x300x64xf32>, tensor<4x300x48xf32>
  return %dq, %dk, %dv : tensor<4x100x64xf32>, tensor<4x300x64xf32>, tensor<4x300x48xf32>
}

// CHECK-LABEL: func.func @backward_top_left_dynamic
// CHECK: fa.attention_backward %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} causal(top_left) : tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?xf32> -> tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>
func.func @backward_top_left_dynamic(%q: tensor<?x?x?x128xf32>, %k: tensor<?x?x?x128xf32>, %v: tensor<?x?x?x128xf32>, %o: tensor<?x?x?x128xf32>, %do: tensor<?x?x?x128xf32>, %lse: tensor<?x?x?xf32>) -> (tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(top_left) : tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?xf32> -> tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>
  return %dq, %dk, %dv : tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>
}

// The forward with its lse result supplies every operand but do.

// CHECK-LABEL: func.func @backward_from_forward
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<16x8xf32>, %[[K:[a-zA-Z0-9_]+]]: tensor<32x8xf32>, %[[V:[a-zA-Z0-9_]+]]: tensor<32x4xf32>, %[[DO:[a-zA-Z0-9_]+]]: tensor<16x4xf32>)
// CHECK: %[[O:[a-zA-Z0-9_]+]], %[[LSE:[a-zA-Z0-9_]+]] = fa.attention %[[Q]], %[[K]], %[[V]] causal(top_left)
// CHECK: fa.attention_backward %[[Q]], %[[K]], %[[V]], %[[O]], %[[DO]], %[[LSE]] causal(top_left) : tensor<16x8xf32>, tensor<32x8xf32>, tensor<32x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<16xf32> -> tensor<16x8xf32>, tensor<32x8xf32>, tensor<32x4xf32>
func.func @backward_from_forward(%q: tensor<16x8xf32>, %k: tensor<32x8xf32>, %v: tensor<32x4xf32>, %do: tensor<16x4xf32>) -> (tensor<16x8xf32>, tensor<32x8xf32>, tensor<32x4xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(top_left) : tensor<16x8xf32>, tensor<32x8xf32>, tensor<32x4xf32> -> tensor<16x4xf32>, tensor<16xf32>
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(top_left) : tensor<16x8xf32>, tensor<32x8xf32>, tensor<32x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<16xf32> -> tensor<16x8xf32>, tensor<32x8xf32>, tensor<32x4xf32>
  return %dq, %dk, %dv : tensor<16x8xf32>, tensor<32x8xf32>, tensor<32x4xf32>
}
