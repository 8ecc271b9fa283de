// fa-to-ptx tma=true: the wgmma forward loads Q/K/V by TMA. The PTX takes
// the three tensor maps as by-value 128-byte, 64-byte-aligned parameters
// (cvta.param gives their generic address), the dynamic workgroup memory
// is 128-byte aligned, the manifest lists the maps, and ptxas assembles
// every kernel with no spills and no serialized wgmma.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a tma=true output-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t/bf16_d128_none_attention_0.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/bf16_d128_none_attention_0.manifest
// RUN: FileCheck %s --check-prefix=MANIFEST64 < %t/f16_d64_causal_attention_0.manifest
// RUN: %ptxas -arch=sm_90a -v %t/bf16_d128_none_attention_0.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/bf16_d128_causal_attention_0.ptx -o %t/b.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/f16_d64_causal_attention_0.ptx -o %t/c.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/bf16_d32_attention_0.ptx -o %t/d.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// The mma.sync path (sm_80) has no TMA: tma is ignored there.
// RUN: fa-opt %s --fa-to-ptx="chip=sm_80 tma=true output-dir=%t/sm80" -o /dev/null
// RUN: not grep -l "tensor_map\|cp.async.bulk" %t/sm80/bf16_d128_none_attention_0.manifest %t/sm80/bf16_d128_none_attention_0.ptx

// PTX: .param .align 64 .b8 bf16_d128_none_attention_0_param_{{[0-9]+}}[128],
// PTX-NEXT: .param .align 64 .b8 bf16_d128_none_attention_0_param_{{[0-9]+}}[128],
// PTX-NEXT: .param .align 64 .b8 bf16_d128_none_attention_0_param_{{[0-9]+}}[128]
// PTX-NEXT: )
// PTX: .shared .align 128 .b8 __dynamic_shmem__0;
// PTX: cvta.param.u64
// PTX: prefetch.tensormap
// PTX: mbarrier.init.shared::cta.b64
// PTX: cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX: mbarrier.try_wait.parity.shared::cta.b64
// PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// PTX-NOT: cp.async.cg
// PTX-NOT: cp.async.ca

// MANIFEST: shared_bytes 229432
// MANIFEST: params q k v o lse
// MANIFEST-NEXT: tensor_map q 8 128 none
// MANIFEST-NEXT: tensor_map k 8 128 none
// MANIFEST-NEXT: tensor_map v 8 128 none
// MANIFEST-NEXT: grid ceil_div(seqlen_q,block_m) batch 1

// MANIFEST64: block_n 64
// MANIFEST64: params q k v o
// MANIFEST64-NEXT: tensor_map q 8 128 none
// MANIFEST64-NEXT: tensor_map k 8 64 none
// MANIFEST64-NEXT: tensor_map v 8 64 none

// NOSPILL: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// NOSPILL-NOT: C751{{[0-9]}}
// NOSPILL-NOT: warning

func.func @bf16_d128_none(%q: tensor<?x?x128xbf16>, %k: tensor<?x?x128xbf16>, %v: tensor<?x?x128xbf16>) -> (tensor<?x?x128xbf16>, tensor<?x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16> -> tensor<?x?x128xbf16>, tensor<?x?xf32>
  return %o, %lse : tensor<?x?x128xbf16>, tensor<?x?xf32>
}

func.func @bf16_d128_causal(%q: tensor<?x?x128xbf16>, %k: tensor<?x?x128xbf16>, %v: tensor<?x?x128xbf16>) -> tensor<?x?x128xbf16> {
  %o = fa.attention %q, %k, %v causal(bottom_right) : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16> -> tensor<?x?x128xbf16>
  return %o : tensor<?x?x128xbf16>
}

func.func @f16_d64_causal(%q: tensor<4x?x64xf16>, %k: tensor<4x?x64xf16>, %v: tensor<4x?x64xf16>) -> tensor<4x?x64xf16> {
  %o = fa.attention %q, %k, %v causal(top_left) : tensor<4x?x64xf16>, tensor<4x?x64xf16>, tensor<4x?x64xf16> -> tensor<4x?x64xf16>
  return %o : tensor<4x?x64xf16>
}

func.func @bf16_d32(%q: tensor<?x?x32xbf16>, %k: tensor<?x?x32xbf16>, %v: tensor<?x?x32xbf16>) -> tensor<?x?x32xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16> -> tensor<?x?x32xbf16>
  return %o : tensor<?x?x32xbf16>
}
