// RUN: fa-opt %s | fa-opt | FileCheck %s
// RUN: fa-opt %s --mlir-print-op-generic | fa-opt | FileCheck %s
// RUN: fa-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @attention_default
// CHECK-SAME: (%[[Q:.+]]: tensor<2x8x128x64xf16>, %[[K:.+]]: tensor<2x8x256x64xf16>, %[[V:.+]]: tensor<2x8x256x32xf16>)
// CHECK: fa.attention %[[Q]], %[[K]], %[[V]] : tensor<2x8x128x64xf16>, tensor<2x8x256x64xf16>, tensor<2x8x256x32xf16> -> tensor<2x8x128x32xf16>
// GENERIC-LABEL: sym_name = "attention_default"
// GENERIC: "fa.attention"(%{{.*}}, %{{.*}}, %{{.*}}) <{causal = 0 : i32}> : (tensor<2x8x128x64xf16>, tensor<2x8x256x64xf16>, tensor<2x8x256x32xf16>) -> tensor<2x8x128x32xf16>
func.func @attention_default(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x256x64xf16>, %v: tensor<2x8x256x32xf16>) -> tensor<2x8x128x32xf16> {
  %o = fa.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x256x64xf16>, tensor<2x8x256x32xf16> -> tensor<2x8x128x32xf16>
  return %o : tensor<2x8x128x32xf16>
}

// CHECK-LABEL: func.func @attention_lse_scale_causal
// CHECK: %{{.+}}, %{{.+}} = fa.attention %{{.+}}, %{{.+}}, %{{.+}} scale(1.250000e-01) causal(bottom_right) : tensor<4x100x64xbf16>, tensor<4x300x64xbf16>, tensor<4x300x64xbf16> -> tensor<4x100x64xf32>, tensor<4x100xf32>
// GENERIC-LABEL: sym_name = "attention_lse_scale_causal"
// GENERIC: "fa.attention"
// GENERIC-SAME: causal = 2 : i32
// GENERIC-SAME: scale = 1.250000e-01 : f64
func.func @attention_lse_scale_causal(%q: tensor<4x100x64xbf16>, %k: tensor<4x300x64xbf16>, %v: tensor<4x300x64xbf16>) -> (tensor<4x100x64xf32>, tensor<4x100xf32>) {
  %o, %lse = fa.attention %q, %k, %v scale(0.125) causal(bottom_right) : tensor<4x100x64xbf16>, tensor<4x300x64xbf16>, tensor<4x300x64xbf16> -> tensor<4x100x64xf32>, tensor<4x100xf32>
  return %o, %lse : tensor<4x100x64xf32>, tensor<4x100xf32>
}

// CHECK-LABEL: func.func @attention_top_left_dynamic
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} causal(top_left) : tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32> -> tensor<?x?x?x128xf32>
func.func @attention_top_left_dynamic(%q: tensor<?x?x?x128xf32>, %k: tensor<?x?x?x128xf32>, %v: tensor<?x?x?x128xf32>) -> tensor<?x?x?x128xf32> {
  %o = fa.attention %q, %k, %v causal(top_left) : tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32> -> tensor<?x?x?x128xf32>
  return %o : tensor<?x?x?x128xf32>
}

// CHECK-LABEL: func.func @attention_rank2_float_mask
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}} : tensor<16x32xf32>) : tensor<16x8xf32>, tensor<32x8xf32>, tensor<32x8xf32> -> tensor<16x8xf32>
func.func @attention_rank2_float_mask(%q: tensor<16x8xf32>, %k: tensor<32x8xf32>, %v: tensor<32x8xf32>, %m: tensor<16x32xf32>) -> tensor<16x8xf32> {
  %o = fa.attention %q, %k, %v mask(%m : tensor<16x32xf32>) : tensor<16x8xf32>, tensor<32x8xf32>, tensor<32x8xf32> -> tensor<16x8xf32>
  return %o : tensor<16x8xf32>
}

// CHECK-LABEL: func.func @attention_broadcast_bool_mask
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}} : tensor<1x4x16x32xi1>) : tensor<2x4x16x8xbf16>
func.func @attention_broadcast_bool_mask(%q: tensor<2x4x16x8xbf16>, %k: tensor<2x4x32x8xbf16>, %v: tensor<2x4x32x8xbf16>, %m: tensor<1x4x16x32xi1>) -> tensor<2x4x16x8xbf16> {
  %o = fa.attention %q, %k, %v mask(%m : tensor<1x4x16x32xi1>) : tensor<2x4x16x8xbf16>, tensor<2x4x32x8xbf16>, tensor<2x4x32x8xbf16> -> tensor<2x4x16x8xbf16>
  return %o : tensor<2x4x16x8xbf16>
}
