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

// -----

// q's batch dim is split as static 3x2; k is whole and dynamic: it is cast
// to the static 6 before the expand_shape to 3x2.

// CHECK-LABEL: func.func @h01_q_static_split_k_dynamic_whole
// CHECK: tensor.cast
// CHECK: fa.attention
// EQUIV-SHAPES: @h01_q_static_split_k_dynamic_whole(3x2x5x4, 6x7x4, 6x7x3) -> (6x5x3)
func.func @h01_q_static_split_k_dynamic_whole(%q: tensor<3x2x5x4xf32>, %k: tensor<?x7x4xf32>, %v: tensor<?x7x3xf32>) -> tensor<?x5x3xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<3x2x5x4xf32> into tensor<6x5x4xf32>
  %b = tensor.dim %k, %c0 : tensor<?x7x4xf32>
  %s0 = tensor.empty(%b) : tensor<?x5x7xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<?x5x7xf32>) -> tensor<?x5x7xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%qc, %k : tensor<6x5x4xf32>, tensor<?x7x4xf32>) outs(%sz : tensor<?x5x7xf32>) -> tensor<?x5x7xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<?x5x7xf32>) outs(%s0 : tensor<?x5x7xf32>) -> tensor<?x5x7xf32>
  %o0 = tensor.empty(%b) : tensor<?x5x3xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<?x5x3xf32>) -> tensor<?x5x3xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<?x5x7xf32>, tensor<?x7x3xf32>) outs(%oz : tensor<?x5x3xf32>) -> tensor<?x5x3xf32>
  return %o : tensor<?x5x3xf32>
}

// -----

// q's batch dim is split ?x3; k is collapsed from a static 3x2 (another
// split: taken flat) and cast to a dynamic dim before the expand to ?x3.

// CHECK-LABEL: func.func @h02_q_dynamic_split_k_static_flat
// CHECK: tensor.cast
// CHECK: fa.attention
// EQUIV-SHAPES: @h02_q_dynamic_split_k_static_flat(2x3x5x4, 3x2x7x4, 6x7x3) -> (6x5x3)
func.func @h02_q_dynamic_split_k_static_flat(%q: tensor<?x3x5x4xf32>, %k: tensor<3x2x7x4xf32>, %v: tensor<6x7x3xf32>) -> tensor<6x5x3xf32> {
  %zero = arith.constant 0.0 : f32
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<?x3x5x4xf32> into tensor<?x5x4xf32>
  %kc = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<3x2x7x4xf32> into tensor<6x7x4xf32>
  %s0 = tensor.empty() : tensor<6x5x7xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<6x5x7xf32>) -> tensor<6x5x7xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%qc, %kc : tensor<?x5x4xf32>, tensor<6x7x4xf32>) outs(%sz : tensor<6x5x7xf32>) -> tensor<6x5x7xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<6x5x7xf32>) outs(%s0 : tensor<6x5x7xf32>) -> tensor<6x5x7xf32>
  %o0 = tensor.empty() : tensor<6x5x3xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<6x5x3xf32>) -> tensor<6x5x3xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<6x5x7xf32>, tensor<6x7x3xf32>) outs(%oz : tensor<6x5x3xf32>) -> tensor<6x5x3xf32>
  return %o : tensor<6x5x3xf32>
}

// -----

// As above, with q's dynamic dim coming through a tensor.cast.

// CHECK-LABEL: func.func @g01_cast_dyn_split_static_k
// CHECK: tensor.cast
// CHECK: fa.attention
// EQUIV-SHAPES: @g01_cast_dyn_split_static_k(2x3x5x4, 3x2x7x4, 6x7x3) -> (6x5x3)
func.func @g01_cast_dyn_split_static_k(%q: tensor<?x3x5x4xf32>, %k: tensor<3x2x7x4xf32>, %v: tensor<6x7x3xf32>) -> tensor<6x5x3xf32> {
  %zero = arith.constant 0.0 : f32
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<?x3x5x4xf32> into tensor<?x5x4xf32>
  %qs = tensor.cast %qc : tensor<?x5x4xf32> to tensor<6x5x4xf32>
  %kc = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<3x2x7x4xf32> into tensor<6x7x4xf32>
  %s0 = tensor.empty() : tensor<6x5x7xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<6x5x7xf32>) -> tensor<6x5x7xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%qs, %kc : tensor<6x5x4xf32>, tensor<6x7x4xf32>) outs(%sz : tensor<6x5x7xf32>) -> tensor<6x5x7xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<6x5x7xf32>) outs(%s0 : tensor<6x5x7xf32>) -> tensor<6x5x7xf32>
  %o0 = tensor.empty() : tensor<6x5x3xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<6x5x3xf32>) -> tensor<6x5x3xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<6x5x7xf32>, tensor<6x7x3xf32>) outs(%oz : tensor<6x5x3xf32>) -> tensor<6x5x3xf32>
  return %o : tensor<6x5x3xf32>
}

// -----

// q, k, v split the batch dim as static 3x2; the additive mask's batch dim
// is whole and dynamic: cast to 6, then expanded to 3x2.

