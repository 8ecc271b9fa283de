// The sm_90a warpgroup-MMA forward kernel (convert-fa-to-gpu wgmma=1).
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1" | FileCheck %s
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1" | fa-opt | FileCheck %s
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448" | FileCheck %s --check-prefix=SM90
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1" | FileCheck %s --check-prefix=MMA
// stages=3 on sm_90a: block_n 128 with three stages does not fit, so 64.
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 stages=3" | FileCheck %s --check-prefix=STAGES3
// STAGES3: block_m = 128 : i64, block_n = 64 : i64
// STAGES3-SAME: shared_bytes = 138240 : i64, threads = 256 : i64}

// Causal bf16, D = 128. Defaults: 8 warps (two warpgroups of 64 rows),
// block_m 128; block_n 128 where two K/V stages fit (sm_90a's 232448
// bytes: 168960), else 64 with three stages (the pass's default limit,
// sm_80's 166912: 138240 bytes).
// CHECK-LABEL: module attributes
// CHECK-SAME: bf16_d128_attention_0 = {{{.*}}block_m = 128 : i64, block_n = 64 : i64
// CHECK-SAME: row_align = 16 : i64
// CHECK-SAME: shared_bytes = 138240 : i64, threads = 256 : i64}
// SM90: block_m = 128 : i64, block_n = 128 : i64
// SM90-SAME: shared_bytes = 168960 : i64, threads = 256 : i64}
// CHECK: gpu.func @bf16_d128_attention_0(
// CHECK-SAME: kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// The tiles live in dynamic workgroup memory; the descriptors start from
// its address.
// CHECK: %[[SMEM:.+]] = gpu.dynamic_shared_memory
// CHECK: %[[TILE:.+]] = memref.view %[[SMEM]][%{{.+}}][] : {{.+}} to memref<69120xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.extract_aligned_pointer_as_index %[[SMEM]]
// Causal: the last query blocks first.
// CHECK: gpu.grid_dim x
// Q, then K_0, V_0, K_1, ... by cp.async through L1 (no bypassL1), each
// stage its own group.
// CHECK-NOT: bypassL1
// CHECK: nvgpu.device_async_copy %arg0[{{.+}}], %[[TILE]][{{.+}}], 8 :
// CHECK: nvgpu.device_async_copy %arg1[{{.+}}], %[[TILE]][{{.+}}], 8 :
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvgpu.device_async_copy %arg2[{{.+}}], %[[TILE]][{{.+}}], 8 :
// CHECK: nvvm.cp.async.commit.group
// Prologue: (Q, K_0) landed (five newer groups may be in flight), made
// visible to the async proxy, then S_0 = Q K_0^T: D / 16 = 8 wgmma
// m64n64k16, both operands from workgroup memory (descriptors), scale-d 0
// on the first.
// CHECK: nvvm.cp.async.wait.group 5
// CHECK-NEXT: llvm.inline_asm has_side_effects {{.*}}"fence.proxy.async.shared::cta;"
// CHECK-NEXT: gpu.barrier
// CHECK: "wgmma.fence.sync.aligned;"
// CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, $32, $33, p, 1, 1, 0, 0;
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK: "wgmma.wait_group.sync.aligned 0;"
// Steady state (FlashAttention-3 intra-warpgroup overlap): S_j issued,
// then P_{j-1} V_{j-1} with P from registers ({$32..$35}) and V N-major
// (imm-trans-b 1); wait for S_j only, softmax, then wait for P V.
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 3
// CHECK: "fence.proxy.async.shared::cta;"
// CHECK: gpu.barrier
// CHECK: nvgpu.device_async_copy %arg1
// CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK: "wgmma.fence.sync.aligned;"
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK: "wgmma.wait_group.sync.aligned 1;"
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: "wgmma.wait_group.sync.aligned 0;"
// V_{j+2} replaces V_{j-1} after a barrier.
// CHECK: gpu.barrier
// CHECK: nvgpu.device_async_copy %arg2
// CHECK: scf.yield
// The last block's P V, then o = O / l and lse.
// CHECK: nvvm.cp.async.wait.group 0
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16
// CHECK: vector.store
// CHECK: math.log

// Without wgmma the mma.sync kernel.
// MMA-LABEL: module attributes
// MMA: nvgpu.mma.sync
// MMA-NOT: wgmma

func.func @bf16_d128(%q: tensor<16x?x128xbf16>, %k: tensor<16x?x128xbf16>, %v: tensor<16x?x128xbf16>) -> (tensor<16x?x128xbf16>, tensor<16x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(top_left) : tensor<16x?x128xbf16>, tensor<16x?x128xbf16>, tensor<16x?x128xbf16> -> tensor<16x?x128xbf16>, tensor<16x?xf32>
  return %o, %lse : tensor<16x?x128xbf16>, tensor<16x?xf32>
}

// -----

// f16, D = 64: block_n 64 with three stages.
// CHECK-LABEL: module attributes
// CHECK-SAME: block_m = 128 : i64, block_n = 64 : i64
// CHECK-SAME: shared_bytes = 69120 : i64, threads = 256 : i64}
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {{.*}}, {$32, $33, $34, $35}, $36, p, 1, 1, 1;
func.func @f16_d64(%q: tensor<?x?x64xf16>, %k: tensor<?x?x64xf16>, %v: tensor<?x?x64xf16>) -> tensor<?x?x64xf16> {
  %o = fa.attention %q, %k, %v : tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16> -> tensor<?x?x64xf16>
  return %o : tensor<?x?x64xf16>
}

// -----

// Negative cases: head dims other than 32, 64 and 128 keep the mma.sync
// kernel; f32 keeps the scalar one.
// CHECK-LABEL: module attributes
// CHECK: gpu.func @d96_attention_0
// CHECK-NOT: wgmma
// CHECK: nvgpu.mma.sync
// CHECK-NOT: wgmma
// CHECK: gpu.func @d80_attention_0
// CHECK-NOT: wgmma
// CHECK: nvgpu.mma.sync
// CHECK-NOT: wgmma
// CHECK: gpu.func @d256_attention_0
// CHECK: nvgpu.mma.sync
// CHECK-NOT: wgmma
// CHECK: gpu.func @f32_attention_0
// CHECK-NOT: nvgpu.
// CHECK-NOT: wgmma
// CHECK: gpu.return
func.func @d96(%q: tensor<?x?x96xbf16>, %k: tensor<?x?x96xbf16>, %v: tensor<?x?x96xbf16>) -> tensor<?x?x96xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x?x96xbf16>, tensor<?x?x96xbf16>, tensor<?x?x96xbf16> -> tensor<?x?x96xbf16>
  return %o : tensor<?x?x96xbf16>
}
func.func @d80(%q: tensor<?x?x80xbf16>, %k: tensor<?x?x80xbf16>, %v: tensor<?x?x80xbf16>) -> tensor<?x?x80xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x?x80xbf16>, tensor<?x?x80xbf16>, tensor<?x?x80xbf16> -> tensor<?x?x80xbf16>
  return %o : tensor<?x?x80xbf16>
}
func.func @d256(%q: tensor<?x?x256xbf16>, %k: tensor<?x?x256xbf16>, %v: tensor<?x?x256xbf16>) -> tensor<?x?x256xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x?x256xbf16>, tensor<?x?x256xbf16>, tensor<?x?x256xbf16> -> tensor<?x?x256xbf16>
  return %o : tensor<?x?x256xbf16>
}
func.func @f32(%q: tensor<?x?x64xf32>, %k: tensor<?x?x64xf32>, %v: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %o = fa.attention %q, %k, %v : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  return %o : tensor<?x?x64xf32>
}
