// backward-producer-warp (sm_90a TMA wgmma backward with dq atomics): the
// _dkdv kernel with a producer warpgroup (FlashAttention-3, Section 3.1).
// fa-to-ptx's default `auto` gives it to the _dkdv at head dim 128 without
// a mask or with a top-left causal one (measured faster there;
// docs/PERFORMANCE.md, seventeenth run and thirty-fourth session): 384
// threads, the consumers raise their registers to 240
// (setmaxnreg.inc), take the warpgroup index through shfl.sync (warp-uniform
// for ptxas: the own tiles' descriptors fit without spills), release each
// Q/dO stage on an "empty" mbarrier (init count 256 = the consumer
// threads) and hand dS^T to each other on named barriers of 256 threads
// (each warpgroup arrives on its own once its rows are stored, 2 + 2 w +
// tile % 2; the other syncs there before its dQ products read them: no
// block-wide barrier per tile); the producer, last
// in the kernel, lowers its registers to 24, waits on the empty barriers,
// issues the TMA loads and copies the lse/delta columns with 4-byte
// cp.async whose completion arrives on the Q stage's barrier (init count
// 1 + 128). With bottom_right and at head dim 64 `auto` keeps the
// 256-thread kernel; `true` gives the producer wherever it
// applies, `false` nowhere. Errors: unknown values, `true` without the TMA
// wgmma kernels or dq atomics, `true` with a dk/dv query tile that is not
// a multiple of 64.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a output-dir=%t/auto" -o /dev/null
// RUN: FileCheck %s --check-prefix=PRODUCER < %t/auto/bp_bf16_d128_top_left_attention_backward_0.manifest
// RUN: FileCheck %s --check-prefix=PTX < %t/auto/bp_bf16_d128_top_left_attention_backward_0.ptx
// RUN: FileCheck %s --check-prefix=PLAIN < %t/auto/bp_bf16_d128_bottom_right_attention_backward_0.manifest
// RUN: FileCheck %s --check-prefix=PRODUCER < %t/auto/bp_bf16_d128_none_attention_backward_0.manifest
// RUN: FileCheck %s --check-prefix=PLAIN < %t/auto/bp_f16_d64_top_left_attention_backward_0.manifest
// RUN: FileCheck %s --check-prefix=PLAINPTX < %t/auto/bp_bf16_d128_bottom_right_attention_backward_0.ptx
// RUN: %ptxas -arch=sm_90a -v %t/auto/bp_bf16_d128_top_left_attention_backward_0.ptx -o %t/a.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// RUN: %ptxas -arch=sm_90a -v %t/auto/bp_bf16_d128_none_attention_backward_0.ptx -o %t/n.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// The default is `auto`, given or not.
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a backward-producer-warp=auto output-dir=%t/given" -o /dev/null
// RUN: cmp %t/auto/bp_bf16_d128_top_left_attention_backward_0.ptx %t/given/bp_bf16_d128_top_left_attention_backward_0.ptx
// RUN: cmp %t/auto/bp_bf16_d128_none_attention_backward_0.ptx %t/given/bp_bf16_d128_none_attention_backward_0.ptx
// true: every _dkdv of this file (64- and 128-query tiles).
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a backward-producer-warp=true output-dir=%t/on" -o /dev/null
// RUN: FileCheck %s --check-prefix=PRODUCER < %t/on/bp_bf16_d128_bottom_right_attention_backward_0.manifest
// RUN: FileCheck %s --check-prefix=PRODUCER64 < %t/on/bp_f16_d64_top_left_attention_backward_0.manifest
// RUN: %ptxas -arch=sm_90a -v %t/on/bp_bf16_d128_bottom_right_attention_backward_0.ptx -o %t/b.cubin 2>&1 | FileCheck %s --check-prefix=NOSPILL
// The D 64 producer kernel (128-query tiles) adds its staged dQ early, not
// after the dS^T fence as the 64-query tiles do: at most a few bytes spill
// (the late add spilled 388-396).
// RUN: %ptxas -arch=sm_90a -v %t/on/bp_f16_d64_top_left_attention_backward_0.ptx -o %t/d64.cubin 2>&1 | FileCheck %s --check-prefix=SPILL64
// false: none.
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a backward-producer-warp=false output-dir=%t/off" -o /dev/null
// RUN: FileCheck %s --check-prefix=PLAIN < %t/off/bp_bf16_d128_top_left_attention_backward_0.manifest
// RUN: FileCheck %s --check-prefix=PLAIN < %t/off/bp_bf16_d128_none_attention_backward_0.manifest
// RUN: FileCheck %s --check-prefix=PLAINPTX < %t/off/bp_bf16_d128_top_left_attention_backward_0.ptx
// `auto` where the op has no TMA kernel (tma=false) or no dq atomics keeps
// the plain kernels.
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a tma=false output-dir=%t/cp" -o /dev/null
// RUN: FileCheck %s --check-prefix=PLAIN < %t/cp/bp_bf16_d128_top_left_attention_backward_0.manifest
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a deterministic=true output-dir=%t/det" -o /dev/null
// RUN: FileCheck %s --check-prefix=PLAINSPLIT < %t/det/bp_bf16_d128_top_left_attention_backward_0.manifest
// Errors of fa-to-ptx (before any kernel is built).
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a backward-producer-warp=yes output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRVALUE
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a backward-producer-warp=true tma=false output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRTMA
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_80 backward-producer-warp=true output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR80
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a backward-producer-warp=true deterministic=true output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRDET
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a backward-producer-warp=true dq-atomics=false output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRATOMICS
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a backward-producer-warp=true features=+ptx80 output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRPTX80
// On the op: one warpgroup at D 128 has 32-query tiles (64 do not fit its
// registers), too few for the producer's column copies.
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a backward-producer-warp=true num-warps=4 output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRTILE
// Given block-m: 64 at D 64 (its consumers spilled 50-120 bytes) is an
// error; 128 at D 128 does not fit the registers with or without it.
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a backward-producer-warp=true block-m=64 output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRTILE64
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_90a block-m=128 output-dir=%t/e" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRREGS
// Boolean spellings as for other options.
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a backward-producer-warp=TRUE output-dir=%t/upper" -o /dev/null
// RUN: cmp %t/on/bp_bf16_d128_none_attention_backward_0.ptx %t/upper/bp_bf16_d128_none_attention_backward_0.ptx
// RUN: fa-opt %s --fa-to-ptx="chip=sm_90a backward-producer-warp=0 output-dir=%t/zero" -o /dev/null
// RUN: cmp %t/off/bp_bf16_d128_top_left_attention_backward_0.ptx %t/zero/bp_bf16_d128_top_left_attention_backward_0.ptx
// convert-fa-to-gpu alone (default false): an unknown value on the module,
// true without TMA or without dq atomics on the op.
// RUN: not fa-opt %s --convert-fa-to-gpu="backward-producer-warp=on" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRPASS
// RUN: not fa-opt %s --convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 dq-atomics=1 backward-producer-warp=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRPASSTMA
// RUN: not fa-opt %s --convert-fa-to-gpu="tensor-cores=1 wgmma=1 tma=1 max-shared-bytes=232448 backward-producer-warp=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRPASSSPLIT
// RUN: fa-opt %s --convert-fa-to-gpu="tensor-cores=1 wgmma=1 tma=1 dq-atomics=1 max-shared-bytes=232448 backward-producer-warp=auto" | FileCheck %s --check-prefix=PASSAUTO

