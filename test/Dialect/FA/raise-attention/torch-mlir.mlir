// RUN: fa-opt %s --fa-raise-attention --split-input-file | FileCheck %s

// Attention as torch-mlir's TorchToLinalg writes it, before canonicalization:
// constants it leaves unfolded (torch's alpha of 1 as sitofp of an i64,
// an f64 1.0 truncated), tensor.cast after reductions and products, and
// SDPA's is_causal as a tril of ones in i1. Each is CPU equivalence-checked
// (test/Integration/CPU/raise-torch-mlir.test).

// Llama-style GQA decoder attention in bf16: [B, T, H * D] reshaped and
// transposed to [B, H, T, D], k and v repeated over groups of 2 query heads,
// an additive bf16 mask [B, 1, T, T] added with alpha, the softmax in f32
// (the max subtracted with alpha), probabilities truncated to bf16, the
// output brought back to [B, T, H * D].

// CHECK-LABEL: func.func @llama_gqa_bf16_torch_to_linalg
// CHECK: fa.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}} : tensor<2x1x8x8xbf16>) scale(2.500000e-01) : tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16> -> tensor<2x4x8x16xf32>
// CHECK-NOT: linalg.softmax
// CHECK-NOT: math.exp
func.func @llama_gqa_bf16_torch_to_linalg(%q: tensor<2x8x64xbf16>, %k: tensor<2x8x32xbf16>, %v: tensor<2x8x32xbf16>, %mask: tensor<2x1x8x8xbf16>) -> (tensor<2x8x64xbf16>) {
  %x1 = tensor.expand_shape %q [[0], [1], [2, 3]] output_shape [2, 8, 4, 16] : tensor<2x8x64xbf16> into tensor<2x8x4x16xbf16>
  %e2 = tensor.empty() : tensor<2x4x8x16xbf16>
  %r4:1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x1 : tensor<2x8x4x16xbf16>) outs(%e2 : tensor<2x4x8x16xbf16>) {
  ^bb0(%a0: bf16, %a1: bf16):
    linalg.yield %a0 : bf16
  } -> tensor<2x4x8x16xbf16>
  %x5 = tensor.expand_shape %k [[0], [1], [2, 3]] output_shape [2, 8, 2, 16] : tensor<2x8x32xbf16> into tensor<2x8x2x16xbf16>
  %e6 = tensor.empty() : tensor<2x2x8x16xbf16>
  %r8:1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x5 : tensor<2x8x2x16xbf16>) outs(%e6 : tensor<2x2x8x16xbf16>) {
  ^bb0(%a0: bf16, %a1: bf16):
    linalg.yield %a0 : bf16
  } -> tensor<2x2x8x16xbf16>
  %x9 = tensor.expand_shape %v [[0], [1], [2, 3]] output_shape [2, 8, 2, 16] : tensor<2x8x32xbf16> into tensor<2x8x2x16xbf16>
  %e10 = tensor.empty() : tensor<2x2x8x16xbf16>
  %r12:1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x9 : tensor<2x8x2x16xbf16>) outs(%e10 : tensor<2x2x8x16xbf16>) {
  ^bb0(%a0: bf16, %a1: bf16):
    linalg.yield %a0 : bf16
  } -> tensor<2x2x8x16xbf16>
  %x13 = tensor.expand_shape %r8#0 [[0], [1, 2], [3], [4]] output_shape [2, 2, 1, 8, 16] : tensor<2x2x8x16xbf16> into tensor<2x2x1x8x16xbf16>
  %e14 = tensor.empty() : tensor<2x2x2x8x16xbf16>
  %r16:1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, 0, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x13 : tensor<2x2x1x8x16xbf16>) outs(%e14 : tensor<2x2x2x8x16xbf16>) {
  ^bb0(%a0: bf16, %a1: bf16):
    linalg.yield %a0 : bf16
  } -> tensor<2x2x2x8x16xbf16>
  %x17 = tensor.collapse_shape %r16#0 [[0], [1, 2], [3], [4]] : tensor<2x2x2x8x16xbf16> into tensor<2x4x8x16xbf16>
  %x18 = tensor.expand_shape %r12#0 [[0], [1, 2], [3], [4]] output_shape [2, 2, 1, 8, 16] : tensor<2x2x8x16xbf16> into tensor<2x2x1x8x16xbf16>
  %e19 = tensor.empty() : tensor<2x2x2x8x16xbf16>
  %r21:1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, 0, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x18 : tensor<2x2x1x8x16xbf16>) outs(%e19 : tensor<2x2x2x8x16xbf16>) {
  ^bb0(%a0: bf16, %a1: bf16):
    linalg.yield %a0 : bf16
  } -> tensor<2x2x2x8x16xbf16>
  %x22 = tensor.collapse_shape %r21#0 [[0], [1, 2], [3], [4]] : tensor<2x2x2x8x16xbf16> into tensor<2x4x8x16xbf16>
  %e23 = tensor.empty() : tensor<2x4x16x8xbf16>
  %r25:1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x17 : tensor<2x4x8x16xbf16>) outs(%e23 : tensor<2x4x16x8xbf16>) {
  ^bb0(%a0: bf16, %a1: bf16):
    linalg.yield %a0 : bf16
  } -> tensor<2x4x16x8xbf16>
  %x26 = tensor.collapse_shape %r4#0 [[0, 1], [2], [3]] : tensor<2x4x8x16xbf16> into tensor<8x8x16xbf16>
  %x27 = tensor.collapse_shape %r25#0 [[0, 1], [2], [3]] : tensor<2x4x16x8xbf16> into tensor<8x16x8xbf16>
  %e28 = tensor.empty() : tensor<8x8x8xf32>
  %c29 = arith.constant 0.000000e+00 : f32
  %f30 = linalg.fill ins(%c29 : f32) outs(%e28 : tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  %mm31 = linalg.batch_matmul ins(%x26, %x27 : tensor<8x8x16xbf16>, tensor<8x16x8xbf16>) outs(%f30 : tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  %e32 = tensor.empty() : tensor<8x8x8xbf16>
  %r34:1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%mm31 : tensor<8x8x8xf32>) outs(%e32 : tensor<8x8x8xbf16>) {
  ^bb0(%a0: f32, %a1: bf16):
    %t = arith.truncf %a0 : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x8x8xbf16>
  %x35 = tensor.expand_shape %r34#0 [[0, 1], [2], [3]] output_shape [2, 4, 8, 8] : tensor<8x8x8xbf16> into tensor<2x4x8x8xbf16>
  %c36 = arith.constant 0.25 : f64
  %e37 = tensor.empty() : tensor<2x4x8x8xbf16>
  %r39:1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x35 : tensor<2x4x8x8xbf16>) outs(%e37 : tensor<2x4x8x8xbf16>) {
  ^bb0(%a0: bf16, %a1: bf16):
    %cs = arith.truncf %c36 : f64 to bf16
    %m = arith.mulf %a0, %cs : bf16
    linalg.yield %m : bf16
  } -> tensor<2x4x8x8xbf16>
  %c40 = arith.constant 1 : i64
  %e41 = tensor.empty() : tensor<2x4x8x8xbf16>
  %r43:1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%r39#0, %mask : tensor<2x4x8x8xbf16>, tensor<2x1x8x8xbf16>) outs(%e41 : tensor<2x4x8x8xbf16>) {
  ^bb0(%a0: bf16, %a1: bf16, %a2: bf16):
    %al = arith.sitofp %c40 : i64 to bf16
    %m = arith.mulf %a1, %al : bf16
    %r = arith.addf %a0, %m : bf16
    linalg.yield %r : bf16
  } -> tensor<2x4x8x8xbf16>
  %e44 = tensor.empty() : tensor<2x4x8x8xf32>
  %r46:1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%r43#0 : tensor<2x4x8x8xbf16>) outs(%e44 : tensor<2x4x8x8xf32>) {
  ^bb0(%a0: bf16, %a1: f32):
    %e = arith.extf %a0 : bf16 to f32
    linalg.yield %e : f32
  } -> tensor<2x4x8x8xf32>
  %e47 = tensor.empty() : tensor<2x4x8x1xf32>
  %c48 = arith.constant -3.40282347E+38 : f32
  %f49 = linalg.fill ins(%c48 : f32) outs(%e47 : tensor<2x4x8x1xf32>) -> tensor<2x4x8x1xf32>
  %e50 = tensor.empty() : tensor<2x4x8x1xi64>
  %c51 = arith.constant 0 : i64
  %f52 = linalg.fill ins(%c51 : i64) outs(%e50 : tensor<2x4x8x1xi64>) -> tensor<2x4x8x1xi64>
  %r55:2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%r46#0 : tensor<2x4x8x8xf32>) outs(%f49, %f52 : tensor<2x4x8x1xf32>, tensor<2x4x8x1xi64>) {
  ^bb0(%a0: f32, %a1: f32, %a2: i64):
    %i = linalg.index 3 : index
    %i64 = arith.index_cast %i : index to i64
    %mx = arith.maximumf %a0, %a1 : f32
    %gt = arith.cmpf ogt, %a0, %a1 : f32
    %si = arith.select %gt, %i64, %a2 : i64
    linalg.yield %mx, %si : f32, i64
  } -> (tensor<2x4x8x1xf32>, tensor<2x4x8x1xi64>)
  %c56 = arith.constant 1.000000e+00 : f64
  %e57 = tensor.empty() : tensor<2x4x8x8xf32>
  %r59:1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%r46#0, %r55#0 : tensor<2x4x8x8xf32>, tensor<2x4x8x1xf32>) outs(%e57 : tensor<2x4x8x8xf32>) {
  ^bb0(%a0: f32, %a1: f32, %a2: f32):
    %al = arith.truncf %c56 : f64 to f32
    %m = arith.mulf %a1, %al : f32
    %r = arith.subf %a0, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x8x8xf32>
  %e60 = tensor.empty() : tensor<2x4x8x8xf32>
  %r62:1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%r59#0 : tensor<2x4x8x8xf32>) outs(%e60 : tensor<2x4x8x8xf32>) {
  ^bb0(%a0: f32, %a1: f32):
    %r = math.exp %a0 : f32
    linalg.yield %r : f32
  } -> tensor<2x4x8x8xf32>
  %e63 = tensor.empty() : tensor<2x4x8x1xf32>
  %f64 = linalg.fill ins(%c29 : f32) outs(%e63 : tensor<2x4x8x1xf32>) -> tensor<2x4x8x1xf32>
  %r66:1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%r62#0 : tensor<2x4x8x8xf32>) outs(%f64 : tensor<2x4x8x1xf32>) {
  ^bb0(%a0: f32, %a1: f32):
    %r = arith.addf %a0, %a1 : f32
    linalg.yield %r : f32
  } -> tensor<2x4x8x1xf32>
  %e67 = tensor.empty() : tensor<2x4x8x8xf32>
  %r69:1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%r62#0, %r66#0 : tensor<2x4x8x8xf32>, tensor<2x4x8x1xf32>) outs(%e67 : tensor<2x4x8x8xf32>) {
  ^bb0(%a0: f32, %a1: f32, %a2: f32):
    %r = arith.divf %a0, %a1 : f32
    linalg.yield %r : f32
  } -> tensor<2x4x8x8xf32>
  %e70 = tensor.empty() : tensor<2x4x8x8xbf16>
  %r72:1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%r69#0 : tensor<2x4x8x8xf32>) outs(%e70 : tensor<2x4x8x8xbf16>) {
  ^bb0(%a0: f32, %a1: bf16):
    %t = arith.truncf %a0 : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<2x4x8x8xbf16>
  %x73 = tensor.collapse_shape %r72#0 [[0, 1], [2], [3]] : tensor<2x4x8x8xbf16> into tensor<8x8x8xbf16>
  %x74 = tensor.collapse_shape %x22 [[0, 1], [2], [3]] : tensor<2x4x8x16xbf16> into tensor<8x8x16xbf16>
  %e75 = tensor.empty() : tensor<8x8x16xf32>
  %f76 = linalg.fill ins(%c29 : f32) outs(%e75 : tensor<8x8x16xf32>) -> tensor<8x8x16xf32>
  %mm77 = linalg.batch_matmul ins(%x73, %x74 : tensor<8x8x8xbf16>, tensor<8x8x16xbf16>) outs(%f76 : tensor<8x8x16xf32>) -> tensor<8x8x16xf32>
  %e78 = tensor.empty() : tensor<8x8x16xbf16>
  %r80:1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%mm77 : tensor<8x8x16xf32>) outs(%e78 : tensor<8x8x16xbf16>) {
  ^bb0(%a0: f32, %a1: bf16):
    %t = arith.truncf %a0 : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x8x16xbf16>
  %x81 = tensor.expand_shape %r80#0 [[0, 1], [2], [3]] output_shape [2, 4, 8, 16] : tensor<8x8x16xbf16> into tensor<2x4x8x16xbf16>
  %e82 = tensor.empty() : tensor<2x8x4x16xbf16>
  %r84:1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x81 : tensor<2x4x8x16xbf16>) outs(%e82 : tensor<2x8x4x16xbf16>) {
  ^bb0(%a0: bf16, %a1: bf16):
    linalg.yield %a0 : bf16
  } -> tensor<2x8x4x16xbf16>
  %x85 = tensor.collapse_shape %r84#0 [[0], [1], [2, 3]] : tensor<2x8x4x16xbf16> into tensor<2x8x64xbf16>
  return %x85 : tensor<2x8x64xbf16>
}

