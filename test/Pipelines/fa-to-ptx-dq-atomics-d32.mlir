// dq-atomics applies where the wgmma kernels support it (head dim 64 or
// 128): at head dim 32, given or by default, fa-to-ptx makes the split
// _dkdv + _dq kernels (deterministic, no dq_accum scratch).
// RUN: rm -rf %t && fa-opt %s --fa-to-ptx="chip=sm_90a dq-atomics=true output-dir=%t/given" -o /dev/null
// RUN: FileCheck %s < %t/given/d32_attention_backward_0.manifest
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a output-dir=%t/default" -o /dev/null
// RUN: FileCheck %s < %t/default/d32_attention_backward_0.manifest

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
