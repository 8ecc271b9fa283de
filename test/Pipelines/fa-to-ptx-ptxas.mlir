// The PTX of fa-to-ptx assembles with CUDA's ptxas, for every element type
// and causal kind, on sm_90a and sm_80.

// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a output-dir=%t/sm90" -o /dev/null
// RUN: %ptxas -arch=sm_90a %t/sm90/bf16_top_left_attention_0.ptx -o %t/a.cubin
// RUN: %ptxas -arch=sm_90a %t/sm90/f16_none_attention_0.ptx -o %t/b.cubin
// RUN: %ptxas -arch=sm_90a %t/sm90/f32_bottom_right_attention_0.ptx -o %t/c.cubin
// RUN: %ptxas -arch=sm_90a -v %t/sm90/bf16_top_left_attention_0.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=INFO
// RUN: fa-opt %s --fa-to-ptx="chip=sm_80 output-dir=%t/sm80" -o /dev/null
// RUN: %ptxas -arch=sm_80 %t/sm80/bf16_top_left_attention_0.ptx -o %t/d.cubin
// RUN: %ptxas -arch=sm_80 %t/sm80/f16_none_attention_0.ptx -o %t/e.cubin
// RUN: %ptxas -arch=sm_80 %t/sm80/f32_bottom_right_attention_0.ptx -o %t/f.cubin
// RUN: FileCheck %s --check-prefix=CHIP80 < %t/sm80/f32_bottom_right_attention_0.manifest

// The tensor-core kernel: K/V tiles in dynamic shared memory (none static
// beyond ptxas' reserved byte); no spills.
// INFO: Compiling entry function 'bf16_top_left_attention_0' for 'sm_90a'
// INFO: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// INFO: Used {{[0-9]+}} registers, used 1 barriers, {{[01]}} bytes smem

// CHIP80: chip sm_80

func.func @bf16_top_left(%q: tensor<2x8x?x64xbf16>, %k: tensor<2x8x?x64xbf16>,
                         %v: tensor<2x8x?x64xbf16>) -> (tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(top_left)
      : tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>
      -> tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>
  return %o, %lse : tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>
}

func.func @f16_none(%q: tensor<?x?x128xf16>, %k: tensor<?x?x128xf16>,
                    %v: tensor<?x?x128xf16>) -> tensor<?x?x128xf16> {
  %o = fa.attention %q, %k, %v
      : tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?x128xf16>
      -> tensor<?x?x128xf16>
  return %o : tensor<?x?x128xf16>
}

func.func @f32_bottom_right(%q: tensor<4x?x64xf32>, %k: tensor<4x?x64xf32>,
                            %v: tensor<4x?x64xf32>) -> (tensor<4x?x64xf32>, tensor<4x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(bottom_right)
      : tensor<4x?x64xf32>, tensor<4x?x64xf32>, tensor<4x?x64xf32>
      -> tensor<4x?x64xf32>, tensor<4x?xf32>
  return %o, %lse : tensor<4x?x64xf32>, tensor<4x?xf32>
}
