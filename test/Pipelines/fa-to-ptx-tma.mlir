// fa-to-ptx (tma=true is its default on sm_90a): the wgmma forward loads
// Q/K/V by TMA, the wgmma backward's _dkdv and _dq Q/K/V/dO. The PTX takes the three tensor maps as by-value 128-byte,
// 64-byte-aligned parameters (cvta.param gives their generic address), the
// dynamic workgroup memory is 1024-byte aligned (128-byte swizzle), the
// manifest lists the maps, and ptxas assembles every kernel with no spills
// and no serialized wgmma.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// The D 128 forward below is the two-tile kernel (persistent=false; the
// default auto makes it persistent: fa-to-ptx-persistent.mlir).
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a persistent=false output-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t/bf16_d128_none_attention_0.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/bf16_d128_none_attention_0.manifest
// Each product is emitted once per place it runs: S = Q K^T (eight k16
// steps) in tile 0's prologue and its two key loops (without and with the
// mask code), at the peeled boundary and in tile 1's two key loops; O +=
// P V (ten) in the four key loops, at the boundary, at tile 1's end and
// at tile 0's end when the boundary is not peeled (tile 1 then visits no
// key block and only writes its rows).
// RUN: FileCheck %s --check-prefix=SPRODUCTS < %t/bf16_d128_none_attention_0.ptx
// RUN: FileCheck %s --check-prefix=PVPRODUCTS < %t/bf16_d128_none_attention_0.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST64 < %t/f16_d64_causal_attention_0.manifest
// RUN: %ptxas -arch=sm_90a -v %t/bf16_d128_none_attention_0.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/bf16_d128_causal_attention_0.ptx -o %t/b.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/f16_d64_causal_attention_0.ptx -o %t/c.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/bf16_d32_attention_0.ptx -o %t/d.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// Head dim 64, bottom_right, [2, 8, ?, 64] with lse: the causal offset
// (Tk - Tq) is passed through inline PTX where the masked branch uses it,
// or the row limits are hoisted out of the key loop (4 bytes of spills).
// RUN: %ptxas -arch=sm_90a -v %t/bf16_d64_bottom_right_attention_0.ptx -o %t/br.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// The backward: version 4 manifest, four maps per wgmma kernel, no spills;
// by default the dq-atomics form (_dkdv adds dq into dq_accum), with
// deterministic=true the split _dkdv + _dq kernels.
// RUN: FileCheck %s --check-prefix=BWD < %t/bwd_bf16_d128_causal_attention_backward_0.manifest
// RUN: FileCheck %s --check-prefix=BWDPTX < %t/bwd_bf16_d128_causal_attention_backward_0.ptx
// RUN: FileCheck %s --check-prefix=BWDNOPREFETCH < %t/bwd_bf16_d128_causal_attention_backward_0.ptx
// Without a mask, _dkdv's thread 0 prefetches into L2, with the last loop
// tile's loads, the own K and V rows (one 64-column box each at D 64) of
// the block at launch index + %nsmid; under causal it does not.
// RUN: FileCheck %s --check-prefix=BWDPREFETCH < %t/bwd_f16_d64_attention_backward_0.ptx
// RUN: %ptxas -arch=sm_90a -v %t/bwd_bf16_d128_causal_attention_backward_0.ptx -o %t/e.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL3
// RUN: %ptxas -arch=sm_90a -v %t/bwd_f16_d64_attention_backward_0.ptx -o %t/f.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL3
// pair-key-blocks=true: the causal D 128 _dkdv (producer warpgroup) takes
// two key blocks per block (grid ceil(Tk / 256)), with no spills.
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a pair-key-blocks=true output-dir=%t/pair" -o /dev/null
// RUN: FileCheck %s --check-prefix=BWDPAIR < %t/pair/bwd_bf16_d128_causal_attention_backward_0.manifest
// RUN: %ptxas -arch=sm_90a -v %t/pair/bwd_bf16_d128_causal_attention_backward_0.ptx -o %t/pair.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL3
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a deterministic=true output-dir=%t/det" -o /dev/null
// RUN: FileCheck %s --check-prefix=BWDDET < %t/det/bwd_bf16_d128_causal_attention_backward_0.manifest
// RUN: FileCheck %s --check-prefix=BWDDETPTX < %t/det/bwd_bf16_d128_causal_attention_backward_0.ptx
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a deterministic=true tma=false output-dir=%t/detcp" -o /dev/null
// RUN: FileCheck %s --check-prefix=BWDDETCP < %t/detcp/bwd_bf16_d128_causal_attention_backward_0.manifest
// RUN: %ptxas -arch=sm_90a -v %t/det/bwd_bf16_d128_causal_attention_backward_0.ptx -o %t/g.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL3
// RUN: %ptxas -arch=sm_90a -v %t/det/bwd_f16_d64_attention_backward_0.ptx -o %t/h.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL3
// A hand-built pipeline that leaves out fa-lower-tensor-map-params: the
// maps stay pointer params, which the manifest's tensor_map lines would
// contradict; fa-export-kernels refuses to write it.
// RUN: not fa-opt %s --pass-pipeline="builtin.module(convert-fa-to-gpu{tensor-cores=1 wgmma=1 tma=1 max-shared-bytes=232448},canonicalize,cse,convert-scf-to-cf,expand-strided-metadata,lower-affine,nvvm-attach-target{chip=sm_90a},gpu.module(strip-debuginfo,fa-convert-bf16-mma-sync-to-nvvm,convert-nvgpu-to-nvvm,convert-gpu-to-nvvm,canonicalize,cse,reconcile-unrealized-casts),gpu-module-to-binary{format=isa},fa-export-kernels{output-dir=%t/nolower})" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOLOWER
// NOLOWER: error: fa-export-kernels: the manifest of @[[NAME:[a-z0-9_]+]] gives kernel '[[NAME]]{{(_dkdv)?}}' {{3|4}} tensor maps, but its PTX takes 0 by-value 128-byte parameters (run fa-lower-tensor-map-params after convert-gpu-to-nvvm, as fa-to-ptx does)
// NOLOWER-NOT: see current operation
// tma=false: cp.async, no maps. sm_80 (no wgmma): no TMA either.
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a tma=false output-dir=%t/cp" -o /dev/null
// RUN: fa-opt %s --fa-to-ptx="chip=sm_80 output-dir=%t/sm80" -o /dev/null
// RUN: not grep -l "tensor_map\|cp.async.bulk" %t/cp/bf16_d128_none_attention_0.manifest %t/cp/bf16_d128_none_attention_0.ptx %t/sm80/bf16_d128_none_attention_0.manifest %t/sm80/bf16_d128_none_attention_0.ptx
// RUN: grep -q "cp.async.ca" %t/cp/bf16_d128_none_attention_0.ptx
// RUN: grep -q "^version 1$" %t/cp/bf16_d128_none_attention_0.manifest
// RUN: not grep -l "tensor_map\|cp.async.bulk" %t/cp/bwd_f16_d64_attention_backward_0.manifest %t/cp/bwd_f16_d64_attention_backward_0.ptx %t/sm80/bwd_f16_d64_attention_backward_0.manifest
// RUN: grep -q "^version 2$" %t/cp/bwd_f16_d64_attention_backward_0.manifest
// tma=true given where there is no wgmma forward: an error, not a silent
// cp.async kernel.
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_80 tma=true output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR80
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a wgmma=false tma=true output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRMMA
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a tensor-cores=false tma=true output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRSCALAR
// ERR80: error: fa-to-ptx: tma=true needs the wgmma kernels (chip=sm_90a, wgmma=true, tensor-cores=true), got chip=sm_80
// ERRMMA: error: fa-to-ptx: tma=true needs the wgmma kernels (chip=sm_90a, wgmma=true, tensor-cores=true), got chip=sm_90a with wgmma=false
// ERRSCALAR: error: fa-to-ptx: tma=true needs the wgmma kernels (chip=sm_90a, wgmma=true, tensor-cores=true), got chip=sm_90a with tensor-cores=false

