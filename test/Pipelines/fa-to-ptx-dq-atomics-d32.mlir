// fa-to-ptx dq-atomics=true at head dim 32: the dQ^T products take 64
// head-dim rows per wgmma, so the option is an error there (the default
// split kernels serve D 32).
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a dq-atomics=true output-dir=%t" -o /dev/null 2>&1 | FileCheck %s
// RUN: rm -rf %t.ok && fa-opt %s --fa-to-ptx="chip=sm_90a output-dir=%t.ok" -o /dev/null
// RUN: grep -q "_dq$" %t.ok/d32_attention_backward_0.manifest

// CHECK: error: 'fa.attention_backward' op dq-atomics expects head dim 64 or 128 (the dQ^T products take 64 head-dim rows per wgmma), got D = 32

func.func @d32(%q: tensor<?x?x32xbf16>, %k: tensor<?x?x32xbf16>, %v: tensor<?x?x32xbf16>, %o: tensor<?x?x32xbf16>, %do: tensor<?x?x32xbf16>, %lse: tensor<?x?xf32>) -> (tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?xf32> -> tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>
  return %dq, %dk, %dv : tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>
}
