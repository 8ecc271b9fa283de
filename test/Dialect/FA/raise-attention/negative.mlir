// RUN: fa-opt %s --fa-raise-attention="explain=true" --split-input-file --verify-diagnostics | FileCheck %s

// Chains that must stay untouched; with explain=true the P V product gets a
// remark naming the failed condition.

// CHECK-LABEL: func.func @softmax_over_query_axis
// CHECK-NOT: fa.attention
func.func @softmax_over_query_axis(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(1) ins(%sm : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the softmax normalizes over the query axis, expected the key axis}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// CHECK-LABEL: func.func @probabilities_transposed
// CHECK-NOT: fa.attention
func.func @probabilities_transposed(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %pt = linalg.transpose ins(%p : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) permutation = [0, 2, 1]
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the softmax normalizes over the query axis, expected the key axis}}
  %o = linalg.batch_matmul ins(%pt, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// CHECK-LABEL: func.func @scale_not_constant
// CHECK-NOT: fa.attention
func.func @scale_not_constant(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %scale: f32) -> (tensor<2x8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %scale : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the scores are scaled by a value that is not a constant}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// CHECK-LABEL: func.func @negative_scale
// CHECK-NOT: fa.attention
func.func @negative_scale(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %c = arith.constant -0.5 : f32
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the scores are scaled by -0.500000, expected a finite positive constant}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// CHECK-LABEL: func.func @masked_fill_on_float_mask
// CHECK-NOT: fa.attention
func.func @masked_fill_on_float_mask(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %j = linalg.index 2 : index
    %f = arith.index_cast %j : index to i64
    %x = arith.sitofp %f : i64 to f32
    %c = arith.cmpf oeq, %x, %zero : f32
    %r = arith.select %c, %ninf, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the scores are computed with an unsupported op 'arith.sitofp' in 'linalg.generic'}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// A causal comparison in a narrow integer type wraps: with 200 queries and
// keys, `j > i` in i8 is not the causal mask (e.g. j = 130 reads as -126),
// so it must not be raised. i32 is refused as well (dynamic seqlens may
// pass its range); index and i64 are the identities (masks.mlir).
// CHECK-LABEL: func.func @causal_compare_in_i8
// CHECK-NOT: fa.attention
func.func @causal_compare_in_i8(%q: tensor<200x4xf32>, %k: tensor<200x4xf32>, %v: tensor<200x4xf32>) -> tensor<200x4xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s0 = tensor.empty() : tensor<200x200xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<200x200xf32>) -> tensor<200x200xf32>
  %s = linalg.matmul indexing_maps = [affine_map<(i, j, d) -> (i, d)>, affine_map<(i, j, d) -> (j, d)>, affine_map<(i, j, d) -> (i, j)>]
      ins(%q, %k : tensor<200x4xf32>, tensor<200x4xf32>) outs(%sz : tensor<200x200xf32>) -> tensor<200x200xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<200x200xf32>) outs(%s0 : tensor<200x200xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %i8 = arith.index_cast %i : index to i8
    %j8 = arith.index_cast %j : index to i8
    %future = arith.cmpi sgt, %j8, %i8 : i8
    %r = arith.select %future, %ninf, %a : f32
    linalg.yield %r : f32
  } -> tensor<200x200xf32>
  %p = linalg.softmax dimension(1) ins(%sm : tensor<200x200xf32>) outs(%s0 : tensor<200x200xf32>) -> tensor<200x200xf32>
  %o0 = tensor.empty() : tensor<200x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<200x4xf32>) -> tensor<200x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the scores are computed with an integer cast to i8 (loop indices may wrap; expected index or i64) in 'linalg.generic'}}
  %o = linalg.matmul ins(%p, %v : tensor<200x200xf32>, tensor<200x4xf32>) outs(%oz : tensor<200x4xf32>) -> tensor<200x4xf32>
  return %o : tensor<200x4xf32>
}

// -----

// CHECK-LABEL: func.func @causal_compare_in_i32
// CHECK-NOT: fa.attention
func.func @causal_compare_in_i32(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %i32 = arith.index_castui %i : index to i32
    %j32 = arith.index_castui %j : index to i32
    %future = arith.cmpi ugt, %j32, %i32 : i32
    %r = arith.select %future, %ninf, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the scores are computed with an integer cast to i32 (loop indices may wrap; expected index or i64) in 'linalg.generic'}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// q k^T accumulated into an uninitialized tensor: not a product the op can
// stand for, and the remark says so (it read as an unrelated reduction).
// CHECK-LABEL: func.func @scores_into_empty_init
// CHECK-NOT: fa.attention
func.func @scores_into_empty_init(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  // The remark names which of the two batch_matmuls (line 206, the q k^T one).
  // expected-remark @+1 {{not raised to fa.attention: the scores are computed with 'linalg.batch_matmul' accumulating into a tensor that is not zero-filled (the product at }}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// CHECK-LABEL: func.func @causal_offset_unsupported
// CHECK-NOT: fa.attention
func.func @causal_offset_unsupported(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %c3 = arith.constant 3 : index
    %lim = arith.addi %i, %c3 : index
    %keep = arith.cmpi sle, %j, %lim : index
    %r = arith.select %keep, %a, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the causal mask keeps keys j <= i + 3, expected an offset of 0 (top_left) or Tk - Tq (bottom_right)}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// CHECK-LABEL: func.func @scores_other_user
// CHECK-NOT: fa.attention
func.func @scores_other_user(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>, tensor<2x8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the result of 'linalg.batch_matmul' in the attention chain has another user ('func.return')}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o, %s : tensor<2x8x4xf32>, tensor<2x8x8xf32>
}

// -----

// CHECK-LABEL: func.func @probabilities_other_user
// CHECK-NOT: fa.attention
func.func @probabilities_other_user(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>, tensor<2x8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the result of 'linalg.softmax' in the attention chain has another user ('func.return')}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o, %p : tensor<2x8x4xf32>, tensor<2x8x8xf32>
}

// -----

// A chain that reads a tensor with an encoding: fa.attention takes dense
// tensors, so the chain stays (the fa.attention verifier would reject it).
// CHECK-LABEL: func.func @encoded_v
// CHECK-NOT: fa.attention
func.func @encoded_v(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32, "enc">) -> tensor<2x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the chain has a tensor with an encoding (tensor<2x8x4xf32, "enc">); fa.attention takes dense tensors}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32, "enc">) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// The lowest finite fill times a scale of 1.5e-38 after it is -5.1: hidden
// keys keep a weight of exp(-5.1), not the 0 of a causal mask.
// CHECK-LABEL: func.func @lowest_fill_then_tiny_scale
// CHECK-NOT: fa.attention
func.func @lowest_fill_then_tiny_scale(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %future = arith.cmpi ugt, %j, %i : index
    %low = arith.constant -3.40282347E+38 : f32
    %x = arith.select %future, %low, %a : f32
    %tiny = arith.constant 1.5e-38 : f32
    %r = arith.mulf %x, %tiny : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the scores hide keys with -5.104235 (the lowest finite value times the scale after it), which is not below -1000: hidden keys would keep a weight}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// The same with a constant lower-triangular mask of 0 / lowest finite.