// PTX: .param .align 64 .b8 bf16_d128_none_attention_0_param_{{[0-9]+}}[128],
// PTX-NEXT: .param .align 64 .b8 bf16_d128_none_attention_0_param_{{[0-9]+}}[128],
// PTX-NEXT: .param .align 64 .b8 bf16_d128_none_attention_0_param_{{[0-9]+}}[128],
// PTX-NEXT: .param .align 64 .b8 bf16_d128_none_attention_0_param_{{[0-9]+}}[128]
// PTX-NEXT: )
// The producer warpgroup (fa-to-ptx's default producer-warp=true): 384
// threads, registers moved by setmaxnreg from it (24) to the two consumer
// warpgroups (240). Two query tiles per block (tiles-per-block's default at
// D 128): the second Q buffer's barrier after the K/V ones, no idle exit,
// the o stores of the first tile waited for only at the end. Without a
// mask the key tiles have 160 rows: S = Q K^T is m64n160k16, O += P V
// m64n128k16 (K = 160 keys in ten k16 steps).
// PTX: .maxntid 384, 1, 1
// PTX: .shared .align 1024 .b8 __dynamic_shmem__0;
// PTX: cvta.param.u64
// PTX: prefetch.tensormap
// PTX-COUNT-5: mbarrier.init.shared::cta.b64 [{{.*}}], 1;
// PTX-COUNT-4: mbarrier.init.shared::cta.b64 [{{.*}}], 256;
// PTX: mbarrier.init.shared::cta.b64 [{{.*}}], 1;
// PTX: setmaxnreg.dec.sync.aligned.u32 24;
// PTX: mbarrier.try_wait.parity.shared::cta.b64
// PTX: cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// Once its loads are issued, the producer prefetches into L2 the two Q
// tiles (two 64-column boxes each) of the block launched about when this
// one ends: launch index + %nsmid.
// PTX: mov.u32 %r{{[0-9]+}}, %nsmid;
// PTX-COUNT-4: cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}];
// PTX-NOT: cp.async.bulk.prefetch.tensor
// PTX: setmaxnreg.inc.sync.aligned.u32 240;
// PTX-NOT: cp.async.bulk.prefetch.tensor
// PTX-NOT: @p exit;
// PTX: mbarrier.try_wait.parity.shared::cta.b64
// PTX: wgmma.mma_async.sync.aligned.m64n160k16.f32.bf16.bf16
// PTX: mbarrier.arrive.shared::cta.b64
// PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// The key blocks below the one holding key Tk - 1 run in a loop without
// mask code (above: its P V), the others in a second loop with it.
// PTX-NOT: selp.f32 {{.*}}0fFF800000
// PTX: wgmma.mma_async.sync.aligned.m64n160k16.f32.bf16.bf16
// PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// PTX: selp.f32 %r{{[0-9]+}}, {{.*}}0fFF800000
// The peeled boundary between the tiles: tile 0's last P V (ten k16
// steps), then the waits for tile 1's Q and K_0 and its S_0 (eight), then
// a wait for the P V alone; tile 0's epilogue (o staged in workgroup
// memory, then TMA stores) runs while S_0 is on the tensor cores, and only
// then the wait for S_0.
// PTX: wgmma.wait_group.sync.aligned 0;
// PTX: mbarrier.try_wait.parity.shared::cta.b64
// PTX-NOT: wgmma.mma_async
// PTX-NOT: wgmma.wait_group
// PTX-COUNT-10: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// PTX-NOT: wgmma.wait_group
// PTX: mbarrier.try_wait.parity.shared::cta.b64
// PTX-NOT: wgmma.mma_async
// PTX-NOT: wgmma.wait_group
// PTX: mbarrier.try_wait.parity.shared::cta.b64
// PTX-NOT: wgmma.mma_async
// PTX-NOT: wgmma.wait_group
// PTX-COUNT-8: wgmma.mma_async.sync.aligned.m64n160k16.f32.bf16.bf16
// PTX-NOT: wgmma.mma_async
// PTX: wgmma.wait_group.sync.aligned 1;
// PTX-NOT: wgmma.mma_async
// PTX-NOT: wgmma.wait_group
// PTX: st.shared.b32
// PTX-NOT: wgmma.mma_async
// PTX-NOT: wgmma.wait_group
// PTX: fence.proxy.async.shared::cta;
// PTX-NOT: wgmma.mma_async
// PTX-NOT: wgmma.wait_group
// PTX: cp.async.bulk.tensor.3d.global.shared::cta.bulk_group
// PTX: cp.async.bulk.commit_group;
// PTX-NOT: wgmma.mma_async
// PTX-NOT: wgmma.wait_group
// PTX: wgmma.wait_group.sync.aligned 0;
// Tile 1's key loop; the reads of both tiles' o stores are waited for
// once, after everything else (the code of the other branch, tile 0 alone
// and then tile 1's rows, comes before in the PTX).
// PTX-NOT: cp.async.bulk.wait_group.read
// PTX: wgmma.mma_async.sync.aligned.m64n160k16.f32.bf16.bf16
// PTX-NOT: cp.async.bulk.wait_group.read
// PTX: cp.async.bulk.commit_group;
// PTX-NOT: cp.async.bulk.wait_group.read
// PTX: cp.async.bulk.wait_group.read 0;
// PTX-NOT: wgmma.mma_async
// PTX-NOT: cp.async.bulk.commit_group
// PTX-NOT: st.global.b16
// PTX-NOT: cp.async.cg
// PTX-NOT: cp.async.ca
// SPRODUCTS-COUNT-48: wgmma.mma_async.sync.aligned.m64n160k16.f32.bf16.bf16
// SPRODUCTS-NOT: wgmma.mma_async.sync.aligned.m64n160k16
// PVPRODUCTS-COUNT-70: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// PVPRODUCTS-NOT: wgmma.mma_async.sync.aligned.m64n128k16