// PRODUCER: kernel {{.*}}_dkdv
// PRODUCER-NEXT: threads 384
// PRODUCER-NEXT: block_m 64
// PRODUCER64: kernel {{.*}}_dkdv
// PRODUCER64-NEXT: threads 384
// PRODUCER64-NEXT: block_m 128
// PLAIN: kernel {{.*}}_dkdv
// PLAIN-NEXT: threads 256
// PLAIN: params q k v do lse delta dk dv dq_accum
// PLAINSPLIT: kernel {{.*}}_dkdv
// PLAINSPLIT-NEXT: threads 256
// PLAINSPLIT: params q k v do lse delta dk dv{{$}}

// PTX-LABEL: .entry bp_bf16_d128_top_left_attention_backward_0_dkdv(
// PTX: shfl.sync.idx.b32 %r{{[0-9]+}}, %r{{[0-9]+}}, 0, 31, -1;
// Full barriers: own K, V (1 each), three Q stages (1 + 128), three dO
// stages (1); then six empty barriers (256 consumer threads each).
// PTX-COUNT-2: mbarrier.init.shared::cta.b64 [%r{{[0-9]+}}], 1;
// PTX-COUNT-3: mbarrier.init.shared::cta.b64 [%r{{[0-9]+}}], 129;
// PTX-COUNT-3: mbarrier.init.shared::cta.b64 [%r{{[0-9]+}}], 1;
// PTX-COUNT-6: mbarrier.init.shared::cta.b64 [%r{{[0-9]+}}], 256;
// PTX: setmaxnreg.inc.sync.aligned.u32 240;
// PTX: wgmma.mma_async
// The prologue: dS^T rows stored, fenced, the warpgroup's barrier arrived
// on (2 + 2 (tid / 128), tile `first` even under top-left causal: block-m
// 64, 128 keys per block).
// PTX: st.shared.b32
// PTX: fence.proxy.async.shared::cta;
// PTX: mov.u32 [[TID:%r[0-9]+]], %tid.x;
// PTX-NEXT: // end inline asm
// PTX-NEXT: shr.u32 [[SHR:%r[0-9]+]], [[TID]], 6;
// PTX-NEXT: and.b32 [[WG2:%r[0-9]+]], [[SHR]], 67108862;
// PTX-NEXT: add.s32 [[ID:%r[0-9]+]], [[WG2]], 2;
// PTX-NEXT: // begin inline asm
// PTX-NEXT: bar.arrive [[ID]], 256;
// PTX: mbarrier.arrive.shared::cta.b64 _, [%r{{[0-9]+}}];
// In the loop: the other warpgroup's barrier (2 + 2 (1 - w) + tile % 2)
// before the dQ products.
// PTX: bar.arrive %r{{[0-9]+}}, 256;
// PTX: not.b32 [[NOT:%r[0-9]+]], %r{{[0-9]+}};
// PTX-NEXT: shr.u32 [[NSHR:%r[0-9]+]], [[NOT]], 6;
// PTX-NEXT: and.b32 [[OTHER2:%r[0-9]+]], [[NSHR]], 2;
// PTX-NEXT: or.b32 [[OTHERID:%r[0-9]+]], [[OTHER2]], [[PARITY:%r[0-9]+]];
// PTX-NEXT: add.s32 [[SYNCID:%r[0-9]+]], [[OTHERID]], 2;
// PTX-NEXT: // begin inline asm
// PTX-NEXT: bar.sync [[SYNCID]], 256;
// PTX: wgmma.fence.sync.aligned;
// PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1, 1;
// The last tile's dQ products wait the same way.
// PTX: bar.sync %r{{[0-9]+}}, 256;
// PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1, 1;
// PTX-NOT: setmaxnreg.dec
// PTX-NOT: bar.sync 0;
// PTX: setmaxnreg.dec.sync.aligned.u32 24;
// PTX-NOT: wgmma.mma_async
// PTX: mbarrier.try_wait.parity
// PTX: cp.async.bulk.tensor.3d
// PTX: cp.async.ca.shared.global [{{.*}}], [{{.*}}], 4;
// PTX: cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%r{{[0-9]+}}];
// PTX: cp.async.wait_all;
// PTX-NOT: wgmma.mma_async
// PTX-LABEL: .entry bp_bf16_d128_top_left_attention_backward_0_dq_convert(

