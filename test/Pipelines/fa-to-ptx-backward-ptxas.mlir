// The backward PTX of fa-to-ptx assembles with CUDA's ptxas on sm_90a, in
// both dq modes, for every element type and causal kind.

// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a tensor-cores=false output-dir=%t/atomic" -o /dev/null
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a tensor-cores=false deterministic=true output-dir=%t/det" -o /dev/null
// RUN: %ptxas -arch=sm_90a %t/atomic/bf16_top_left_attention_backward_0.ptx -o %t/a.cubin
// RUN: %ptxas -arch=sm_90a %t/atomic/f16_none_attention_backward_0.ptx -o %t/b.cubin
// RUN: %ptxas -arch=sm_90a %t/atomic/f32_bottom_right_attention_backward_0.ptx -o %t/c.cubin
// RUN: %ptxas -arch=sm_90a %t/det/bf16_top_left_attention_backward_0.ptx -o %t/d.cubin
// RUN: %ptxas -arch=sm_90a %t/det/f16_none_attention_backward_0.ptx -o %t/e.cubin
// RUN: %ptxas -arch=sm_90a %t/det/f32_bottom_right_attention_backward_0.ptx -o %t/f.cubin
// RUN: %ptxas -arch=sm_90a -v %t/atomic/bf16_top_left_attention_backward_0.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=INFO

// Static shared memory only; the dk/dv kernel of bf16, D = 64: K, Q, dO
// tiles (3 x 8 KiB), dS (16 KiB) and lse/delta (512 B); no spills.
// INFO-DAG: Compiling entry function 'bf16_top_left_attention_backward_0_dkdv' for 'sm_90a'
// INFO-DAG: 41472 bytes smem
// INFO-NOT: bytes spill stores, {{[1-9]}}

func.func @bf16_top_left(%q: tensor<2x8x?x64xbf16>, %k: tensor<2x8x?x64xbf16>,
                         %v: tensor<2x8x?x64xbf16>, %o: tensor<2x8x?x64xbf16>,
                         %do: tensor<2x8x?x64xbf16>, %lse: tensor<2x8x?xf32>)
    -> (tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(top_left)
      : tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>,
        tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>
     -> tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>
  return %dq, %dk, %dv : tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>
}

func.func @f16_none(%q: tensor<?x?x128xf16>, %k: tensor<?x?x128xf16>,
                    %v: tensor<?x?x128xf16>, %o: tensor<?x?x128xf16>,
                    %do: tensor<?x?x128xf16>, %lse: tensor<?x?xf32>)
    -> (tensor<?x?x128xf32>, tensor<?x?x128xf32>, tensor<?x?x128xf32>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse
      : tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?x128xf16>,
        tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?xf32>
     -> tensor<?x?x128xf32>, tensor<?x?x128xf32>, tensor<?x?x128xf32>
  return %dq, %dk, %dv : tensor<?x?x128xf32>, tensor<?x?x128xf32>, tensor<?x?x128xf32>
}

func.func @f32_bottom_right(%q: tensor<4x?x64xf32>, %k: tensor<4x?x64xf32>,
                            %v: tensor<4x?x64xf32>, %o: tensor<4x?x64xf32>,
                            %do: tensor<4x?x64xf32>, %lse: tensor<4x?xf32>)
    -> (tensor<4x?x64xf32>, tensor<4x?x64xf32>, tensor<4x?x64xf32>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(bottom_right)
      : tensor<4x?x64xf32>, tensor<4x?x64xf32>, tensor<4x?x64xf32>,
        tensor<4x?x64xf32>, tensor<4x?x64xf32>, tensor<4x?xf32>
     -> tensor<4x?x64xf32>, tensor<4x?x64xf32>, tensor<4x?x64xf32>
  return %dq, %dk, %dv : tensor<4x?x64xf32>, tensor<4x?x64xf32>, tensor<4x?x64xf32>
}