// CHECK-LABEL: func.func @lowest_tril_then_tiny_scale
// CHECK-NOT: fa.attention
func.func @lowest_tril_then_tiny_scale(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %tril = arith.constant dense<[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, 0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, 0.0, 0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]> : tensor<8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %tril : tensor<2x8x8xf32>, tensor<8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %x = arith.addf %a, %m : f32
    %tiny = arith.constant 1.5e-38 : f32
    %r = arith.mulf %x, %tiny : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the scores hide keys with -5.104235 (the lowest finite value times the scale after it), which is not below -1000: hidden keys would keep a weight}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// The f16 lowest (-65504) extended to f32 is not the lowest f32: the
// select computes in f32, where it is an ordinary value.
// CHECK-LABEL: func.func @f16_lowest_fill_in_f32_select
// CHECK-NOT: fa.attention
func.func @f16_lowest_fill_in_f32_select(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %future = arith.cmpi ugt, %j, %i : index
    %low16 = arith.constant -65504.0 : f16
    %low = arith.extf %low16 : f16 to f32
    %r = arith.select %future, %low, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the scores go through a select whose other branch is not -inf or the lowest finite value of its type (f32)}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// Integer constants of more than 64 bits are not read (2^64 in i128: the
// comparison hides every key).
// CHECK-LABEL: func.func @causal_compare_i128_constant
// CHECK-NOT: fa.attention
func.func @causal_compare_i128_constant(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %i128 = arith.index_cast %i : index to i128
    %j128 = arith.index_cast %j : index to i128
    %big = arith.constant 18446744073709551616 : i128
    %jb = arith.addi %j128, %big : i128
    %future = arith.cmpi sgt, %jb, %i128 : i128
    %ninf = arith.constant 0xFF800000 : f32
    %r = arith.select %future, %ninf, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the scores are computed with an integer constant of more than 64 bits in 'linalg.generic'}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// j + 2^53 > i + (2^53 + 1) keeps j <= i + 1, not a causal mask; constants
// beyond 2^32 are not read (2^53 + 1 has no double; near 2^63 sums wrap).
// CHECK-LABEL: func.func @causal_compare_large_constants
// CHECK-NOT: fa.attention
func.func @causal_compare_large_constants(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %a1 = arith.constant 9007199254740993 : index
    %a0 = arith.constant 9007199254740992 : index
    %jb = arith.addi %j, %a0 : index
    %ib = arith.addi %i, %a1 : index
    %future = arith.cmpi sgt, %jb, %ib : index
    %ninf = arith.constant 0xFF800000 : f32
    %r = arith.select %future, %ninf, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the select condition is not a causal comparison of the key index with the query index plus a constant (of magnitude at most 2^32)}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// A mask [2, 16, 8] expanded to [2, 8, 2, 8] and read at (b, i, 0, j) is
// row 2i of the source, not row i: a broadcast dim of size 2 next to the
// query axis in one reshape group.
// CHECK-LABEL: func.func @mask_expanded_read_at_zero
// CHECK-NOT: fa.attention
func.func @mask_expanded_read_at_zero(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %mask: tensor<2x16x8xf32>) -> tensor<2x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %mx4 = tensor.expand_shape %mask [[0], [1, 2], [3]] output_shape [2, 8, 2, 8] : tensor<2x16x8xf32> into tensor<2x8x2x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, 0, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %mx4 : tensor<2x8x8xf32>, tensor<2x8x2x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %r = arith.addf %a, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the additive mask is read through a reshape whose result is read at index 0 along a dim of size other than 1 next to a used dim}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// The max starts from the f16 lowest (-65504) extended to f32, which is not
// the lowest f32: where every score of a row lies below it, the max is the
// init and every exp is 0.
// CHECK-LABEL: func.func @max_init_f16_lowest_in_f32
// CHECK-NOT: fa.attention
func.func @max_init_f16_lowest_in_f32(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %r0 = tensor.empty() : tensor<2x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %low16 = arith.constant dense<-65504.0> : tensor<2x8xf16>
  %mx0 = arith.extf %low16 : tensor<2x8xf16> to tensor<2x8xf32>
  %mx = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s : tensor<2x8x8xf32>) outs(%mx0 : tensor<2x8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x8xf32>
  %ex = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %mx : tensor<2x8x8xf32>, tensor<2x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%r0 : tensor<2x8xf32>) -> tensor<2x8xf32>
  %l = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ex : tensor<2x8x8xf32>) outs(%l0 : tensor<2x8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x8xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ex, %l : tensor<2x8x8xf32>, tensor<2x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the softmax max does not start from -inf or the lowest finite value of its type (f32)}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// The f32 mask is rounded to f16 and back before it is added: the op would
// add the unrounded mask.
// CHECK-LABEL: func.func @mask_rounded_to_f16
// CHECK-NOT: fa.attention
func.func @mask_rounded_to_f16(%q: tensor<3x10x8xf32>, %k: tensor<3x14x8xf32>, %v: tensor<3x14x6xf32>, %mask: tensor<10x14xf32>) -> tensor<3x10x6xf32> {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %s0 = tensor.empty() : tensor<3x10x14xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<3x10x14xf32>) -> tensor<3x10x14xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<3x10x8xf32>, tensor<3x14x8xf32>) outs(%sz : tensor<3x10x14xf32>) -> tensor<3x10x14xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %mask : tensor<3x10x14xf32>, tensor<10x14xf32>) outs(%s0 : tensor<3x10x14xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %x = arith.mulf %a, %half : f32
    %mt = arith.truncf %m : f32 to f16
    %me = arith.extf %mt : f16 to f32
    %r = arith.addf %x, %me : f32
    linalg.yield %r : f32
  } -> tensor<3x10x14xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<3x10x14xf32>) outs(%s0 : tensor<3x10x14xf32>) -> tensor<3x10x14xf32>
  %o0 = tensor.empty() : tensor<3x10x6xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<3x10x6xf32>) -> tensor<3x10x6xf32>
  // expected-remark @+1 {{not raised to fa.attention: the additive mask is rounded on its way to the scores (a cast from f32 to f16)}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<3x10x14xf32>, tensor<3x14x6xf32>) outs(%oz : tensor<3x10x6xf32>) -> tensor<3x10x6xf32>
  return %o : tensor<3x10x6xf32>
}

// -----

// _safe_softmax's select with any_j(x_j == -inf) (an or reduction from false): rows with one hidden key would be zeroed.