// tiles-per-block=1: one tile per block; the empty barriers count the
// arrivals of the consumer warpgroups with a row before Tq, the others
// exit after setmaxnreg; each warp waits for its o stores' reads.
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a tiles-per-block=1 output-dir=%t/t1" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX1 < %t/t1/bf16_d128_none_attention_0.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST1 < %t/t1/bf16_d128_none_attention_0.manifest
// PTX1: .maxntid 384, 1, 1
// PTX1: mbarrier.init.shared::cta.b64 [{{.*}}], %r{{[0-9]+}};
// PTX1: setmaxnreg.dec.sync.aligned.u32 24;
// No Q prefetch for the next block without a mask and with one tile (it
// gained nothing there).
// PTX1-NOT: cp.async.bulk.prefetch.tensor
// PTX1: setmaxnreg.inc.sync.aligned.u32 240;
// PTX1: @p exit;
// PTX1: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// PTX1: cp.async.bulk.commit_group;
// PTX1-NEXT: cp.async.bulk.wait_group.read 0;
// PTX1-NOT: wgmma.mma_async
// MANIFEST1: shared_bytes 163912
// MANIFEST1: grid ceil_div(seqlen_q,block_m) batch 1

// MANIFEST: version 3
// MANIFEST: block_m 128
// MANIFEST: block_n 160
// MANIFEST: threads 384
// MANIFEST: shared_bytes 229456
// MANIFEST: index_bits 32
// MANIFEST: params q k v o lse
// MANIFEST-NEXT: tensor_map q 64 128 128
// MANIFEST-NEXT: tensor_map k 64 160 128
// MANIFEST-NEXT: tensor_map v 64 160 128
// MANIFEST-NEXT: tensor_map o 64 16 128
// MANIFEST-NEXT: grid ceil_div(seqlen_q,256) batch 1

