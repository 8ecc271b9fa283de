// The tensor-core kernels (forward and backward) of the default block
// shapes assemble without spills and without ptxas warnings (ptxas -v; on
// sm_90a forward and backward are the wgmma kernels, where a warning would say that
// wgmma was serialized: C7514/C7517), for bf16 and f16, head dims 64 and
// 128, causal and not, on sm_90a and sm_80. fa-to-ptx-tensor-cores-sass.mlir
// checks the instructions.

// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a output-dir=%t/sm90" -o /dev/null
// RUN: fa-opt %s --fa-to-ptx="chip=sm_80 output-dir=%t/sm80" -o /dev/null
// RUN: %ptxas -arch=sm_90a -v %t/sm90/bf16_d64_none_attention_0.ptx -o %t/bf16_d64_none_sm90.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_80 -v %t/sm80/bf16_d64_none_attention_0.ptx -o %t/bf16_d64_none_sm80.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/sm90/bf16_d64_bottom_right_attention_0.ptx -o %t/bf16_d64_bottom_right_sm90.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_80 -v %t/sm80/bf16_d64_bottom_right_attention_0.ptx -o %t/bf16_d64_bottom_right_sm80.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/sm90/bf16_d128_none_attention_0.ptx -o %t/bf16_d128_none_sm90.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_80 -v %t/sm80/bf16_d128_none_attention_0.ptx -o %t/bf16_d128_none_sm80.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/sm90/bf16_d128_bottom_right_attention_0.ptx -o %t/bf16_d128_bottom_right_sm90.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_80 -v %t/sm80/bf16_d128_bottom_right_attention_0.ptx -o %t/bf16_d128_bottom_right_sm80.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/sm90/f16_d64_none_attention_0.ptx -o %t/f16_d64_none_sm90.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_80 -v %t/sm80/f16_d64_none_attention_0.ptx -o %t/f16_d64_none_sm80.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/sm90/f16_d64_bottom_right_attention_0.ptx -o %t/f16_d64_bottom_right_sm90.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_80 -v %t/sm80/f16_d64_bottom_right_attention_0.ptx -o %t/f16_d64_bottom_right_sm80.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/sm90/f16_d128_none_attention_0.ptx -o %t/f16_d128_none_sm90.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_80 -v %t/sm80/f16_d128_none_attention_0.ptx -o %t/f16_d128_none_sm80.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/sm90/f16_d128_bottom_right_attention_0.ptx -o %t/f16_d128_bottom_right_sm90.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_80 -v %t/sm80/f16_d128_bottom_right_attention_0.ptx -o %t/f16_d128_bottom_right_sm80.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/sm90/bwd_bf16_d64_none_attention_backward_0.ptx -o %t/bwd_bf16_d64_none_sm90.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_80 -v %t/sm80/bwd_bf16_d64_none_attention_backward_0.ptx -o %t/bwd_bf16_d64_none_sm80.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/sm90/bwd_bf16_d64_bottom_right_attention_backward_0.ptx -o %t/bwd_bf16_d64_bottom_right_sm90.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_80 -v %t/sm80/bwd_bf16_d64_bottom_right_attention_backward_0.ptx -o %t/bwd_bf16_d64_bottom_right_sm80.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/sm90/bwd_bf16_d128_none_attention_backward_0.ptx -o %t/bwd_bf16_d128_none_sm90.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_80 -v %t/sm80/bwd_bf16_d128_none_attention_backward_0.ptx -o %t/bwd_bf16_d128_none_sm80.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/sm90/bwd_bf16_d128_bottom_right_attention_backward_0.ptx -o %t/bwd_bf16_d128_bottom_right_sm90.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_80 -v %t/sm80/bwd_bf16_d128_bottom_right_attention_backward_0.ptx -o %t/bwd_bf16_d128_bottom_right_sm80.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/sm90/bwd_f16_d64_none_attention_backward_0.ptx -o %t/bwd_f16_d64_none_sm90.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_80 -v %t/sm80/bwd_f16_d64_none_attention_backward_0.ptx -o %t/bwd_f16_d64_none_sm80.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/sm90/bwd_f16_d64_bottom_right_attention_backward_0.ptx -o %t/bwd_f16_d64_bottom_right_sm90.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_80 -v %t/sm80/bwd_f16_d64_bottom_right_attention_backward_0.ptx -o %t/bwd_f16_d64_bottom_right_sm80.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/sm90/bwd_f16_d128_none_attention_backward_0.ptx -o %t/bwd_f16_d128_none_sm90.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_80 -v %t/sm80/bwd_f16_d128_none_attention_backward_0.ptx -o %t/bwd_f16_d128_none_sm80.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/sm90/bwd_f16_d128_bottom_right_attention_backward_0.ptx -o %t/bwd_f16_d128_bottom_right_sm90.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_80 -v %t/sm80/bwd_f16_d128_bottom_right_attention_backward_0.ptx -o %t/bwd_f16_d128_bottom_right_sm80.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL

