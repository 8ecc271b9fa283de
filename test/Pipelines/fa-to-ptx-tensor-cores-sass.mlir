// SASS of a tensor-core kernel: HMMA on bf16 with f32 accumulation, ldmatrix
// (LDSM), cp.async (LDGSTS), ex2 on the MUFU; no local memory.

// REQUIRES: ptxas, cuobjdump
// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a output-dir=%t" -o /dev/null
// RUN: %ptxas -arch=sm_90a %t/bf16_d128_attention_0.ptx -o %t/k.cubin
// RUN: %cuobjdump -sass %t/k.cubin | FileCheck %s

// CHECK-DAG: LDGSTS.E.BYPASS.128
// CHECK-DAG: LDSM.16.M88.4
// CHECK-DAG: LDSM.16.MT88.4
// CHECK-DAG: HMMA.16816.F32.BF16
// CHECK-DAG: MUFU.EX2
// CHECK-NOT: {{LDL|STL}}

func.func @bf16_d128(%q: tensor<?x?x128xbf16>, %k: tensor<?x?x128xbf16>,
                     %v: tensor<?x?x128xbf16>) -> tensor<?x?x128xbf16> {
  %o = fa.attention %q, %k, %v causal(top_left)
      : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>
      -> tensor<?x?x128xbf16>
  return %o : tensor<?x?x128xbf16>
}