// Head dim 64 with a causal mask: the producer warpgroup with three
// consumer warpgroups (block_m 192, 512 threads) and 128-key tiles.
// 32-bit indices (index-bitwidth=0's choice here and at head dim 128, not
// at head dim 64 without a mask, nor in the backward).
// MANIFEST64: block_m 192
// MANIFEST64: block_n 128
// MANIFEST64: threads 512
// MANIFEST64: index_bits 32
// MANIFEST64: params q k v o
// MANIFEST64-NEXT: tensor_map q 64 192 128
// MANIFEST64-NEXT: tensor_map k 64 128 128
// MANIFEST64-NEXT: tensor_map v 64 128 128
// MANIFEST64-NEXT: tensor_map o 64 16 128
// Head dim 32: rows of 64 bytes, so 32-column boxes with the 64-byte
// swizzle; no mask, so the producer warpgroup with three consumer
// warpgroups (block_m 192, 512 threads) and 128-key tiles. o leaves by
// st.global (TMA stores take head dims that are multiples of 64).
// RUN: FileCheck %s --check-prefix=MANIFEST32 < %t/bf16_d32_attention_0.manifest
// MANIFEST32: block_m 192
// MANIFEST32: block_n 128
// MANIFEST32: threads 512
// MANIFEST32: tensor_map q 32 192 64
// MANIFEST32-NEXT: tensor_map k 32 128 64
// MANIFEST32-NEXT: tensor_map v 32 128 64
// MANIFEST32-NEXT: grid
// Head dim 64 without mask: the same 12-warp shape, no spills.
// RUN: %ptxas -arch=sm_90a -v %t/bf16_d64_none_attention_0.ptx -o %t/g.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: FileCheck %s --check-prefix=MANIFEST64N < %t/bf16_d64_none_attention_0.manifest
// RUN: FileCheck %s --check-prefix=PARAMS64 < %t/bf16_d64_none_attention_0.ptx
// RUN: FileCheck %s --check-prefix=PARAMS32 < %t/f16_d64_causal_attention_0.ptx
// The TMA backward takes 32 bits (every kernel of its module); the
// cp.async one keeps 64.
// RUN: grep -q "^index_bits 32$" %t/bwd_f16_d64_attention_backward_0.manifest
// RUN: grep -q "^index_bits 32$" %t/bwd_bf16_d128_causal_attention_backward_0.manifest
// RUN: grep -q "^index_bits 32$" %t/det/bwd_bf16_d128_causal_attention_backward_0.manifest
// RUN: FileCheck %s --check-prefix=PARAMS32 < %t/bwd_bf16_d128_causal_attention_backward_0.ptx
// RUN: not grep -q index_bits %t/cp/bwd_f16_d64_attention_backward_0.manifest %t/detcp/bwd_bf16_d128_causal_attention_backward_0.manifest
// RUN: FileCheck %s --check-prefix=PARAMS64 < %t/cp/bwd_f16_d64_attention_backward_0.ptx
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a index-bitwidth=64 output-dir=%t/i64" -o /dev/null
// RUN: not grep -q index_bits %t/i64/bf16_d128_none_attention_0.manifest %t/i64/f16_d64_causal_attention_0.manifest %t/i64/bwd_f16_d64_attention_backward_0.manifest
// RUN: FileCheck %s --check-prefix=PARAMS64 < %t/i64/f16_d64_causal_attention_0.ptx
// RUN: FileCheck %s --check-prefix=PARAMS64 < %t/i64/bwd_bf16_d128_causal_attention_backward_0.ptx
// RUN: %ptxas -arch=sm_90a -v %t/i64/bwd_bf16_d128_causal_attention_backward_0.ptx -o %t/i64b.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL3
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a index-bitwidth=32 output-dir=%t/i32" -o /dev/null
// RUN: FileCheck %s --check-prefix=PARAMS32 < %t/i32/bf16_d64_none_attention_0.ptx
// RUN: %ptxas -arch=sm_90a -v %t/i32/bf16_d64_none_attention_0.ptx -o %t/i32a.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a index-bitwidth=16 output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRINDEX
// ERRINDEX: error: fa-to-ptx: expected index-bitwidth 32 or 64, or 0 for the kernel's choice, got 16
// The memref params: pointers, then the offset, sizes and strides in the
// index type's width.
// PARAMS64: .param .u64 .ptr .align 1 {{.*}}_param_0,
// PARAMS64-NEXT: .param .u64 .ptr .align 1 {{.*}}_param_1,
// PARAMS64-NEXT: .param .u64 {{.*}}_param_2,
// PARAMS32: .param .u64 .ptr .align 1 {{.*}}_param_0,
// PARAMS32-NEXT: .param .u64 .ptr .align 1 {{.*}}_param_1,
// PARAMS32-NEXT: .param .u32 {{.*}}_param_2,
// MANIFEST64N-NOT: index_bits
// MANIFEST64N: block_m 192
// MANIFEST64N: block_n 128
// MANIFEST64N: threads 512
// MANIFEST64N: tensor_map q 64 192 128