// RUN: %ptxas -arch=sm_90a -v %t/sm90/bf16_d32_top_left_attention_0.ptx -o %t/bf16_d32_top_left_sm90.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/sm90/f16_d64_dv32_none_attention_0.ptx -o %t/f16_d64_dv32_none_sm90.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// D 64 with Dv 128 (the _dq register model counts Dv) and D 32 with Dv 128
// (no default wgmma tile: the mma.sync backward):
// RUN: %ptxas -arch=sm_90a -v %t/sm90/bwd_bf16_d64_dv128_none_attention_backward_0.ptx -o %t/bwd_bf16_d64_dv128_sm90.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/sm90/bwd_bf16_d32_dv128_bottom_right_attention_backward_0.ptx -o %t/bwd_bf16_d32_dv128_sm90.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// Every kernel of a module (the backward has three) without spills, and
// no wgmma serialized by ptxas (C7514..C7517: waits it had to inject).
// NOSPILL-NOT: {{[1-9][0-9]*}} bytes spill
// NOSPILL-NOT: warning
// NOSPILL-NOT: C751{{[0-9]}}
// NOSPILL: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// NOSPILL-NOT: {{[1-9][0-9]*}} bytes spill
// NOSPILL-NOT: warning
// NOSPILL-NOT: C751{{[0-9]}}

func.func @bf16_d64_none(%q: tensor<?x?x64xbf16>, %k: tensor<?x?x64xbf16>, %v: tensor<?x?x64xbf16>) -> (tensor<?x?x64xbf16>, tensor<?x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(none)
      : tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x64xbf16> -> tensor<?x?x64xbf16>, tensor<?x?xf32>
  return %o, %lse : tensor<?x?x64xbf16>, tensor<?x?xf32>
}

func.func @bf16_d64_bottom_right(%q: tensor<?x?x64xbf16>, %k: tensor<?x?x64xbf16>, %v: tensor<?x?x64xbf16>) -> (tensor<?x?x64xbf16>, tensor<?x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(bottom_right)
      : tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x64xbf16> -> tensor<?x?x64xbf16>, tensor<?x?xf32>
  return %o, %lse : tensor<?x?x64xbf16>, tensor<?x?xf32>
}

func.func @bf16_d128_none(%q: tensor<?x?x128xbf16>, %k: tensor<?x?x128xbf16>, %v: tensor<?x?x128xbf16>) -> (tensor<?x?x128xbf16>, tensor<?x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(none)
      : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16> -> tensor<?x?x128xbf16>, tensor<?x?xf32>
  return %o, %lse : tensor<?x?x128xbf16>, tensor<?x?xf32>
}

func.func @bf16_d128_bottom_right(%q: tensor<?x?x128xbf16>, %k: tensor<?x?x128xbf16>, %v: tensor<?x?x128xbf16>) -> (tensor<?x?x128xbf16>, tensor<?x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(bottom_right)
      : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16> -> tensor<?x?x128xbf16>, tensor<?x?xf32>
  return %o, %lse : tensor<?x?x128xbf16>, tensor<?x?xf32>
}

func.func @f16_d64_none(%q: tensor<?x?x64xf16>, %k: tensor<?x?x64xf16>, %v: tensor<?x?x64xf16>) -> (tensor<?x?x64xf16>, tensor<?x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(none)
      : tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16> -> tensor<?x?x64xf16>, tensor<?x?xf32>
  return %o, %lse : tensor<?x?x64xf16>, tensor<?x?xf32>
}

func.func @f16_d64_bottom_right(%q: tensor<?x?x64xf16>, %k: tensor<?x?x64xf16>, %v: tensor<?x?x64xf16>) -> (tensor<?x?x64xf16>, tensor<?x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(bottom_right)
      : tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16> -> tensor<?x?x64xf16>, tensor<?x?xf32>
  return %o, %lse : tensor<?x?x64xf16>, tensor<?x?xf32>
}

func.func @f16_d128_none(%q: tensor<?x?x128xf16>, %k: tensor<?x?x128xf16>, %v: tensor<?x?x128xf16>) -> (tensor<?x?x128xf16>, tensor<?x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(none)
      : tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?x128xf16> -> tensor<?x?x128xf16>, tensor<?x?xf32>
  return %o, %lse : tensor<?x?x128xf16>, tensor<?x?xf32>
}

func.func @f16_d128_bottom_right(%q: tensor<?x?x128xf16>, %k: tensor<?x?x128xf16>, %v: tensor<?x?x128xf16>) -> (tensor<?x?x128xf16>, tensor<?x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(bottom_right)
      : tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?x128xf16> -> tensor<?x?x128xf16>, tensor<?x?xf32>
  return %o, %lse : tensor<?x?x128xf16>, tensor<?x?xf32>
}

func.func @bwd_bf16_d64_none(%q: tensor<?x?x64xbf16>, %k: tensor<?x?x64xbf16>, %v: tensor<?x?x64xbf16>, %o: tensor<?x?x64xbf16>, %do: tensor<?x?x64xbf16>, %lse: tensor<?x?xf32>)
    -> (tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x64xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(none)
      : tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?xf32> -> tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x64xbf16>
  return %dq, %dk, %dv : tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x64xbf16>
}