// PLAINPTX-LABEL: _dkdv(
// PLAINPTX-NOT: setmaxnreg
// PLAINPTX-NOT: cp.async.mbarrier.arrive.noinc
// PLAINPTX: _dq_convert(

// NOSPILL: _dkdv
// NOSPILL-NOT: _dq_convert
// NOSPILL: 0 bytes spill stores, 0 bytes spill loads

// SPILL64: _dkdv
// SPILL64-NOT: _dq_convert
// SPILL64: {{ [0-9]{1,2} bytes spill stores}}

// ERRVALUE: error: fa-to-ptx: expected backward-producer-warp false, auto or true, got 'yes'
// ERRTMA: error: fa-to-ptx: backward-producer-warp=true needs the TMA wgmma kernels (chip=sm_90a, wgmma=true, tensor-cores=true, tma=true), got chip=sm_90a with tma=false
// ERR80: error: fa-to-ptx: backward-producer-warp=true needs the TMA wgmma kernels ({{.*}}), got chip=sm_80{{$}}
// ERRDET: error: fa-to-ptx: backward-producer-warp=true needs the dq-atomics backward (dq-atomics=true, deterministic=false, PTX ISA 8.1 or later), got deterministic=true
// ERRATOMICS: error: fa-to-ptx: backward-producer-warp=true needs the dq-atomics backward ({{.*}}), got dq-atomics=false
// ERRPTX80: error: fa-to-ptx: backward-producer-warp=true needs the dq-atomics backward ({{.*}}), got features=+ptx80
// ERRTILE: error: 'fa.attention_backward' op backward-producer-warp = true needs the dk/dv query tile (block-m) it was built for: 64 at head dim 128, 128 at head dim 64, got 32 at head dim 128 (the largest default tile that fits the registers and workgroup memory here)
// ERRTILE64: error: 'fa.attention_backward' op backward-producer-warp = true needs the dk/dv query tile (block-m) it was built for: 64 at head dim 128, 128 at head dim 64, got 64 at head dim 64{{$}}
// ERRREGS: error: 'fa.attention_backward' op the wgmma backward's dk/dv accumulators (block-m (queries per dk/dv tile) = 128: 320 registers per thread) do not fit the 239 a thread of a 256-thread block can give them; use a smaller tile
// ERRPASS: error: convert-fa-to-gpu: expected backward-producer-warp false, auto or true, got 'on'
// ERRPASSTMA: error: 'fa.attention_backward' op backward-producer-warp = true needs the wgmma backward's TMA loads and dq atomics ({{.*}}), got tma = false
// ERRPASSSPLIT: error: 'fa.attention_backward' op backward-producer-warp = true needs the wgmma backward's TMA loads and dq atomics ({{.*}}), got the split _dkdv and _dq kernels (no dq atomics)
// PASSAUTO: fa.manifests
// PASSAUTO-SAME: kernel = "bp_bf16_d128_bottom_right_attention_backward_0_dkdv", {{[^}]*}}, threads = 256
// PASSAUTO-SAME: kernel = "bp_bf16_d128_none_attention_backward_0_dkdv", {{[^}]*}}, threads = 384
// PASSAUTO-SAME: kernel = "bp_bf16_d128_top_left_attention_backward_0_dkdv", {{[^}]*}}, threads = 384

