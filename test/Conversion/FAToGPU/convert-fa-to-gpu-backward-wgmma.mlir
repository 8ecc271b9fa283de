// The sm_90a warpgroup-MMA backward kernels (convert-fa-to-gpu wgmma=1):
// the vectorized _delta, _dkdv (own keys, loop over query tiles) and _dq
// (own queries, loop over key tiles).
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448" | FileCheck %s
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448" | fa-opt | FileCheck %s
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1" | FileCheck %s --check-prefix=MMA
// stages=2: two stages of loop tiles in both kernels (defaults: three).
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 stages=2" | FileCheck %s --check-prefix=STAGES2
// STAGES2: kernel = "bf16_d64_attention_backward_0_dkdv", {{.+}}, shared_bytes = 69632 : i64
// STAGES2: kernel = "bf16_d64_attention_backward_0_dq", {{.+}}, shared_bytes = 101376 : i64

// bf16, D = 64, causal. Defaults: 8 warps (two warpgroups of 64 own rows);
// _dkdv query tiles of 64 (block_m), _dq key tiles of 128 (block_n), three
// stages each; _delta 8 lanes per row, 16 rows per block.
// CHECK-LABEL: module attributes
// CHECK-SAME: block_m = 16 : i64, grid = ["ceil_div(seqlen_q,block_m)", "batch", "1"], kernel = "bf16_d64_attention_backward_0_delta"
// CHECK-SAME: {block_m = 64 : i64, block_n = 128 : i64, grid = ["ceil_div(seqlen_k,block_n)", "batch", "1"], kernel = "bf16_d64_attention_backward_0_dkdv", params = ["q", "k", "v", "do", "lse", "delta", "dk", "dv"], shared_bytes = 87552 : i64, threads = 256 : i64}
// CHECK-SAME: {block_m = 128 : i64, block_n = 128 : i64, grid = ["ceil_div(seqlen_q,block_m)", "batch", "1"], kernel = "bf16_d64_attention_backward_0_dq", params = ["q", "k", "v", "do", "lse", "delta", "dq"], shared_bytes = 135168 : i64, threads = 256 : i64}
// CHECK-SAME: row_align = 16

// _delta: one 16-byte load of o and do per lane, then an xor-shuffle sum
// over the 8 lanes of a row.
// CHECK: gpu.func @bf16_d64_attention_backward_0_delta(%{{.+}}: memref<4x?x64xbf16, strided<[?, ?, 1], offset: ?>>
// CHECK: vector.load %arg0{{.+}} {alignment = 16 : i64} : {{.+}} vector<8xbf16>
// CHECK: vector.load %arg1{{.+}} {alignment = 16 : i64} : {{.+}} vector<8xbf16>
// CHECK: vector.reduction <add>
// CHECK: gpu.shuffle  xor %{{.+}}, %c4_i32
// CHECK: gpu.shuffle  xor %{{.+}}, %c2_i32
// CHECK: gpu.shuffle  xor %{{.+}}, %c1_i32
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.return