func.func @bwd_bf16_d64_bottom_right(%q: tensor<?x?x64xbf16>, %k: tensor<?x?x64xbf16>, %v: tensor<?x?x64xbf16>, %o: tensor<?x?x64xbf16>, %do: tensor<?x?x64xbf16>, %lse: tensor<?x?xf32>)
    -> (tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x64xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(bottom_right)
      : tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?xf32> -> tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x64xbf16>
  return %dq, %dk, %dv : tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x64xbf16>
}

func.func @bwd_bf16_d128_none(%q: tensor<?x?x128xbf16>, %k: tensor<?x?x128xbf16>, %v: tensor<?x?x128xbf16>, %o: tensor<?x?x128xbf16>, %do: tensor<?x?x128xbf16>, %lse: tensor<?x?xf32>)
    -> (tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(none)
      : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?xf32> -> tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>
  return %dq, %dk, %dv : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>
}

func.func @bwd_bf16_d128_bottom_right(%q: tensor<?x?x128xbf16>, %k: tensor<?x?x128xbf16>, %v: tensor<?x?x128xbf16>, %o: tensor<?x?x128xbf16>, %do: tensor<?x?x128xbf16>, %lse: tensor<?x?xf32>)
    -> (tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(bottom_right)
      : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?xf32> -> tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>
  return %dq, %dk, %dv : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>
}

func.func @bwd_f16_d64_none(%q: tensor<?x?x64xf16>, %k: tensor<?x?x64xf16>, %v: tensor<?x?x64xf16>, %o: tensor<?x?x64xf16>, %do: tensor<?x?x64xf16>, %lse: tensor<?x?xf32>)
    -> (tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(none)
      : tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?xf32> -> tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>
  return %dq, %dk, %dv : tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>
}

func.func @bwd_f16_d64_bottom_right(%q: tensor<?x?x64xf16>, %k: tensor<?x?x64xf16>, %v: tensor<?x?x64xf16>, %o: tensor<?x?x64xf16>, %do: tensor<?x?x64xf16>, %lse: tensor<?x?xf32>)
    -> (tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(bottom_right)
      : tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?xf32> -> tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>
  return %dq, %dk, %dv : tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>
}

func.func @bwd_f16_d128_none(%q: tensor<?x?x128xf16>, %k: tensor<?x?x128xf16>, %v: tensor<?x?x128xf16>, %o: tensor<?x?x128xf16>, %do: tensor<?x?x128xf16>, %lse: tensor<?x?xf32>)
    -> (tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?x128xf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(none)
      : tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?xf32> -> tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?x128xf16>
  return %dq, %dk, %dv : tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?x128xf16>
}

func.func @bwd_f16_d128_bottom_right(%q: tensor<?x?x128xf16>, %k: tensor<?x?x128xf16>, %v: tensor<?x?x128xf16>, %o: tensor<?x?x128xf16>, %do: tensor<?x?x128xf16>, %lse: tensor<?x?xf32>)
    -> (tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?x128xf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(bottom_right)
      : tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?xf32> -> tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?x128xf16>
  return %dq, %dk, %dv : tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?x128xf16>
}

// Head dims the wgmma kernel takes besides 64 and 128 (default block-n 64).
func.func @bf16_d32_top_left(%q: tensor<?x?x32xbf16>, %k: tensor<?x?x32xbf16>, %v: tensor<?x?x32xbf16>) -> (tensor<?x?x32xbf16>, tensor<?x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(top_left)
      : tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16> -> tensor<?x?x32xbf16>, tensor<?x?xf32>
  return %o, %lse : tensor<?x?x32xbf16>, tensor<?x?xf32>
}
func.func @f16_d64_dv32_none(%q: tensor<?x?x64xf16>, %k: tensor<?x?x64xf16>, %v: tensor<?x?x32xf16>) -> tensor<?x?x32xf16> {
  %o = fa.attention %q, %k, %v
      : tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x32xf16> -> tensor<?x?x32xf16>
  return %o : tensor<?x?x32xf16>
}

func.func @bwd_bf16_d64_dv128_none(%q: tensor<?x?x64xbf16>, %k: tensor<?x?x64xbf16>, %v: tensor<?x?x128xbf16>, %o: tensor<?x?x128xbf16>, %do: tensor<?x?x128xbf16>, %lse: tensor<?x?xf32>) -> (tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x128xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(none)
      : tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?xf32> -> tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x128xbf16>
  return %dq, %dk, %dv : tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x128xbf16>
}

func.func @bwd_bf16_d32_dv128_bottom_right(%q: tensor<?x?x32xbf16>, %k: tensor<?x?x32xbf16>, %v: tensor<?x?x128xbf16>, %o: tensor<?x?x128xbf16>, %do: tensor<?x?x128xbf16>, %lse: tensor<?x?xf32>) -> (tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x128xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(bottom_right)
      : tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?xf32> -> tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x128xbf16>
  return %dq, %dk, %dv : tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x128xbf16>
}
