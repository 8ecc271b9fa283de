// SASS of the tensor-core kernels. sm_90a (the default): the warpgroup MMA
// (HGMMA 64x128x16 on bf16 with f32 accumulation, its fences and waits),
// cp.async through L1 (LDGSTS without BYPASS), ex2 on the MUFU; no local
// memory and no mma.sync. With wgmma=false (and on sm_80): HMMA on bf16,
// ldmatrix (LDSM), cp.async bypassing L1.

// REQUIRES: ptxas, cuobjdump
// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a output-dir=%t/wg" -o /dev/null
// RUN: %ptxas -arch=sm_90a %t/wg/bf16_d128_attention_0.ptx -o %t/wg.cubin
// RUN: %cuobjdump -sass %t/wg.cubin | FileCheck %s --check-prefix=WGMMA
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a wgmma=false output-dir=%t/mma" -o /dev/null
// RUN: %ptxas -arch=sm_90a %t/mma/bf16_d128_attention_0.ptx -o %t/mma.cubin
// RUN: %cuobjdump -sass %t/mma.cubin | FileCheck %s --check-prefix=MMA

// WGMMA-DAG: HGMMA.64x128x16.F32.BF16
// WGMMA-DAG: WARPGROUP.ARRIVE
// WGMMA-DAG: WARPGROUP.DEPBAR.LE
// WGMMA-DAG: LDGSTS.E.128
// WGMMA-DAG: MUFU.EX2
// WGMMA-NOT: {{LDL|STL|HMMA|LDGSTS.E.BYPASS}}

// MMA-DAG: LDGSTS.E.BYPASS.128
// MMA-DAG: LDSM.16.M88.4
// MMA-DAG: LDSM.16.MT88.4
// MMA-DAG: HMMA.16816.F32.BF16
// MMA-DAG: MUFU.EX2
// MMA-NOT: {{LDL|STL|HGMMA}}

func.func @bf16_d128(%q: tensor<?x?x128xbf16>, %k: tensor<?x?x128xbf16>,
                     %v: tensor<?x?x128xbf16>) -> tensor<?x?x128xbf16> {
  %o = fa.attention %q, %k, %v causal(top_left)
      : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>
      -> tensor<?x?x128xbf16>
  return %o : tensor<?x?x128xbf16>
}
