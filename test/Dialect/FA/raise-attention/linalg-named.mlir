// RUN: fa-opt %s --fa-raise-attention --split-input-file | FileCheck %s

// Named products with the batch/head dims collapsed around them, K
// transposed by linalg.transpose, the softmax as linalg.softmax, the scores
// divided by a constant.

// CHECK-LABEL: func.func @batch_matmul_collapsed_softmax
// CHECK-SAME: (%[[Q:.+]]: tensor<2x3x24x16xf32>, %[[K:.+]]: tensor<2x3x24x16xf32>, %[[V:.+]]: tensor<2x3x24x8xf32>)
// CHECK: %[[O:.+]] = fa.attention %[[Q]], %[[K]], %[[V]] scale(2.500000e-01) : tensor<2x3x24x16xf32>, tensor<2x3x24x16xf32>, tensor<2x3x24x8xf32> -> tensor<2x3x24x8xf32>
// CHECK-NOT: linalg.softmax
// CHECK-NOT: linalg.batch_matmul
// CHECK-NOT: tensor.expand_shape
// CHECK: return %[[O]]
func.func @batch_matmul_collapsed_softmax(%q: tensor<2x3x24x16xf32>, %k: tensor<2x3x24x16xf32>, %v: tensor<2x3x24x8xf32>) -> tensor<2x3x24x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c4 = arith.constant 4.0 : f32
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x3x24x16xf32> into tensor<6x24x16xf32>
  %kc = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<2x3x24x16xf32> into tensor<6x24x16xf32>
  %vc = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<2x3x24x8xf32> into tensor<6x24x8xf32>
  %kt0 = tensor.empty() : tensor<6x16x24xf32>
  %kt = linalg.transpose ins(%kc : tensor<6x24x16xf32>) outs(%kt0 : tensor<6x16x24xf32>) permutation = [0, 2, 1]
  %s0 = tensor.empty() : tensor<6x24x24xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<6x24x24xf32>) -> tensor<6x24x24xf32>
  %s = linalg.batch_matmul ins(%qc, %kt : tensor<6x24x16xf32>, tensor<6x16x24xf32>) outs(%sz : tensor<6x24x24xf32>) -> tensor<6x24x24xf32>
  %ss = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<6x24x24xf32>) outs(%s0 : tensor<6x24x24xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.divf %a, %c4 : f32
    linalg.yield %r : f32
  } -> tensor<6x24x24xf32>
  %p = linalg.softmax dimension(2) ins(%ss : tensor<6x24x24xf32>) outs(%s0 : tensor<6x24x24xf32>) -> tensor<6x24x24xf32>
  %o0 = tensor.empty() : tensor<6x24x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<6x24x8xf32>) -> tensor<6x24x8xf32>
  %o = linalg.batch_matmul ins(%p, %vc : tensor<6x24x24xf32>, tensor<6x24x8xf32>) outs(%oz : tensor<6x24x8xf32>) -> tensor<6x24x8xf32>
  %oe = tensor.expand_shape %o [[0, 1], [2], [3]] output_shape [2, 3, 24, 8] : tensor<6x24x8xf32> into tensor<2x3x24x8xf32>
  return %oe : tensor<2x3x24x8xf32>
}

// -----

// 2-D linalg.matmul with K transposed through its indexing maps, no scale,
// the softmax as reciprocal-and-multiply with maxnumf and a -FLT_MAX init.

