// RUN: fa-opt %s --fa-raise-attention --split-input-file | FileCheck %s

// Masks: an additive float mask broadcast over the batch dims, a causal
// select on linalg.index (top_left and bottom_right), a constant
// lower-triangular 0/-inf tensor, an i1 keep-mask, an i1 hide-mask
// (masked_fill).

#qk_q = affine_map<(b, i, j, d) -> (b, i, d)>
#qk_k = affine_map<(b, i, j, d) -> (b, j, d)>
#qk_s = affine_map<(b, i, j, d) -> (b, i, j)>
#id3 = affine_map<(b, i, j) -> (b, i, j)>
#row3 = affine_map<(b, i, j) -> (b, i)>
#mask2 = affine_map<(b, i, j) -> (i, j)>

// CHECK-LABEL: func.func @additive_mask_broadcast
// CHECK-SAME: (%[[Q:.+]]: tensor<3x10x8xf32>, %[[K:.+]]: tensor<3x14x8xf32>, %[[V:.+]]: tensor<3x14x6xf32>, %[[M:.+]]: tensor<10x14xf32>)
// CHECK: %[[MM:.+]] = tensor.expand_shape %[[M]] {{\[\[}}0, 1], [2]] output_shape [1, 10, 14] : tensor<10x14xf32> into tensor<1x10x14xf32>
// CHECK: fa.attention %[[Q]], %[[K]], %[[V]] mask(%[[MM]] : tensor<1x10x14xf32>) scale(5.000000e-01) : tensor<3x10x8xf32>, tensor<3x14x8xf32>, tensor<3x14x6xf32> -> tensor<3x10x6xf32>
func.func @additive_mask_broadcast(%q: tensor<3x10x8xf32>, %k: tensor<3x14x8xf32>, %v: tensor<3x14x6xf32>, %mask: tensor<10x14xf32>) -> tensor<3x10x6xf32> {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %s0 = tensor.empty() : tensor<3x10x14xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<3x10x14xf32>) -> tensor<3x10x14xf32>
  %s = linalg.batch_matmul indexing_maps = [#qk_q, #qk_k, #qk_s]
      ins(%q, %k : tensor<3x10x8xf32>, tensor<3x14x8xf32>) outs(%sz : tensor<3x10x14xf32>) -> tensor<3x10x14xf32>
  %sm = linalg.generic {indexing_maps = [#id3, #mask2, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %mask : tensor<3x10x14xf32>, tensor<10x14xf32>) outs(%s0 : tensor<3x10x14xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %x = arith.mulf %a, %half : f32
    %r = arith.addf %x, %m : f32
    linalg.yield %r : f32
  } -> tensor<3x10x14xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<3x10x14xf32>) outs(%s0 : tensor<3x10x14xf32>) -> tensor<3x10x14xf32>
  %o0 = tensor.empty() : tensor<3x10x6xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<3x10x6xf32>) -> tensor<3x10x6xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<3x10x14xf32>, tensor<3x14x6xf32>) outs(%oz : tensor<3x10x6xf32>) -> tensor<3x10x6xf32>
  return %o : tensor<3x10x6xf32>
}

// -----

// A mask [B, 1, Tq, Tk] broadcast over heads through a constant-0 map; the
// mask is added before the scale (so the op's mask is the scaled mask).

#q4 = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k4 = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s4 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p4 = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#v4 = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#o4 = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
#mb4 = affine_map<(b, h, i, j) -> (b, 0, i, j)>
// CHECK-LABEL: func.func @mask_per_batch_then_scale
// CHECK-SAME: %[[M:[a-z0-9]+]]: tensor<2x1x9x9xf32>)
// CHECK: %[[SM:.+]] = linalg.generic
// CHECK: arith.mulf
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[SM]] : tensor<2x1x9x9xf32>) scale(1.250000e-01)
func.func @mask_per_batch_then_scale(%q: tensor<2x2x9x4xf32>, %k: tensor<2x2x9x4xf32>, %v: tensor<2x2x9x4xf32>, %mask: tensor<2x1x9x9xf32>) -> tensor<2x2x9x4xf32> {
  %zero = arith.constant 0.0 : f32
  %c8 = arith.constant 8.0 : f32
  %s0 = tensor.empty() : tensor<2x2x9x9xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x2x9x9xf32>) -> tensor<2x2x9x9xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x2x9x4xf32>, tensor<2x2x9x4xf32>) outs(%sz : tensor<2x2x9x9xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x9x9xf32>
  %sm = linalg.generic {indexing_maps = [#id4, #mb4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s, %mask : tensor<2x2x9x9xf32>, tensor<2x1x9x9xf32>) outs(%s0 : tensor<2x2x9x9xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %x = arith.addf %m, %a : f32
    %r = arith.divf %x, %c8 : f32
    linalg.yield %r : f32
  } -> tensor<2x2x9x9xf32>
  %p = linalg.softmax dimension(3) ins(%sm : tensor<2x2x9x9xf32>) outs(%s0 : tensor<2x2x9x9xf32>) -> tensor<2x2x9x9xf32>
  %o0 = tensor.empty() : tensor<2x2x9x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x2x9x4xf32>) -> tensor<2x2x9x4xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x2x9x9xf32>, tensor<2x2x9x4xf32>) outs(%oz : tensor<2x2x9x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x9x4xf32>
  return %o : tensor<2x2x9x4xf32>
}

// -----

// Causal, top_left: select(j > i, -inf, s) on linalg.index, fused with the
// scale.

