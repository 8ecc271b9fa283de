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

// -----

// torch's _safe_softmax through TOSA: tosa.select(tosa.reduce_all(
// tosa.equal(x, -inf)), 0, softmax(x)) on the masked scores x. It goes with
// the chain.

// CHECK-LABEL: func.func @tosa_safe_softmax
// CHECK-SAME: %[[M:[a-z0-9]+]]: tensor<2x8x8xi1>)
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]] : tensor<2x8x8xi1>) scale(5.000000e-01)
// CHECK-NOT: tosa.reduce_all
// CHECK-NOT: tosa.select
func.func @tosa_safe_softmax(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %keep: tensor<2x8x8xi1>) -> tensor<2x8x4xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %half = "tosa.const"() <{values = dense<0.5> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %ninf = "tosa.const"() <{values = dense<0xFF800000> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %zeros = "tosa.const"() <{values = dense<0.0> : tensor<2x8x8xf32>}> : () -> tensor<2x8x8xf32>
  %kt = tosa.transpose %k {perms = array<i32: 0, 2, 1>} : (tensor<2x8x4xf32>) -> tensor<2x4x8xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x8x4xf32>, tensor<2x4x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x8x8xf32>
  %sc = tosa.mul %s, %half, %shift : (tensor<2x8x8xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<2x8x8xf32>
  %sm = tosa.select %keep, %sc, %ninf : (tensor<2x8x8xi1>, tensor<2x8x8xf32>, tensor<1x1x1xf32>) -> tensor<2x8x8xf32>
  %mx = tosa.reduce_max %sm {axis = 2 : i32} : (tensor<2x8x8xf32>) -> tensor<2x8x1xf32>
  %d = tosa.sub %sm, %mx : (tensor<2x8x8xf32>, tensor<2x8x1xf32>) -> tensor<2x8x8xf32>
  %e = tosa.exp %d : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %l = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<2x8x8xf32>) -> tensor<2x8x1xf32>
  %rl = tosa.reciprocal %l : (tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
  %p0 = tosa.mul %e, %rl, %shift : (tensor<2x8x8xf32>, tensor<2x8x1xf32>, tensor<1xi8>) -> tensor<2x8x8xf32>
  %eq = tosa.equal %sm, %ninf : (tensor<2x8x8xf32>, tensor<1x1x1xf32>) -> tensor<2x8x8xi1>
  %all = tosa.reduce_all %eq {axis = 2 : i32} : (tensor<2x8x8xi1>) -> tensor<2x8x1xi1>
  %p = tosa.select %all, %zeros, %p0 : (tensor<2x8x1xi1>, tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x8x8xf32>, tensor<2x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// BERT-style encoder attention through TorchToTosa: the division by
// sqrt(D) as a multiplication by tosa.reciprocal of a constant (folded into
// the scale, rounded to f32), a padding mask [B, 1, 1, T].

// CHECK-LABEL: func.func @tosa_bert_reciprocal_scale
// CHECK: fa.attention {{.+}} mask(%{{.+}} : tensor<2x1x10x10xf32>) scale(2.500000e-01)
func.func @tosa_bert_reciprocal_scale(%q: tensor<2x10x64xf32>, %k: tensor<2x10x64xf32>, %v: tensor<2x10x64xf32>, %mask: tensor<2x1x1x10xf32>) -> tensor<2x10x64xf32> {
  %sh1 = tosa.const_shape {values = dense<[2, 10, 4, 16]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %t2 = tosa.reshape %q, %sh1 : (tensor<2x10x64xf32>, !tosa.shape<4>) -> tensor<2x10x4x16xf32>
  %t3 = tosa.transpose %t2 {perms = array<i32: 0, 2, 1, 3>} : (tensor<2x10x4x16xf32>) -> tensor<2x4x10x16xf32>
  %sh4 = tosa.const_shape {values = dense<[2, 10, 4, 16]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %t5 = tosa.reshape %k, %sh4 : (tensor<2x10x64xf32>, !tosa.shape<4>) -> tensor<2x10x4x16xf32>
  %t6 = tosa.transpose %t5 {perms = array<i32: 0, 2, 1, 3>} : (tensor<2x10x4x16xf32>) -> tensor<2x4x10x16xf32>
  %sh7 = tosa.const_shape {values = dense<[2, 10, 4, 16]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %t8 = tosa.reshape %v, %sh7 : (tensor<2x10x64xf32>, !tosa.shape<4>) -> tensor<2x10x4x16xf32>
  %t9 = tosa.transpose %t8 {perms = array<i32: 0, 2, 1, 3>} : (tensor<2x10x4x16xf32>) -> tensor<2x4x10x16xf32>
  %t10 = tosa.transpose %t6 {perms = array<i32: 0, 1, 3, 2>} : (tensor<2x4x10x16xf32>) -> tensor<2x4x16x10xf32>
  %sh11 = tosa.const_shape {values = dense<[8, 10, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %t12 = tosa.reshape %t3, %sh11 : (tensor<2x4x10x16xf32>, !tosa.shape<3>) -> tensor<8x10x16xf32>
  %sh13 = tosa.const_shape {values = dense<[8, 16, 10]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %t14 = tosa.reshape %t10, %sh13 : (tensor<2x4x16x10xf32>, !tosa.shape<3>) -> tensor<8x16x10xf32>
  %k15 = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %mm16 = tosa.matmul %t12, %t14, %k15, %k15 : (tensor<8x10x16xf32>, tensor<8x16x10xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x10x10xf32>
  %sh17 = tosa.const_shape {values = dense<[2, 4, 10, 10]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %t18 = tosa.reshape %mm16, %sh17 : (tensor<8x10x10xf32>, !tosa.shape<4>) -> tensor<2x4x10x10xf32>
  %k19 = "tosa.const"() <{values = dense<4.0> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  %t20 = tosa.reciprocal %k19 : (tensor<1x1x1x1xf32>) -> tensor<1x1x1x1xf32>
  %k22 = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %t21 = tosa.mul %t18, %t20, %k22 : (tensor<2x4x10x10xf32>, tensor<1x1x1x1xf32>, tensor<1xi8>) -> tensor<2x4x10x10xf32>
  %t23 = tosa.add %t21, %mask : (tensor<2x4x10x10xf32>, tensor<2x1x1x10xf32>) -> tensor<2x4x10x10xf32>
  %t24 = tosa.reduce_max %t23 {axis = 3 : i32} : (tensor<2x4x10x10xf32>) -> tensor<2x4x10x1xf32>
  %t25 = tosa.sub %t23, %t24 : (tensor<2x4x10x10xf32>, tensor<2x4x10x1xf32>) -> tensor<2x4x10x10xf32>
  %t26 = tosa.exp %t25 : (tensor<2x4x10x10xf32>) -> tensor<2x4x10x10xf32>
  %t27 = tosa.reduce_sum %t26 {axis = 3 : i32} : (tensor<2x4x10x10xf32>) -> tensor<2x4x10x1xf32>
  %t28 = tosa.reciprocal %t27 : (tensor<2x4x10x1xf32>) -> tensor<2x4x10x1xf32>
  %k30 = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %t29 = tosa.mul %t26, %t28, %k30 : (tensor<2x4x10x10xf32>, tensor<2x4x10x1xf32>, tensor<1xi8>) -> tensor<2x4x10x10xf32>
  %sh31 = tosa.const_shape {values = dense<[8, 10, 10]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %t32 = tosa.reshape %t29, %sh31 : (tensor<2x4x10x10xf32>, !tosa.shape<3>) -> tensor<8x10x10xf32>
  %sh33 = tosa.const_shape {values = dense<[8, 10, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %t34 = tosa.reshape %t9, %sh33 : (tensor<2x4x10x16xf32>, !tosa.shape<3>) -> tensor<8x10x16xf32>
  %k35 = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %mm36 = tosa.matmul %t32, %t34, %k35, %k35 : (tensor<8x10x10xf32>, tensor<8x10x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x10x16xf32>
  %sh37 = tosa.const_shape {values = dense<[2, 4, 10, 16]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %t38 = tosa.reshape %mm36, %sh37 : (tensor<8x10x16xf32>, !tosa.shape<4>) -> tensor<2x4x10x16xf32>
  %t39 = tosa.transpose %t38 {perms = array<i32: 0, 2, 1, 3>} : (tensor<2x4x10x16xf32>) -> tensor<2x10x4x16xf32>
  %sh40 = tosa.const_shape {values = dense<[2, 10, 64]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %t41 = tosa.reshape %t39, %sh40 : (tensor<2x10x4x16xf32>, !tosa.shape<3>) -> tensor<2x10x64xf32>
  return %t41 : tensor<2x10x64xf32>
}

// -----

// TorchToTosa's max.dim leaves a tosa.argmax beside the reduce_max that
// nothing uses: it does not hold the chain and dies with it.

// CHECK-LABEL: func.func @tosa_unused_argmax
// CHECK-SAME: %[[M:[a-z0-9]+]]: tensor<2x8x8xi1>)
// CHECK-NOT: tosa.argmax
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]] : tensor<2x8x8xi1>) scale(5.000000e-01)
func.func @tosa_unused_argmax(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %keep: tensor<2x8x8xi1>) -> tensor<2x8x4xf32> {
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
  %am = tosa.argmax %sm {axis = 2 : i32} : (tensor<2x8x8xf32>) -> tensor<2x8xi32>
  %d = tosa.sub %sm, %mx : (tensor<2x8x8xf32>, tensor<2x8x1xf32>) -> tensor<2x8x8xf32>
  %e = tosa.exp %d : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %l = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<2x8x8xf32>) -> tensor<2x8x1xf32>
  %rl = tosa.reciprocal %l : (tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
  %p = tosa.mul %e, %rl, %shift : (tensor<2x8x8xf32>, tensor<2x8x1xf32>, tensor<1xi8>) -> tensor<2x8x8xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x8x8xf32>, tensor<2x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}