// _dkdv: the tiles and the lse/delta of the query tiles (3 stages x
// [lse | delta] x 64 f32) in dynamic workgroup memory.
// CHECK: gpu.func @bf16_d64_attention_backward_0_dkdv(
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK: memref.view %{{.+}} to memref<43776xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.view %{{.+}}[%c86016][] : {{.+}} to memref<384xf32, #gpu.address_space<workgroup>>
// Own K and V, then Q_i and dO_i of the three stages (cp.async, one group
// each), the column values of each stage stored by plain loads.
// CHECK: nvgpu.device_async_copy %arg1
// CHECK: nvgpu.device_async_copy %arg2
// CHECK: nvgpu.device_async_copy %arg0
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvgpu.device_async_copy %arg3
// CHECK: nvvm.cp.async.commit.group
// CHECK: memref.load %arg4
// CHECK: memref.load %arg5
// CHECK: memref.store %{{.+}}, %view_{{[0-9]+}}
// Prologue: S^T = K Q_0^T and dP^T = V dO_0^T (D / 16 = 4 wgmma
// m64n64k16 each, both operands from workgroup memory), P^T once S^T is
// done, dV += P^T dO_0 (P^T from registers, dO N-major), dS^T once dP^T is
// done. S^T starts from -lse / scale of its query columns (scale 1/8: lse x
// -8, -inf where lse is -inf), fragment value i at column 8 (i / 4) + 2t +
// i % 2 (values 0 and 2 the same column), tied through the fence, so every
// step has scale-d 1; the prologue's dP^T starts from zero.
// CHECK: nvvm.cp.async.wait.group 4
// CHECK-NEXT: "fence.proxy.async.shared::cta;"
// CHECK-NEXT: gpu.barrier
// CHECK: %[[LSE0:.+]] = memref.load %view_{{[0-9]+}}
// CHECK-NEXT: %[[M8:.+]] = arith.constant -8.000000e+00 : f32
// CHECK-NEXT: %[[SCALED0:.+]] = arith.mulf %[[LSE0]], %[[M8]] : f32
// CHECK-NEXT: %[[NINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: %[[NINF2:.+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: %[[ISNINF0:.+]] = arith.cmpf oeq, %[[LSE0]], %[[NINF2]] : f32
// CHECK-NEXT: %[[INIT0:.+]] = arith.select %[[ISNINF0]], %[[NINF]], %[[SCALED0]] : f32
// CHECK: %[[LSE1:.+]] = memref.load %view_{{[0-9]+}}
// CHECK-NEXT: arith.constant -8.000000e+00 : f32
// CHECK: %[[INIT1:.+]] = arith.select %{{.+}}, %{{.+}}, %{{.+}} : f32
// Column 8 (n8 block 1): the lse half of the stage at offset 8.
// CHECK: %[[C8:.+]] = arith.constant 8 : index
// CHECK-NEXT: %[[LA8:.+]] = arith.addi
// CHECK-NEXT: %[[LI8:.+]] = arith.addi %[[LA8]], %[[C8]] : index
// CHECK-NEXT: memref.load %view_{{[0-9]+}}[%[[LI8]]]
// CHECK: %[[INIT8:.+]] = arith.select %{{.+}}, %{{.+}}, %{{.+}} : f32
// CHECK: "wgmma.fence.sync.aligned;", "=f,{{.+}},0,1,2,{{.+}}" %[[INIT0]], %[[INIT1]], %[[INIT0]], %[[INIT1]], %[[INIT8]], %{{.+}}, %[[INIT8]], %{{.+}},
// CHECK-COUNT-4: setp.ne.b32 p, 1, 0;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, $32, $33, p, 1, 1, 0, 0;
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK: "wgmma.fence.sync.aligned;", ""
// CHECK-NOT: wgmma.mma_async
// CHECK: setp.ne.b32 p, 0, 0;\0Awgmma.mma_async.sync.aligned.m64n64k16
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK-NEXT: "wgmma.wait_group.sync.aligned 1;"
// CHECK: llvm.nvvm.ex2.approx.ftz.f
// CHECK: "wgmma.fence.sync.aligned;", "=f,
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, {$32, $33, $34, $35}, $36, p, 1, 1, 1;
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK-NEXT: "wgmma.wait_group.sync.aligned 1;"
// CHECK: "wgmma.wait_group.sync.aligned 0;"
// Steady state: tile i landed (two newer groups may be in flight), dO_{i+2}
// into the stage dO_{i-1} used; S^T_i, then dK += dS^T_{i-1} Q_{i-1}, then
// dP^T_i; P^T after S^T_i (two groups pending), dV after it, dS^T after
// dP^T_i (one pending), all done before Q_{i+2} replaces Q_{i-1}. S^T_i
// starts from -lse / scale and dP^T_i from -delta (its columns' delta
// negated), both tied through their fences: P^T = exp2(c S^T) and dS^T =
// P^T dP^T read no column value and subtract nothing.
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 2
// CHECK: gpu.barrier
// CHECK: nvgpu.device_async_copy %arg3
// CHECK: arith.constant -8.000000e+00 : f32
// CHECK: "wgmma.fence.sync.aligned;", "=f,
// CHECK-COUNT-4: setp.ne.b32 p, 1, 0;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, $32, $33, p, 1, 1, 0, 0;
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, {$32, $33, $34, $35}, $36, p, 1, 1, 1;
// CHECK: "wgmma.commit_group.sync.aligned;"
// The delta half of the stage: offset 64 (the tile) + the column.
// CHECK: %[[C64:.+]] = arith.constant 64 : index
// CHECK-NEXT: %[[DA0:.+]] = arith.addi
// CHECK-NEXT: %[[DI0:.+]] = arith.addi %[[DA0]], %[[C64]] : index
// CHECK-NEXT: %[[DELTA0:.+]] = memref.load %view_{{[0-9]+}}[%[[DI0]]]
// CHECK-NEXT: %[[NDELTA0:.+]] = arith.negf %[[DELTA0]] : f32
// CHECK: %[[DELTA1:.+]] = memref.load %view_{{[0-9]+}}
// CHECK-NEXT: %[[NDELTA1:.+]] = arith.negf %[[DELTA1]] : f32
// CHECK: "wgmma.fence.sync.aligned;", "=f,{{.+}}" %[[NDELTA0]], %[[NDELTA1]], %[[NDELTA0]], %[[NDELTA1]],
// CHECK-COUNT-4: setp.ne.b32 p, 1, 0;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, $32, $33, p, 1, 1, 0, 0;
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK-NEXT: "wgmma.wait_group.sync.aligned 2;"
// CHECK-NOT: memref.load %view_
// CHECK-NOT: arith.subf
// CHECK: llvm.nvvm.ex2.approx.ftz.f
// CHECK: {$32, $33, $34, $35}, $36, p, 1, 1, 1;
// CHECK: "wgmma.wait_group.sync.aligned 1;"
// CHECK-NOT: memref.load %view_
// CHECK-NOT: arith.subf
// CHECK: "wgmma.wait_group.sync.aligned 0;"
// CHECK: gpu.barrier
// CHECK: nvgpu.device_async_copy %arg0
// CHECK: memref.store
// CHECK: scf.yield
// The last tile's dK product, then dk = scale dK and dv.
// CHECK: {$32, $33, $34, $35}, $36, p, 1, 1, 1;
// CHECK: "wgmma.wait_group.sync.aligned 0;"
// CHECK: nvvm.cp.async.wait.group 0
// CHECK: vector.store %{{.+}}, %arg6
// CHECK: vector.store %{{.+}}, %arg7
// CHECK: gpu.return