// producer-warp=false gives back the 8-warp kernel with its block barrier;
// pingpong adds the turn barriers. The D 128 pingpong kernel assembles
// without spills, and so does the 12-warp D 64 one (pingpong is off by
// default), which spilled 4 bytes (one wgmma descriptor word) while its
// key loop carried the mask code (docs/PERFORMANCE.md, thirteenth run).
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a producer-warp=false output-dir=%t/np" -o /dev/null
// RUN: FileCheck %s --check-prefix=NOPRODUCER < %t/np/bf16_d128_none_attention_0.ptx
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a pingpong=true output-dir=%t/pp" -o /dev/null
// RUN: FileCheck %s --check-prefix=PINGPONG < %t/pp/bf16_d128_none_attention_0.ptx
// RUN: %ptxas -arch=sm_90a -v %t/pp/bf16_d128_none_attention_0.ptx -o %t/h.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/pp/bf16_d64_none_attention_0.ptx -o %t/i.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// NOPRODUCER: .maxntid 256, 1, 1
// NOPRODUCER-NOT: setmaxnreg
// NOPRODUCER: bar.sync 0;
// NOPRODUCER-NOT: setmaxnreg
// PINGPONG: .maxntid 384, 1, 1
// PINGPONG: setmaxnreg.inc.sync.aligned.u32 240;
// PINGPONG: bar.arrive {{%r[0-9]+}}, 256;
// PINGPONG: bar.sync {{%r[0-9]+}}, 256;
// PINGPONG: wgmma.mma_async
// PINGPONG: bar.arrive {{%r[0-9]+}}, 256;

