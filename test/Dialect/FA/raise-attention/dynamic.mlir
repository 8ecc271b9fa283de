// RUN: fa-opt %s --fa-raise-attention --split-input-file | FileCheck %s

// Dynamic batch and sequence dims: [?, ?, D] through collapse/expand and a
// named softmax; the reshape sizes come from tensor.dim.

// CHECK-LABEL: func.func @dynamic_batch_seq
// CHECK-SAME: (%[[Q:.+]]: tensor<?x4x?x32xf32>, %[[K:.+]]: tensor<?x4x?x32xf32>, %[[V:.+]]: tensor<?x4x?x32xf32>)
// CHECK: %[[O:.+]] = fa.attention %[[Q]], %[[K]], %[[V]] scale(0.17677{{[0-9]+}}) : tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32> -> tensor<?x4x?x32xf32>
// CHECK: tensor.collapse_shape %[[O]] {{\[\[}}0, 1], [2], [3]] : tensor<?x4x?x32xf32> into tensor<?x?x32xf32>
// CHECK-NOT: linalg.softmax
// The CPU equivalence check (test/Integration/CPU/raise-dynamic.test) runs
// it at batch 3, Tq 45, Tk 61:
// EQUIV-SHAPES: @dynamic_batch_seq(3x4x45x32, 3x4x61x32, 3x4x61x32) -> (12x45x32)
func.func @dynamic_batch_seq(%q: tensor<?x4x?x32xf32>, %k: tensor<?x4x?x32xf32>, %v: tensor<?x4x?x32xf32>) -> tensor<?x?x32xf32> {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.176776692 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<?x4x?x32xf32> into tensor<?x?x32xf32>
  %kc = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<?x4x?x32xf32> into tensor<?x?x32xf32>
  %vc = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<?x4x?x32xf32> into tensor<?x?x32xf32>
  %bh = tensor.dim %qc, %c0 : tensor<?x?x32xf32>
  %tq = tensor.dim %qc, %c1 : tensor<?x?x32xf32>
  %tk = tensor.dim %kc, %c1 : tensor<?x?x32xf32>
  %s0 = tensor.empty(%bh, %tq, %tk) : tensor<?x?x?xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%qc, %kc : tensor<?x?x32xf32>, tensor<?x?x32xf32>) outs(%sz : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %ss = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<?x?x?xf32>) outs(%s0 : tensor<?x?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %scale : f32
    linalg.yield %r : f32
  } -> tensor<?x?x?xf32>
  %p = linalg.softmax dimension(2) ins(%ss : tensor<?x?x?xf32>) outs(%s0 : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %o0 = tensor.empty(%bh, %tq) : tensor<?x?x32xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %o = linalg.batch_matmul ins(%p, %vc : tensor<?x?x?xf32>, tensor<?x?x32xf32>) outs(%oz : tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  return %o : tensor<?x?x32xf32>
}

// -----

// Dynamic shapes as TorchToLinalg writes them: each tensor.empty is sized
// by a tensor.dim of the previous result (here the scores'). The shape
// queries do not hold the chain: they are rewritten in terms of the
// operands' sizes and the chain dies.

// CHECK-LABEL: func.func @tensor_dim_of_scores
// CHECK-NEXT: %[[O:.+]] = fa.attention %arg0, %arg1, %arg2 scale(1.000000e+00) : tensor<?x8x4xf32>, tensor<?x8x4xf32>, tensor<?x8x4xf32> -> tensor<?x8x4xf32>
// CHECK-NEXT: return %[[O]]
// EQUIV-SHAPES: @tensor_dim_of_scores(3x8x4, 3x8x4, 3x8x4) -> (3x8x4)
func.func @tensor_dim_of_scores(%q: tensor<?x8x4xf32>, %k: tensor<?x8x4xf32>, %v: tensor<?x8x4xf32>) -> tensor<?x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %b = tensor.dim %q, %c0 : tensor<?x8x4xf32>
  %s0 = tensor.empty(%b) : tensor<?x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<?x8x8xf32>) -> tensor<?x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<?x8x4xf32>, tensor<?x8x4xf32>) outs(%sz : tensor<?x8x8xf32>) -> tensor<?x8x8xf32>
  %bs = tensor.dim %s, %c0 : tensor<?x8x8xf32>
  %p0 = tensor.empty(%bs) : tensor<?x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<?x8x8xf32>) outs(%p0 : tensor<?x8x8xf32>) -> tensor<?x8x8xf32>
  %o0 = tensor.empty(%b) : tensor<?x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<?x8x4xf32>) -> tensor<?x8x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<?x8x8xf32>, tensor<?x8x4xf32>) outs(%oz : tensor<?x8x4xf32>) -> tensor<?x8x4xf32>
  return %o : tensor<?x8x4xf32>
}

// -----

// An additive mask whose batch dim is dynamic (equal to q's): the op's mask
// keeps the dynamic dim, which the tiled code reads along q's batch unless
// it is 1 at run time.

