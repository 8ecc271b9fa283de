// SASS of the tensor-core kernels (forward; the sm_90a backward below). sm_90a (the default): the warpgroup MMA
// (HGMMA 64x128x16 on bf16 with f32 accumulation, its fences and waits),
// TMA loads (UTMALDG) completing on mbarriers (SYNCS), ex2 on the MUFU; no local
// memory, no cp.async and no mma.sync. With wgmma=false (and on sm_80): HMMA on bf16,
// ldmatrix (LDSM), cp.async bypassing L1.

// REQUIRES: ptxas, cuobjdump
// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a output-dir=%t/wg" -o /dev/null
// RUN: %ptxas -arch=sm_90a %t/wg/bf16_d128_attention_0.ptx -o %t/wg.cubin
// RUN: %cuobjdump -sass %t/wg.cubin | FileCheck %s --check-prefix=WGMMA
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a wgmma=false output-dir=%t/mma" -o /dev/null
// RUN: %ptxas -arch=sm_90a %t/mma/bf16_d128_attention_0.ptx -o %t/mma.cubin
// RUN: %cuobjdump -sass %t/mma.cubin | FileCheck %s --check-prefix=MMA
// The backward on sm_90a (default, dq atomics): HGMMA in _dkdv (S^T, dP^T
// 64x64; dV 64x128 with P^T and dK 64x128 with dS^T from registers, B
// transposed, no 64x128 product from workgroup memory alone; dQ 64x64
// with A and B transposed), dq
// staged in workgroup memory (STS.64) and added by TMA reductions
// (UTMAREDG, no REDG), tiles by TMA completing on mbarriers (the one
// cp.async: the column values). deterministic=true: the split
// _dkdv (64x64 S^T, dP^T: 64-query tiles, the TMA register model) and _dq.
// RUN: %ptxas -arch=sm_90a %t/wg/bwd_bf16_d128_attention_backward_0.ptx -o %t/bwd.cubin
// RUN: %cuobjdump -sass -fun bwd_bf16_d128_attention_backward_0_dkdv %t/bwd.cubin | FileCheck %s --check-prefix=BWD
// RUN: %cuobjdump -sass -fun bwd_bf16_d128_attention_backward_0_dkdv %t/bwd.cubin | FileCheck %s --check-prefix=BWDSS
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a deterministic=true output-dir=%t/det" -o /dev/null
// RUN: %ptxas -arch=sm_90a %t/det/bwd_bf16_d128_attention_backward_0.ptx -o %t/det.cubin
// RUN: %cuobjdump -sass -fun bwd_bf16_d128_attention_backward_0_dkdv %t/det.cubin | FileCheck %s --check-prefix=BWDDET
// RUN: %cuobjdump -sass -fun bwd_bf16_d128_attention_backward_0_dq %t/det.cubin | FileCheck %s --check-prefix=BWDDQ

// WGMMA-DAG: HGMMA.64x128x16.F32.BF16
// WGMMA-DAG: WARPGROUP.ARRIVE
// WGMMA-DAG: WARPGROUP.DEPBAR.LE
// WGMMA-DAG: UTMALDG.3D
// WGMMA-DAG: SYNCS.PHASECHK.TRANS64.TRYWAIT
// WGMMA-DAG: MUFU.EX2
// WGMMA-NOT: {{LDL|STL|HMMA|LDGSTS}}

// MMA-DAG: LDGSTS.E.BYPASS.128
// MMA-DAG: LDSM.16.M88.4
// MMA-DAG: LDSM.16.MT88.4
// MMA-DAG: HMMA.16816.F32.BF16
// MMA-DAG: MUFU.EX2
// MMA-NOT: {{LDL|STL|HGMMA}}

// BWD-DAG: HGMMA.64x64x16.F32.BF16 R{{[0-9]+}}, gdesc[{{[^]]+}}],
// BWD-DAG: HGMMA.64x128x16.F32.BF16 R{{[0-9]+}}, R{{[0-9]+}}, gdesc[{{.+}}].tnspB
// BWD-DAG: HGMMA.64x64x16.F32.BF16 R{{[0-9]+}}, gdesc[{{.+}}].tnspA.tnspB
// BWD-DAG: STS.64
// BWD-DAG: FENCE.VIEW.ASYNC.S
// BWD-DAG: UTMAREDG.3D.ADD
// BWD-DAG: WARPGROUP.DEPBAR.LE gsb0, 0x1
// BWD-DAG: UTMALDG.3D
// BWD-DAG: SYNCS.PHASECHK.TRANS64.TRYWAIT
// BWD-DAG: MUFU.EX2
// BWD-NOT: {{LDL|STL|HMMA|LDGSTS.E.BYPASS| REDG}}
// BWDSS-NOT: HGMMA.64x128x16.F32.BF16 R{{[0-9]+}}, gdesc
// BWDSS: HGMMA.64x128x16.F32.BF16 R{{[0-9]+}}, R{{[0-9]+}}, gdesc[{{.+}}].tnspB
// BWDSS-NOT: HGMMA.64x128x16.F32.BF16 R{{[0-9]+}}, gdesc
// BWDDET-DAG: HGMMA.64x64x16.F32.BF16 R{{[0-9]+}}, gdesc
// BWDDET-DAG: HGMMA.64x128x16.F32.BF16 R{{[0-9]+}}, R{{[0-9]+}}, gdesc[{{.+}}].tnspB
// BWDDET-NOT: {{LDL|STL|HMMA|LDGSTS.E.BYPASS|REDG}}
// BWDDQ-DAG: HGMMA.64x64x16.F32.BF16 R{{[0-9]+}}, gdesc
// BWDDQ-DAG: HGMMA.64x128x16.F32.BF16 R{{[0-9]+}}, R{{[0-9]+}}, gdesc[{{.+}}].tnspB
// BWDDQ-DAG: UTMALDG.3D
// BWDDQ-NOT: {{LDL|STL|HMMA|LDGSTS}}

func.func @bf16_d128(%q: tensor<?x?x128xbf16>, %k: tensor<?x?x128xbf16>,
                     %v: tensor<?x?x128xbf16>) -> tensor<?x?x128xbf16> {
  %o = fa.attention %q, %k, %v causal(top_left)
      : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>
      -> tensor<?x?x128xbf16>
  return %o : tensor<?x?x128xbf16>
}

func.func @bwd_bf16_d128(%q: tensor<?x?x128xbf16>, %k: tensor<?x?x128xbf16>,
                         %v: tensor<?x?x128xbf16>, %o: tensor<?x?x128xbf16>,
                         %do: tensor<?x?x128xbf16>, %lse: tensor<?x?xf32>)
    -> (tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(top_left)
      : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>,
        tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?xf32>
     -> tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>
  return %dq, %dk, %dv : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>
}
