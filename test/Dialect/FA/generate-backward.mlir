// RUN: fa-opt %s --fa-generate-backward --split-input-file --verify-diagnostics | FileCheck %s
// RUN: fa-opt %s --fa-generate-backward="grad-f32=true" --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=F32
// Running the pass twice changes nothing the second time.
// RUN: fa-opt %s --fa-generate-backward --split-input-file 2>/dev/null > %t.once.mlir
// RUN: fa-opt %s --fa-generate-backward --fa-generate-backward --split-input-file 2>/dev/null | diff %t.once.mlir -

// The forward function is unchanged; a gradient function recomputes the
// forward with lse and runs the backward with the same attributes.

// CHECK-LABEL: func.func @attn(
// CHECK: %[[O:[a-zA-Z0-9_]+]] = fa.attention %{{.+}} scale(5.000000e-01) causal(bottom_right) : {{.+}} -> tensor<2x16x4xbf16>
// CHECK-NEXT: return %[[O]]
// CHECK-LABEL: func.func @attn_attention_0_grad(
// CHECK-SAME: %[[Q:[a-zA-Z0-9_]+]]: tensor<2x16x8xbf16>, %[[K:[a-zA-Z0-9_]+]]: tensor<2x32x8xbf16>, %[[V:[a-zA-Z0-9_]+]]: tensor<2x32x4xbf16>, %[[DO:[a-zA-Z0-9_]+]]: tensor<2x16x4xbf16>)
// CHECK-SAME: -> (tensor<2x16x8xbf16>, tensor<2x32x8xbf16>, tensor<2x32x4xbf16>)
// CHECK: %[[FO:[a-zA-Z0-9_]+]], %[[LSE:[a-zA-Z0-9_]+]] = fa.attention %[[Q]], %[[K]], %[[V]] scale(5.000000e-01) causal(bottom_right) : {{.+}} -> tensor<2x16x4xbf16>, tensor<2x16xf32>
// CHECK: %[[DQ:[a-zA-Z0-9_]+]], %[[DK:[a-zA-Z0-9_]+]], %[[DV:[a-zA-Z0-9_]+]] = fa.attention_backward %[[Q]], %[[K]], %[[V]], %[[FO]], %[[DO]], %[[LSE]] scale(5.000000e-01) causal(bottom_right)
// CHECK: return %[[DQ]], %[[DK]], %[[DV]]
// F32-LABEL: func.func @attn_attention_0_grad(
// F32-SAME: -> (tensor<2x16x8xf32>, tensor<2x32x8xf32>, tensor<2x32x4xf32>)
func.func @attn(%q: tensor<2x16x8xbf16>, %k: tensor<2x32x8xbf16>, %v: tensor<2x32x4xbf16>) -> tensor<2x16x4xbf16> {
  %o = fa.attention %q, %k, %v scale(0.5) causal(bottom_right) : tensor<2x16x8xbf16>, tensor<2x32x8xbf16>, tensor<2x32x4xbf16> -> tensor<2x16x4xbf16>
  return %o : tensor<2x16x4xbf16>
}

// -----

// Two attentions in one function give two gradient functions, numbered in
// order; an op that already returns lse keeps its default scale.

// CHECK-LABEL: func.func @two(
// CHECK-LABEL: func.func @two_attention_1_grad(
// CHECK: fa.attention %{{.+}} : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>, tensor<?xf32>
// CHECK: fa.attention_backward
// CHECK-LABEL: func.func @two_attention_0_grad(
// CHECK: fa.attention %{{.+}} causal(top_left)
// CHECK: fa.attention_backward {{.+}} causal(top_left)
func.func @two(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %a = fa.attention %q, %k, %v causal(top_left) : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  %b, %lse = fa.attention %q, %k, %v : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>, tensor<?xf32>
  return %a, %b : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// A masked attention is skipped with a warning: the backward op takes no
// mask.

// CHECK-LABEL: func.func @masked(
// CHECK-NOT: func.func @masked_attention_0_grad
func.func @masked(%q: tensor<8x4xf32>, %k: tensor<8x4xf32>, %v: tensor<8x4xf32>, %m: tensor<8x8xf32>) -> tensor<8x4xf32> {
  // expected-warning @+1 {{fa-generate-backward: skipped: fa.attention_backward takes no mask operand}}
  %o = fa.attention %q, %k, %v mask(%m : tensor<8x8xf32>) : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

// A forward declaration of the gradient function is defined in place.

// CHECK-LABEL: func.func @declared(
// CHECK: func.func private @declared_attention_0_grad(
// CHECK: fa.attention_backward
// CHECK: return
func.func @declared(%q: tensor<8x4xf32>, %k: tensor<8x4xf32>, %v: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %o = fa.attention %q, %k, %v : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}
func.func private @declared_attention_0_grad(tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>)

// -----

// A function in a nested module gets its gradient function in that module.
// CHECK-LABEL: module @inner
// CHECK: func.func @nested(
// CHECK: func.func @nested_attention_0_grad(%{{.+}}: tensor<2x16x32xbf16>, %{{.+}}: tensor<2x16x32xbf16>, %{{.+}}: tensor<2x16x32xbf16>, %{{.+}}: tensor<2x16x32xbf16>) -> (tensor<2x16x32xbf16>, tensor<2x16x32xbf16>, tensor<2x16x32xbf16>) attributes {fa.generated_backward}
// CHECK: fa.attention_backward
// F32-LABEL: module @inner
// F32: func.func @nested_attention_0_grad({{.*}}) -> (tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>)
// CHECK-NOT: func.func
// CHECK: }
// CHECK-NEXT: }
module {
  module @inner {
    func.func @nested(%q: tensor<2x16x32xbf16>, %k: tensor<2x16x32xbf16>, %v: tensor<2x16x32xbf16>) -> tensor<2x16x32xbf16> {
      %o = fa.attention %q, %k, %v : tensor<2x16x32xbf16>, tensor<2x16x32xbf16>, tensor<2x16x32xbf16> -> tensor<2x16x32xbf16>
      return %o : tensor<2x16x32xbf16>
    }
  }
}
