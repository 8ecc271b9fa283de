// fa-to-ptx persistent=true|auto: the TMA wgmma forward with the producer
// warpgroup becomes a persistent kernel for ops whose o leaves by TMA (o
// in q's type, head_dim_v == head_dim, a multiple of 64). Its manifest
// asks for min(query tiles x batch, resident blocks) blocks on x; each
// block takes tiles ctaid.x, ctaid.x + nctaid.x, ... (nctaid.x read); Q
// has two buffers, each with a "full" barrier (one arrival) and an
// "empty" one (one arrival per consumer warp); ptxas assembles every
// persistent kernel with no spills and no serialized wgmma. Other ops
// keep their grid. Persistent kernels take 128-key tiles (the wide
// 160-key ones measured slower there). fa-to-ptx's default, auto, takes
// it at D 128 (two consumer warpgroups) only; false never.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a persistent=true output-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=MANIFEST128 < %t/bf16_d128_none_attention_0.manifest
// RUN: FileCheck %s --check-prefix=MANIFEST64 < %t/f16_d64_causal_attention_0.manifest
// RUN: FileCheck %s --check-prefix=KEEP < %t/bf16_d32_attention_0.manifest
// RUN: FileCheck %s --check-prefix=KEEP < %t/bf16_d64_dv32_attention_0.manifest
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a output-dir=%t/auto" -o /dev/null
// RUN: FileCheck %s --check-prefix=MANIFEST128 < %t/auto/bf16_d128_none_attention_0.manifest
// RUN: FileCheck %s --check-prefix=AUTOCAUSAL < %t/auto/bf16_d128_causal_attention_0.manifest
// RUN: FileCheck %s --check-prefix=KEEP < %t/auto/f16_d64_causal_attention_0.manifest
// RUN: FileCheck %s --check-prefix=KEEP < %t/auto/bf16_d64_none_attention_0.manifest
// RUN: cmp %t/bf16_d128_none_attention_0.ptx %t/auto/bf16_d128_none_attention_0.ptx
// auto leaves out a static Tk of five key blocks or fewer (persistent,
// Tq 100 and Tk 300 spilled 136-184 bytes until the o-store wait moved
// past the next prologue; none since, not timed), as the two-tile kernel
// does.
// RUN: FileCheck %s --check-prefix=KEEP < %t/auto/bf16_d128_static_short_attention_0.manifest
// RUN: %ptxas -arch=sm_90a -v %t/auto/bf16_d128_static_short_attention_0.ptx -o %t/f.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// With auto, a tiles-per-block given keeps the kernel it names.
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a tiles-per-block=1 output-dir=%t/tpb1" -o /dev/null
// RUN: FileCheck %s --check-prefix=KEEP < %t/tpb1/bf16_d128_none_attention_0.manifest
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a persistent=false output-dir=%t/off" -o /dev/null
// RUN: FileCheck %s --check-prefix=OFF128 < %t/off/bf16_d128_none_attention_0.manifest
// RUN: FileCheck %s --check-prefix=PTX < %t/bf16_d128_none_attention_0.ptx
// RUN: FileCheck %s --check-prefix=PTX64 < %t/bf16_d64_none_attention_0.ptx
// RUN: %ptxas -arch=sm_90a -v %t/bf16_d128_none_attention_0.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/bf16_d128_causal_attention_0.ptx -o %t/b.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/f16_d64_causal_attention_0.ptx -o %t/c.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/bf16_d64_none_attention_0.ptx -o %t/d.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/bf16_d64_bottom_right_attention_0.ptx -o %t/e.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// Each product is emitted once per place it runs. At D 128 (two consumer
// warpgroups, 240 registers) the tile boundary is peeled: S = Q K^T (8
// k16 steps) in the prologue, at the boundary and in the two key loops;
// O += P V (8, 128-key tiles) in the two key loops, at the peeled boundary, where the
// previous tile ends alone and after the last turn. At D 64 (three
// warpgroups, 160 registers) it is not: S in the prologue and the two
// loops, P V (8) in the loops, where the previous tile ends and after the
// last turn.
// RUN: FileCheck %s --check-prefix=PRODUCTS128 < %t/bf16_d128_none_attention_0.ptx
// At the peeled boundary the previous tile's o stores are committed and not
// waited for: each warp's lane 0 waits for their reads (wait_group.read)
// after this tile's prologue (its softmax: ex2), then frees the Q buffer.
// RUN: FileCheck %s --check-prefix=DEFER < %t/bf16_d128_none_attention_0.ptx
// RUN: FileCheck %s --check-prefix=PRODUCTS64 < %t/bf16_d64_none_attention_0.ptx
// Option conflicts are errors.
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a persistent=true producer-warp=false output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRPRODUCER
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a persistent=true pingpong=true output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRPRODUCER
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a persistent=true tiles-per-block=2 output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRPRODUCER
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a persistent=true tma=false producer-warp=true output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRTMA
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_80 persistent=true output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR80
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a persistent=maybe output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRVALUE
// RUN: not fa-opt %s --convert-fa-to-gpu="persistent=maybe" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRVALUEPASS
// auto needs nothing: on sm_80 (no TMA kernels) it is ignored.
// RUN: fa-opt %s --fa-to-ptx="chip=sm_80 persistent=auto output-dir=%t/sm80" -o /dev/null
// RUN: FileCheck %s --check-prefix=KEEP < %t/sm80/bf16_d128_none_attention_0.manifest
// ERRVALUE: error: fa-to-ptx: expected persistent false, auto or true, got 'maybe'
// ERRVALUEPASS: error: convert-fa-to-gpu: expected persistent false, auto or true, got 'maybe'

