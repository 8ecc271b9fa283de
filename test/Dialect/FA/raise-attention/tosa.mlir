// RUN: fa-opt %s --fa-raise-attention --split-input-file | FileCheck %s

// TOSA: tosa.matmul on [B*H, T, D] between tosa.reshape, K transposed by
// tosa.transpose, the scores reshaped to [B, H, T, T] for the scale
// (tosa.mul by a constant), a padding mask [B, 1, 1, Tk] and the softmax
// (reduce_max, sub, exp, reduce_sum, reciprocal, mul). The batch dim B*H
// that the reshape splits is split in fa.attention too.

// CHECK-LABEL: func.func @tosa_padding_mask
// CHECK-SAME: (%[[Q:.+]]: tensor<2x3x8x4xf32>, %[[K:.+]]: tensor<2x3x8x4xf32>, %[[V:.+]]: tensor<2x3x8x4xf32>, %[[M:.+]]: tensor<2x1x1x8xf32>)
// CHECK: %[[MM:.+]] = linalg.generic {{.*}} ins(%{{.+}} : tensor<2x1x1x8xf32>) outs(%{{.+}} : tensor<2x1x8x8xf32>)
// CHECK: %[[O:.+]] = fa.attention %[[Q]], %[[K]], %[[V]] mask(%[[MM]] : tensor<2x1x8x8xf32>) scale(5.000000e-01) : tensor<2x3x8x4xf32>, tensor<2x3x8x4xf32>, tensor<2x3x8x4xf32> -> tensor<2x3x8x4xf32>
// CHECK-NOT: tosa.matmul
// CHECK-NOT: tosa.exp
func.func @tosa_padding_mask(%q: tensor<2x3x8x4xf32>, %k: tensor<2x3x8x4xf32>, %v: tensor<2x3x8x4xf32>, %mask: tensor<2x1x1x8xf32>) -> tensor<2x3x8x4xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %half = "tosa.const"() <{values = dense<0.5> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %s3 = tosa.const_shape {values = dense<[6, 8, 4]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s3s = tosa.const_shape {values = dense<[6, 8, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s4s = tosa.const_shape {values = dense<[2, 3, 8, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s4o = tosa.const_shape {values = dense<[2, 3, 8, 4]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %qr = tosa.reshape %q, %s3 : (tensor<2x3x8x4xf32>, !tosa.shape<3>) -> tensor<6x8x4xf32>
  %kr = tosa.reshape %k, %s3 : (tensor<2x3x8x4xf32>, !tosa.shape<3>) -> tensor<6x8x4xf32>
  %vr = tosa.reshape %v, %s3 : (tensor<2x3x8x4xf32>, !tosa.shape<3>) -> tensor<6x8x4xf32>
  %kt = tosa.transpose %kr {perms = array<i32: 0, 2, 1>} : (tensor<6x8x4xf32>) -> tensor<6x4x8xf32>
  %s = tosa.matmul %qr, %kt, %zp, %zp : (tensor<6x8x4xf32>, tensor<6x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<6x8x8xf32>
  %s4 = tosa.reshape %s, %s4s : (tensor<6x8x8xf32>, !tosa.shape<4>) -> tensor<2x3x8x8xf32>
  %sc = tosa.mul %s4, %half, %shift : (tensor<2x3x8x8xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<2x3x8x8xf32>
  %sm = tosa.add %sc, %mask : (tensor<2x3x8x8xf32>, tensor<2x1x1x8xf32>) -> tensor<2x3x8x8xf32>
  %mx = tosa.reduce_max %sm {axis = 3 : i32} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x1xf32>
  %d = tosa.sub %sm, %mx : (tensor<2x3x8x8xf32>, tensor<2x3x8x1xf32>) -> tensor<2x3x8x8xf32>
  %e = tosa.exp %d : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  %l = tosa.reduce_sum %e {axis = 3 : i32} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x1xf32>
  %rl = tosa.reciprocal %l : (tensor<2x3x8x1xf32>) -> tensor<2x3x8x1xf32>
  %p = tosa.mul %e, %rl, %shift : (tensor<2x3x8x8xf32>, tensor<2x3x8x1xf32>, tensor<1xi8>) -> tensor<2x3x8x8xf32>
  %p3 = tosa.reshape %p, %s3s : (tensor<2x3x8x8xf32>, !tosa.shape<3>) -> tensor<6x8x8xf32>
  %o = tosa.matmul %p3, %vr, %zp, %zp : (tensor<6x8x8xf32>, tensor<6x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<6x8x4xf32>
  %o4 = tosa.reshape %o, %s4o : (tensor<6x8x4xf32>, !tosa.shape<4>) -> tensor<2x3x8x4xf32>
  return %o4 : tensor<2x3x8x4xf32>
}

// -----

// TOSA in bf16: the matmuls accumulate in f32, the softmax runs in f32
// (tosa.cast up, then down to bf16 before the second product), causal
// through a constant lower-triangular 0/-inf tensor, scale 1/sqrt(16) on K.

// CHECK-LABEL: func.func @tosa_bf16_causal_constant
// CHECK-SAME: (%[[Q:.+]]: tensor<4x4x16xbf16>, %[[K:.+]]: tensor<4x4x16xbf16>, %[[V:.+]]: tensor<4x4x16xbf16>)
// CHECK: %[[O:.+]] = fa.attention %[[Q]], %[[K]], %[[V]] scale(2.500000e-01) causal(top_left) : tensor<4x4x16xbf16>, tensor<4x4x16xbf16>, tensor<4x4x16xbf16> -> tensor<4x4x16xf32>
// CHECK: return %[[O]]
func.func @tosa_bf16_causal_constant(%q: tensor<4x4x16xbf16>, %k: tensor<4x4x16xbf16>, %v: tensor<4x4x16xbf16>) -> tensor<4x4x16xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xbf16>}> : () -> tensor<1xbf16>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %quarter = "tosa.const"() <{values = dense<0.25> : tensor<1x1x1xbf16>}> : () -> tensor<1x1x1xbf16>
  %tril = "tosa.const"() <{values = dense<[[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]]> : tensor<1x4x4xf32>}> : () -> tensor<1x4x4xf32>
  %ks = tosa.mul %k, %quarter, %shift : (tensor<4x4x16xbf16>, tensor<1x1x1xbf16>, tensor<1xi8>) -> tensor<4x4x16xbf16>
  %kt = tosa.transpose %ks {perms = array<i32: 0, 2, 1>} : (tensor<4x4x16xbf16>) -> tensor<4x16x4xbf16>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<4x4x16xbf16>, tensor<4x16x4xbf16>, tensor<1xbf16>, tensor<1xbf16>) -> tensor<4x4x4xf32>
  %sm = tosa.add %s, %tril : (tensor<4x4x4xf32>, tensor<1x4x4xf32>) -> tensor<4x4x4xf32>
  %mx = tosa.reduce_max %sm {axis = 2 : i32} : (tensor<4x4x4xf32>) -> tensor<4x4x1xf32>
  %d = tosa.sub %sm, %mx : (tensor<4x4x4xf32>, tensor<4x4x1xf32>) -> tensor<4x4x4xf32>
  %e = tosa.exp %d : (tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %l = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<4x4x4xf32>) -> tensor<4x4x1xf32>
  %rl = tosa.reciprocal %l : (tensor<4x4x1xf32>) -> tensor<4x4x1xf32>
  %p = tosa.mul %e, %rl, %shift : (tensor<4x4x4xf32>, tensor<4x4x1xf32>, tensor<1xi8>) -> tensor<4x4x4xf32>
  %pb = tosa.cast %p : (tensor<4x4x4xf32>) -> tensor<4x4x4xbf16>
  %o = tosa.matmul %pb, %v, %zp, %zp : (tensor<4x4x4xbf16>, tensor<4x4x16xbf16>, tensor<1xbf16>, tensor<1xbf16>) -> tensor<4x4x16xf32>
  return %o : tensor<4x4x16xf32>
}

// -----

// tosa.identity on the scores and on the probabilities is looked through
// (TFLite and other legalizations leave it in).

// CHECK-LABEL: func.func @tosa_identity
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}} : tensor<2x1x8x8xf32>) scale(5.000000e-01)
// CHECK-NOT: tosa.identity
// CHECK-NOT: tosa.matmul
func.func @tosa_identity(%q: tensor<2x3x8x4xf32>, %k: tensor<2x3x8x4xf32>, %v: tensor<2x3x8x4xf32>, %mask: tensor<2x1x1x8xf32>) -> tensor<2x3x8x4xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %half = "tosa.const"() <{values = dense<0.5> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %s3 = tosa.const_shape {values = dense<[6, 8, 4]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s3s = tosa.const_shape {values = dense<[6, 8, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s4s = tosa.const_shape {values = dense<[2, 3, 8, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s4o = tosa.const_shape {values = dense<[2, 3, 8, 4]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %qr = tosa.reshape %q, %s3 : (tensor<2x3x8x4xf32>, !tosa.shape<3>) -> tensor<6x8x4xf32>
  %kr = tosa.reshape %k, %s3 : (tensor<2x3x8x4xf32>, !tosa.shape<3>) -> tensor<6x8x4xf32>
  %vr = tosa.reshape %v, %s3 : (tensor<2x3x8x4xf32>, !tosa.shape<3>) -> tensor<6x8x4xf32>
  %kt = tosa.transpose %kr {perms = array<i32: 0, 2, 1>} : (tensor<6x8x4xf32>) -> tensor<6x4x8xf32>
  %s = tosa.matmul %qr, %kt, %zp, %zp : (tensor<6x8x4xf32>, tensor<6x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<6x8x8xf32>
  %s4 = tosa.reshape %s, %s4s : (tensor<6x8x8xf32>, !tosa.shape<4>) -> tensor<2x3x8x8xf32>
  %sc = tosa.mul %s4, %half, %shift : (tensor<2x3x8x8xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<2x3x8x8xf32>
  %sci = tosa.identity %sc : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  %sm = tosa.add %sci, %mask : (tensor<2x3x8x8xf32>, tensor<2x1x1x8xf32>) -> tensor<2x3x8x8xf32>
  %mx = tosa.reduce_max %sm {axis = 3 : i32} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x1xf32>
  %d = tosa.sub %sm, %mx : (tensor<2x3x8x8xf32>, tensor<2x3x8x1xf32>) -> tensor<2x3x8x8xf32>
  %e = tosa.exp %d : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  %l = tosa.reduce_sum %e {axis = 3 : i32} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x1xf32>
  %rl = tosa.reciprocal %l : (tensor<2x3x8x1xf32>) -> tensor<2x3x8x1xf32>
  %p = tosa.mul %e, %rl, %shift : (tensor<2x3x8x8xf32>, tensor<2x3x8x1xf32>, tensor<1xi8>) -> tensor<2x3x8x8xf32>
  %pi = tosa.identity %p : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  %p3 = tosa.reshape %pi, %s3s : (tensor<2x3x8x8xf32>, !tosa.shape<3>) -> tensor<6x8x8xf32>
  %o = tosa.matmul %p3, %vr, %zp, %zp : (tensor<6x8x8xf32>, tensor<6x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<6x8x4xf32>
  %o4 = tosa.reshape %o, %s4o : (tensor<6x8x4xf32>, !tosa.shape<4>) -> tensor<2x3x8x4xf32>
  return %o4 : tensor<2x3x8x4xf32>
}

// -----

// TOSA masked_fill: tosa.select(tosa.logical_not(keep), -inf, s); the not
// cancels against the select's polarity and keep is the op's i1 mask.

// CHECK-LABEL: func.func @tosa_logical_not_select
// CHECK-SAME: %[[M:[a-z0-9]+]]: tensor<2x8x8xi1>)
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]] : tensor<2x8x8xi1>) scale(5.000000e-01)
// CHECK-NOT: tosa.logical_not
func.func @tosa_logical_not_select(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %keep: tensor<2x8x8xi1>) -> tensor<2x8x4xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %half = "tosa.const"() <{values = dense<0.5> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %ninf = "tosa.const"() <{values = dense<0xFF800000> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %kt = tosa.transpose %k {perms = array<i32: 0, 2, 1>} : (tensor<2x8x4xf32>) -> tensor<2x4x8xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x8x4xf32>, tensor<2x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x8x8xf32>
  %sc = tosa.mul %s, %half, %shift : (tensor<2x8x8xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<2x8x8xf32>
  %hide = tosa.logical_not %keep : (tensor<2x8x8xi1>) -> tensor<2x8x8xi1>
  %sm = tosa.select %hide, %ninf, %sc : (tensor<2x8x8xi1>, tensor<1x1x1xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %mx = tosa.reduce_max %sm {axis = 2 : i32} : (tensor<2x8x8xf32>) -> tensor<2x8x1xf32>
  %d = tosa.sub %sm, %mx : (tensor<2x8x8xf32>, tensor<2x8x1xf32>) -> tensor<2x8x8xf32>
  %e = tosa.exp %d : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %l = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<2x8x8xf32>) -> tensor<2x8x1xf32>
  %rl = tosa.reciprocal %l : (tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
  %p = tosa.mul %e, %rl, %shift : (tensor<2x8x8xf32>, tensor<2x8x1xf32>, tensor<1xi8>) -> tensor<2x8x8xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x8x8xf32>, tensor<2x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}