#id2 = affine_map<(i, j) -> (i, j)>
#row2 = affine_map<(i, j) -> (i)>
// CHECK-LABEL: func.func @matmul_transpose_b_maps
// CHECK-SAME: (%[[Q:.+]]: tensor<20x12xf32>, %[[K:.+]]: tensor<33x12xf32>, %[[V:.+]]: tensor<33x10xf32>)
// CHECK: %[[O:.+]] = fa.attention %[[Q]], %[[K]], %[[V]] scale(1.000000e+00) : tensor<20x12xf32>, tensor<33x12xf32>, tensor<33x10xf32> -> tensor<20x10xf32>
// CHECK-NEXT: return %[[O]]
func.func @matmul_transpose_b_maps(%q: tensor<20x12xf32>, %k: tensor<33x12xf32>, %v: tensor<33x10xf32>) -> tensor<20x10xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %lowest = arith.constant -3.40282347E+38 : f32
  %s0 = tensor.empty() : tensor<20x33xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<20x33xf32>) -> tensor<20x33xf32>
  %s = linalg.matmul indexing_maps = [affine_map<(i, j, d) -> (i, d)>, affine_map<(i, j, d) -> (j, d)>, affine_map<(i, j, d) -> (i, j)>]
      ins(%q, %k : tensor<20x12xf32>, tensor<33x12xf32>) outs(%sz : tensor<20x33xf32>) -> tensor<20x33xf32>
  %r0 = tensor.empty() : tensor<20xf32>
  %mi = linalg.fill ins(%lowest : f32) outs(%r0 : tensor<20xf32>) -> tensor<20xf32>
  %mx = linalg.reduce ins(%s : tensor<20x33xf32>) outs(%mi : tensor<20xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %r = arith.maxnumf %a, %acc : f32
      linalg.yield %r : f32
    }
  %ex = linalg.generic {indexing_maps = [#id2, #row2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%s, %mx : tensor<20x33xf32>, tensor<20xf32>) outs(%s0 : tensor<20x33xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<20x33xf32>
  %li = linalg.fill ins(%zero : f32) outs(%r0 : tensor<20xf32>) -> tensor<20xf32>
  %l = linalg.reduce ins(%ex : tensor<20x33xf32>) outs(%li : tensor<20xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %r = arith.addf %a, %acc : f32
      linalg.yield %r : f32
    }
  %rl = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%l : tensor<20xf32>) outs(%r0 : tensor<20xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.divf %one, %a : f32
    linalg.yield %r : f32
  } -> tensor<20xf32>
  %p = linalg.generic {indexing_maps = [#id2, #row2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%ex, %rl : tensor<20x33xf32>, tensor<20xf32>) outs(%s0 : tensor<20x33xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<20x33xf32>
  %o0 = tensor.empty() : tensor<20x10xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<20x10xf32>) -> tensor<20x10xf32>
  %o = linalg.matmul ins(%p, %v : tensor<20x33xf32>, tensor<33x10xf32>) outs(%oz : tensor<20x10xf32>) -> tensor<20x10xf32>
  return %o : tensor<20x10xf32>
}

// -----

// batch_matmul with transposing indexing maps, the scale applied to Q
// (0.25, exact), the softmax without the max subtraction, all steps fused
// into two generics.

#id3 = affine_map<(b, i, j) -> (b, i, j)>
#row3 = affine_map<(b, i, j) -> (b, i)>
// CHECK-LABEL: func.func @batch_matmul_scaled_q_no_max
// CHECK-SAME: (%[[Q:.+]]: tensor<4x9x16xf32>, %[[K:.+]]: tensor<4x11x16xf32>, %[[V:.+]]: tensor<4x11x16xf32>)
// CHECK: %[[O:.+]] = fa.attention %[[Q]], %[[K]], %[[V]] scale(2.500000e-01) : tensor<4x9x16xf32>, tensor<4x11x16xf32>, tensor<4x11x16xf32> -> tensor<4x9x16xf32>
// CHECK-NEXT: return %[[O]]
func.func @batch_matmul_scaled_q_no_max(%q: tensor<4x9x16xf32>, %k: tensor<4x11x16xf32>, %v: tensor<4x11x16xf32>) -> tensor<4x9x16xf32> {
  %zero = arith.constant 0.0 : f32
  %quarter = arith.constant 0.25 : f32
  %qe = tensor.empty() : tensor<4x9x16xf32>
  %qs = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%q : tensor<4x9x16xf32>) outs(%qe : tensor<4x9x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %quarter, %a : f32
    linalg.yield %r : f32
  } -> tensor<4x9x16xf32>
  %s0 = tensor.empty() : tensor<4x9x11xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<4x9x11xf32>) -> tensor<4x9x11xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%qs, %k : tensor<4x9x16xf32>, tensor<4x11x16xf32>) outs(%sz : tensor<4x9x11xf32>) -> tensor<4x9x11xf32>
  %r0 = tensor.empty() : tensor<4x9xf32>
  %li = linalg.fill ins(%zero : f32) outs(%r0 : tensor<4x9xf32>) -> tensor<4x9xf32>
  %l = linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s : tensor<4x9x11xf32>) outs(%li : tensor<4x9xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %e = math.exp %a : f32
    %r = arith.addf %acc, %e : f32
    linalg.yield %r : f32
  } -> tensor<4x9xf32>
  %p = linalg.generic {indexing_maps = [#id3, #row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %l : tensor<4x9x11xf32>, tensor<4x9xf32>) outs(%s0 : tensor<4x9x11xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %e = math.exp %a : f32
    %r = arith.divf %e, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x9x11xf32>
  %o0 = tensor.empty() : tensor<4x9x16xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<4x9x16xf32>) -> tensor<4x9x16xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<4x9x11xf32>, tensor<4x11x16xf32>) outs(%oz : tensor<4x9x16xf32>) -> tensor<4x9x16xf32>
  return %o : tensor<4x9x16xf32>
}