// MANIFEST128: block_m 128
// MANIFEST128: block_n 128
// MANIFEST128: threads 384
// Two Q buffers (2 x 32768 bytes), two K/V stages of 128 keys, 12
// mbarriers.
// MANIFEST128: shared_bytes 196704
// MANIFEST128: grid min(mul(ceil_div(seqlen_q,block_m),batch),resident_blocks) 1 1
// MANIFEST64: block_m 192
// MANIFEST64: threads 512
// MANIFEST64: grid min(mul(ceil_div(seqlen_q,block_m),batch),resident_blocks) 1 1
// KEEP: grid ceil_div(seqlen_q,block_m) batch 1
// AUTOCAUSAL: block_n 128
// AUTOCAUSAL: grid min(mul(ceil_div(seqlen_q,block_m),batch),resident_blocks) 1 1
// persistent=false: the two-tile kernel with the wide tiles.
// OFF128: block_n 160
// OFF128: grid ceil_div(seqlen_q,256) batch 1

// Q full (buffer 0), K/V full, K/V empty (256 consumer threads), Q full
// (buffer 1), Q empty (8 consumer warps) x 2.
// PTX-COUNT-5: mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}], 1;
// PTX-COUNT-4: mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}], 256;
// PTX: mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}], 1;
// PTX: mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}], 8;
// PTX: mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}], 8;
// PTX: fence.mbarrier_init.release.cluster;
// PTX: mov.u32 {{%r[0-9]+}}, %nctaid.x;
// PTX: cp.async.bulk.tensor.3d.global.shared::cta.bulk_group
// PTX: cp.async.bulk.wait_group.read 0;
// PTX: mbarrier.arrive.shared::cta.b64
// PTX64: mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}], 12;
// PTX64: mov.u32 {{%r[0-9]+}}, %nctaid.x;

// 128-key tiles: S and P V are both m64n128k16 (8 k16 steps each), 4 x 8
// + 5 x 8.
// PRODUCTS128-COUNT-72: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// PRODUCTS128-NOT: wgmma.mma_async.sync.aligned.m64n
// PRODUCTS64-COUNT-12: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// PRODUCTS64-NOT: wgmma.mma_async.sync.aligned.m64n128k16