// CHECK-LABEL: func.func @h04_mask_dynamic_whole_static_split
// CHECK: tensor.cast
// CHECK: fa.attention
// EQUIV-SHAPES: @h04_mask_dynamic_whole_static_split(3x2x5x4, 3x2x7x4, 3x2x7x3, 6x5x7) -> (6x5x3)
func.func @h04_mask_dynamic_whole_static_split(%q: tensor<3x2x5x4xf32>, %k: tensor<3x2x7x4xf32>, %v: tensor<3x2x7x3xf32>, %m: tensor<?x5x7xf32>) -> tensor<6x5x3xf32> {
  %zero = arith.constant 0.0 : f32
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<3x2x5x4xf32> into tensor<6x5x4xf32>
  %kc = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<3x2x7x4xf32> into tensor<6x7x4xf32>
  %vc = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<3x2x7x3xf32> into tensor<6x7x3xf32>
  %s0 = tensor.empty() : tensor<6x5x7xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<6x5x7xf32>) -> tensor<6x5x7xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%qc, %kc : tensor<6x5x4xf32>, tensor<6x7x4xf32>) outs(%sz : tensor<6x5x7xf32>) -> tensor<6x5x7xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %m : tensor<6x5x7xf32>, tensor<?x5x7xf32>) outs(%s0 : tensor<6x5x7xf32>) {
  ^bb0(%a: f32, %mm: f32, %o: f32):
    %r = arith.addf %a, %mm : f32
    linalg.yield %r : f32
  } -> tensor<6x5x7xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<6x5x7xf32>) outs(%s0 : tensor<6x5x7xf32>) -> tensor<6x5x7xf32>
  %o0 = tensor.empty() : tensor<6x5x3xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<6x5x3xf32>) -> tensor<6x5x3xf32>
  %o = linalg.batch_matmul ins(%p, %vc : tensor<6x5x7xf32>, tensor<6x7x3xf32>) outs(%oz : tensor<6x5x3xf32>) -> tensor<6x5x3xf32>
  return %o : tensor<6x5x3xf32>
}

// -----

// MQA with dynamic shapes: k and v [?, ?, D] read by broadcast maps over
// q's dynamic head dim. The broadcast takes the head count from q
// (tensor.dim of q's dim 1).

// EQUIV-SHAPES: @mqa_broadcast_map_dynamic(2x3x9x4, 2x11x4, 2x11x4) -> (2x3x9x4)
// CHECK-LABEL: func.func @mqa_broadcast_map_dynamic
// CHECK-SAME: (%[[Q:.+]]: tensor<?x?x?x4xf32>, %[[K:.+]]: tensor<?x?x4xf32>, %[[V:.+]]: tensor<?x?x4xf32>)
// CHECK-DAG: %[[H:.+]] = tensor.dim %[[Q]], %{{.+}} : tensor<?x?x?x4xf32>
// CHECK-DAG: %[[KE:.+]] = tensor.empty(%{{.+}}, %[[H]], %{{.+}}) : tensor<?x?x?x4xf32>
// CHECK-DAG: %[[KB:.+]] = linalg.generic {{.*}} outs(%[[KE]] : tensor<?x?x?x4xf32>)
// CHECK: fa.attention %[[Q]], %[[KB]], %{{.+}} scale(5.000000e-01) : tensor<?x?x?x4xf32>, tensor<?x?x?x4xf32>, tensor<?x?x?x4xf32> -> tensor<?x?x?x4xf32>
// CHECK-NOT: linalg.softmax
func.func @mqa_broadcast_map_dynamic(%q: tensor<?x?x?x4xf32>, %k: tensor<?x?x4xf32>, %v: tensor<?x?x4xf32>) -> tensor<?x?x?x4xf32> {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %q, %c0 : tensor<?x?x?x4xf32>
  %h = tensor.dim %q, %c1 : tensor<?x?x?x4xf32>
  %tq = tensor.dim %q, %c2 : tensor<?x?x?x4xf32>
  %tk = tensor.dim %k, %c1 : tensor<?x?x4xf32>
  %s0 = tensor.empty(%b, %h, %tq, %tk) : tensor<?x?x?x?xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, h, i, d)>, affine_map<(b, h, i, j, d) -> (b, j, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<?x?x?x4xf32>, tensor<?x?x4xf32>) outs(%sz : tensor<?x?x?x?xf32>) {
  ^bb0(%a: f32, %x: f32, %acc: f32):
    %m = arith.mulf %a, %x : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<?x?x?x?xf32>
  %sc = linalg.generic {indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<?x?x?x?xf32>) outs(%s0 : tensor<?x?x?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %half : f32
    linalg.yield %r : f32
  } -> tensor<?x?x?x?xf32>
  %p = linalg.softmax dimension(3) ins(%sc : tensor<?x?x?x?xf32>) outs(%s0 : tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %o0 = tensor.empty(%b, %h, %tq) : tensor<?x?x?x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<?x?x?x4xf32>) -> tensor<?x?x?x4xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, i, e, j) -> (b, h, i, j)>, affine_map<(b, h, i, e, j) -> (b, j, e)>, affine_map<(b, h, i, e, j) -> (b, h, i, e)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<?x?x?x?xf32>, tensor<?x?x4xf32>) outs(%oz : tensor<?x?x?x4xf32>) {
  ^bb0(%a: f32, %x: f32, %acc: f32):
    %m = arith.mulf %a, %x : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<?x?x?x4xf32>
  return %o : tensor<?x?x?x4xf32>
}