#qk_q = affine_map<(b, i, j, d) -> (b, i, d)>
#qk_k = affine_map<(b, i, j, d) -> (b, j, d)>
#qk_s = affine_map<(b, i, j, d) -> (b, i, j)>
#id3 = affine_map<(b, i, j) -> (b, i, j)>
// CHECK-LABEL: func.func @causal_select_top_left
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} scale(2.500000e-01) causal(top_left) : tensor<2x17x16xf32>, tensor<2x17x16xf32>, tensor<2x17x8xf32> -> tensor<2x17x8xf32>
func.func @causal_select_top_left(%q: tensor<2x17x16xf32>, %k: tensor<2x17x16xf32>, %v: tensor<2x17x8xf32>) -> tensor<2x17x8xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.25 : f32
  %s0 = tensor.empty() : tensor<2x17x17xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x17x17xf32>) -> tensor<2x17x17xf32>
  %s = linalg.batch_matmul indexing_maps = [#qk_q, #qk_k, #qk_s]
      ins(%q, %k : tensor<2x17x16xf32>, tensor<2x17x16xf32>) outs(%sz : tensor<2x17x17xf32>) -> tensor<2x17x17xf32>
  %sm = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x17x17xf32>) outs(%s0 : tensor<2x17x17xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %future = arith.cmpi ugt, %j, %i : index
    %x = arith.mulf %a, %scale : f32
    %r = arith.select %future, %ninf, %x : f32
    linalg.yield %r : f32
  } -> tensor<2x17x17xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x17x17xf32>) outs(%s0 : tensor<2x17x17xf32>) -> tensor<2x17x17xf32>
  %o0 = tensor.empty() : tensor<2x17x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x17x8xf32>) -> tensor<2x17x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x17x17xf32>, tensor<2x17x8xf32>) outs(%oz : tensor<2x17x8xf32>) -> tensor<2x17x8xf32>
  return %o : tensor<2x17x8xf32>
}

// -----

// Causal, bottom_right (Tq = 5, Tk = 12): keep where i + 7 >= j (index_cast
// to i64 as torch-to-linalg writes it), lowest-float fill, before the scale.

#qk_q = affine_map<(b, i, j, d) -> (b, i, d)>
#qk_k = affine_map<(b, i, j, d) -> (b, j, d)>
#qk_s = affine_map<(b, i, j, d) -> (b, i, j)>
#id3 = affine_map<(b, i, j) -> (b, i, j)>
// CHECK-LABEL: func.func @causal_select_bottom_right
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} scale(1.250000e-01) causal(bottom_right) : tensor<3x5x8xf32>, tensor<3x12x8xf32>, tensor<3x12x8xf32> -> tensor<3x5x8xf32>
func.func @causal_select_bottom_right(%q: tensor<3x5x8xf32>, %k: tensor<3x12x8xf32>, %v: tensor<3x12x8xf32>) -> tensor<3x5x8xf32> {
  %zero = arith.constant 0.0 : f32
  %lowest = arith.constant -3.40282347E+38 : f32
  %scale = arith.constant 0.125 : f32
  %c7 = arith.constant 7 : i64
  %s0 = tensor.empty() : tensor<3x5x12xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<3x5x12xf32>) -> tensor<3x5x12xf32>
  %s = linalg.batch_matmul indexing_maps = [#qk_q, #qk_k, #qk_s]
      ins(%q, %k : tensor<3x5x8xf32>, tensor<3x12x8xf32>) outs(%sz : tensor<3x5x12xf32>) -> tensor<3x5x12xf32>
  %sc = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<3x5x12xf32>) outs(%s0 : tensor<3x5x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %i64 = arith.index_cast %i : index to i64
    %j64 = arith.index_cast %j : index to i64
    %lim = arith.addi %i64, %c7 : i64
    %keep = arith.cmpi sge, %lim, %j64 : i64
    %r = arith.select %keep, %a, %lowest : f32
    linalg.yield %r : f32
  } -> tensor<3x5x12xf32>
  %sm = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%sc : tensor<3x5x12xf32>) outs(%s0 : tensor<3x5x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %scale : f32
    linalg.yield %r : f32
  } -> tensor<3x5x12xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<3x5x12xf32>) outs(%s0 : tensor<3x5x12xf32>) -> tensor<3x5x12xf32>
  %o0 = tensor.empty() : tensor<3x5x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<3x5x12xf32>, tensor<3x12x8xf32>) outs(%oz : tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
  return %o : tensor<3x5x8xf32>
}

// -----

// Causal as a constant lower-triangular 0/-inf tensor added to the scores.