// _dq: own Q and dO, K_j and V_j tiles of 128 keys; S and dP are
// m64n128k16, dQ += dS K_j (dS from registers, K_j N-major) m64n64k16 over
// 128 / 16 = 8 k16 steps. Steady state: S_j, dP_j, then dQ of tile j - 1.
// CHECK: gpu.func @bf16_d64_attention_backward_0_dq(
// CHECK: memref.view %{{.+}} to memref<67584xbf16, #gpu.address_space<workgroup>>
// CHECK-NOT: memref<384xf32
// Causal: the last query blocks first.
// CHECK: gpu.grid_dim x
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 2
// CHECK: nvgpu.device_async_copy %arg2
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, $64, $65, p, 1, 1, 0, 0;
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, $64, $65, p, 1, 1, 0, 0;
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, {$32, $33, $34, $35}, $36, p, 1, 1, 1;
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK-NEXT: "wgmma.wait_group.sync.aligned 2;"
// CHECK: llvm.nvvm.ex2.approx.ftz.f
// CHECK: "wgmma.wait_group.sync.aligned 1;"
// CHECK: "wgmma.wait_group.sync.aligned 0;"
// CHECK: gpu.barrier
// CHECK: nvgpu.device_async_copy %arg1
// CHECK: scf.yield
// CHECK: vector.store %{{.+}}, %arg6
// CHECK: gpu.return

// Without wgmma the mma.sync kernels (with the same vectorized _delta).
// MMA-LABEL: module attributes
// MMA: vector.reduction <add>
// MMA: nvgpu.mma.sync
// MMA-NOT: wgmma
func.func @bf16_d64(%q: tensor<4x?x64xbf16>, %k: tensor<4x?x64xbf16>, %v: tensor<4x?x64xbf16>, %o: tensor<4x?x64xbf16>, %do: tensor<4x?x64xbf16>, %lse: tensor<4x?xf32>) -> (tensor<4x?x64xbf16>, tensor<4x?x64xbf16>, tensor<4x?x64xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(top_left) : tensor<4x?x64xbf16>, tensor<4x?x64xbf16>, tensor<4x?x64xbf16>, tensor<4x?x64xbf16>, tensor<4x?x64xbf16>, tensor<4x?xf32> -> tensor<4x?x64xbf16>, tensor<4x?x64xbf16>, tensor<4x?x64xbf16>
  return %dq, %dk, %dv : tensor<4x?x64xbf16>, tensor<4x?x64xbf16>, tensor<4x?x64xbf16>
}

// -----

// f16, D = 128, f32 gradients: _dkdv query tiles of 32 (64 would not fit
// the registers), _dq key tiles of 64; dk/dv/dq stored as f32. The o of
// f32 is read 8 floats per lane.
// CHECK-LABEL: module attributes
// CHECK-SAME: block_m = 8 : i64, grid = ["ceil_div(seqlen_q,block_m)", "batch", "1"]
// CHECK-SAME: {block_m = 32 : i64, block_n = 128 : i64, {{.+}}, shared_bytes = 123648 : i64, threads = 256 : i64}
// CHECK-SAME: {block_m = 128 : i64, block_n = 64 : i64, {{.+}}, shared_bytes = 172032 : i64, threads = 256 : i64}
// CHECK: vector.load %arg0{{.+}} vector<8xf32>
// CHECK: vector.load %arg1{{.+}} vector<8xf16>
// CHECK: gpu.func @f16_d128_attention_backward_0_dkdv(
// CHECK: wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {{.*}}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;
// CHECK: vector.store %{{.+}}, %arg6[{{.+}} vector<2xf32>
// CHECK: gpu.func @f16_d128_attention_backward_0_dq(
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {{.*}}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;
func.func @f16_d128(%q: tensor<?x?x128xf16>, %k: tensor<?x?x128xf16>, %v: tensor<?x?x128xf16>, %o: tensor<?x?x128xf32>, %do: tensor<?x?x128xf16>, %lse: tensor<?x?xf32>) -> (tensor<?x?x128xf32>, tensor<?x?x128xf32>, tensor<?x?x128xf32>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?x128xf32>, tensor<?x?x128xf16>, tensor<?x?xf32> -> tensor<?x?x128xf32>, tensor<?x?x128xf32>, tensor<?x?x128xf32>
  return %dq, %dk, %dv : tensor<?x?x128xf32>, tensor<?x?x128xf32>, tensor<?x?x128xf32>
}