// CHECK-LABEL: func.func @safe_softmax_any_hidden
// CHECK-NOT: fa.attention
func.func @safe_softmax_any_hidden(%q: tensor<2x6x4xf32>, %k: tensor<2x10x4xf32>, %v: tensor<2x10x4xf32>, %keep: tensor<2x6x10xi1>) -> tensor<2x6x4xf32> {
  %zero = arith.constant 0.0 : f32
  %fillv = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %ninf16 = arith.constant 0xFC00 : f16
  %init = arith.constant false
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
  %r0 = tensor.empty() : tensor<2x6xi1>
  %rt = linalg.fill ins(%init : i1) outs(%r0 : tensor<2x6xi1>) -> tensor<2x6xi1>
  %all = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%eq : tensor<2x6x10xi1>) outs(%rt : tensor<2x6xi1>) {
  ^bb0(%a: i1, %acc: i1):
    %c = arith.ori %a, %acc : i1
    linalg.yield %c : i1
  } -> tensor<2x6xi1>
  %p = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%all, %p0 : tensor<2x6xi1>, tensor<2x6x10xf32>) outs(%s0 : tensor<2x6x10xf32>) {
  ^bb0(%c: i1, %a: f32, %o: f32):
    %r = arith.select %c, %fillv, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x6x10xf32>
  %o0 = tensor.empty() : tensor<2x6x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the probabilities are a select of 0 on a condition that is not 'all of the row's scores are -inf'}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x6x10xf32>, tensor<2x10x4xf32>) outs(%oz : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  return %o : tensor<2x6x4xf32>
}

// -----

// An and reduction that starts from false is false everywhere: not the row test.

// CHECK-LABEL: func.func @safe_softmax_and_from_false
// CHECK-NOT: fa.attention
func.func @safe_softmax_and_from_false(%q: tensor<2x6x4xf32>, %k: tensor<2x10x4xf32>, %v: tensor<2x10x4xf32>, %keep: tensor<2x6x10xi1>) -> tensor<2x6x4xf32> {
  %zero = arith.constant 0.0 : f32
  %fillv = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %ninf16 = arith.constant 0xFC00 : f16
  %init = arith.constant false
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
  %r0 = tensor.empty() : tensor<2x6xi1>
  %rt = linalg.fill ins(%init : i1) outs(%r0 : tensor<2x6xi1>) -> tensor<2x6xi1>
  %all = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%eq : tensor<2x6x10xi1>) outs(%rt : tensor<2x6xi1>) {
  ^bb0(%a: i1, %acc: i1):
    %c = arith.andi %a, %acc : i1
    linalg.yield %c : i1
  } -> tensor<2x6xi1>
  %p = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%all, %p0 : tensor<2x6xi1>, tensor<2x6x10xf32>) outs(%s0 : tensor<2x6x10xf32>) {
  ^bb0(%c: i1, %a: f32, %o: f32):
    %r = arith.select %c, %fillv, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x6x10xf32>
  %o0 = tensor.empty() : tensor<2x6x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the probabilities are a select of 0 on a condition that is not 'all of the row's scores are -inf'}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x6x10xf32>, tensor<2x10x4xf32>) outs(%oz : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  return %o : tensor<2x6x4xf32>
}

// -----

// x ueq -inf also holds for NaN scores; only oeq (and une for the negated test) are read.

// CHECK-LABEL: func.func @safe_softmax_ueq
// CHECK-NOT: fa.attention
func.func @safe_softmax_ueq(%q: tensor<2x6x4xf32>, %k: tensor<2x10x4xf32>, %v: tensor<2x10x4xf32>, %keep: tensor<2x6x10xi1>) -> tensor<2x6x4xf32> {
  %zero = arith.constant 0.0 : f32
  %fillv = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %ninf16 = arith.constant 0xFC00 : f16
  %init = arith.constant true
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
    %c = arith.cmpf ueq, %a, %ninf : f32
    linalg.yield %c : i1
  } -> tensor<2x6x10xi1>
  %r0 = tensor.empty() : tensor<2x6xi1>
  %rt = linalg.fill ins(%init : i1) outs(%r0 : tensor<2x6xi1>) -> tensor<2x6xi1>
  %all = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%eq : tensor<2x6x10xi1>) outs(%rt : tensor<2x6xi1>) {
  ^bb0(%a: i1, %acc: i1):
    %c = arith.andi %a, %acc : i1
    linalg.yield %c : i1
  } -> tensor<2x6xi1>
  %p = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%all, %p0 : tensor<2x6xi1>, tensor<2x6x10xf32>) outs(%s0 : tensor<2x6x10xf32>) {
  ^bb0(%c: i1, %a: f32, %o: f32):
    %r = arith.select %c, %fillv, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x6x10xf32>
  %o0 = tensor.empty() : tensor<2x6x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the probabilities are a select of 0 on a condition that is not 'all of the row's scores are -inf'}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x6x10xf32>, tensor<2x10x4xf32>) outs(%oz : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  return %o : tensor<2x6x4xf32>
}

// -----

// The and reduction runs over the query axis: a column test, not a row test.

// CHECK-LABEL: func.func @safe_softmax_query_axis
// CHECK-NOT: fa.attention
func.func @safe_softmax_query_axis(%q: tensor<2x6x4xf32>, %k: tensor<2x10x4xf32>, %v: tensor<2x10x4xf32>, %keep: tensor<2x6x10xi1>) -> tensor<2x6x4xf32> {
  %zero = arith.constant 0.0 : f32
  %fillv = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %ninf16 = arith.constant 0xFC00 : f16
  %init = arith.constant true
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
  %r0 = tensor.empty() : tensor<2x10xi1>
  %rt = linalg.fill ins(%init : i1) outs(%r0 : tensor<2x10xi1>) -> tensor<2x10xi1>
  %all = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, j)>], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%eq : tensor<2x6x10xi1>) outs(%rt : tensor<2x10xi1>) {
  ^bb0(%a: i1, %acc: i1):
    %c = arith.andi %a, %acc : i1
    linalg.yield %c : i1
  } -> tensor<2x10xi1>
  %p = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, j)>, affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%all, %p0 : tensor<2x10xi1>, tensor<2x6x10xf32>) outs(%s0 : tensor<2x6x10xf32>) {
  ^bb0(%c: i1, %a: f32, %o: f32):
    %r = arith.select %c, %fillv, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x6x10xf32>
  %o0 = tensor.empty() : tensor<2x6x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the probabilities are a select of 0 on a condition that is not 'all of the row's scores are -inf'}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x6x10xf32>, tensor<2x10x4xf32>) outs(%oz : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  return %o : tensor<2x6x4xf32>
}

// -----

// The test reads the bias rather than the softmax's input: not the row test of the scores.

