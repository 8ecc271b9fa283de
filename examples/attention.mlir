// The bundled example: causal multi-head attention, bf16, batch 2 x 4 heads,
// seqlen 256, head_dim 64, with the logsumexp the backward pass needs.
//
//   fa-opt examples/attention.mlir --fa-tile-attention        # tiled IR
//   fa-opt examples/attention.mlir --fa-to-cpu                # LLVM dialect
//   fa-opt examples/attention.mlir --fa-to-ptx="output-dir=build/kernels"
//
// scripts/run-example.sh runs all of it and checks the numbers.
func.func @attention(%q: tensor<2x4x256x64xbf16>, %k: tensor<2x4x256x64xbf16>,
                     %v: tensor<2x4x256x64xbf16>)
    -> (tensor<2x4x256x64xbf16>, tensor<2x4x256xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(top_left)
      : tensor<2x4x256x64xbf16>, tensor<2x4x256x64xbf16>, tensor<2x4x256x64xbf16>
      -> tensor<2x4x256x64xbf16>, tensor<2x4x256xf32>
  return %o, %lse : tensor<2x4x256x64xbf16>, tensor<2x4x256xf32>
}