#qk_q = affine_map<(b, i, j, d) -> (b, i, d)>
#qk_k = affine_map<(b, i, j, d) -> (b, j, d)>
#qk_s = affine_map<(b, i, j, d) -> (b, i, j)>
#id3 = affine_map<(b, i, j) -> (b, i, j)>
#mask2 = affine_map<(b, i, j) -> (i, j)>
// CHECK-LABEL: func.func @causal_constant_tril
// CHECK-NOT: mask(
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} scale(1.000000e+00) causal(top_left) : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
func.func @causal_constant_tril(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %tril = arith.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %s0 = tensor.empty() : tensor<2x4x4xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = linalg.batch_matmul indexing_maps = [#qk_q, #qk_k, #qk_s]
      ins(%q, %k : tensor<2x4x8xf32>, tensor<2x4x8xf32>) outs(%sz : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %sm = linalg.generic {indexing_maps = [#id3, #mask2, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %tril : tensor<2x4x4xf32>, tensor<4x4xf32>) outs(%s0 : tensor<2x4x4xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %r = arith.addf %a, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x4x4xf32>) outs(%s0 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o0 = tensor.empty() : tensor<2x4x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%oz : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// An i1 keep-mask [B, Tq, Tk] through a select.

#qk_q = affine_map<(b, i, j, d) -> (b, i, d)>
#qk_k = affine_map<(b, i, j, d) -> (b, j, d)>
#qk_s = affine_map<(b, i, j, d) -> (b, i, j)>
#id3 = affine_map<(b, i, j) -> (b, i, j)>
// CHECK-LABEL: func.func @bool_keep_mask
// CHECK-SAME: %[[M:[a-z0-9]+]]: tensor<2x6x10xi1>)
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]] : tensor<2x6x10xi1>) scale(1.000000e+00)
func.func @bool_keep_mask(%q: tensor<2x6x4xf32>, %k: tensor<2x10x4xf32>, %v: tensor<2x10x4xf32>, %keep: tensor<2x6x10xi1>) -> tensor<2x6x4xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s0 = tensor.empty() : tensor<2x6x10xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x6x10xf32>) -> tensor<2x6x10xf32>
  %s = linalg.batch_matmul indexing_maps = [#qk_q, #qk_k, #qk_s]
      ins(%q, %k : tensor<2x6x4xf32>, tensor<2x10x4xf32>) outs(%sz : tensor<2x6x10xf32>) -> tensor<2x6x10xf32>
  %sm = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %keep : tensor<2x6x10xf32>, tensor<2x6x10xi1>) outs(%s0 : tensor<2x6x10xf32>) {
  ^bb0(%a: f32, %m: i1, %o: f32):
    %r = arith.select %m, %a, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<2x6x10xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x6x10xf32>) outs(%s0 : tensor<2x6x10xf32>) -> tensor<2x6x10xf32>
  %o0 = tensor.empty() : tensor<2x6x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x6x10xf32>, tensor<2x10x4xf32>) outs(%oz : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  return %o : tensor<2x6x4xf32>
}

// -----

// An f16 mask extended to f32 before it is added (an exact cast, unlike a
// rounding to f16: negative.mlir @mask_rounded_to_f16) is raised; the op
// takes the extended mask.
// CHECK-LABEL: func.func @mask_f16_extended
// CHECK: arith.extf %{{.+}} : f16 to f32
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}} : tensor<1x10x14xf32>) scale(5.000000e-01)
func.func @mask_f16_extended(%q: tensor<3x10x8xf32>, %k: tensor<3x14x8xf32>, %v: tensor<3x14x6xf32>, %mask: tensor<10x14xf16>) -> tensor<3x10x6xf32> {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %s0 = tensor.empty() : tensor<3x10x14xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<3x10x14xf32>) -> tensor<3x10x14xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<3x10x8xf32>, tensor<3x14x8xf32>) outs(%sz : tensor<3x10x14xf32>) -> tensor<3x10x14xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %mask : tensor<3x10x14xf32>, tensor<10x14xf16>) outs(%s0 : tensor<3x10x14xf32>) {
  ^bb0(%a: f32, %m: f16, %o: f32):
    %x = arith.mulf %a, %half : f32
    %me = arith.extf %m : f16 to f32
    %r = arith.addf %x, %me : f32
    linalg.yield %r : f32
  } -> tensor<3x10x14xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<3x10x14xf32>) outs(%s0 : tensor<3x10x14xf32>) -> tensor<3x10x14xf32>
  %o0 = tensor.empty() : tensor<3x10x6xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<3x10x6xf32>) -> tensor<3x10x6xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<3x10x14xf32>, tensor<3x14x6xf32>) outs(%oz : tensor<3x10x6xf32>) -> tensor<3x10x6xf32>
  return %o : tensor<3x10x6xf32>
}

// -----

// masked_fill(mask, -inf): an i1 mask that hides keys where it is true
// (select(m, -inf, s)); the op keeps keys where its i1 mask is true, so the
// rewrite passes the negated mask.
// CHECK-LABEL: func.func @bool_hide_mask
// CHECK-SAME: %[[M:[a-z0-9]+]]: tensor<2x6x10xi1>)
// CHECK: %[[KEEP:.+]] = linalg.generic {{.*}} ins(%[[M]] : tensor<2x6x10xi1>)
// CHECK: arith.xori %{{.+}}, %true
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[KEEP]] : tensor<2x6x10xi1>) scale(1.000000e+00)
func.func @bool_hide_mask(%q: tensor<2x6x4xf32>, %k: tensor<2x10x4xf32>, %v: tensor<2x10x4xf32>, %hide: tensor<2x6x10xi1>) -> tensor<2x6x4xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s0 = tensor.empty() : tensor<2x6x10xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x6x10xf32>) -> tensor<2x6x10xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x6x4xf32>, tensor<2x10x4xf32>) outs(%sz : tensor<2x6x10xf32>) -> tensor<2x6x10xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %hide : tensor<2x6x10xf32>, tensor<2x6x10xi1>) outs(%s0 : tensor<2x6x10xf32>) {
  ^bb0(%a: f32, %m: i1, %o: f32):
    %r = arith.select %m, %ninf, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x6x10xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x6x10xf32>) outs(%s0 : tensor<2x6x10xf32>) -> tensor<2x6x10xf32>
  %o0 = tensor.empty() : tensor<2x6x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x6x10xf32>, tensor<2x10x4xf32>) outs(%oz : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  return %o : tensor<2x6x4xf32>
}

