// fa-to-ptx dq-atomics=true (sm_90a wgmma backward): _dkdv also computes
// dQ^T = K^T dS^T from dS^T staged in workgroup memory (wgmma with A M-major
// and B N-major), adds scale * dQ into the f32 dq_accum scratch with
// red.global.add.f32, and _dq_convert (8 elements per lane) replaces _dq;
// _delta zeroes dq_accum. The default (dq-atomics=false) keeps the split
// kernels (fa-to-ptx-tma.mlir). Errors: with deterministic=true and
// without the wgmma kernels (D 32: fa-to-ptx-dq-atomics-d32.mlir).
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a dq-atomics=true output-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/da_bf16_d128_causal_attention_backward_0.manifest
// RUN: FileCheck %s --check-prefix=MANIFEST64 < %t/da_f16_d64_attention_backward_0.manifest
// RUN: FileCheck %s --check-prefix=PTX < %t/da_bf16_d128_causal_attention_backward_0.ptx
// RUN: %ptxas -arch=sm_90a -v %t/da_f16_d64_attention_backward_0.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/da_bf16_d128_attention_backward_0.ptx -o %t/b.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// cp.async tiles (tma=false) and one warpgroup (num-warps=4, two dQ^T
// products per tile at D 128) take the same form.
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a dq-atomics=true tma=false output-dir=%t/cp" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t/cp/da_bf16_d128_causal_attention_backward_0.ptx
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a dq-atomics=true num-warps=4 output-dir=%t/w4" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTXW4 < %t/w4/da_bf16_d128_attention_backward_0.ptx
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a dq-atomics=true deterministic=true output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRDET
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a dq-atomics=true wgmma=false output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRMMA

// MANIFEST: deterministic 0
// MANIFEST: scratch dq_accum f32 batch seqlen_q head_dim
// MANIFEST: kernel da_bf16_d128_causal_attention_backward_0_delta
// MANIFEST: params o do delta dq_accum
// MANIFEST: kernel da_bf16_d128_causal_attention_backward_0_dkdv
// MANIFEST: params q k v do lse delta dk dv dq_accum
// MANIFEST: tensor_map q 64 32 128
// MANIFEST: kernel da_bf16_d128_causal_attention_backward_0_dq_convert
// MANIFEST-NEXT: threads 128
// MANIFEST-NEXT: block_m 8
// MANIFEST-NEXT: shared_bytes 0
// MANIFEST-NEXT: params dq_accum dq
// MANIFEST-NOT: tensor_map
// MANIFEST-NOT: kernel

// MANIFEST64: kernel da_f16_d64_attention_backward_0_dkdv
// MANIFEST64: block_m 64
// MANIFEST64: params q k v do lse delta dk dv dq_accum
// MANIFEST64: kernel da_f16_d64_attention_backward_0_dq_convert
// MANIFEST64: block_m 16

// PTX-NOT: .entry da_bf16_d128_causal_attention_backward_0_dq(
// PTX-LABEL: .entry da_bf16_d128_causal_attention_backward_0_dkdv(
// dS^T to workgroup memory, made visible to wgmma.
// PTX: st.shared.b32
// PTX: fence.proxy.async.shared::cta;
// dQ^T = K^T dS^T: A M-major, B N-major.
// PTX: wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1, 1;
// PTX: red.global.add.f32
// PTX-LABEL: .entry da_bf16_d128_causal_attention_backward_0_dq_convert(
// PTX-COUNT-2: ld.global.v4.b32
// PTX: st.global.v4.b32

// One warpgroup at D 128: both head-dim blocks, N = the 32-query tile.
// PTXW4-LABEL: .entry da_bf16_d128_attention_backward_0_dkdv(
// PTXW4-COUNT-2: m64n32k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1, 1;

// NOSPILL-COUNT-3: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// NOSPILL-NOT: C751{{[0-9]}}
// NOSPILL-NOT: warning

// ERRDET: error: 'fa.attention_backward' op dq-atomics adds dq with f32 atomics, which is not bitwise reproducible: it cannot be combined with deterministic=true
// ERRMMA: error: 'fa.attention_backward' op dq-atomics needs the sm_90a wgmma backward

func.func @da_bf16_d128_causal(%q: tensor<2x8x?x128xbf16>, %k: tensor<2x8x?x128xbf16>, %v: tensor<2x8x?x128xbf16>, %o: tensor<2x8x?x128xbf16>, %do: tensor<2x8x?x128xbf16>, %lse: tensor<2x8x?xf32>) -> (tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(top_left) : tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?xf32> -> tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>
  return %dq, %dk, %dv : tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>
}

func.func @da_bf16_d128(%q: tensor<2x8x?x128xbf16>, %k: tensor<2x8x?x128xbf16>, %v: tensor<2x8x?x128xbf16>, %o: tensor<2x8x?x128xbf16>, %do: tensor<2x8x?x128xbf16>, %lse: tensor<2x8x?xf32>) -> (tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?xf32> -> tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>
  return %dq, %dk, %dv : tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>
}

func.func @da_f16_d64(%q: tensor<?x?x64xf16>, %k: tensor<?x?x64xf16>, %v: tensor<?x?x64xf16>, %o: tensor<?x?x64xf16>, %do: tensor<?x?x64xf16>, %lse: tensor<?x?xf32>) -> (tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?xf32> -> tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>
  return %dq, %dk, %dv : tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>
}
