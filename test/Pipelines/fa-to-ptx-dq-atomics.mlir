// fa-to-ptx's default dq-atomics=true (sm_90a wgmma backward, head dim 64
// or 128, deterministic off): _dkdv stores dS^T in workgroup memory, reads
// it for dK += dS^T Q and for dQ = dS K (64-query tiles at D 128: wgmma
// with A and B transposed, M = 64 queries, N = head dim split over the
// warpgroups; 128-query tiles at D 64: one M block per warpgroup), and
// adds dQ into the f32 dq_accum scratch: with TMA (the default), each warp
// stages its 16 rows and one lane adds them with cp.reduce.async.bulk.tensor
// (dq_accum's tensor map is the kernel's fifth): scale * dQ in
// 128-byte-swizzled boxes of 32 f32 x 16 rows (D 64), or, with the
// producer warpgroup (D 128 without a mask or with top_left), dQ in one
// unswizzled box per product with each row's n8 blocks in fragment order
// (_dq_convert scales and reorders); with
// tma=false, scale * dQ by red.global.add.v2.f32 (adjacent head-dim
// pairs). With 32-query tiles (tma=false and
// num-warps=4 at D 128, whose 64-query tiles do not fit the registers)
// dQ^T = K^T dS^T instead (M = 64 head-dim rows, N = queries), one
// red.global.add.f32 per value. _dq_convert (8 elements per lane) replaces _dq; _delta zeroes
// dq_accum. dq-atomics=false, deterministic=true or features=+ptx80 give
// the split kernels (fa-to-ptx-tma.mlir; head dim 32:
// fa-to-ptx-dq-atomics-d32.mlir). Errors: dq-atomics=true given with
// deterministic=true, without the wgmma kernels, or with PTX ISA 8.0.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a output-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/da_bf16_d128_causal_attention_backward_0.manifest
// RUN: FileCheck %s --check-prefix=MANIFEST64 < %t/da_f16_d64_attention_backward_0.manifest
// RUN: FileCheck %s --check-prefix=PTX < %t/da_bf16_d128_causal_attention_backward_0.ptx
// RUN: FileCheck %s --check-prefix=ROT < %t/da_f16_d64_attention_backward_0.ptx
// RUN: FileCheck %s --check-prefix=NOROT < %t/da_bf16_d128_attention_backward_0.ptx
// RUN: FileCheck %s --check-prefix=MANIFESTFO < %t/da_bf16_d128_attention_backward_0.manifest
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a backward-producer-warp=false output-dir=%t/np" -o /dev/null
// RUN: FileCheck %s --check-prefix=SWIZZLED < %t/np/da_bf16_d128_attention_backward_0.ptx
// RUN: FileCheck %s --check-prefix=MANIFESTSW < %t/np/da_bf16_d128_attention_backward_0.manifest
// RUN: %ptxas -arch=sm_90a -v %t/np/da_bf16_d128_attention_backward_0.ptx -o %t/np.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/da_f16_d64_attention_backward_0.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/da_bf16_d128_attention_backward_0.ptx -o %t/b.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/da_bf16_d128_causal_attention_backward_0.ptx -o %t/c.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// Given explicitly: the same kernels.
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a dq-atomics=true output-dir=%t/given" -o /dev/null
// RUN: cmp %t/da_bf16_d128_causal_attention_backward_0.ptx %t/given/da_bf16_d128_causal_attention_backward_0.ptx
// cp.async tiles (tma=false) and one warpgroup (num-warps=4) at D 128:
// 32-query tiles and the dQ^T form (two products per tile with one
// warpgroup); at D 64 one warpgroup keeps the dQ form (N = 64).
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a tma=false output-dir=%t/cp" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTXT < %t/cp/da_bf16_d128_causal_attention_backward_0.ptx
// RUN: FileCheck %s --check-prefix=PTXCP64 < %t/cp/da_f16_d64_attention_backward_0.ptx
// RUN: FileCheck %s --check-prefix=MANIFESTCP64 < %t/cp/da_f16_d64_attention_backward_0.manifest
// RUN: %ptxas -arch=sm_90a -v %t/cp/da_bf16_d128_causal_attention_backward_0.ptx -o %t/d.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a num-warps=4 output-dir=%t/w4" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTXW4 < %t/w4/da_bf16_d128_attention_backward_0.ptx
// RUN: FileCheck %s --check-prefix=PTXW4D64 < %t/w4/da_f16_d64_attention_backward_0.ptx
// RUN: %ptxas -arch=sm_90a -v %t/w4/da_bf16_d128_causal_attention_backward_0.ptx -o %t/e.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// The split kernels: dq-atomics=false, deterministic=true, features=+ptx80.
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a dq-atomics=false output-dir=%t/off" -o /dev/null
// RUN: FileCheck %s --check-prefix=SPLIT < %t/off/da_bf16_d128_causal_attention_backward_0.manifest
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a deterministic=true output-dir=%t/det" -o /dev/null
// RUN: FileCheck %s --check-prefix=SPLIT < %t/det/da_bf16_d128_causal_attention_backward_0.manifest
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a features=+ptx80 output-dir=%t/ptx80" -o /dev/null
// RUN: FileCheck %s --check-prefix=SPLIT < %t/ptx80/da_bf16_d128_causal_attention_backward_0.manifest
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a dq-atomics=true deterministic=true output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRDET
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a dq-atomics=true wgmma=false output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRMMA
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_80 dq-atomics=true output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR80
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a dq-atomics=true features=+ptx80 output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRPTX
// block-n shapes only the split form's _dq: unused here, but still checked.
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a block-n=64 output-dir=%t/bn" -o /dev/null
// RUN: cmp %t/da_bf16_d128_causal_attention_backward_0.ptx %t/bn/da_bf16_d128_causal_attention_backward_0.ptx
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a block-n=1000 output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRBLOCKN

// MANIFEST: deterministic 0
// MANIFEST: scratch dq_accum f32 batch seqlen_q head_dim
// MANIFEST: kernel da_bf16_d128_causal_attention_backward_0_delta
// MANIFEST: params o do delta dq_accum
// MANIFEST: kernel da_bf16_d128_causal_attention_backward_0_dkdv
// MANIFEST: block_m 64
// MANIFEST: params q k v do lse delta dk dv dq_accum
// MANIFEST-NEXT: tensor_map q 64 64 128
// MANIFEST-NEXT: tensor_map k 64 128 128
// MANIFEST-NEXT: tensor_map v 64 128 128
// MANIFEST-NEXT: tensor_map do 64 64 128
// MANIFEST-NEXT: tensor_map dq_accum 64 16 none
// MANIFEST: kernel da_bf16_d128_causal_attention_backward_0_dq_convert
// MANIFEST-NEXT: threads 128
// MANIFEST-NEXT: block_m 8
// MANIFEST-NEXT: shared_bytes 0
// MANIFEST-NEXT: params dq_accum dq
// MANIFEST-NOT: tensor_map
// MANIFEST-NOT: kernel

// D 64: 128-query tiles (each warpgroup's dQ is one 64-query M block, N =
// the whole head dim) in two stages: 165936 bytes of workgroup memory and
// 32768 more for the dQ staging boxes (128 x 64 f32).
// MANIFEST64: kernel da_f16_d64_attention_backward_0_dkdv
// MANIFEST64-NEXT: threads 256
// MANIFEST64-NEXT: block_m 128
// MANIFEST64-NEXT: block_n 128
// MANIFEST64-NEXT: shared_bytes 198704
// MANIFEST64: params q k v do lse delta dk dv dq_accum
// MANIFEST64: tensor_map dq_accum 32 16 128
// MANIFEST64: kernel da_f16_d64_attention_backward_0_dq_convert
// MANIFEST64: block_m 16