// The causal D 128 kernel keeps 128-key tiles (two query tiles).
// RUN: FileCheck %s --check-prefix=MANIFESTC < %t/bf16_d128_causal_attention_0.manifest
// MANIFESTC: block_n 128
// MANIFESTC: shared_bytes 196688
// MANIFESTC: grid ceil_div(seqlen_q,256) batch 1

// tiles-per-block=2 given: two tiles of 128 keys at D 128, also without a
// mask (the 160-key tiles are the default's choice only; the causal
// kernel too assembles without spills); at D 64 the default 12-warp
// kernels keep one tile (two spill there, and 8 warps with two tiles
// measured slower: docs/PERFORMANCE.md, nineteenth run).
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a tiles-per-block=2 output-dir=%t/t2" -o /dev/null
// RUN: FileCheck %s --check-prefix=MANIFESTT2 < %t/t2/bf16_d128_none_attention_0.manifest
// RUN: FileCheck %s --check-prefix=MANIFEST64T1 < %t/t2/f16_d64_causal_attention_0.manifest
// MANIFEST64T1: grid ceil_div(seqlen_q,384) batch 1
// RUN: %ptxas -arch=sm_90a -v %t/t2/bf16_d128_none_attention_0.ptx -o %t/t2a.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/t2/bf16_d128_causal_attention_0.ptx -o %t/t2b.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// MANIFESTT2: shared_bytes 196688
// MANIFESTT2: grid ceil_div(seqlen_q,256) batch 1
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a tiles-per-block=4 output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRTILES
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a producer-warp=false tiles-per-block=2 output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRTILESPRODUCER
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a pingpong=true tiles-per-block=2 output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRTILESPRODUCER
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a tma=false tiles-per-block=2 output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRTILESTMA
// ERRTILES: error: fa-to-ptx: expected tiles-per-block 1 or 2, or 0 for the default, got 4
// ERRTILESPRODUCER: error: fa-to-ptx: tiles-per-block=2 needs producer-warp=true and pingpong=false
// ERRTILESTMA: error: fa-to-ptx: tiles-per-block=2 needs the TMA wgmma kernels with the producer warpgroup ({{.*}}), got chip=sm_90a with tma=false