// -----

// Attention inside an scf.for whose tensor iter_arg is q: raised in the
// loop body. (raise-linalg-named.test runs it through fa-to-cpu, whose
// deallocation keeps the loop-carried buffer alive with bufferization.clone,
// lowered to an alloc and a copy.)
// CHECK-LABEL: func.func @in_scf_for
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[X:.+]] = %{{.+}}) -> (tensor<6x4xf32>)
// CHECK-NEXT: %[[O:.+]] = fa.attention %[[X]], %{{.+}}, %{{.+}} scale(1.000000e+00) : tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT: scf.yield %[[O]]
func.func @in_scf_for(%q: tensor<6x4xf32>, %k: tensor<6x4xf32>, %v: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %s0 = tensor.empty() : tensor<6x6xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<6x6xf32>) -> tensor<6x6xf32>
  %o0 = tensor.empty() : tensor<6x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<6x4xf32>) -> tensor<6x4xf32>
  %r = scf.for %it = %c0 to %c3 step %c1 iter_args(%x = %q) -> tensor<6x4xf32> {
    %s = linalg.matmul indexing_maps = [affine_map<(i, j, d) -> (i, d)>, affine_map<(i, j, d) -> (j, d)>, affine_map<(i, j, d) -> (i, j)>]
        ins(%x, %k : tensor<6x4xf32>, tensor<6x4xf32>) outs(%sz : tensor<6x6xf32>) -> tensor<6x6xf32>
    %p = linalg.softmax dimension(1) ins(%s : tensor<6x6xf32>) outs(%s0 : tensor<6x6xf32>) -> tensor<6x6xf32>
    %o = linalg.matmul ins(%p, %v : tensor<6x6xf32>, tensor<6x4xf32>) outs(%oz : tensor<6x4xf32>) -> tensor<6x4xf32>
    scf.yield %o : tensor<6x4xf32>
  }
  return %r : tensor<6x4xf32>
}

// -----

// GQA as models write it: k and v with 3 heads repeated over groups of 2
// query heads (a broadcast generic / linalg.broadcast to [B, 3, 2, T, D],
// collapsed to [B, 6, T, D]). fa.attention takes them as the products read
// them (the broadcast materialized, as in the original); the head dim
// split by the collapse is split in the op too.

// CHECK-LABEL: func.func @gqa_broadcast_kv
// CHECK-SAME: (%[[Q:.+]]: tensor<2x6x8x4xf32>, %[[K:.+]]: tensor<2x3x8x4xf32>, %[[V:.+]]: tensor<2x3x8x4xf32>)
// CHECK-DAG: %[[KB:.+]] = linalg.generic {{.*}} ins(%[[K]] : tensor<2x3x8x4xf32>)
// CHECK-DAG: %[[VB:.+]] = linalg.broadcast ins(%[[V]] : tensor<2x3x8x4xf32>)
// CHECK: %[[O:.+]] = fa.attention %{{.+}}, %{{.+}}, %{{.+}} scale(5.000000e-01) : tensor<2x3x2x8x4xf32>, tensor<2x3x2x8x4xf32>, tensor<2x3x2x8x4xf32> -> tensor<2x3x2x8x4xf32>
// CHECK: %[[OC:.+]] = tensor.collapse_shape %[[O]] {{\[\[}}0], [1, 2], [3], [4]] : tensor<2x3x2x8x4xf32> into tensor<2x6x8x4xf32>
// CHECK: return %[[OC]]

