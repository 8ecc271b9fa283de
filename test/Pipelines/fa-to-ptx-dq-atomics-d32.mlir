// dq-atomics applies where the wgmma kernels support it (head dim 64 or
// 128, equal to Dv): at head dim 32, and at D 128 with Dv 64 (whose causal
// _dkdv spilled with dq atomics), given or by default, fa-to-ptx makes the
// split _dkdv + _dq kernels (deterministic, no dq_accum scratch), without
// spills.
// REQUIRES: ptxas
// RUN: rm -rf %t && fa-opt %s --fa-to-ptx="chip=sm_90a dq-atomics=true output-dir=%t/given" -o /dev/null
// RUN: FileCheck %s < %t/given/d32_attention_backward_0.manifest
// RUN: FileCheck %s --check-prefix=DV64 < %t/given/d128_dv64_attention_backward_0.manifest
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a output-dir=%t/default" -o /dev/null
// RUN: FileCheck %s < %t/default/d32_attention_backward_0.manifest
// RUN: FileCheck %s --check-prefix=DV64 < %t/default/d128_dv64_attention_backward_0.manifest
// RUN: %ptxas -arch=sm_90a -v %t/default/d128_dv64_attention_backward_0.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL

// DV64: deterministic 1
// DV64: kernel d128_dv64_attention_backward_0_dq{{$}}
// NOSPILL-COUNT-3: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// NOSPILL-NOT: warning

// CHECK: deterministic 1
// CHECK-NOT: dq_accum
// CHECK: kernel d32_attention_backward_0_dkdv
// CHECK: params q k v do lse delta dk dv
// CHECK: kernel d32_attention_backward_0_dq{{$}}
// CHECK-NOT: dq_convert

func.func @d32(%q: tensor<?x?x32xbf16>, %k: tensor<?x?x32xbf16>, %v: tensor<?x?x32xbf16>, %o: tensor<?x?x32xbf16>, %do: tensor<?x?x32xbf16>, %lse: tensor<?x?xf32>) -> (tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?xf32> -> tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>
  return %dq, %dk, %dv : tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>
}

func.func @d128_dv64(%q: tensor<2x8x?x128xbf16>, %k: tensor<2x8x?x128xbf16>, %v: tensor<2x8x?x64xbf16>, %o: tensor<2x8x?x64xbf16>, %do: tensor<2x8x?x64xbf16>, %lse: tensor<2x8x?xf32>) -> (tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x64xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(top_left) : tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>, tensor<2x8x?xf32> -> tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x64xbf16>
  return %dq, %dk, %dv : tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x64xbf16>
}
