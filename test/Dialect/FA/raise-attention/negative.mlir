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
  // expected-remark @+1 {{not raised to fa.attention: the scores are computed with 'linalg.batch_matmul' accumulating into a tensor that is not zero-filled}}
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

// q and k split their batch dim 6 as 2x3 and 3x2 before the collapse: the
// same flat batch index pairs different (batch, head) rows, so the chain is
// not one attention over [2, 3] heads.
// CHECK-LABEL: func.func @batch_split_sizes_differ
// CHECK-NOT: fa.attention
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
  // expected-remark @+1 {{not raised to fa.attention: a reshape splits batch dim 0 in two different ways}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<6x8x8xf32>, tensor<6x8x4xf32>) outs(%oz : tensor<6x8x4xf32>) -> tensor<6x8x4xf32>
  return %o : tensor<6x8x4xf32>
}

// -----

// The mask splits the batch dim as 3x2 where q, k and v split it as 2x3.
// CHECK-LABEL: func.func @mask_split_sizes_differ
// CHECK-NOT: fa.attention
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
  // expected-remark @+1 {{not raised to fa.attention: a reshape splits batch dim 0 in two different ways}}
  %o = linalg.batch_matmul ins(%p, %vc : tensor<6x8x8xf32>, tensor<6x8x4xf32>) outs(%oz : tensor<6x8x4xf32>) -> tensor<6x8x4xf32>
  return %o : tensor<6x8x4xf32>
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

// q collapses [?, 4] and k [4, ?] into one batch dim: at run time q 3x4
// and k 4x3 collapse to the same 12 and pair q[n / 4, n % 4] with
// k[n / 3, n % 3], which no fa.attention batch layout reproduces. With two
// dynamic parts nothing ties the splits together.
// CHECK-LABEL: func.func @batch_split_two_dynamic_parts
// CHECK-NOT: fa.attention
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
  // expected-remark @+1 {{not raised to fa.attention: a reshape splits batch dim 0 in two different ways (or in two ways with more than one dynamic part, which need not agree)}}
  %o = linalg.batch_matmul ins(%p, %vc : tensor<?x?x?xf32>, tensor<?x?x32xf32>) outs(%oz : tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  return %o : tensor<?x?x32xf32>
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

// q's batch dim is collapsed from [?, 2, ?]; k and v come flat. Raising
// would expand k and v to two dynamic parts in one group, an expand_shape
// that fa-to-cpu's upstream lowering crashed on, with nothing tying the
// parts to q's: left untouched.
// CHECK-LABEL: func.func @batch_split_into_two_dynamic_parts
// CHECK-NOT: fa.attention
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
  // expected-remark @+1 {{not raised to fa.attention: a reshape splits batch dim 0 into more than one dynamic part}}
  %o = linalg.batch_matmul ins(%p, %vc : tensor<?x?x?xf32>, tensor<?x?x32xf32>) outs(%oz : tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  return %o : tensor<?x?x32xf32>
}

// -----

// A bias select(c, -inf, 1) is not a mask of the scores (it adds 1 to the
// kept keys' scores): left untouched.
// CHECK-LABEL: func.func @bias_select_not_zero
// CHECK-NOT: fa.attention
func.func @bias_select_not_zero(%q: tensor<2x6x4xf32>, %k: tensor<2x10x4xf32>, %v: tensor<2x10x4xf32>, %keep: tensor<2x6x10xi1>) -> tensor<2x6x4xf32> {
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
  // expected-remark @+1 {{not raised to fa.attention: the scores add a select, expected a float mask tensor}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x6x10xf32>, tensor<2x10x4xf32>) outs(%oz : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  return %o : tensor<2x6x4xf32>
}