// -----

// bf16, D = 64, Dv = 128: _dkdv query tiles of 32; _dq key tiles of 64
// (128 would take 240 registers per thread with the Dv / 16 k-steps of
// dO V^T, and spilled). D = 32 with Dv = 128 has no default _dkdv tile
// (64 needs 240 registers, 32 does not split over 8 warps) and, with no
// tile or warp option given, falls back to the mma.sync backward.
// CHECK-LABEL: module attributes
// CHECK-SAME: {block_m = 32 : i64, block_n = 128 : i64, {{.+}}, kernel = "d64_dv128_attention_backward_0_dkdv"
// CHECK-SAME: {block_m = 128 : i64, block_n = 64 : i64, {{.+}}, kernel = "d64_dv128_attention_backward_0_dq"
// CHECK: gpu.func @d64_dv128_attention_backward_0_dkdv(
// CHECK: wgmma.mma_async
// CHECK: gpu.func @d32_dv128_attention_backward_0_dkdv(
// CHECK-NOT: wgmma
// CHECK: nvgpu.mma.sync
// CHECK-NOT: wgmma
// CHECK: gpu.func @d32_dv128_attention_backward_0_dq(
// CHECK-NOT: wgmma
// CHECK: gpu.return
func.func @d64_dv128(%q: tensor<?x?x64xbf16>, %k: tensor<?x?x64xbf16>, %v: tensor<?x?x128xbf16>, %o: tensor<?x?x128xbf16>, %do: tensor<?x?x128xbf16>, %lse: tensor<?x?xf32>) -> (tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x128xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?xf32> -> tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x128xbf16>
  return %dq, %dk, %dv : tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x128xbf16>
}
func.func @d32_dv128(%q: tensor<?x?x32xbf16>, %k: tensor<?x?x32xbf16>, %v: tensor<?x?x128xbf16>, %o: tensor<?x?x128xbf16>, %do: tensor<?x?x128xbf16>, %lse: tensor<?x?xf32>) -> (tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x128xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?xf32> -> tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x128xbf16>
  return %dq, %dk, %dv : tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x128xbf16>
}

// -----

// Negative cases: head dim 96 keeps the mma.sync backward, f32 the scalar
// one (with the scalar _delta).
// CHECK-LABEL: module attributes
// CHECK: gpu.func @d96_attention_backward_0_dkdv
// CHECK-NOT: wgmma
// CHECK: nvgpu.mma.sync
// CHECK-NOT: wgmma
// CHECK: gpu.func @f32_attention_backward_0_delta
// CHECK-NOT: vector.reduction
// CHECK-NOT: nvgpu.
// CHECK-NOT: wgmma
// CHECK: gpu.return
func.func @d96(%q: tensor<?x?x96xbf16>, %k: tensor<?x?x96xbf16>, %v: tensor<?x?x96xbf16>, %o: tensor<?x?x96xbf16>, %do: tensor<?x?x96xbf16>, %lse: tensor<?x?xf32>) -> (tensor<?x?x96xbf16>, tensor<?x?x96xbf16>, tensor<?x?x96xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<?x?x96xbf16>, tensor<?x?x96xbf16>, tensor<?x?x96xbf16>, tensor<?x?x96xbf16>, tensor<?x?x96xbf16>, tensor<?x?xf32> -> tensor<?x?x96xbf16>, tensor<?x?x96xbf16>, tensor<?x?x96xbf16>
  return %dq, %dk, %dv : tensor<?x?x96xbf16>, tensor<?x?x96xbf16>, tensor<?x?x96xbf16>
}
func.func @f32(%q: tensor<?x?x64xf32>, %k: tensor<?x?x64xf32>, %v: tensor<?x?x64xf32>, %o: tensor<?x?x64xf32>, %do: tensor<?x?x64xf32>, %lse: tensor<?x?xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?xf32> -> tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
  return %dq, %dk, %dv : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
}
