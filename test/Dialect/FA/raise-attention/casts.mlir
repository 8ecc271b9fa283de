// RUN: fa-opt %s --fa-raise-attention --split-input-file | FileCheck %s

// torch-to-linalg-like f16/bf16 chains: the products take the low-precision
// inputs (f32 accumulation inside the body), the scores are upcast before
// the softmax and the probabilities truncated after it.

#qk_q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#qk_k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#qk_s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#pv_p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#pv_v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#pv_o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row4 = affine_map<(b, h, i, j) -> (b, h, i)>

// CHECK-LABEL: func.func @f16_upcast_softmax
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x12x8xf16>, %[[K:.+]]: tensor<1x2x12x8xf16>, %[[V:.+]]: tensor<1x2x12x8xf16>)
// CHECK: %[[O:.+]] = fa.attention %[[Q]], %[[K]], %[[V]] scale(0.35355{{[0-9]+}}) : tensor<1x2x12x8xf16>, tensor<1x2x12x8xf16>, tensor<1x2x12x8xf16> -> tensor<1x2x12x8xf16>
// CHECK-NEXT: return %[[O]]
func.func @f16_upcast_softmax(%q: tensor<1x2x12x8xf16>, %k: tensor<1x2x12x8xf16>, %v: tensor<1x2x12x8xf16>) -> tensor<1x2x12x8xf16> {
  %zero = arith.constant 0.0 : f32
  %zh = arith.constant 0.0 : f16
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.353553385 : f32
  %e4 = tensor.empty() : tensor<1x2x12x12xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<1x2x12x12xf32>) -> tensor<1x2x12x12xf32>
  %s = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x12x8xf16>, tensor<1x2x12x8xf16>) outs(%s0 : tensor<1x2x12x12xf32>) {
  ^bb0(%a: f16, %b: f16, %acc: f32):
    %a32 = arith.extf %a : f16 to f32
    %b32 = arith.extf %b : f16 to f32
    %m = arith.mulf %a32, %b32 : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x12x12xf32>
  %e3 = tensor.empty() : tensor<1x2x12xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e3 : tensor<1x2x12xf32>) -> tensor<1x2x12xf32>
  %mx = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%s : tensor<1x2x12x12xf32>) outs(%m0 : tensor<1x2x12xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %x = arith.mulf %a, %scale : f32
    %r = arith.maximumf %acc, %x : f32
    linalg.yield %r : f32
  } -> tensor<1x2x12xf32>
  %ex = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s, %mx : tensor<1x2x12x12xf32>, tensor<1x2x12xf32>) outs(%e4 : tensor<1x2x12x12xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %x = arith.mulf %a, %scale : f32
    %d = arith.subf %x, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<1x2x12x12xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<1x2x12xf32>) -> tensor<1x2x12xf32>
  %l = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ex : tensor<1x2x12x12xf32>) outs(%l0 : tensor<1x2x12xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<1x2x12xf32>
  %ph = tensor.empty() : tensor<1x2x12x12xf16>
  %p = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ex, %l : tensor<1x2x12x12xf32>, tensor<1x2x12xf32>) outs(%ph : tensor<1x2x12x12xf16>) {
  ^bb0(%a: f32, %b: f32, %o: f16):
    %r = arith.divf %a, %b : f32
    %t = arith.truncf %r : f32 to f16
    linalg.yield %t : f16
  } -> tensor<1x2x12x12xf16>
  %eo = tensor.empty() : tensor<1x2x12x8xf16>
  %o0 = linalg.fill ins(%zh : f16) outs(%eo : tensor<1x2x12x8xf16>) -> tensor<1x2x12x8xf16>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x12x12xf16>, tensor<1x2x12x8xf16>) outs(%o0 : tensor<1x2x12x8xf16>) {
  ^bb0(%a: f16, %b: f16, %acc: f16):
    %m = arith.mulf %a, %b : f16
    %r = arith.addf %acc, %m : f16
    linalg.yield %r : f16
  } -> tensor<1x2x12x8xf16>
  return %o : tensor<1x2x12x8xf16>
}

// -----

// bf16 batch_matmul accumulating into f32 scores, named softmax in f32,
// truncation to bf16, bf16 batch_matmul; [B, T, H, D] inputs transposed to
// [B, H, T, D] by linalg.transpose before being collapsed.