#gq4 = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#gk4 = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#gs4 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#gp4 = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#gv4 = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#go4 = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
func.func @gqa_broadcast_kv(%q: tensor<2x6x8x4xf32>, %k: tensor<2x3x8x4xf32>, %v: tensor<2x3x8x4xf32>) -> tensor<2x6x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %ke0 = tensor.empty() : tensor<2x3x2x8x4xf32>
  %ke = linalg.generic {indexing_maps = [affine_map<(b, h, g, t, d) -> (b, h, t, d)>, affine_map<(b, h, g, t, d) -> (b, h, g, t, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%k : tensor<2x3x8x4xf32>) outs(%ke0 : tensor<2x3x2x8x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x3x2x8x4xf32>
  %kc = tensor.collapse_shape %ke [[0], [1, 2], [3], [4]] : tensor<2x3x2x8x4xf32> into tensor<2x6x8x4xf32>
  %ve = linalg.broadcast ins(%v : tensor<2x3x8x4xf32>) outs(%ke0 : tensor<2x3x2x8x4xf32>) dimensions = [2]
  %vc = tensor.collapse_shape %ve [[0], [1, 2], [3], [4]] : tensor<2x3x2x8x4xf32> into tensor<2x6x8x4xf32>
  %s0 = tensor.empty() : tensor<2x6x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x6x8x8xf32>) -> tensor<2x6x8x8xf32>
  %s = linalg.generic {indexing_maps = [#gq4, #gk4, #gs4], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kc : tensor<2x6x8x4xf32>, tensor<2x6x8x4xf32>) outs(%sz : tensor<2x6x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x6x8x8xf32>
  %sc = linalg.generic {indexing_maps = [affine_map<(b,h,i,j)->(b,h,i,j)>, affine_map<(b,h,i,j)->(b,h,i,j)>], iterator_types = ["parallel","parallel","parallel","parallel"]} ins(%s : tensor<2x6x8x8xf32>) outs(%s0 : tensor<2x6x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %half : f32
    linalg.yield %r : f32
  } -> tensor<2x6x8x8xf32>
  %p = linalg.softmax dimension(3) ins(%sc : tensor<2x6x8x8xf32>) outs(%s0 : tensor<2x6x8x8xf32>) -> tensor<2x6x8x8xf32>
  %o0 = tensor.empty() : tensor<2x6x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x6x8x4xf32>) -> tensor<2x6x8x4xf32>
  %o = linalg.generic {indexing_maps = [#gp4, #gv4, #go4], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %vc : tensor<2x6x8x8xf32>, tensor<2x6x8x4xf32>) outs(%oz : tensor<2x6x8x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x6x8x4xf32>
  return %o : tensor<2x6x8x4xf32>
}

// -----

// MQA as a fused product reads it: k and v hold no head dim, the products'
// indexing maps broadcast them over the query heads (elementwise fusion
// folds a linalg.broadcast into the product this way). The rewrite
// materializes the broadcast (its sizes from q) and passes the result.

// CHECK-DAG: #[[BMAP:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
// CHECK-LABEL: func.func @mqa_kv_broadcast_map
// CHECK-SAME: (%[[Q:.+]]: tensor<2x6x8x4xf32>, %[[K:.+]]: tensor<2x8x4xf32>, %[[V:.+]]: tensor<2x8x4xf32>)
// CHECK-DAG: %[[KE:.+]] = tensor.expand_shape %[[K]] {{\[\[}}0], [1, 2], [3]] output_shape [2, 1, 8, 4]
// CHECK-DAG: %[[VE:.+]] = tensor.expand_shape %[[V]] {{\[\[}}0], [1, 2], [3]] output_shape [2, 1, 8, 4]
// CHECK-DAG: %[[KB:.+]] = linalg.generic {indexing_maps = [#[[BMAP]], {{.+}}]{{.*}} ins(%[[KE]] : tensor<2x1x8x4xf32>) outs(%{{.+}} : tensor<2x6x8x4xf32>)
// CHECK-DAG: %[[VB:.+]] = linalg.generic {indexing_maps = [#[[BMAP]], {{.+}}]{{.*}} ins(%[[VE]] : tensor<2x1x8x4xf32>) outs(%{{.+}} : tensor<2x6x8x4xf32>)
// CHECK: %[[O:.+]] = fa.attention %[[Q]], %[[KB]], %[[VB]] scale(5.000000e-01) : tensor<2x6x8x4xf32>, tensor<2x6x8x4xf32>, tensor<2x6x8x4xf32> -> tensor<2x6x8x4xf32>
// CHECK-NOT: linalg.softmax
// CHECK: return %[[O]]
func.func @mqa_kv_broadcast_map(%q: tensor<2x6x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x6x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %s0 = tensor.empty() : tensor<2x6x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x6x8x8xf32>) -> tensor<2x6x8x8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, h, i, d)>, affine_map<(b, h, i, j, d) -> (b, j, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x6x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x6x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x6x8x8xf32>
  %sc = linalg.generic {indexing_maps = [affine_map<(b,h,i,j)->(b,h,i,j)>, affine_map<(b,h,i,j)->(b,h,i,j)>], iterator_types = ["parallel","parallel","parallel","parallel"]} ins(%s : tensor<2x6x8x8xf32>) outs(%s0 : tensor<2x6x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %half : f32
    linalg.yield %r : f32
  } -> tensor<2x6x8x8xf32>
  %p = linalg.softmax dimension(3) ins(%sc : tensor<2x6x8x8xf32>) outs(%s0 : tensor<2x6x8x8xf32>) -> tensor<2x6x8x8xf32>
  %o0 = tensor.empty() : tensor<2x6x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x6x8x4xf32>) -> tensor<2x6x8x4xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, i, e, j) -> (b, h, i, j)>, affine_map<(b, h, i, e, j) -> (b, j, e)>, affine_map<(b, h, i, e, j) -> (b, h, i, e)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x6x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x6x8x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x6x8x4xf32>
  return %o : tensor<2x6x8x4xf32>
}

// -----

// GQA with the groups as their own dim: q [B, Hkv, G, T, D], k and v
// [B, Hkv, T, D] read without the group dim by the products' maps. k and
// v are broadcast over the groups (the group count from q); o keeps q's
// layout.

// CHECK-DAG: #[[GMAP:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, 0, d3, d4)>
// CHECK-LABEL: func.func @gqa_group_broadcast_map
// CHECK-SAME: (%[[Q:.+]]: tensor<2x3x2x8x4xf32>, %[[K:.+]]: tensor<2x3x8x4xf32>, %[[V:.+]]: tensor<2x3x8x4xf32>)
// CHECK-DAG: %[[KB:.+]] = linalg.generic {indexing_maps = [#[[GMAP]], {{.+}}]{{.*}} outs(%{{.+}} : tensor<2x3x2x8x4xf32>)
// CHECK-DAG: %[[VB:.+]] = linalg.generic {indexing_maps = [#[[GMAP]], {{.+}}]{{.*}} outs(%{{.+}} : tensor<2x3x2x8x4xf32>)
// CHECK: %[[O:.+]] = fa.attention %[[Q]], %[[KB]], %[[VB]] scale(1.000000e+00) : tensor<2x3x2x8x4xf32>, tensor<2x3x2x8x4xf32>, tensor<2x3x2x8x4xf32> -> tensor<2x3x2x8x4xf32>
// CHECK: return %[[O]]
func.func @gqa_group_broadcast_map(%q: tensor<2x3x2x8x4xf32>, %k: tensor<2x3x8x4xf32>, %v: tensor<2x3x8x4xf32>) -> tensor<2x3x2x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<2x3x2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x3x2x8x8xf32>) -> tensor<2x3x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, g, i, j, d) -> (b, h, g, i, d)>, affine_map<(b, h, g, i, j, d) -> (b, h, j, d)>, affine_map<(b, h, g, i, j, d) -> (b, h, g, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x3x2x8x4xf32>, tensor<2x3x8x4xf32>) outs(%sz : tensor<2x3x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x3x2x8x8xf32>
  %p = linalg.softmax dimension(4) ins(%s : tensor<2x3x2x8x8xf32>) outs(%s0 : tensor<2x3x2x8x8xf32>) -> tensor<2x3x2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x3x2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x3x2x8x4xf32>) -> tensor<2x3x2x8x4xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, g, i, e, j) -> (b, h, g, i, j)>, affine_map<(b, h, g, i, e, j) -> (b, h, j, e)>, affine_map<(b, h, g, i, e, j) -> (b, h, g, i, e)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x3x2x8x8xf32>, tensor<2x3x8x4xf32>) outs(%oz : tensor<2x3x2x8x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x3x2x8x4xf32>
  return %o : tensor<2x3x2x8x4xf32>
}