// -----

// SDPA's boolean attn_mask as torch decomposes it: a bias
// select(not m, -inf, 0) (the not an arith.xori with true) added to the
// scaled scores. The bias is a select on the scores; the nots cancel and m
// is the op's i1 keep-mask as it is.
// CHECK-LABEL: func.func @sdpa_bool_mask_bias
// CHECK-SAME: %[[M:[a-z0-9]+]]: tensor<2x6x10xi1>)
// CHECK-NOT: linalg.generic
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]] : tensor<2x6x10xi1>) scale(5.000000e-01)
func.func @sdpa_bool_mask_bias(%q: tensor<2x6x4xf32>, %k: tensor<2x10x4xf32>, %v: tensor<2x10x4xf32>, %keep: tensor<2x6x10xi1>) -> tensor<2x6x4xf32> {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %true = arith.constant true
  %s0 = tensor.empty() : tensor<2x6x10xf32>
  %bias = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%keep : tensor<2x6x10xi1>) outs(%s0 : tensor<2x6x10xf32>) {
  ^bb0(%m: i1, %o: f32):
    %hide = arith.xori %m, %true : i1
    %r = arith.select %hide, %ninf, %zero : f32
    linalg.yield %r : f32
  } -> tensor<2x6x10xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x6x10xf32>) -> tensor<2x6x10xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x6x4xf32>, tensor<2x10x4xf32>) outs(%sz : tensor<2x6x10xf32>) -> tensor<2x6x10xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %bias : tensor<2x6x10xf32>, tensor<2x6x10xf32>) outs(%s0 : tensor<2x6x10xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %x = arith.mulf %a, %half : f32
    %r = arith.addf %x, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x6x10xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x6x10xf32>) outs(%s0 : tensor<2x6x10xf32>) -> tensor<2x6x10xf32>
  %o0 = tensor.empty() : tensor<2x6x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x6x10xf32>, tensor<2x10x4xf32>) outs(%oz : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  return %o : tensor<2x6x4xf32>
}

// -----

// torch's _safe_softmax, as SDPA's math path uses it with a mask:
// where(all_j(x_j == -inf), 0, softmax(x)) on the masked scores x. Rows whose
// keys are all hidden give 0, which is fa.attention's contract; the select,
// the comparison and the and reduction go with the chain.

// CHECK-LABEL: func.func @sdpa_safe_softmax
// CHECK-SAME: %[[M:[a-z0-9]+]]: tensor<2x6x10xi1>)
// CHECK-NOT: linalg.generic
// CHECK-NOT: linalg.softmax
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]] : tensor<2x6x10xi1>) scale(5.000000e-01)
// CHECK-NOT: linalg.generic
func.func @sdpa_safe_softmax(%q: tensor<2x6x4xf32>, %k: tensor<2x10x4xf32>, %v: tensor<2x10x4xf32>, %keep: tensor<2x6x10xi1>) -> tensor<2x6x4xf32> {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %true = arith.constant true
  %s0 = tensor.empty() : tensor<2x6x10xf32>
  %bias = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%keep : tensor<2x6x10xi1>) outs(%s0 : tensor<2x6x10xf32>) {
  ^bb0(%m: i1, %o: f32):
    %r = arith.select %m, %zero, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<2x6x10xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x6x10xf32>) -> tensor<2x6x10xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x6x4xf32>, tensor<2x10x4xf32>) outs(%sz : tensor<2x6x10xf32>) -> tensor<2x6x10xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %bias : tensor<2x6x10xf32>, tensor<2x6x10xf32>) outs(%s0 : tensor<2x6x10xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %x = arith.mulf %a, %half : f32
    %r = arith.addf %x, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x6x10xf32>
  %p0 = linalg.softmax dimension(2) ins(%sm : tensor<2x6x10xf32>) outs(%s0 : tensor<2x6x10xf32>) -> tensor<2x6x10xf32>
  %e0 = tensor.empty() : tensor<2x6x10xi1>
  %eq = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%sm : tensor<2x6x10xf32>) outs(%e0 : tensor<2x6x10xi1>) {
  ^bb0(%a: f32, %o: i1):
    %c = arith.cmpf oeq, %a, %ninf : f32
    linalg.yield %c : i1
  } -> tensor<2x6x10xi1>
  %r0 = tensor.empty() : tensor<2x6x1xi1>
  %rt = linalg.fill ins(%true : i1) outs(%r0 : tensor<2x6x1xi1>) -> tensor<2x6x1xi1>
  %all = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, 0)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%eq : tensor<2x6x10xi1>) outs(%rt : tensor<2x6x1xi1>) {
  ^bb0(%a: i1, %acc: i1):
    %c = arith.andi %a, %acc : i1
    linalg.yield %c : i1
  } -> tensor<2x6x1xi1>
  %p = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, 0)>, affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%all, %p0 : tensor<2x6x1xi1>, tensor<2x6x10xf32>) outs(%s0 : tensor<2x6x10xf32>) {
  ^bb0(%c: i1, %a: f32, %o: f32):
    %r = arith.select %c, %zero, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x6x10xf32>
  %o0 = tensor.empty() : tensor<2x6x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x6x10xf32>, tensor<2x10x4xf32>) outs(%oz : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  return %o : tensor<2x6x4xf32>
}

// -----