// PTX-NOT: .entry da_bf16_d128_causal_attention_backward_0_dq(
// PTX-LABEL: .entry da_bf16_d128_causal_attention_backward_0_dkdv(
// Top-left causal at D 128: the consumer warpgroups first raise their
// registers (backward-producer-warp=auto; fa-to-ptx-backward-producer.mlir).
// PTX: setmaxnreg.inc.sync.aligned.u32 240;
// dS^T to workgroup memory, made visible to wgmma.
// PTX: st.shared.b32
// PTX: fence.proxy.async.shared::cta;
// dQ = dS K: A M-major, B N-major, N = 64 (half the head dim).
// PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1, 1;
// The warp's staging box is free (its earlier reduction read it), the
// fragments go in unscaled (16 pairs: 64 columns, two rows), visible to the
// async proxy, and lane 0 adds the box (the 64 columns of its half). Row g
// stores n8 block j of a 32-column group at block j ^ (g % 4)
// (bank-conflict-free half-warps): four addresses per lane, no selects and
// no multiplies.
// PTX: cp.async.bulk.wait_group.read 0;
// PTX-NEXT: bar.warp.sync -1;
// PTX-NOT: selp.f32
// PTX-NOT: mul.rn.f32
// PTX-COUNT-16: st.shared.v2.f32 [%r{{[0-9]+}}+{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}};
// PTX: fence.proxy.async.shared::cta;
// PTX-NEXT: bar.warp.sync -1;
// PTX: cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group
// PTX-NOT: cp.reduce.async.bulk
// PTX: cp.async.bulk.commit_group;
// Before the block exits, the last reductions have read their boxes.
// PTX: cp.async.bulk.wait_group.read 0;
// PTX-NOT: red.global.add
// The producer warpgroup's branch comes last: the column values (lse,
// delta) by 4-byte cp.async.
// PTX: setmaxnreg.dec.sync.aligned.u32 24;
// PTX: cp.async.ca.shared.global [{{.*}}], [{{.*}}], 4;
// _dq_convert reads the lane's n8 block at block (lane ^ row) % 4 of its
// 32-column group and applies the scale (1 / sqrt(128)).
// PTX-LABEL: .entry da_bf16_d128_causal_attention_backward_0_dq_convert(
// PTX: xor.b32
// PTX-COUNT-2: ld.global.v4.b32
// PTX: mul.rn.f32 %r{{[0-9]+}}, %r{{[0-9]+}}, 0f3DB504F3;
// PTX: st.global.v4.b32

// D 128 without a mask has the producer warpgroup by default, with the
// fragment-order box of the causal kernel above.
// MANIFESTFO: kernel da_bf16_d128_attention_backward_0_dkdv
// MANIFESTFO-NEXT: threads 384
// MANIFESTFO: tensor_map dq_accum 64 16 none
// Without the producer warpgroup (backward-producer-warp=false), scale * dQ goes
// in order: each value picked by the row's parity (bit 2 of the lane, the
// pairs swapped for bank-conflict-free half-warps) and scaled, into two
// 128-byte-swizzled boxes of 32 columns per product; _dq_convert only
// converts.
// MANIFESTSW: kernel da_bf16_d128_attention_backward_0_dkdv
// MANIFESTSW: tensor_map dq_accum 32 16 128
// SWIZZLED-LABEL: .entry da_bf16_d128_attention_backward_0_dkdv(
// SWIZZLED: bfe.u32 [[ROWBIT:%r[0-9]+]], %r{{[0-9]+}}, 2, 1;
// SWIZZLED-NEXT: setp.eq.b32 [[EVEN:%p[0-9]+]], [[ROWBIT]], 0;
// SWIZZLED: cp.async.bulk.wait_group.read 0;
// SWIZZLED-NEXT: bar.warp.sync -1;
// SWIZZLED: selp.f32 %r{{[0-9]+}}, [[J:%r[0-9]+]], [[J2:%r[0-9]+]], [[EVEN]];
// SWIZZLED-NEXT: mul.rn.f32
// SWIZZLED: selp.f32 %r{{[0-9]+}}, [[J2]], [[J]], [[EVEN]];
// SWIZZLED-COUNT-16: st.shared.v2.f32
// SWIZZLED: fence.proxy.async.shared::cta;
// SWIZZLED-NEXT: bar.warp.sync -1;
// SWIZZLED-COUNT-2: cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group
// SWIZZLED-NOT: cp.reduce.async.bulk
// SWIZZLED: cp.async.bulk.commit_group;
// SWIZZLED-LABEL: .entry da_bf16_d128_attention_backward_0_dq_convert(
// SWIZZLED-NOT: xor.b32
// SWIZZLED-NOT: mul.rn.f32
// SWIZZLED: ld.global.v4.b32
// SWIZZLED-NOT: mul.rn.f32
// SWIZZLED: st.global.v4.b32