// -----

// One query set shared by the batch (q [Tq, D] read by a broadcast map,
// k and v [B, Tk, D]): q is broadcast over the batch, the batch size from
// k.

// CHECK-LABEL: func.func @shared_q_broadcast_map
// CHECK-SAME: (%[[Q:.+]]: tensor<5x4xf32>, %[[K:.+]]: tensor<2x8x4xf32>, %[[V:.+]]: tensor<2x8x4xf32>)
// CHECK: %[[QE:.+]] = tensor.expand_shape %[[Q]] {{\[\[}}0, 1], [2]] output_shape [1, 5, 4]
// CHECK: %[[QB:.+]] = linalg.generic {{.*}} ins(%[[QE]] : tensor<1x5x4xf32>) outs(%{{.+}} : tensor<2x5x4xf32>)
// CHECK: %[[O:.+]] = fa.attention %[[QB]], %[[K]], %[[V]] scale(1.000000e+00) : tensor<2x5x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32> -> tensor<2x5x4xf32>
// CHECK: return %[[O]]
func.func @shared_q_broadcast_map(%q: tensor<5x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x5x4xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<2x5x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, i, j, d) -> (i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<5x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x5x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x5x8xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<2x5x8xf32>) outs(%s0 : tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
  %o0 = tensor.empty() : tensor<2x5x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x5x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
  return %o : tensor<2x5x4xf32>
}