// _safe_softmax's row test spelled with x <= -inf (the same as x == -inf),
// an and with true per key and an or with false on the row (identities).

// CHECK-LABEL: func.func @safe_softmax_ole_and_identities
// CHECK-SAME: %[[M:[a-z0-9]+]]: tensor<2x6x10xi1>)
// CHECK-NOT: linalg.generic
// CHECK-NOT: linalg.softmax
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]] : tensor<2x6x10xi1>) scale(5.000000e-01)
// CHECK-NOT: linalg.generic
func.func @safe_softmax_ole_and_identities(%q: tensor<2x6x4xf32>, %k: tensor<2x10x4xf32>, %v: tensor<2x10x4xf32>, %keep: tensor<2x6x10xi1>) -> tensor<2x6x4xf32> {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %true = arith.constant true
  %s0 = tensor.empty() : tensor<2x6x10xf32>
  %bias = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%keep : tensor<2x6x10xi1>) outs(%s0 : tensor<2x6x10xf32>) {
  ^bb0(%m: i1, %o: f32):
    %r = arith.select %m, %zero, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<2x6x10xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x6x10xf32>) -> tensor<2x6x10xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x6x4xf32>, tensor<2x10x4xf32>) outs(%sz : tensor<2x6x10xf32>) -> tensor<2x6x10xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %bias : tensor<2x6x10xf32>, tensor<2x6x10xf32>) outs(%s0 : tensor<2x6x10xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %x = arith.mulf %a, %half : f32
    %r = arith.addf %x, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x6x10xf32>
  %p0 = linalg.softmax dimension(2) ins(%sm : tensor<2x6x10xf32>) outs(%s0 : tensor<2x6x10xf32>) -> tensor<2x6x10xf32>
  %e0 = tensor.empty() : tensor<2x6x10xi1>
  %eq = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%sm : tensor<2x6x10xf32>) outs(%e0 : tensor<2x6x10xi1>) {
  ^bb0(%a: f32, %o: i1):
    %c0 = arith.cmpf ole, %a, %ninf : f32
    %c = arith.andi %c0, %true : i1
    linalg.yield %c : i1
  } -> tensor<2x6x10xi1>
  %r0 = tensor.empty() : tensor<2x6x1xi1>
  %rt = linalg.fill ins(%true : i1) outs(%r0 : tensor<2x6x1xi1>) -> tensor<2x6x1xi1>
  %all = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, 0)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%eq : tensor<2x6x10xi1>) outs(%rt : tensor<2x6x1xi1>) {
  ^bb0(%a: i1, %acc: i1):
    %c = arith.andi %a, %acc : i1
    linalg.yield %c : i1
  } -> tensor<2x6x1xi1>
  %p = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, 0)>, affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%all, %p0 : tensor<2x6x1xi1>, tensor<2x6x10xf32>) outs(%s0 : tensor<2x6x10xf32>) {
  ^bb0(%c0: i1, %a: f32, %o: f32):
    %false = arith.constant false
    %c = arith.ori %false, %c0 : i1
    %r = arith.select %c, %zero, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x6x10xf32>
  %o0 = tensor.empty() : tensor<2x6x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x6x10xf32>, tensor<2x10x4xf32>) outs(%oz : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  return %o : tensor<2x6x4xf32>
}

// -----

// _safe_softmax with rows that are hidden completely: causal bottom_right
// with Tq = 10 > Tk = 6 hides every key of rows 0-3, where the original
// gives 0 (not NaN) and so does fa.attention. The test is spelled the other
// way round (where(any_j(x_j != -inf), softmax(x), 0)), the scores are
// compared in bf16 and the softmax (decomposed) runs in f32 on their exact
// extension.