func.func @bp_bf16_d128_top_left(%q: tensor<2x8x?x128xbf16>, %k: tensor<2x8x?x128xbf16>, %v: tensor<2x8x?x128xbf16>, %o: tensor<2x8x?x128xbf16>, %do: tensor<2x8x?x128xbf16>, %lse: tensor<2x8x?xf32>) -> (tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(top_left) : tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?xf32> -> tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>
  return %dq, %dk, %dv : tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>
}

func.func @bp_bf16_d128_bottom_right(%q: tensor<?x?x128xbf16>, %k: tensor<?x?x128xbf16>, %v: tensor<?x?x128xbf16>, %o: tensor<?x?x128xbf16>, %do: tensor<?x?x128xbf16>, %lse: tensor<?x?xf32>) -> (tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(bottom_right) : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?xf32> -> tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>
  return %dq, %dk, %dv : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>
}

func.func @bp_bf16_d128_none(%q: tensor<?x?x128xbf16>, %k: tensor<?x?x128xbf16>, %v: tensor<?x?x128xbf16>, %o: tensor<?x?x128xbf16>, %do: tensor<?x?x128xbf16>, %lse: tensor<?x?xf32>) -> (tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?xf32> -> tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>
  return %dq, %dk, %dv : tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>
}

func.func @bp_f16_d64_top_left(%q: tensor<?x?x64xf16>, %k: tensor<?x?x64xf16>, %v: tensor<?x?x64xf16>, %o: tensor<?x?x64xf16>, %do: tensor<?x?x64xf16>, %lse: tensor<?x?xf32>) -> (tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(top_left) : tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?xf32> -> tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>
  return %dq, %dk, %dv : tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>
}