// -----

// MQA with the output written [B, T, H, Dv] (the attention's transpose(1, 2)
// fused into the P V product's output map): of the dims that P holds and v
// does not (h and i), the query axis is the one right before the key axis
// in P's layout (i, Tq = 5), not the last of the output (h). k and v are
// broadcast over the heads, and o is transposed to the product's layout.

// CHECK-LABEL: func.func @mqa_output_bthd
// CHECK: %[[O:.+]] = fa.attention %arg0, %{{.+}}, %{{.+}} scale(5.000000e-01) : tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x3xf32> -> tensor<2x3x5x3xf32>
// CHECK: %[[T:.+]] = linalg.transpose ins(%[[O]] : tensor<2x3x5x3xf32>) outs(%{{.+}} : tensor<2x5x3x3xf32>) permutation = [0, 2, 1, 3]
// CHECK: return %[[T]]
func.func @mqa_output_bthd(%q: tensor<2x3x5x4xf32>, %k: tensor<2x7x4xf32>, %v: tensor<2x7x3xf32>) -> tensor<2x5x3x3xf32> {
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
  %t8 = linalg.softmax dimension(3) ins(%t6 : tensor<2x3x5x7xf32>) outs(%t7 : tensor<2x3x5x7xf32>) -> tensor<2x3x5x7xf32>
  %t9 = tensor.empty() : tensor<2x5x3x3xf32>
  %t10 = arith.constant 0.0 : f32
  %t11 = linalg.fill ins(%t10 : f32) outs(%t9 : tensor<2x5x3x3xf32>) -> tensor<2x5x3x3xf32>
  %t12 = linalg.generic {indexing_maps = [affine_map<(b, i, h, e, j) -> (b, h, i, j)>, affine_map<(b, i, h, e, j) -> (b, j, e)>, affine_map<(b, i, h, e, j) -> (b, i, h, e)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%t8, %v : tensor<2x3x5x7xf32>, tensor<2x7x3xf32>) outs(%t11 : tensor<2x5x3x3xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x5x3x3xf32>
  return %t12 : tensor<2x5x3x3xf32>
}

// -----

// The scores laid out [B, T, H, Tk], v broadcast over the heads, k holding
// them: h sits right before the key axis in P's layout, but k holds it, so
// it is not the query axis (the first product would not be q k^T); the next
// choice, i, is.

// CHECK-LABEL: func.func @v_broadcast_scores_bthk
// CHECK: fa.attention %arg0, %arg1, %{{.+}} scale(1.000000e+00) : tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x3xf32> -> tensor<2x3x5x3xf32>
func.func @v_broadcast_scores_bthk(%q: tensor<2x3x5x4xf32>, %k: tensor<2x3x7x4xf32>, %v: tensor<2x7x3xf32>) -> tensor<2x5x3x3xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<2x5x3x7xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x5x3x7xf32>) -> tensor<2x5x3x7xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, h, i, d)>, affine_map<(b, h, i, j, d) -> (b, h, j, d)>, affine_map<(b, h, i, j, d) -> (b, i, h, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>) outs(%sz : tensor<2x5x3x7xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x5x3x7xf32>
  %p = linalg.softmax dimension(3) ins(%s : tensor<2x5x3x7xf32>) outs(%s0 : tensor<2x5x3x7xf32>) -> tensor<2x5x3x7xf32>
  %o0 = tensor.empty() : tensor<2x5x3x3xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x5x3x3xf32>) -> tensor<2x5x3x3xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b, i, h, e, j) -> (b, i, h, j)>, affine_map<(b, i, h, e, j) -> (b, j, e)>, affine_map<(b, i, h, e, j) -> (b, i, h, e)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x5x3x7xf32>, tensor<2x7x3xf32>) outs(%oz : tensor<2x5x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x5x3x3xf32>
  return %o : tensor<2x5x3x3xf32>
}