// CHECK-LABEL: func.func @safe_softmax_fully_hidden_rows
// CHECK-NOT: linalg.generic
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} scale(2.500000e-01) causal(bottom_right) : tensor<2x10x8xbf16>, tensor<2x6x8xbf16>, tensor<2x6x8xbf16> -> tensor<2x10x8xf32>
// CHECK-NOT: linalg.generic
func.func @safe_softmax_fully_hidden_rows(%q: tensor<2x10x8xbf16>, %k: tensor<2x6x8xbf16>, %v: tensor<2x6x8xbf16>) -> tensor<2x10x8xf32> {
  %zero = arith.constant 0.0 : f32
  %zb = arith.constant 0.0 : bf16
  %quarter = arith.constant 0.25 : bf16
  %ninf = arith.constant 0xFF80 : bf16
  %ninf32 = arith.constant 0xFF800000 : f32
  %false = arith.constant false
  %c4 = arith.constant 4 : index
  %s0 = tensor.empty() : tensor<2x10x6xbf16>
  %sz = linalg.fill ins(%zb : bf16) outs(%s0 : tensor<2x10x6xbf16>) -> tensor<2x10x6xbf16>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x10x8xbf16>, tensor<2x6x8xbf16>) outs(%sz : tensor<2x10x6xbf16>) -> tensor<2x10x6xbf16>
  %x = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x10x6xbf16>) outs(%s0 : tensor<2x10x6xbf16>) {
  ^bb0(%a: bf16, %o: bf16):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %jj = arith.addi %j, %c4 : index
    %keep = arith.cmpi sle, %jj, %i : index
    %y = arith.mulf %a, %quarter : bf16
    %r = arith.select %keep, %y, %ninf : bf16
    linalg.yield %r : bf16
  } -> tensor<2x10x6xbf16>
  // softmax(extf(x)) in f32, decomposed.
  %m0 = tensor.empty() : tensor<2x10xf32>
  %mi = linalg.fill ins(%ninf32 : f32) outs(%m0 : tensor<2x10xf32>) -> tensor<2x10xf32>
  %mx = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<2x10x6xbf16>) outs(%mi : tensor<2x10xf32>) {
  ^bb0(%a: bf16, %acc: f32):
    %e = arith.extf %a : bf16 to f32
    %r = arith.maximumf %acc, %e : f32
    linalg.yield %r : f32
  } -> tensor<2x10xf32>
  %f0 = tensor.empty() : tensor<2x10x6xf32>
  %ex = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %mx : tensor<2x10x6xbf16>, tensor<2x10xf32>) outs(%f0 : tensor<2x10x6xf32>) {
  ^bb0(%a: bf16, %m: f32, %o: f32):
    %e = arith.extf %a : bf16 to f32
    %d = arith.subf %e, %m : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x10x6xf32>
  %si = linalg.fill ins(%zero : f32) outs(%m0 : tensor<2x10xf32>) -> tensor<2x10xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ex : tensor<2x10x6xf32>) outs(%si : tensor<2x10xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x10xf32>
  %b0 = tensor.empty() : tensor<2x10x6xi1>
  %ne = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x10x6xbf16>) outs(%b0 : tensor<2x10x6xi1>) {
  ^bb0(%a: bf16, %o: i1):
    %c = arith.cmpf une, %a, %ninf : bf16
    linalg.yield %c : i1
  } -> tensor<2x10x6xi1>
  %r0 = tensor.empty() : tensor<2x10xi1>
  %rf = linalg.fill ins(%false : i1) outs(%r0 : tensor<2x10xi1>) -> tensor<2x10xi1>
  %any = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ne : tensor<2x10x6xi1>) outs(%rf : tensor<2x10xi1>) {
  ^bb0(%a: i1, %acc: i1):
    %c = arith.ori %acc, %a : i1
    linalg.yield %c : i1
  } -> tensor<2x10xi1>
  %p = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ex, %sum, %any : tensor<2x10x6xf32>, tensor<2x10xf32>, tensor<2x10xi1>) outs(%f0 : tensor<2x10x6xf32>) {
  ^bb0(%a: f32, %d: f32, %c: i1, %o: f32):
    %pr = arith.divf %a, %d : f32
    %r = arith.select %c, %pr, %zero : f32
    linalg.yield %r : f32
  } -> tensor<2x10x6xf32>
  %o0 = tensor.empty() : tensor<2x10x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x10x8xf32>) -> tensor<2x10x8xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b, i, e, j) -> (b, i, j)>, affine_map<(b, i, e, j) -> (b, j, e)>, affine_map<(b, i, e, j) -> (b, i, e)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x10x6xf32>, tensor<2x6x8xbf16>) outs(%oz : tensor<2x10x8xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %bb = arith.extf %b : bf16 to f32
    %m = arith.mulf %a, %bb : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x10x8xf32>
  return %o : tensor<2x10x8xf32>
}

// -----

// BERT's extended attention mask: (1 - m) * -10000 computed from the
// padding mask m [B, 1, Tk] in an op of its own, then added to the scaled
// scores. The tensor that op writes is the op's mask (it stays; broadcast
// over the queries as any padding mask).

// CHECK-LABEL: func.func @computed_padding_mask
// CHECK: %[[EXT:.+]] = linalg.generic
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: tensor.collapse_shape %[[EXT]]
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}} : tensor<2x6x10xf32>) scale(5.000000e-01)
// CHECK-NOT: linalg.softmax
func.func @computed_padding_mask(%q: tensor<2x6x4xf32>, %k: tensor<2x10x4xf32>, %v: tensor<2x10x4xf32>, %m: tensor<2x1x10xf32>) -> tensor<2x6x4xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %big = arith.constant -10000.0 : f32
  %half = arith.constant 0.5 : f32
  %e0 = tensor.empty() : tensor<2x1x10xf32>
  %ext = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%m : tensor<2x1x10xf32>) outs(%e0 : tensor<2x1x10xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.subf %one, %a : f32
    %r = arith.mulf %s, %big : f32
    linalg.yield %r : f32
  } -> tensor<2x1x10xf32>
  %s0 = tensor.empty() : tensor<2x6x10xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x6x10xf32>) -> tensor<2x6x10xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x6x4xf32>, tensor<2x10x4xf32>) outs(%sz : tensor<2x6x10xf32>) -> tensor<2x6x10xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, 0, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %ext : tensor<2x6x10xf32>, tensor<2x1x10xf32>) outs(%s0 : tensor<2x6x10xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %x = arith.mulf %a, %half : f32
    %r = arith.addf %x, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x6x10xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x6x10xf32>) outs(%s0 : tensor<2x6x10xf32>) -> tensor<2x6x10xf32>
  %o0 = tensor.empty() : tensor<2x6x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x6x10xf32>, tensor<2x10x4xf32>) outs(%oz : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  return %o : tensor<2x6x4xf32>
}

// -----

// A bias select(c, -inf, 1) computed in an op of its own is not an i1
// mask (it adds 1 to the kept keys' scores), but it is a float tensor added
// to the scores: it becomes the op's float mask as it is.