// CHECK-LABEL: func.func @dynamic_mask_batch
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}} : tensor<?x8x8xf32>)
// EQUIV-SHAPES: @dynamic_mask_batch(3x8x4, 3x8x4, 3x8x4, 3x8x8) -> (3x8x4)
func.func @dynamic_mask_batch(%q: tensor<?x8x4xf32>, %k: tensor<?x8x4xf32>, %v: tensor<?x8x4xf32>, %mask: tensor<?x8x8xf32>) -> tensor<?x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %b = tensor.dim %q, %c0 : tensor<?x8x4xf32>
  %s0 = tensor.empty(%b) : tensor<?x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<?x8x8xf32>) -> tensor<?x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<?x8x4xf32>, tensor<?x8x4xf32>) outs(%sz : tensor<?x8x8xf32>) -> tensor<?x8x8xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %mask : tensor<?x8x8xf32>, tensor<?x8x8xf32>) outs(%s0 : tensor<?x8x8xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %r = arith.addf %a, %m : f32
    linalg.yield %r : f32
  } -> tensor<?x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<?x8x8xf32>) outs(%s0 : tensor<?x8x8xf32>) -> tensor<?x8x8xf32>
  %o0 = tensor.empty(%b) : tensor<?x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<?x8x4xf32>) -> tensor<?x8x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<?x8x8xf32>, tensor<?x8x4xf32>) outs(%oz : tensor<?x8x4xf32>) -> tensor<?x8x4xf32>
  return %o : tensor<?x8x4xf32>
}

// -----

// q splits the batch dim as ?x4, k as 4x?: nothing ties the two splits,
// so k is taken flat and expanded with q's split (flat index n pairs the
// same rows in both).

// CHECK-LABEL: func.func @batch_split_two_dynamic_parts
// CHECK: fa.attention %arg0, %{{.+}}, %arg2 scale({{.+}}) : tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32> -> tensor<?x4x?x32xf32>
// EQUIV-SHAPES: @batch_split_two_dynamic_parts(3x4x45x32, 4x3x61x32, 3x4x61x32) -> (12x45x32)
func.func @batch_split_two_dynamic_parts(%q: tensor<?x4x?x32xf32>, %k: tensor<4x?x?x32xf32>, %v: tensor<?x4x?x32xf32>) -> tensor<?x?x32xf32> {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.176776692 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<?x4x?x32xf32> into tensor<?x?x32xf32>
  %kc = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<4x?x?x32xf32> into tensor<?x?x32xf32>
  %vc = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<?x4x?x32xf32> into tensor<?x?x32xf32>
  %bh = tensor.dim %qc, %c0 : tensor<?x?x32xf32>
  %tq = tensor.dim %qc, %c1 : tensor<?x?x32xf32>
  %tk = tensor.dim %kc, %c1 : tensor<?x?x32xf32>
  %s0 = tensor.empty(%bh, %tq, %tk) : tensor<?x?x?xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%qc, %kc : tensor<?x?x32xf32>, tensor<?x?x32xf32>) outs(%sz : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %ss = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<?x?x?xf32>) outs(%s0 : tensor<?x?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %scale : f32
    linalg.yield %r : f32
  } -> tensor<?x?x?xf32>
  %p = linalg.softmax dimension(2) ins(%ss : tensor<?x?x?xf32>) outs(%s0 : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %o0 = tensor.empty(%bh, %tq) : tensor<?x?x32xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %o = linalg.batch_matmul ins(%p, %vc : tensor<?x?x?xf32>, tensor<?x?x32xf32>) outs(%oz : tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  return %o : tensor<?x?x32xf32>
}

// -----

// q's batch dim is collapsed from [?, 2, ?]; k and v come flat. Expanding
// k and v to two dynamic parts would need an expand_shape that upstream's
// CPU lowering crashes on; q is taken flat instead.

// CHECK-LABEL: func.func @batch_split_into_two_dynamic_parts
// CHECK: %[[QC:.+]] = tensor.collapse_shape %arg0
// CHECK: fa.attention %[[QC]], %{{.+}}, %{{.+}} scale({{.+}}) : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32> -> tensor<?x?x32xf32>
// EQUIV-SHAPES: @batch_split_into_two_dynamic_parts(3x2x2x45x32, 12x61x32, 12x61x32) -> (12x45x32)
func.func @batch_split_into_two_dynamic_parts(%q: tensor<?x2x?x?x32xf32>, %k: tensor<?x?x32xf32>, %v: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.176776692 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %qc = tensor.collapse_shape %q [[0, 1, 2], [3], [4]] : tensor<?x2x?x?x32xf32> into tensor<?x?x32xf32>
  %kc = tensor.collapse_shape %k [[0], [1], [2]] : tensor<?x?x32xf32> into tensor<?x?x32xf32>
  %vc = tensor.collapse_shape %v [[0], [1], [2]] : tensor<?x?x32xf32> into tensor<?x?x32xf32>
  %bh = tensor.dim %qc, %c0 : tensor<?x?x32xf32>
  %tq = tensor.dim %qc, %c1 : tensor<?x?x32xf32>
  %tk = tensor.dim %kc, %c1 : tensor<?x?x32xf32>
  %s0 = tensor.empty(%bh, %tq, %tk) : tensor<?x?x?xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%qc, %kc : tensor<?x?x32xf32>, tensor<?x?x32xf32>) outs(%sz : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %ss = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<?x?x?xf32>) outs(%s0 : tensor<?x?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %scale : f32
    linalg.yield %r : f32
  } -> tensor<?x?x?xf32>
  %p = linalg.softmax dimension(2) ins(%ss : tensor<?x?x?xf32>) outs(%s0 : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %o0 = tensor.empty(%bh, %tq) : tensor<?x?x32xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %o = linalg.batch_matmul ins(%p, %vc : tensor<?x?x?xf32>, tensor<?x?x32xf32>) outs(%oz : tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  return %o : tensor<?x?x32xf32>
}