// The producer warpgroup and pingpong need the TMA kernels.
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a tma=false producer-warp=true output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRPRODUCER
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a producer-warp=false pingpong=true output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRPINGPONG
// ERRPRODUCER: error: fa-to-ptx: producer-warp=true needs the TMA wgmma kernels (chip=sm_90a, wgmma=true, tensor-cores=true, tma=true), got chip=sm_90a with tma=false
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_80 pingpong=true output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRPINGPONG80
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a tma=false pingpong=true output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRPINGPONGTMA
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a wgmma=false pingpong=true output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRPINGPONGMMA
// ERRPINGPONG: error: fa-to-ptx: pingpong=true needs producer-warp=true (the consumer warpgroups must not share a block barrier)
// ERRPINGPONG80: error: fa-to-ptx: pingpong=true needs the TMA wgmma kernels with the producer warpgroup (chip=sm_90a, wgmma=true, tensor-cores=true, tma=true), got chip=sm_80{{$}}
// ERRPINGPONGTMA: error: fa-to-ptx: pingpong=true needs the TMA wgmma kernels with the producer warpgroup ({{.*}}), got chip=sm_90a with tma=false
// ERRPINGPONGMMA: error: fa-to-ptx: pingpong=true needs the TMA wgmma kernels with the producer warpgroup ({{.*}}), got chip=sm_90a with wgmma=false

// The backward kernels: _delta and _dq_convert take no map; _dkdv (own K,
// V: 128 rows; Q, dO tiles of block_m = 64 rows at D 128) takes four, in
// params order. Its TMA form copies the column values (lse, delta) with
// 4-byte cp.async, and no tile with cp.async.cg.
// BWD: version 4
// BWD: deterministic 0
// BWD: kernel bwd_bf16_d128_causal_attention_backward_0_delta
// BWD-NOT: tensor_map
// BWD: kernel bwd_bf16_d128_causal_attention_backward_0_dkdv
// BWD: params q k v do lse delta dk dv dq_accum
// BWD-NEXT: tensor_map q 64 64 128
// BWD-NEXT: tensor_map k 64 128 128
// BWD-NEXT: tensor_map v 64 128 128
// BWD-NEXT: tensor_map do 64 64 128
// dq atomics by TMA reductions: boxes of 32 f32 x 16 rows, 128-byte swizzle.
// BWD-NEXT: tensor_map dq_accum 64 16 none
// BWD-NEXT: grid ceil_div(seqlen_k,block_n) batch 1
// BWDPAIR: kernel bwd_bf16_d128_causal_attention_backward_0_dkdv
// BWDPAIR: threads 384
// BWDPAIR: grid ceil_div(seqlen_k,256) batch 1
// BWD: kernel bwd_bf16_d128_causal_attention_backward_0_dq_convert
// BWD-NOT: tensor_map
// BWD-NOT: kernel
// BWDPTX: .entry bwd_bf16_d128_causal_attention_backward_0_dkdv(
// BWDPTX-COUNT-5: .param .align 64 .b8 bwd_bf16_d128_causal_attention_backward_0_dkdv_param_{{[0-9]+}}[128]
// BWDPTX-NOT: .param .align 64 .b8 bwd_bf16_d128_causal_attention_backward_0_dkdv_param_{{[0-9]+}}[128]
// BWDPTX: cp.async.bulk.tensor.3d
// BWDPTX: cp.async.ca.shared.global [{{.*}}], [{{.*}}], 4;
// BWDPTX-NOT: cp.async.cg
// BWDPTX: .entry bwd_bf16_d128_causal_attention_backward_0_dq_convert(
// BWDNOPREFETCH: .entry bwd_bf16_d128_causal_attention_backward_0_dkdv(
// BWDNOPREFETCH-NOT: cp.async.bulk.prefetch.tensor
// BWDNOPREFETCH: .entry bwd_bf16_d128_causal_attention_backward_0_dq_convert(
// BWDPREFETCH: .entry bwd_f16_d64_attention_backward_0_dkdv(
// BWDPREFETCH: mov.u32 %r{{[0-9]+}}, %nsmid;
// BWDPREFETCH: cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%rd[[K:[0-9]+]], {%r[[C:[0-9]+]], %r[[ROW:[0-9]+]], %r[[ENTRY:[0-9]+]]}];
// BWDPREFETCH-NOT: cp.async.bulk.tensor
// BWDPREFETCH: cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%rd{{[0-9]+}}, {%r[[C]], %r[[ROW]], %r[[ENTRY]]}];
// BWDPREFETCH: .entry bwd_f16_d64_attention_backward_0_dq_convert(
// BWDPREFETCH-NOT: cp.async.bulk.prefetch.tensor