// CHECK-LABEL: func.func @bias_select_one_as_float_mask
// CHECK: %[[BIAS:.+]] = linalg.generic
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[BIAS]] : tensor<2x6x10xf32>) scale(5.000000e-01)
func.func @bias_select_one_as_float_mask(%q: tensor<2x6x4xf32>, %k: tensor<2x10x4xf32>, %v: tensor<2x10x4xf32>, %keep: tensor<2x6x10xi1>) -> tensor<2x6x4xf32> {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %true = arith.constant true
  %s0 = tensor.empty() : tensor<2x6x10xf32>
  %bias = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%keep : tensor<2x6x10xi1>) outs(%s0 : tensor<2x6x10xf32>) {
  ^bb0(%m: i1, %o: f32):
    %hide = arith.xori %m, %true : i1
    %r = arith.select %hide, %ninf, %one : f32
    linalg.yield %r : f32
  } -> tensor<2x6x10xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x6x10xf32>) -> tensor<2x6x10xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x6x4xf32>, tensor<2x10x4xf32>) outs(%sz : tensor<2x6x10xf32>) -> tensor<2x6x10xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %bias : tensor<2x6x10xf32>, tensor<2x6x10xf32>) outs(%s0 : tensor<2x6x10xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %x = arith.mulf %a, %half : f32
    %r = arith.addf %x, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x6x10xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x6x10xf32>) outs(%s0 : tensor<2x6x10xf32>) -> tensor<2x6x10xf32>
  %o0 = tensor.empty() : tensor<2x6x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x6x10xf32>, tensor<2x10x4xf32>) outs(%oz : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  return %o : tensor<2x6x4xf32>
}

// -----

// A flat [B * H, Tq, Tk] mask expanded to [B, H, Tq, Tk] for 4-D products:
// the expanded tensor is the op's mask (the expand_shape stays).

#q4 = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k4 = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s4 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p4 = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#v4 = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#o4 = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
// CHECK-LABEL: func.func @flat_mask_expanded_over_heads
// CHECK: %[[M:.+]] = tensor.expand_shape %{{.+}} {{\[\[}}0, 1], [2], [3]] output_shape [2, 3, 9, 9] : tensor<6x9x9xf32> into tensor<2x3x9x9xf32>
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]] : tensor<2x3x9x9xf32>) scale(1.250000e-01)
// CHECK-NOT: linalg.softmax
func.func @flat_mask_expanded_over_heads(%q: tensor<2x3x9x4xf32>, %k: tensor<2x3x9x4xf32>, %v: tensor<2x3x9x4xf32>, %mflat: tensor<6x9x9xf32>) -> tensor<2x3x9x4xf32> {
  %zero = arith.constant 0.0 : f32
  %c8 = arith.constant 8.0 : f32
  %mask = tensor.expand_shape %mflat [[0, 1], [2], [3]] output_shape [2, 3, 9, 9] : tensor<6x9x9xf32> into tensor<2x3x9x9xf32>
  %s0 = tensor.empty() : tensor<2x3x9x9xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x3x9x9xf32>) -> tensor<2x3x9x9xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x3x9x4xf32>, tensor<2x3x9x4xf32>) outs(%sz : tensor<2x3x9x9xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x3x9x9xf32>
  %sm = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s, %mask : tensor<2x3x9x9xf32>, tensor<2x3x9x9xf32>) outs(%s0 : tensor<2x3x9x9xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %x = arith.divf %a, %c8 : f32
    %r = arith.addf %x, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x3x9x9xf32>
  %p = linalg.softmax dimension(3) ins(%sm : tensor<2x3x9x9xf32>) outs(%s0 : tensor<2x3x9x9xf32>) -> tensor<2x3x9x9xf32>
  %o0 = tensor.empty() : tensor<2x3x9x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x3x9x4xf32>) -> tensor<2x3x9x4xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x3x9x9xf32>, tensor<2x3x9x4xf32>) outs(%oz : tensor<2x3x9x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x3x9x4xf32>
  return %o : tensor<2x3x9x4xf32>
}

// -----