// CHECK-LABEL: func.func @safe_softmax_compares_mask
// CHECK-NOT: fa.attention
func.func @safe_softmax_compares_mask(%q: tensor<2x6x4xf32>, %k: tensor<2x10x4xf32>, %v: tensor<2x10x4xf32>, %keep: tensor<2x6x10xi1>) -> tensor<2x6x4xf32> {
  %zero = arith.constant 0.0 : f32
  %fillv = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %ninf16 = arith.constant 0xFC00 : f16
  %init = arith.constant true
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
      ins(%bias : tensor<2x6x10xf32>) outs(%e0 : tensor<2x6x10xi1>) {
  ^bb0(%a: f32, %o: i1):
    %c = arith.cmpf oeq, %a, %ninf : f32
    linalg.yield %c : i1
  } -> tensor<2x6x10xi1>
  %r0 = tensor.empty() : tensor<2x6xi1>
  %rt = linalg.fill ins(%init : i1) outs(%r0 : tensor<2x6xi1>) -> tensor<2x6xi1>
  %all = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%eq : tensor<2x6x10xi1>) outs(%rt : tensor<2x6xi1>) {
  ^bb0(%a: i1, %acc: i1):
    %c = arith.andi %a, %acc : i1
    linalg.yield %c : i1
  } -> tensor<2x6xi1>
  %p = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%all, %p0 : tensor<2x6xi1>, tensor<2x6x10xf32>) outs(%s0 : tensor<2x6x10xf32>) {
  ^bb0(%c: i1, %a: f32, %o: f32):
    %r = arith.select %c, %fillv, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x6x10xf32>
  %o0 = tensor.empty() : tensor<2x6x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the probabilities are zeroed where another value than the softmax's input is -inf}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x6x10xf32>, tensor<2x10x4xf32>) outs(%oz : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  return %o : tensor<2x6x4xf32>
}

// -----

// The test reads the scores truncated to f16, which are -inf for finite scores below -65520: not the softmax's input up to an exact cast.

// CHECK-LABEL: func.func @safe_softmax_compares_truncated
// CHECK-NOT: fa.attention
func.func @safe_softmax_compares_truncated(%q: tensor<2x6x4xf32>, %k: tensor<2x10x4xf32>, %v: tensor<2x10x4xf32>, %keep: tensor<2x6x10xi1>) -> tensor<2x6x4xf32> {
  %zero = arith.constant 0.0 : f32
  %fillv = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %ninf16 = arith.constant 0xFC00 : f16
  %init = arith.constant true
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
    %t = arith.truncf %a : f32 to f16
    %c = arith.cmpf oeq, %t, %ninf16 : f16
    linalg.yield %c : i1
  } -> tensor<2x6x10xi1>
  %r0 = tensor.empty() : tensor<2x6xi1>
  %rt = linalg.fill ins(%init : i1) outs(%r0 : tensor<2x6xi1>) -> tensor<2x6xi1>
  %all = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%eq : tensor<2x6x10xi1>) outs(%rt : tensor<2x6xi1>) {
  ^bb0(%a: i1, %acc: i1):
    %c = arith.andi %a, %acc : i1
    linalg.yield %c : i1
  } -> tensor<2x6xi1>
  %p = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%all, %p0 : tensor<2x6xi1>, tensor<2x6x10xf32>) outs(%s0 : tensor<2x6x10xf32>) {
  ^bb0(%c: i1, %a: f32, %o: f32):
    %r = arith.select %c, %fillv, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x6x10xf32>
  %o0 = tensor.empty() : tensor<2x6x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the probabilities are zeroed where another value than the softmax's input is -inf}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x6x10xf32>, tensor<2x10x4xf32>) outs(%oz : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  return %o : tensor<2x6x4xf32>
}

// -----

// The select puts 0.5, not 0, in the hidden rows.

// CHECK-LABEL: func.func @safe_softmax_nonzero_fill
// CHECK-NOT: fa.attention
func.func @safe_softmax_nonzero_fill(%q: tensor<2x6x4xf32>, %k: tensor<2x10x4xf32>, %v: tensor<2x10x4xf32>, %keep: tensor<2x6x10xi1>) -> tensor<2x6x4xf32> {
  %zero = arith.constant 0.0 : f32
  %fillv = arith.constant 0.5 : f32
  %half = arith.constant 0.5 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %ninf16 = arith.constant 0xFC00 : f16
  %init = arith.constant true
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
  %r0 = tensor.empty() : tensor<2x6xi1>
  %rt = linalg.fill ins(%init : i1) outs(%r0 : tensor<2x6xi1>) -> tensor<2x6xi1>
  %all = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%eq : tensor<2x6x10xi1>) outs(%rt : tensor<2x6xi1>) {
  ^bb0(%a: i1, %acc: i1):
    %c = arith.andi %a, %acc : i1
    linalg.yield %c : i1
  } -> tensor<2x6xi1>
  %p = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%all, %p0 : tensor<2x6xi1>, tensor<2x6x10xf32>) outs(%s0 : tensor<2x6x10xf32>) {
  ^bb0(%c: i1, %a: f32, %o: f32):
    %r = arith.select %c, %fillv, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x6x10xf32>
  %o0 = tensor.empty() : tensor<2x6x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: expected the probabilities to be a softmax (linalg.softmax, or exponentials divided by their sum), got a select}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x6x10xf32>, tensor<2x10x4xf32>) outs(%oz : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  return %o : tensor<2x6x4xf32>
}

// -----

// Scores broadcast over a head dim that none of q, k and v holds (the
// product's output map adds it; only the additive mask has it): the rewrite
// has no operand to take the head count from, so the chain stays. (MQA,
// where q holds the head dim and k and v are read by broadcast maps, is
// raised: linalg-named.mlir @mqa_kv_broadcast_map.)

// CHECK-LABEL: func.func @batch_dim_only_in_mask
// CHECK-NOT: fa.attention
func.func @batch_dim_only_in_mask(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %mask: tensor<2x3x8x8xf32>) -> tensor<2x3x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<2x3x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, i, d)>, affine_map<(b, h, i, j, d) -> (b, j, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x3x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x3x8x8xf32>
  %sm = linalg.add ins(%s, %mask : tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>) outs(%s0 : tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  %p = linalg.softmax dimension(3) ins(%sm : tensor<2x3x8x8xf32>) outs(%s0 : tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  %o0 = tensor.empty() : tensor<2x3x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x3x8x4xf32>) -> tensor<2x3x8x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: a batch dim of the output is held by none of q, k and v}}
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, i, e, j) -> (b, h, i, j)>, affine_map<(b, h, i, e, j) -> (b, j, e)>, affine_map<(b, h, i, e, j) -> (b, h, i, e)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x3x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x3x8x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x3x8x4xf32>
  return %o : tensor<2x3x8x4xf32>
}

// -----

// q holds the key axis too (s[b, i, j] = sum_d q[b, i, j, d] k[b, j, d], a
// per-key query): q is not [batch..., Tq, D], so the chain stays.

// CHECK-LABEL: func.func @query_holds_key_axis
// CHECK-NOT: fa.attention
func.func @query_holds_key_axis(%q: tensor<2x8x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, i, j, d) -> (b, i, j, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x8x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: q, k or v has a dim that is not a batch dim or one of its own two axes, or lacks one of those axes}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// _safe_softmax over scores hidden by select(keep, s, -FLT_MAX): a finite
// fill is never -inf, so the original gives a row that keep hides
// completely the mean of v, where fa.attention (reading the fill as -inf)
// gives 0: untouched. (Without the _safe_softmax select the original gives
// NaN there; see RAISE.md.)

