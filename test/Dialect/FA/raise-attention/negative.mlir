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