// A flat mask [B, Tq * Tk] expanded to [B, Tq, Tk]: the source dim holds
// both the query and the key axis, so the expanded tensor is the op's
// mask, as it is read (the expand_shape stays), like a flat [B * H, Tq, Tk]
// one above.
// CHECK-LABEL: func.func @mask_expanded_from_query_key_product
// CHECK: %[[M:.+]] = tensor.expand_shape %{{.+}} {{\[\[}}0], [1, 2]] output_shape [2, 8, 8] : tensor<2x64xf32> into tensor<2x8x8xf32>
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]] : tensor<2x8x8xf32>) scale(1.000000e+00)
// CHECK-NOT: linalg.softmax
func.func @mask_expanded_from_query_key_product(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %mask: tensor<2x64xf32>) -> tensor<2x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %m3 = tensor.expand_shape %mask [[0], [1, 2]] output_shape [2, 8, 8] : tensor<2x64xf32> into tensor<2x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %sm = linalg.add ins(%s, %m3 : tensor<2x8x8xf32>, tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// MQA with a causal select: k and v without a head dim, read by the
// products' broadcast maps, so q's head and query dims are both dims that
// P holds and v does not. The last (i) is the query axis: the select on
// linalg.index 2 (i) and 3 (j) is the top-left causal mask, and k and v are
// broadcast over the heads.

// CHECK-LABEL: func.func @causal_mqa_broadcast_map
// CHECK-SAME: (%[[Q:.+]]: tensor<2x3x9x8xf32>, %[[K:.+]]: tensor<2x9x8xf32>, %[[V:.+]]: tensor<2x9x8xf32>)
// CHECK-DAG: %[[KB:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<2x3x9x8xf32>)
// CHECK-DAG: %[[VB:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<2x3x9x8xf32>)
// CHECK: fa.attention %[[Q]], %[[KB]], %[[VB]] scale(2.500000e-01) causal(top_left) : tensor<2x3x9x8xf32>, tensor<2x3x9x8xf32>, tensor<2x3x9x8xf32> -> tensor<2x3x9x8xf32>
// CHECK-NOT: linalg.softmax
func.func @causal_mqa_broadcast_map(%q: tensor<2x3x9x8xf32>, %k: tensor<2x9x8xf32>, %v: tensor<2x9x8xf32>) -> tensor<2x3x9x8xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.25 : f32
  %s0 = tensor.empty() : tensor<2x3x9x9xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x3x9x9xf32>) -> tensor<2x3x9x9xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, h, i, d)>, affine_map<(b, h, i, j, d) -> (b, j, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x3x9x8xf32>, tensor<2x9x8xf32>) outs(%sz : tensor<2x3x9x9xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x3x9x9xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x3x9x9xf32>) outs(%s0 : tensor<2x3x9x9xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %future = arith.cmpi ugt, %j, %i : index
    %x = arith.mulf %a, %scale : f32
    %r = arith.select %future, %ninf, %x : f32
    linalg.yield %r : f32
  } -> tensor<2x3x9x9xf32>
  %p = linalg.softmax dimension(3) ins(%sm : tensor<2x3x9x9xf32>) outs(%s0 : tensor<2x3x9x9xf32>) -> tensor<2x3x9x9xf32>
  %o0 = tensor.empty() : tensor<2x3x9x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x3x9x8xf32>) -> tensor<2x3x9x8xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, i, e, j) -> (b, h, i, j)>, affine_map<(b, h, i, e, j) -> (b, j, e)>, affine_map<(b, h, i, e, j) -> (b, h, i, e)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x3x9x9xf32>, tensor<2x9x8xf32>) outs(%oz : tensor<2x3x9x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x3x9x8xf32>
  return %o : tensor<2x3x9x8xf32>
}

// -----

// Causal MQA with the output written [B, T, H, Dv]: the query axis (the one
// before the key axis in P's layout) is the one the causal select compares
// with the keys.

// CHECK-LABEL: func.func @causal_mqa_output_bthd
// CHECK: fa.attention %arg0, %{{.+}}, %{{.+}} scale(5.000000e-01) causal(top_left) : tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x3xf32> -> tensor<2x3x5x3xf32>
func.func @causal_mqa_output_bthd(%q: tensor<2x3x5x4xf32>, %k: tensor<2x7x4xf32>, %v: tensor<2x7x3xf32>) -> tensor<2x5x3x3xf32> {
  %t1 = tensor.empty() : tensor<2x3x5x7xf32>
  %t2 = arith.constant 0.0 : f32
  %t3 = linalg.fill ins(%t2 : f32) outs(%t1 : tensor<2x3x5x7xf32>) -> tensor<2x3x5x7xf32>
  %t4 = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, h, i, d)>, affine_map<(b, h, i, j, d) -> (b, j, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x3x5x4xf32>, tensor<2x7x4xf32>) outs(%t3 : tensor<2x3x5x7xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x3x5x7xf32>
  %t5 = tensor.empty() : tensor<2x3x5x7xf32>
  %t6 = linalg.generic {indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%t4 : tensor<2x3x5x7xf32>) outs(%t5 : tensor<2x3x5x7xf32>) {
  ^bb0(%in0: f32, %out: f32):
    %c = arith.constant 0.5 : f32
    %r = arith.mulf %in0, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x3x5x7xf32>
  %t7 = tensor.empty() : tensor<2x3x5x7xf32>
  %t8 = linalg.generic {indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%t6 : tensor<2x3x5x7xf32>) outs(%t7 : tensor<2x3x5x7xf32>) {
  ^bb0(%in0: f32, %out: f32):
    %ii = linalg.index 2 : index
    %jj = linalg.index 3 : index
    %zz = arith.constant 0 : index
    %iio = arith.addi %ii, %zz : index
    %keep = arith.cmpi sle, %jj, %iio : index
    %ninf = arith.constant 0xFF800000 : f32
    %r = arith.select %keep, %in0, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<2x3x5x7xf32>
  %t9 = tensor.empty() : tensor<2x3x5x7xf32>
  %t10 = linalg.softmax dimension(3) ins(%t8 : tensor<2x3x5x7xf32>) outs(%t9 : tensor<2x3x5x7xf32>) -> tensor<2x3x5x7xf32>
  %t11 = tensor.empty() : tensor<2x5x3x3xf32>
  %t12 = arith.constant 0.0 : f32
  %t13 = linalg.fill ins(%t12 : f32) outs(%t11 : tensor<2x5x3x3xf32>) -> tensor<2x5x3x3xf32>
  %t14 = linalg.generic {indexing_maps = [affine_map<(b, i, h, e, j) -> (b, h, i, j)>, affine_map<(b, i, h, e, j) -> (b, j, e)>, affine_map<(b, i, h, e, j) -> (b, i, h, e)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%t10, %v : tensor<2x3x5x7xf32>, tensor<2x7x3xf32>) outs(%t13 : tensor<2x5x3x3xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x5x3x3xf32>
  return %t14 : tensor<2x5x3x3xf32>
}