// CHECK-LABEL: func.func @safe_softmax_lowest_fill
// CHECK-NOT: fa.attention
func.func @safe_softmax_lowest_fill(%q: tensor<2x6x4xf32>, %k: tensor<2x6x4xf32>, %v: tensor<2x6x4xf32>) -> tensor<2x6x4xf32> {
  %zero = arith.constant 0.0 : f32
  %nzero = arith.constant -0.0 : f32
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %pinf = arith.constant 0x7F800000 : f32
  %nan = arith.constant 0x7FC00000 : f32
  %lowest = arith.constant -3.40282347E+38 : f32
  %big = arith.constant -1.0e+30 : f32
  %true = arith.constant true
  %false = arith.constant false
  %keep = arith.constant dense<[[[false, false, false, false, false, false], [true, false, false, false, false, false], [true, true, true, true, true, true], [true, true, false, true, true, true], [true, true, true, true, false, false], [false, false, false, false, false, false]], [[true, true, true, true, true, true], [false, false, false, false, false, false], [false, false, false, false, false, true], [false, false, false, false, false, false], [false, true, true, true, true, true], [true, false, true, false, true, false]]]> : tensor<2x6x6xi1>
  %s0 = tensor.empty() : tensor<2x6x6xf32>
  %e0 = tensor.empty() : tensor<2x6x6xi1>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x6x6xf32>) -> tensor<2x6x6xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x6x4xf32>, tensor<2x6x4xf32>) outs(%sz : tensor<2x6x6xf32>) -> tensor<2x6x6xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %keep : tensor<2x6x6xf32>, tensor<2x6x6xi1>) outs(%s0 : tensor<2x6x6xf32>) {
  ^bb0(%a: f32, %m: i1, %o: f32):
    %y = arith.mulf %a, %half : f32
    %r = arith.select %m, %y, %lowest : f32
    linalg.yield %r : f32
  } -> tensor<2x6x6xf32>
  %p0 = linalg.softmax dimension(2) ins(%x : tensor<2x6x6xf32>) outs(%s0 : tensor<2x6x6xf32>) -> tensor<2x6x6xf32>
  %eq = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x6x6xf32>) outs(%e0 : tensor<2x6x6xi1>) {
  ^bb0(%a: f32, %o: i1):
    %c0 = arith.cmpf oeq, %a, %ninf : f32
    linalg.yield %c0 : i1
  } -> tensor<2x6x6xi1>
  %r0 = tensor.empty() : tensor<2x6x1xi1>
  %rt = linalg.fill ins(%true : i1) outs(%r0 : tensor<2x6x1xi1>) -> tensor<2x6x1xi1>
  %all = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, 0)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%eq : tensor<2x6x6xi1>) outs(%rt : tensor<2x6x1xi1>) {
  ^bb0(%a: i1, %acc: i1):
    %c = arith.andi %a, %acc : i1
    linalg.yield %c : i1
  } -> tensor<2x6x1xi1>
  %p = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, 0)>, affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%all, %p0 : tensor<2x6x1xi1>, tensor<2x6x6xf32>) outs(%s0 : tensor<2x6x6xf32>) {
  ^bb0(%c: i1, %a: f32, %o: f32):
    %r = arith.select %c, %zero, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x6x6xf32>
  %o0 = tensor.empty() : tensor<2x6x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the softmax zeroes the rows whose scores are all -inf (_safe_softmax), but the mask hides keys with a finite value (-3.402823e+38): a row it hides completely keeps its weights in the original and gets 0 from fa.attention}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x6x6xf32>, tensor<2x6x4xf32>) outs(%oz : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  return %o : tensor<2x6x4xf32>
}

// -----

// _safe_softmax on scores truncated to f16 after an additive f32 mask of
// -1e5: the truncation turns the rows the mask hides completely into -inf,
// which _safe_softmax zeroes, where fa.attention adds the mask in f32 and
// gives those rows weights: untouched.

// CHECK-LABEL: func.func @safe_softmax_mask_rounded_to_f16
// CHECK-NOT: fa.attention
func.func @safe_softmax_mask_rounded_to_f16(%q: tensor<2x6x4xf16>, %k: tensor<2x6x4xf16>, %v: tensor<2x6x4xf16>) -> tensor<2x6x4xf32> {
  %zero = arith.constant 0.0 : f32
  %zh = arith.constant 0.0 : f16
  %half = arith.constant 0.5 : f32
  %ninfh = arith.constant 0xFC00 : f16
  %true = arith.constant true
  %fm = arith.constant dense<[[[-1.0e5, -1.0e5, -1.0e5, -1.0e5, -1.0e5, -1.0e5], [0.0, -1.0e5, -1.0e5, -1.0e5, -1.0e5, -1.0e5], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, -1.0e5, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, -1.0e5, -1.0e5], [-1.0e5, -1.0e5, -1.0e5, -1.0e5, -1.0e5, -1.0e5]], [[0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]]> : tensor<2x6x6xf32>
  %s0 = tensor.empty() : tensor<2x6x6xf32>
  %h0 = tensor.empty() : tensor<2x6x6xf16>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x6x6xf32>) -> tensor<2x6x6xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x6x4xf16>, tensor<2x6x4xf16>) outs(%sz : tensor<2x6x6xf32>) {
  ^bb0(%a: f16, %b: f16, %acc: f32):
    %ae = arith.extf %a : f16 to f32
    %be = arith.extf %b : f16 to f32
    %m = arith.mulf %ae, %be : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x6x6xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %fm : tensor<2x6x6xf32>, tensor<2x6x6xf32>) outs(%h0 : tensor<2x6x6xf16>) {
  ^bb0(%a: f32, %m: f32, %o: f16):
    %y = arith.mulf %a, %half : f32
    %r = arith.addf %y, %m : f32
    %t = arith.truncf %r : f32 to f16
    linalg.yield %t : f16
  } -> tensor<2x6x6xf16>
  %p0 = linalg.softmax dimension(2) ins(%x : tensor<2x6x6xf16>) outs(%h0 : tensor<2x6x6xf16>) -> tensor<2x6x6xf16>
  %e0 = tensor.empty() : tensor<2x6x6xi1>
  %eq = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x6x6xf16>) outs(%e0 : tensor<2x6x6xi1>) {
  ^bb0(%a: f16, %o: i1):
    %c = arith.cmpf oeq, %a, %ninfh : f16
    linalg.yield %c : i1
  } -> tensor<2x6x6xi1>
  %r0 = tensor.empty() : tensor<2x6x1xi1>
  %rt = linalg.fill ins(%true : i1) outs(%r0 : tensor<2x6x1xi1>) -> tensor<2x6x1xi1>
  %all = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, 0)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%eq : tensor<2x6x6xi1>) outs(%rt : tensor<2x6x1xi1>) {
  ^bb0(%a: i1, %acc: i1):
    %c = arith.andi %a, %acc : i1
    linalg.yield %c : i1
  } -> tensor<2x6x1xi1>
  %p = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, 0)>, affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%all, %p0 : tensor<2x6x1xi1>, tensor<2x6x6xf16>) outs(%h0 : tensor<2x6x6xf16>) {
  ^bb0(%c: i1, %a: f16, %o: f16):
    %r = arith.select %c, %zh, %a : f16
    linalg.yield %r : f16
  } -> tensor<2x6x6xf16>
  %o0 = tensor.empty() : tensor<2x6x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the softmax zeroes the rows whose scores are all -inf (_safe_softmax), and the scores with the additive mask are rounded to f16, where a finite mask value plus a score can round to -inf}}
  %o = linalg.generic {indexing_maps = [affine_map<(b, i, e, j) -> (b, i, j)>, affine_map<(b, i, e, j) -> (b, j, e)>, affine_map<(b, i, e, j) -> (b, i, e)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x6x6xf16>, tensor<2x6x4xf16>) outs(%oz : tensor<2x6x4xf32>) {
  ^bb0(%a: f16, %b: f16, %acc: f32):
    %ae = arith.extf %a : f16 to f32
    %be = arith.extf %b : f16 to f32
    %m = arith.mulf %ae, %be : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x6x4xf32>
  return %o : tensor<2x6x4xf32>
}

// -----

// An op the evaluator does not read (math.absf) in the generic
// that computes the probabilities from a softmax: untouched, and the remark
// names the op (the product still consumes a softmax through it).

// CHECK-LABEL: func.func @probabilities_unsupported_body_op
// CHECK-NOT: fa.attention
func.func @probabilities_unsupported_body_op(%q: tensor<2x6x4xf32>, %k: tensor<2x10x4xf32>, %v: tensor<2x10x4xf32>, %keep: tensor<2x6x10xi1>) -> tensor<2x6x4xf32> {
  %zero = arith.constant 0.0 : f32
  %fillv = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %ninf16 = arith.constant 0xFC00 : f16
  %init = arith.constant true
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
  %r0 = tensor.empty() : tensor<2x6xi1>
  %rt = linalg.fill ins(%init : i1) outs(%r0 : tensor<2x6xi1>) -> tensor<2x6xi1>
  %all = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%eq : tensor<2x6x10xi1>) outs(%rt : tensor<2x6xi1>) {
  ^bb0(%a: i1, %acc: i1):
    %c = arith.andi %a, %acc : i1
    linalg.yield %c : i1
  } -> tensor<2x6xi1>
  %p = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%all, %p0 : tensor<2x6xi1>, tensor<2x6x10xf32>) outs(%s0 : tensor<2x6x10xf32>) {
  ^bb0(%c: i1, %a0: f32, %o: f32):
    %a = math.absf %a0 : f32
    %r = arith.select %c, %fillv, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x6x10xf32>
  %o0 = tensor.empty() : tensor<2x6x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the probabilities are computed with an unsupported op 'math.absf' in 'linalg.generic'}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x6x10xf32>, tensor<2x10x4xf32>) outs(%oz : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  return %o : tensor<2x6x4xf32>
}

