// Unfused causal attention as torch-to-linalg writes it for
// F.softmax(q @ k.transpose(-2, -1) / sqrt(64) masked by a causal tril,
// dim=-1) @ v in bf16: [B, H, T, D] = [2, 8, 512, 64], batch and head dims
// collapsed around linalg.batch_matmul, K transposed by linalg.transpose,
// the scores upcast to f32 for the softmax (max / sub+exp / sum / div
// generics) and the probabilities truncated back to bf16, causal masking
// by a select on linalg.index.
//
//   fa-opt examples/unfused_attention.mlir --fa-raise-attention \
//       --fa-to-ptx="output-dir=DIR"
//
// raises the whole chain to one fa.attention ... causal(top_left) and
// compiles it to PTX plus a manifest.

#id3 = affine_map<(b, i, j) -> (b, i, j)>
#row3 = affine_map<(b, i, j) -> (b, i)>

func.func @unfused_attention(%q: tensor<2x8x512x64xbf16>, %k: tensor<2x8x512x64xbf16>, %v: tensor<2x8x512x64xbf16>) -> tensor<2x8x512x64xbf16> {
  %zero = arith.constant 0.0 : f32
  %zero_bf16 = arith.constant 0.0 : bf16
  %ninf = arith.constant 0xFF800000 : f32
  %sqrt_d = arith.constant 8.0 : f32
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x8x512x64xbf16> into tensor<16x512x64xbf16>
  %kc = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<2x8x512x64xbf16> into tensor<16x512x64xbf16>
  %vc = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<2x8x512x64xbf16> into tensor<16x512x64xbf16>
  %kt0 = tensor.empty() : tensor<16x64x512xbf16>
  %kt = linalg.transpose ins(%kc : tensor<16x512x64xbf16>) outs(%kt0 : tensor<16x64x512xbf16>) permutation = [0, 2, 1]
  %s0 = tensor.empty() : tensor<16x512x512xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<16x512x512xf32>) -> tensor<16x512x512xf32>
  %s = linalg.batch_matmul ins(%qc, %kt : tensor<16x512x64xbf16>, tensor<16x64x512xbf16>) outs(%sz : tensor<16x512x512xf32>) -> tensor<16x512x512xf32>
  // Scale, then the causal mask: keys j > i get -inf.
  %sm = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<16x512x512xf32>) outs(%s0 : tensor<16x512x512xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %i64 = arith.index_cast %i : index to i64
    %j64 = arith.index_cast %j : index to i64
    %future = arith.cmpi sgt, %j64, %i64 : i64
    %x = arith.divf %a, %sqrt_d : f32
    %r = arith.select %future, %ninf, %x : f32
    linalg.yield %r : f32
  } -> tensor<16x512x512xf32>
  %r0 = tensor.empty() : tensor<16x512xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<16x512xf32>) -> tensor<16x512xf32>
  %mx = linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%sm : tensor<16x512x512xf32>) outs(%mi : tensor<16x512xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<16x512xf32>
  %ex = linalg.generic {indexing_maps = [#id3, #row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%sm, %mx : tensor<16x512x512xf32>, tensor<16x512xf32>) outs(%s0 : tensor<16x512x512xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<16x512x512xf32>
  %li = linalg.fill ins(%zero : f32) outs(%r0 : tensor<16x512xf32>) -> tensor<16x512xf32>
  %l = linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ex : tensor<16x512x512xf32>) outs(%li : tensor<16x512xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<16x512xf32>
  %pb0 = tensor.empty() : tensor<16x512x512xbf16>
  %p = linalg.generic {indexing_maps = [#id3, #row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ex, %l : tensor<16x512x512xf32>, tensor<16x512xf32>) outs(%pb0 : tensor<16x512x512xbf16>) {
  ^bb0(%a: f32, %b: f32, %o: bf16):
    %r = arith.divf %a, %b : f32
    %t = arith.truncf %r : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<16x512x512xbf16>
  %o0 = tensor.empty() : tensor<16x512x64xbf16>
  %oz = linalg.fill ins(%zero_bf16 : bf16) outs(%o0 : tensor<16x512x64xbf16>) -> tensor<16x512x64xbf16>
  %o = linalg.batch_matmul ins(%p, %vc : tensor<16x512x512xbf16>, tensor<16x512x64xbf16>) outs(%oz : tensor<16x512x64xbf16>) -> tensor<16x512x64xbf16>
  %oe = tensor.expand_shape %o [[0, 1], [2], [3]] output_shape [2, 8, 512, 64] : tensor<16x512x64xbf16> into tensor<2x8x512x64xbf16>
  return %oe : tensor<2x8x512x64xbf16>
}