// -----

// q and k split their batch dim 6 as 2x3 and 3x2 before the collapse. The
// products pair flat batch index n of both collapsed tensors; k is taken
// as the product reads it (flat) and expanded with q's split, which pairs
// the same rows.

// CHECK-LABEL: func.func @batch_split_sizes_differ
// CHECK: %[[KC:.+]] = tensor.collapse_shape %arg1 {{\[\[}}0, 1], [2], [3]] : tensor<3x2x8x4xf32> into tensor<6x8x4xf32>
// CHECK: %[[KE:.+]] = tensor.expand_shape %[[KC]] {{\[\[}}0, 1], [2], [3]] output_shape [2, 3, 8, 4]
// CHECK: fa.attention %arg0, %[[KE]], %{{.+}} scale(1.000000e+00) : tensor<2x3x8x4xf32>, tensor<2x3x8x4xf32>, tensor<2x3x8x4xf32> -> tensor<2x3x8x4xf32>
func.func @batch_split_sizes_differ(%q: tensor<2x3x8x4xf32>, %k: tensor<3x2x8x4xf32>, %v: tensor<6x8x4xf32>) -> tensor<6x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x3x8x4xf32> into tensor<6x8x4xf32>
  %kc = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<3x2x8x4xf32> into tensor<6x8x4xf32>
  %s0 = tensor.empty() : tensor<6x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<6x8x8xf32>) -> tensor<6x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%qc, %kc : tensor<6x8x4xf32>, tensor<6x8x4xf32>) outs(%sz : tensor<6x8x8xf32>) -> tensor<6x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<6x8x8xf32>) outs(%s0 : tensor<6x8x8xf32>) -> tensor<6x8x8xf32>
  %o0 = tensor.empty() : tensor<6x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<6x8x4xf32>) -> tensor<6x8x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<6x8x8xf32>, tensor<6x8x4xf32>) outs(%oz : tensor<6x8x4xf32>) -> tensor<6x8x4xf32>
  return %o : tensor<6x8x4xf32>
}

// -----

// The mask splits the batch dim as 3x2 where q, k and v split it as 2x3:
// the mask's split (met first, in the scores) is the op's; q, k and v are
// taken flat and expanded to it.