// -----

// TOSA with dynamic dims: tosa.add(scores ?x?x?, mask ?x?x?) broadcasts a
// mask dim that is 1 at run time (a mask [B, 1, Tk] over the queries), which
// fa.attention's mask does not. A dynamic dim that another operand does not
// pin to 1 is not read: untouched.

// CHECK-LABEL: func.func @tosa_dynamic_mask_may_broadcast
// CHECK-NOT: fa.attention
func.func @tosa_dynamic_mask_may_broadcast(%q: tensor<?x?x4xf32>, %k: tensor<?x?x4xf32>, %v: tensor<?x?x3xf32>, %mask: tensor<?x?x?xf32>) -> tensor<?x?x3xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %half = "tosa.const"() <{values = dense<0.5> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %kt = tosa.transpose %k {perms = array<i32: 0, 2, 1>} : (tensor<?x?x4xf32>) -> tensor<?x4x?xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<?x?x4xf32>, tensor<?x4x?xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x?x?xf32>
  %sc = tosa.mul %s, %half, %shift : (tensor<?x?x?xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<?x?x?xf32>
  %sm = tosa.add %sc, %mask : (tensor<?x?x?xf32>, tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %mx = tosa.reduce_max %sm {axis = 2 : i32} : (tensor<?x?x?xf32>) -> tensor<?x?x1xf32>
  %d = tosa.sub %sm, %mx : (tensor<?x?x?xf32>, tensor<?x?x1xf32>) -> tensor<?x?x?xf32>
  %e = tosa.exp %d : (tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %l = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<?x?x?xf32>) -> tensor<?x?x1xf32>
  %rl = tosa.reciprocal %l : (tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
  %p = tosa.mul %e, %rl, %shift : (tensor<?x?x?xf32>, tensor<?x?x1xf32>, tensor<1xi8>) -> tensor<?x?x?xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<?x?x?xf32>, tensor<?x?x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x?x3xf32>
  return %o : tensor<?x?x3xf32>
}

// -----

// A tosa.matmul whose static extents disagree: K is not transposed, so the
// first product is [6, 8, 4] x [6, 8, 4] -> [6, 8, 8], with 4 contracted
// against 8. The TOSA verifier does not compare them; the pass must not
// read it as Q K^T (it would build ill-typed ops).

// CHECK-LABEL: func.func @tosa_matmul_extents_disagree
// CHECK-NOT: fa.attention
// CHECK: tosa.matmul
func.func @tosa_matmul_extents_disagree(%q: tensor<6x8x4xf32>, %k: tensor<6x8x4xf32>, %v: tensor<6x8x4xf32>) -> tensor<6x8x4xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %half = "tosa.const"() <{values = dense<0.5> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %s = tosa.matmul %q, %k, %zp, %zp : (tensor<6x8x4xf32>, tensor<6x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<6x8x8xf32>
  %sc = tosa.mul %s, %half, %shift : (tensor<6x8x8xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<6x8x8xf32>
  %mx = tosa.reduce_max %sc {axis = 2 : i32} : (tensor<6x8x8xf32>) -> tensor<6x8x1xf32>
  %d = tosa.sub %sc, %mx : (tensor<6x8x8xf32>, tensor<6x8x1xf32>) -> tensor<6x8x8xf32>
  %e = tosa.exp %d : (tensor<6x8x8xf32>) -> tensor<6x8x8xf32>
  %l = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<6x8x8xf32>) -> tensor<6x8x1xf32>
  %rl = tosa.reciprocal %l : (tensor<6x8x1xf32>) -> tensor<6x8x1xf32>
  %p = tosa.mul %e, %rl, %shift : (tensor<6x8x8xf32>, tensor<6x8x1xf32>, tensor<1xi8>) -> tensor<6x8x8xf32>
  // expected-remark @+1 {{not raised to fa.attention: the probabilities are computed with 'tosa.matmul' whose operand and result shapes disagree (a [N, H, C] x [N, C, W] -> [N, H, W] product)}}
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<6x8x8xf32>, tensor<6x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<6x8x4xf32>
  return %o : tensor<6x8x4xf32>
}

// -----

// The scale is an f32 constant truncated to bf16 rounding upward: the
// pass's constant arithmetic rounds to nearest, so a truncf with a rounding
// mode is not read.

// CHECK-LABEL: func.func @scale_truncf_with_rounding_mode
// CHECK-NOT: fa.attention
func.func @scale_truncf_with_rounding_mode(%q: tensor<2x5x4xf32>, %k: tensor<2x7x4xf32>, %v: tensor<2x7x3xf32>) -> tensor<2x5x3xf32> {
  %zero = arith.constant 0.0 : f32

  %s0 = tensor.empty() : tensor<2x5x7xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x5x7xf32>) -> tensor<2x5x7xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>] ins(%q, %k : tensor<2x5x4xf32>, tensor<2x7x4xf32>) outs(%sz : tensor<2x5x7xf32>) -> tensor<2x5x7xf32>
  %e1 = tensor.empty() : tensor<2x5x7xf32>
  %ss = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x5x7xf32>) outs(%e1 : tensor<2x5x7xf32>) {
  ^bb0(%a: f32, %o: f32):
    %c = arith.constant 0.35355339 : f32
    %t = arith.truncf %c upward : f32 to bf16
    %x = arith.extf %t : bf16 to f32
    %r = arith.mulf %a, %x : f32
    linalg.yield %r : f32
  } -> tensor<2x5x7xf32>
  %e2 = tensor.empty() : tensor<2x5x7xf32>
  %p = linalg.softmax dimension(2) ins(%ss : tensor<2x5x7xf32>) outs(%e2 : tensor<2x5x7xf32>) -> tensor<2x5x7xf32>
  %o0 = tensor.empty() : tensor<2x5x3xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x5x3xf32>) -> tensor<2x5x3xf32>
  // expected-remark @+1 {{not raised to fa.attention: the scores are computed with an arith.truncf with a rounding mode in 'linalg.generic'}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x5x7xf32>, tensor<2x7x3xf32>) outs(%oz : tensor<2x5x3xf32>) -> tensor<2x5x3xf32>
  return %o : tensor<2x5x3xf32>
}