// -----

// SDPA's math path with is_causal=True: tril(ones(Tq, Tk, bool)) as a
// select(j - i <= 0, x, false) on a fill of true, turned into a bias
// select(not m, -inf, 0): read as causal(top_left).

// CHECK-LABEL: func.func @sdpa_is_causal_tril_of_ones
// CHECK: fa.attention %arg0, %arg1, %arg2 scale(1.000000e+00) causal(top_left) : tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32> -> tensor<2x8x4xf32>
// CHECK-NOT: linalg.generic
func.func @sdpa_is_causal_tril_of_ones(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %true = arith.constant true
  %false = arith.constant false
  %c0 = arith.constant 0 : i64
  %be = tensor.empty() : tensor<8x8xi1>
  %ones = linalg.fill ins(%true : i1) outs(%be : tensor<8x8xi1>) -> tensor<8x8xi1>
  %tril = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%ones : tensor<8x8xi1>) outs(%be : tensor<8x8xi1>) {
  ^bb0(%a: i1, %o: i1):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %i64 = arith.index_cast %i : index to i64
    %j64 = arith.index_cast %j : index to i64
    %d = arith.subi %j64, %i64 : i64
    %p = arith.cmpi sle, %d, %c0 : i64
    %r = arith.select %p, %a, %false : i1
    linalg.yield %r : i1
  } -> tensor<8x8xi1>
  %fe = tensor.empty() : tensor<8x8xf32>
  %bias = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%tril : tensor<8x8xi1>) outs(%fe : tensor<8x8xf32>) {
  ^bb0(%a: i1, %o: f32):
    %n = arith.xori %a, %true : i1
    %r = arith.select %n, %ninf, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  %s0 = tensor.empty() : tensor<2x8x8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%sz : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %bias : tensor<2x8x8xf32>, tensor<8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %r = arith.addf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o0 = tensor.empty() : tensor<2x8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>) outs(%oz : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}