// CHECK-LABEL: func.func @bf16_bthd_transposed
// CHECK-SAME: (%[[Q:.+]]: tensor<2x10x2x16xbf16>, %[[K:.+]]: tensor<2x10x2x16xbf16>, %[[V:.+]]: tensor<2x10x2x16xbf16>)
// CHECK-DAG: %[[QT:.+]] = linalg.transpose ins(%[[Q]] : tensor<2x10x2x16xbf16>) outs(%{{.+}} : tensor<2x2x10x16xbf16>) permutation = [0, 2, 1, 3]
// CHECK-DAG: %[[KT:.+]] = linalg.transpose ins(%[[K]] : tensor<2x10x2x16xbf16>) outs(%{{.+}} : tensor<2x2x10x16xbf16>) permutation = [0, 2, 1, 3]
// CHECK-DAG: %[[VT:.+]] = linalg.transpose ins(%[[V]] : tensor<2x10x2x16xbf16>) outs(%{{.+}} : tensor<2x2x10x16xbf16>) permutation = [0, 2, 1, 3]
// CHECK: fa.attention %[[QT]], %[[KT]], %[[VT]] scale(2.500000e-01) : tensor<2x2x10x16xbf16>, tensor<2x2x10x16xbf16>, tensor<2x2x10x16xbf16> -> tensor<2x2x10x16xbf16>
func.func @bf16_bthd_transposed(%q: tensor<2x10x2x16xbf16>, %k: tensor<2x10x2x16xbf16>, %v: tensor<2x10x2x16xbf16>) -> tensor<2x2x10x16xbf16> {
  %zero = arith.constant 0.0 : bf16
  %quarter = arith.constant 0.25 : f32
  %t0 = tensor.empty() : tensor<2x2x10x16xbf16>
  %qt = linalg.transpose ins(%q : tensor<2x10x2x16xbf16>) outs(%t0 : tensor<2x2x10x16xbf16>) permutation = [0, 2, 1, 3]
  %kt = linalg.transpose ins(%k : tensor<2x10x2x16xbf16>) outs(%t0 : tensor<2x2x10x16xbf16>) permutation = [0, 2, 1, 3]
  %vt = linalg.transpose ins(%v : tensor<2x10x2x16xbf16>) outs(%t0 : tensor<2x2x10x16xbf16>) permutation = [0, 2, 1, 3]
  %qc = tensor.collapse_shape %qt [[0, 1], [2], [3]] : tensor<2x2x10x16xbf16> into tensor<4x10x16xbf16>
  %kc = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<2x2x10x16xbf16> into tensor<4x10x16xbf16>
  %vc = tensor.collapse_shape %vt [[0, 1], [2], [3]] : tensor<2x2x10x16xbf16> into tensor<4x10x16xbf16>
  %zf = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<4x10x10xbf16>
  %f0 = tensor.empty() : tensor<4x10x10xf32>
  %sz = linalg.fill ins(%zf : f32) outs(%f0 : tensor<4x10x10xf32>) -> tensor<4x10x10xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>, affine_map<(b, i, j, d) -> (b, j, d)>, affine_map<(b, i, j, d) -> (b, i, j)>]
      ins(%qc, %kc : tensor<4x10x16xbf16>, tensor<4x10x16xbf16>) outs(%sz : tensor<4x10x10xf32>) -> tensor<4x10x10xf32>
  %sf = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<4x10x10xf32>) outs(%f0 : tensor<4x10x10xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %quarter : f32
    linalg.yield %r : f32
  } -> tensor<4x10x10xf32>
  %pf = linalg.softmax dimension(2) ins(%sf : tensor<4x10x10xf32>) outs(%f0 : tensor<4x10x10xf32>) -> tensor<4x10x10xf32>
  %pb = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%pf : tensor<4x10x10xf32>) outs(%s0 : tensor<4x10x10xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<4x10x10xbf16>
  %o0 = tensor.empty() : tensor<4x10x16xbf16>
  %oz = linalg.fill ins(%zero : bf16) outs(%o0 : tensor<4x10x16xbf16>) -> tensor<4x10x16xbf16>
  %o = linalg.batch_matmul ins(%pb, %vc : tensor<4x10x10xbf16>, tensor<4x10x16xbf16>) outs(%oz : tensor<4x10x16xbf16>) -> tensor<4x10x16xbf16>
  %oe = tensor.expand_shape %o [[0, 1], [2], [3]] output_shape [2, 2, 10, 16] : tensor<4x10x16xbf16> into tensor<2x2x10x16xbf16>
  return %oe : tensor<2x2x10x16xbf16>
}