// -----

// A mask [B, H * Tq, Tk] expanded to [B, H, Tq, Tk] and collapsed to the
// product's [B * H, Tq, Tk]: the expand splits a source dim into part of a
// batch dim and the query axis. Expanded tensors are taken as they are
// read only where the view holds no batch-dim parts (masks.mlir
// @mask_expanded_from_query_key_product): not raised.
// CHECK-LABEL: func.func @mask_split_batch_through_expand
// CHECK-NOT: fa.attention
func.func @mask_split_batch_through_expand(%q: tensor<6x8x4xf32>, %k: tensor<6x8x4xf32>, %v: tensor<6x8x4xf32>, %mask: tensor<2x24x8xf32>) -> tensor<6x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %m4 = tensor.expand_shape %mask [[0], [1, 2], [3]] output_shape [2, 3, 8, 8] : tensor<2x24x8xf32> into tensor<2x3x8x8xf32>
  %m3 = tensor.collapse_shape %m4 [[0, 1], [2], [3]] : tensor<2x3x8x8xf32> into tensor<6x8x8xf32>
  %s0 = tensor.empty() : tensor<6x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<6x8x8xf32>) -> tensor<6x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<6x8x4xf32>, tensor<6x8x4xf32>) outs(%sz : tensor<6x8x8xf32>) -> tensor<6x8x8xf32>
  %sm = linalg.add ins(%s, %m3 : tensor<6x8x8xf32>, tensor<6x8x8xf32>) outs(%s0 : tensor<6x8x8xf32>) -> tensor<6x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<6x8x8xf32>) outs(%s0 : tensor<6x8x8xf32>) -> tensor<6x8x8xf32>
  %o0 = tensor.empty() : tensor<6x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<6x8x4xf32>) -> tensor<6x8x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the additive mask is read through a reshape that merges or splits the query or key axis (or merges a batch dim with parts of another)}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<6x8x8xf32>, tensor<6x8x4xf32>) outs(%oz : tensor<6x8x4xf32>) -> tensor<6x8x4xf32>
  return %o : tensor<6x8x4xf32>
}

// -----

// TOSA: the softmax reaches the P V product through an op the evaluator does
// not read (tosa.floor): the product's P is an opaque tensor, and explain
// names the op between them.
// CHECK-LABEL: func.func @tosa_probabilities_through_floor
// CHECK-NOT: fa.attention
func.func @tosa_probabilities_through_floor(%q: tensor<2x3x8x4xf32>, %k: tensor<2x3x8x4xf32>, %v: tensor<2x3x8x4xf32>, %mask: tensor<2x1x1x8xf32>) -> tensor<2x3x8x4xf32> {
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
  %pc = tosa.floor %p : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  %p3 = tosa.reshape %pc, %s3s : (tensor<2x3x8x8xf32>, !tosa.shape<3>) -> tensor<6x8x8xf32>
  // expected-remark @+1 {{not raised to fa.attention: the probabilities reach the product through an unsupported op 'tosa.floor'}}
  %o = tosa.matmul %p3, %vr, %zp, %zp : (tensor<6x8x8xf32>, tensor<6x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<6x8x4xf32>
  %o4 = tosa.reshape %o, %s4o : (tensor<6x8x4xf32>, !tosa.shape<4>) -> tensor<2x3x8x4xf32>
  return %o4 : tensor<2x3x8x4xf32>
}

// -----

// TOSA: the scores scaled by a constant of one value per head (not a
// splat): no single scale, and the remark says it is a constant of more
// than one value rather than "not a constant".
// CHECK-LABEL: func.func @tosa_scale_per_head_constant
// CHECK-NOT: fa.attention
func.func @tosa_scale_per_head_constant(%q: tensor<2x3x8x4xf32>, %k: tensor<2x3x8x4xf32>, %v: tensor<2x3x8x4xf32>) -> tensor<2x3x8x4xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %scale = "tosa.const"() <{values = dense<[[[[0.5]], [[0.25]], [[0.125]]]]> : tensor<1x3x1x1xf32>}> : () -> tensor<1x3x1x1xf32>
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
  %sc = tosa.mul %s4, %scale, %shift : (tensor<2x3x8x8xf32>, tensor<1x3x1x1xf32>, tensor<1xi8>) -> tensor<2x3x8x8xf32>
  %mx = tosa.reduce_max %sc {axis = 3 : i32} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x1xf32>
  %d = tosa.sub %sc, %mx : (tensor<2x3x8x8xf32>, tensor<2x3x8x1xf32>) -> tensor<2x3x8x8xf32>
  %e = tosa.exp %d : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  %l = tosa.reduce_sum %e {axis = 3 : i32} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x1xf32>
  %rl = tosa.reciprocal %l : (tensor<2x3x8x1xf32>) -> tensor<2x3x8x1xf32>
  %p = tosa.mul %e, %rl, %shift : (tensor<2x3x8x8xf32>, tensor<2x3x8x1xf32>, tensor<1xi8>) -> tensor<2x3x8x8xf32>
  %p3 = tosa.reshape %p, %s3s : (tensor<2x3x8x8xf32>, !tosa.shape<3>) -> tensor<6x8x8xf32>
  // expected-remark @+1 {{not raised to fa.attention: the scores are scaled by a constant tensor of more than one value (expected one scale for every score)}}
  %o = tosa.matmul %p3, %vr, %zp, %zp : (tensor<6x8x8xf32>, tensor<6x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<6x8x4xf32>
  %o4 = tosa.reshape %o, %s4o : (tensor<6x8x4xf32>, !tosa.shape<4>) -> tensor<2x3x8x4xf32>
  return %o4 : tensor<2x3x8x4xf32>
}

// -----

// A head dim of 0 (q and k [B, T, 0]: every score 0): fa.attention's
// verifier rejects it, so the chain stays.

// CHECK-LABEL: func.func @head_dim_zero
// CHECK-NOT: fa.attention
func.func @head_dim_zero(%q: tensor<2x8x0xf32>, %k: tensor<2x8x0xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x0xf32>, tensor<2x8x0xf32>) outs(%sz : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s2 = linalg.copy ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%s2 : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: a head dim is 0 (q and k, or v, have rows of no elements)}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// A value head dim of 0 (v [B, T, 0]): untouched, as above.

// CHECK-LABEL: func.func @head_dim_v_zero
// CHECK-NOT: fa.attention
func.func @head_dim_v_zero(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x0xf32>) -> tensor<2x8x0xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s2 = linalg.copy ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%s2 : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x0xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x0xf32>) -> tensor<2x8x0xf32>
  // expected-remark @+1 {{not raised to fa.attention: a head dim is 0 (q and k, or v, have rows of no elements)}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x0xf32>) outs(%oz : tensor<2x8x0xf32>) -> tensor<2x8x0xf32>
  return %o : tensor<2x8x0xf32>
}