// CHECK-LABEL: func.func @mask_split_sizes_differ
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%arg3 : tensor<3x2x8x8xf32>) scale(1.000000e+00) : tensor<3x2x8x4xf32>, tensor<3x2x8x4xf32>, tensor<3x2x8x4xf32> -> tensor<3x2x8x4xf32>
func.func @mask_split_sizes_differ(%q: tensor<2x3x8x4xf32>, %k: tensor<2x3x8x4xf32>, %v: tensor<2x3x8x4xf32>, %m: tensor<3x2x8x8xf32>) -> tensor<6x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x3x8x4xf32> into tensor<6x8x4xf32>
  %kc = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<2x3x8x4xf32> into tensor<6x8x4xf32>
  %vc = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<2x3x8x4xf32> into tensor<6x8x4xf32>
  %mc = tensor.collapse_shape %m [[0, 1], [2], [3]] : tensor<3x2x8x8xf32> into tensor<6x8x8xf32>
  %s0 = tensor.empty() : tensor<6x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<6x8x8xf32>) -> tensor<6x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%qc, %kc : tensor<6x8x4xf32>, tensor<6x8x4xf32>) outs(%sz : tensor<6x8x8xf32>) -> tensor<6x8x8xf32>
  %sm = linalg.add ins(%s, %mc : tensor<6x8x8xf32>, tensor<6x8x8xf32>) outs(%s0 : tensor<6x8x8xf32>) -> tensor<6x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<6x8x8xf32>) outs(%s0 : tensor<6x8x8xf32>) -> tensor<6x8x8xf32>
  %o0 = tensor.empty() : tensor<6x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<6x8x4xf32>) -> tensor<6x8x4xf32>
  %o = linalg.batch_matmul ins(%p, %vc : tensor<6x8x8xf32>, tensor<6x8x4xf32>) outs(%oz : tensor<6x8x4xf32>) -> tensor<6x8x4xf32>
  return %o : tensor<6x8x4xf32>
}

// -----

// GQA after --canonicalize: the repeat's collapse [B, Hkv, G] -> [B, H] and
// the product's [B, H] -> [B * H] are one collapse of k and v, while q is
// collapsed from [B, H]. k and v are taken as the products read them and
// expanded with q's split.

// CHECK-LABEL: func.func @gqa_canonicalized_collapse
// CHECK: fa.attention %arg0, %{{.+}}, %{{.+}} scale(1.000000e+00) : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
func.func @gqa_canonicalized_collapse(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e5 = tensor.empty() : tensor<2x2x2x8x16xf32>
  %kb = linalg.broadcast ins(%k : tensor<2x2x8x16xf32>) outs(%e5 : tensor<2x2x2x8x16xf32>) dimensions = [2]
  %vb = linalg.broadcast ins(%v : tensor<2x2x8x16xf32>) outs(%e5 : tensor<2x2x2x8x16xf32>) dimensions = [2]
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x4x8x16xf32> into tensor<8x8x16xf32>
  %kc = tensor.collapse_shape %kb [[0, 1, 2], [3], [4]] : tensor<2x2x2x8x16xf32> into tensor<8x8x16xf32>
  %vc = tensor.collapse_shape %vb [[0, 1, 2], [3], [4]] : tensor<2x2x2x8x16xf32> into tensor<8x8x16xf32>
  %s0 = tensor.empty() : tensor<8x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%qc, %kc : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%sz : tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<8x8x8xf32>) outs(%s0 : tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  %o0 = tensor.empty() : tensor<8x8x16xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<8x8x16xf32>) -> tensor<8x8x16xf32>
  %o = linalg.batch_matmul ins(%p, %vc : tensor<8x8x8xf32>, tensor<8x8x16xf32>) outs(%oz : tensor<8x8x16xf32>) -> tensor<8x8x16xf32>
  %oe = tensor.expand_shape %o [[0, 1], [2], [3]] output_shape [2, 4, 8, 16] : tensor<8x8x16xf32> into tensor<2x4x8x16xf32>
  return %oe : tensor<2x4x8x16xf32>
}

// -----

// An unused second product of the probabilities after the P V product (a
// dead op a frontend left behind): it does not hold the chain and dies with
// it; the pass, which listed it as a product, skips it.

// CHECK-LABEL: func.func @dead_product_after_pv
// CHECK-NEXT: %[[O:.+]] = fa.attention %arg0, %arg1, %arg2 scale(1.000000e+00)
// CHECK-NEXT: return %[[O]]
func.func @dead_product_after_pv(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %dead = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}