// deterministic=true: _dkdv (Q, dO tiles of block_m = 64 rows at D 128; 32
// with cp.async, whose copy addresses take registers) and
// _dq (own Q, dO; K, V tiles of block_n = 64) take four maps each.
// BWDDET: deterministic 1
// BWDDET: kernel bwd_bf16_d128_causal_attention_backward_0_dkdv
// BWDDET: params q k v do lse delta dk dv
// BWDDET-NEXT: tensor_map q 64 64 128
// BWDDET-NEXT: tensor_map k 64 128 128
// BWDDET-NEXT: tensor_map v 64 128 128
// BWDDET-NEXT: tensor_map do 64 64 128
// BWDDET-NEXT: grid ceil_div(seqlen_k,block_n) batch 1
// BWDDET: kernel bwd_bf16_d128_causal_attention_backward_0_dq
// BWDDET: params q k v do lse delta dq
// BWDDET-NEXT: tensor_map q 64 128 128
// BWDDET-NEXT: tensor_map k 64 64 128
// BWDDET-NEXT: tensor_map v 64 64 128
// BWDDET-NEXT: tensor_map do 64 128 128
// BWDDET-NEXT: grid ceil_div(seqlen_q,block_m) batch 1
// BWDDETCP: kernel bwd_bf16_d128_causal_attention_backward_0_dkdv
// BWDDETCP-NEXT: threads 256
// BWDDETCP-NEXT: block_m 32
// BWDDETPTX: .entry bwd_bf16_d128_causal_attention_backward_0_dkdv(
// BWDDETPTX-COUNT-4: .param .align 64 .b8 bwd_bf16_d128_causal_attention_backward_0_dkdv_param_{{[0-9]+}}[128]
// BWDDETPTX: cp.async.bulk.tensor.3d
// BWDDETPTX-NOT: cp.async.cg
// BWDDETPTX: .entry bwd_bf16_d128_causal_attention_backward_0_dq(
// BWDDETPTX-COUNT-4: .param .align 64 .b8 bwd_bf16_d128_causal_attention_backward_0_dq_param_{{[0-9]+}}[128]
// BWDDETPTX-NOT: cp.async.cg

// NOSPILL3-COUNT-3: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// NOSPILL3-NOT: C751{{[0-9]}}
// NOSPILL3-NOT: warning

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

func.func @bf16_d64_bottom_right(%q: tensor<2x8x?x64xbf16>, %k: tensor<2x8x?x64xbf16>, %v: tensor<2x8x?x64xbf16>) -> (tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(bottom_right) : tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16> -> tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>
  return %o, %lse : tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>
}

func.func @bf16_d64_none(%q: tensor<?x?x64xbf16>, %k: tensor<?x?x64xbf16>, %v: tensor<?x?x64xbf16>) -> tensor<?x?x64xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x64xbf16> -> tensor<?x?x64xbf16>
  return %o : tensor<?x?x64xbf16>
}

func.func @bf16_d32(%q: tensor<?x?x32xbf16>, %k: tensor<?x?x32xbf16>, %v: tensor<?x?x32xbf16>) -> tensor<?x?x32xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16> -> tensor<?x?x32xbf16>
  return %o : tensor<?x?x32xbf16>
}

func.func @bwd_bf16_d128_causal(%q: tensor<?x?x128xbf16>, %k: tensor<?x?x128xbf16>, %v: tensor<?x?x128xbf16>, %o: tensor<?x?x128xbf16>, %do: tensor<?x?x128xbf16>, %lse: tensor<?x?xf32>) -> (tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(top_left) : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?xf32> -> tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>
  return %dq, %dk, %dv : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>
}

func.func @bwd_f16_d64(%q: tensor<?x?x64xf16>, %k: tensor<?x?x64xf16>, %v: tensor<?x?x64xf16>, %o: tensor<?x?x64xf16>, %do: tensor<?x?x64xf16>, %lse: tensor<?x?xf32>) -> (tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?xf32> -> tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>
  return %dq, %dk, %dv : tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>
}