// -----

// Two scalings by 1e30: their product 1e60 is outside f32, where
// fa.attention scales the scores (its verifier's rule): untouched.

// CHECK-LABEL: func.func @scale_outside_f32
// CHECK-NOT: fa.attention
func.func @scale_outside_f32(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %big = arith.constant 1.0e30 : f32
  %s1 = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %big : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %s2 = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s1 : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %big : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%s2 : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  // expected-remark @+1 {{not raised to fa.attention: the scale 1.000000e+60 (the product of the scalings) is not representable in f32, where fa.attention scales the scores}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// Bottom-right causal with Tq = 8 > Tk = 5 and the lowest finite fill:
// rows 0-2 see no key. The original gives them the mean of v (every score
// of the row equal), fa.attention 0: untouched.

// CHECK-LABEL: func.func @bottom_right_rows_without_keys_finite_fill
// CHECK-NOT: fa.attention
#qk_q = affine_map<(b, i, j, d) -> (b, i, d)>
#qk_k = affine_map<(b, i, j, d) -> (b, j, d)>
#qk_s = affine_map<(b, i, j, d) -> (b, i, j)>
#id3 = affine_map<(b, i, j) -> (b, i, j)>
func.func @bottom_right_rows_without_keys_finite_fill(%q: tensor<3x8x8xf32>, %k: tensor<3x5x8xf32>, %v: tensor<3x5x8xf32>) -> tensor<3x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %lowest = arith.constant -3.40282347E+38 : f32
  %scale = arith.constant 0.125 : f32
  %cm3 = arith.constant -3 : i64
  %s0 = tensor.empty() : tensor<3x8x5xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<3x8x5xf32>) -> tensor<3x8x5xf32>
  %s = linalg.batch_matmul indexing_maps = [#qk_q, #qk_k, #qk_s]
      ins(%q, %k : tensor<3x8x8xf32>, tensor<3x5x8xf32>) outs(%sz : tensor<3x8x5xf32>) -> tensor<3x8x5xf32>
  %sc = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<3x8x5xf32>) outs(%s0 : tensor<3x8x5xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %i64 = arith.index_cast %i : index to i64
    %j64 = arith.index_cast %j : index to i64
    %lim = arith.addi %i64, %cm3 : i64
    %keep = arith.cmpi sge, %lim, %j64 : i64
    %r = arith.select %keep, %a, %lowest : f32
    linalg.yield %r : f32
  } -> tensor<3x8x5xf32>
  %sm = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%sc : tensor<3x8x5xf32>) outs(%s0 : tensor<3x8x5xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %scale : f32
    linalg.yield %r : f32
  } -> tensor<3x8x5xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<3x8x5xf32>) outs(%s0 : tensor<3x8x5xf32>) -> tensor<3x8x5xf32>
  %o0 = tensor.empty() : tensor<3x8x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<3x8x8xf32>) -> tensor<3x8x8xf32>
  // expected-remark @+1 {{not raised to fa.attention: the causal mask hides every key of the first 3 query rows (Tq > Tk, bottom-right aligned) with a finite value (-4.253529e+37): the original gives those rows the mean of v, fa.attention gives them 0}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<3x8x5xf32>, tensor<3x5x8xf32>) outs(%oz : tensor<3x8x8xf32>) -> tensor<3x8x8xf32>
  return %o : tensor<3x8x8xf32>
}

// -----

// TOSA: a scale held in a dense_resource blob (three equal values): the
// pass does not read resources, and the remark says so rather than "more
// than one value".
// CHECK-LABEL: func.func @tosa_scale_resource_constant
// CHECK-NOT: fa.attention
func.func @tosa_scale_resource_constant(%q: tensor<2x3x8x4xf32>, %k: tensor<2x3x8x4xf32>, %v: tensor<2x3x8x4xf32>) -> tensor<2x3x8x4xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %scale = "tosa.const"() <{values = dense_resource<blob1> : tensor<1x3x1x1xf32>}> : () -> tensor<1x3x1x1xf32>
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
  %sc = tosa.mul %s4, %scale, %shift : (tensor<2x3x8x8xf32>, tensor<1x3x1x1xf32>, tensor<1xi8>) -> tensor<2x3x8x8xf32>
  %mx = tosa.reduce_max %sc {axis = 3 : i32} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x1xf32>
  %d = tosa.sub %sc, %mx : (tensor<2x3x8x8xf32>, tensor<2x3x8x1xf32>) -> tensor<2x3x8x8xf32>
  %e = tosa.exp %d : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  %l = tosa.reduce_sum %e {axis = 3 : i32} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x1xf32>
  %rl = tosa.reciprocal %l : (tensor<2x3x8x1xf32>) -> tensor<2x3x8x1xf32>
  %p = tosa.mul %e, %rl, %shift : (tensor<2x3x8x8xf32>, tensor<2x3x8x1xf32>, tensor<1xi8>) -> tensor<2x3x8x8xf32>
  %p3 = tosa.reshape %p, %s3s : (tensor<2x3x8x8xf32>, !tosa.shape<3>) -> tensor<6x8x8xf32>
  // expected-remark @+1 {{not raised to fa.attention: the scores are scaled by a constant that is not read as one value (expected a splat float constant)}}
  %o = tosa.matmul %p3, %vr, %zp, %zp : (tensor<6x8x8xf32>, tensor<6x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<6x8x4xf32>
  %o4 = tosa.reshape %o, %s4o : (tensor<6x8x4xf32>, !tosa.shape<4>) -> tensor<2x3x8x4xf32>
  return %o4 : tensor<2x3x8x4xf32>
}
{-#
  dialect_resources: {
    builtin: {
      blob1: "0x040000000000003F0000003F0000003F"
    }
  }
#-}