// DEFER: cp.async.bulk.commit_group;
// DEFER-NEXT: // end inline asm
// DEFER-NOT: {{cp.async.bulk.wait_group.read|mbarrier.arrive}}
// DEFER: wgmma.wait_group.sync.aligned 0;
// DEFER-NOT: cp.async.bulk.wait_group.read
// DEFER: ex2.approx
// DEFER-NOT: cp.async.bulk.wait_group.read
// DEFER: setp.ne.b32 [[LANE:%p[0-9]+]], {{%r[0-9]+}}, 0;
// DEFER-NEXT: @[[LANE]] bra
// DEFER-NOT: wgmma
// DEFER: cp.async.bulk.wait_group.read 0;
// DEFER-NEXT: // end inline asm
// DEFER-NEXT: // begin inline asm
// DEFER-NEXT: mbarrier.arrive.shared::cta.b64 _, [{{%r[0-9]+}}];

// NOSPILL: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// NOSPILL-NOT: C751{{[0-9]}}
// NOSPILL-NOT: warning

// ERRPRODUCER: error: fa-to-ptx: persistent=true needs producer-warp=true, pingpong=false and tiles-per-block other than 2
// ERRTMA: error: fa-to-ptx: producer-warp=true needs the TMA wgmma kernels
// ERR80: error: fa-to-ptx: persistent=true needs the TMA wgmma kernels with the producer warpgroup ({{.*}}), got chip=sm_80

func.func @bf16_d128_none(%q: tensor<?x?x128xbf16>, %k: tensor<?x?x128xbf16>, %v: tensor<?x?x128xbf16>) -> (tensor<?x?x128xbf16>, tensor<?x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16> -> tensor<?x?x128xbf16>, tensor<?x?xf32>
  return %o, %lse : tensor<?x?x128xbf16>, tensor<?x?xf32>
}

func.func @bf16_d128_causal(%q: tensor<?x?x128xbf16>, %k: tensor<?x?x128xbf16>, %v: tensor<?x?x128xbf16>) -> tensor<?x?x128xbf16> {
  %o = fa.attention %q, %k, %v causal(top_left) : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16> -> tensor<?x?x128xbf16>
  return %o : tensor<?x?x128xbf16>
}

func.func @f16_d64_causal(%q: tensor<4x?x64xf16>, %k: tensor<4x?x64xf16>, %v: tensor<4x?x64xf16>) -> tensor<4x?x64xf16> {
  %o = fa.attention %q, %k, %v causal(top_left) : tensor<4x?x64xf16>, tensor<4x?x64xf16>, tensor<4x?x64xf16> -> tensor<4x?x64xf16>
  return %o : tensor<4x?x64xf16>
}

func.func @bf16_d64_none(%q: tensor<?x?x64xbf16>, %k: tensor<?x?x64xbf16>, %v: tensor<?x?x64xbf16>) -> tensor<?x?x64xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x64xbf16> -> tensor<?x?x64xbf16>
  return %o : tensor<?x?x64xbf16>
}

func.func @bf16_d64_bottom_right(%q: tensor<2x8x?x64xbf16>, %k: tensor<2x8x?x64xbf16>, %v: tensor<2x8x?x64xbf16>) -> (tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(bottom_right) : tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16> -> tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>
  return %o, %lse : tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>
}

func.func @bf16_d32(%q: tensor<?x?x32xbf16>, %k: tensor<?x?x32xbf16>, %v: tensor<?x?x32xbf16>) -> tensor<?x?x32xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16> -> tensor<?x?x32xbf16>
  return %o : tensor<?x?x32xbf16>
}

func.func @bf16_d64_dv32(%q: tensor<?x?x64xbf16>, %k: tensor<?x?x64xbf16>, %v: tensor<?x?x32xbf16>) -> tensor<?x?x32xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x32xbf16> -> tensor<?x?x32xbf16>
  return %o : tensor<?x?x32xbf16>
}

func.func @bf16_d128_static_short(%q: tensor<?x100x128xbf16>, %k: tensor<?x300x128xbf16>, %v: tensor<?x300x128xbf16>) -> tensor<?x100x128xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x100x128xbf16>, tensor<?x300x128xbf16>, tensor<?x300x128xbf16> -> tensor<?x100x128xbf16>
  return %o : tensor<?x100x128xbf16>
}