// No mask and 128-query tiles (D 64): block j starts its query loop at
// tile j mod (query tiles), so that the blocks of a head add into different
// dq_accum rows at a time. D 128 (64-query tiles) keeps the order.
// ROT-LABEL: .entry da_f16_d64_attention_backward_0_dkdv(
// ROT: mov.u32 %r{{[0-9]+}}, %ctaid.x;
// ROT: rem.u32
// ROT-LABEL: .entry da_f16_d64_attention_backward_0_dq_convert(
// NOROT-LABEL: .entry da_bf16_d128_attention_backward_0_dkdv(
// NOROT-NOT: rem.u32
// NOROT-LABEL: .entry da_bf16_d128_attention_backward_0_dq_convert(

// PTXT-LABEL: .entry da_bf16_d128_causal_attention_backward_0_dkdv(
// PTXT: wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1, 1;
// PTXT: red.global.add.f32
// PTXT-NOT: red.global.add.v2

// PTXW4-LABEL: .entry da_bf16_d128_attention_backward_0_dkdv(
// PTXW4-COUNT-16: m64n32k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1, 1;
// PTXW4-NOT: m64n32k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1, 1;
// PTXW4-NOT: red.global.add.v2
// PTXW4D64-LABEL: .entry da_f16_d64_attention_backward_0_dkdv(
// PTXW4D64: m64n64k16.f32.f16.f16 {{.*}}, p, 1, 1, 1, 1;
// PTXW4D64: cp.reduce.async.bulk.tensor.3d
// PTXW4D64-NOT: red.global.add

// tma=false at D 64: no tensor maps, so dQ pairs go by red.global.add.v2.
// PTXCP64-LABEL: .entry da_f16_d64_attention_backward_0_dkdv(
// PTXCP64: red.global.add.v2.f32
// PTXCP64-NOT: cp.reduce.async.bulk
// MANIFESTCP64: kernel da_f16_d64_attention_backward_0_dkdv
// MANIFESTCP64-NOT: tensor_map

// SPLIT: deterministic 1
// SPLIT-NOT: dq_accum
// SPLIT: kernel da_bf16_d128_causal_attention_backward_0_dq{{$}}

// NOSPILL-COUNT-3: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// NOSPILL-NOT: C751{{[0-9]}}
// NOSPILL-NOT: warning

// ERRDET: error: fa-to-ptx: dq-atomics=true adds dq with f32 atomics, which is not bitwise reproducible: it cannot be combined with deterministic=true
// ERRMMA: error: fa-to-ptx: dq-atomics=true needs the wgmma backward (chip=sm_90a, wgmma=true, tensor-cores=true), got chip=sm_90a with wgmma=false
// ERR80: error: fa-to-ptx: dq-atomics=true needs the wgmma backward ({{.*}}), got chip=sm_80{{$}}
// ERRBLOCKN: error: 'fa.attention_backward' op the wgmma backward expects block-n (keys per dq tile) to be a multiple of 16 of at most 256, got 1000
// ERRPTX: error: fa-to-ptx: dq-atomics=true needs PTX ISA 8.1 or later (red.global.add.v2.f32), got features=+ptx80

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
