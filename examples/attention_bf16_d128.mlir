// Tensor-core example: non-causal bf16 attention with head_dim 128 and
// dynamic batch and sequence lengths, with the logsumexp the backward needs.
//
//   fa-opt examples/attention_bf16_d128.mlir \
//       --fa-to-ptx="chip=sm_80 output-dir=build/kernels"
//
// compiles it with the mma.sync tensor-core kernel of the sm_80 path
// (4 warps of 32 query rows, block_m 128, block_n 32, Q in workgroup memory;
// see convert-fa-to-gpu in docs/PASSES.md); `chip=sm_90a` (the default)
// takes the Hopper wgmma kernel instead (two warpgroups, block_m 128,
// block_n 128; `wgmma=false` keeps mma.sync). Run it with
//
//   fa-run --manifest build/kernels/attention_bf16_d128_attention_0.manifest \
//       --batch 64 --seqlen-q 4096 --seqlen-k 4096
//
// (docs/PERFORMANCE.md has its measured speed on the H200).
func.func @attention_bf16_d128(%q: tensor<?x?x128xbf16>, %k: tensor<?x?x128xbf16>,
                               %v: tensor<?x?x128xbf16>)
    -> (tensor<?x?x128xbf16>, tensor<?x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v
      : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>
      -> tensor<?x?x128xbf16>, tensor<?x?xf32>
  return %o, %lse : tensor<?x?x128xbf16>, tensor<?x?xf32>
}
