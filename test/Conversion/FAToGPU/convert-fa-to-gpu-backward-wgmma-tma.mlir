// The sm_90a wgmma backward with TMA loads (convert-fa-to-gpu tma=1): the
// _dkdv and _dq kernels take the tensor maps of q, k, v and do after their
// memrefs; thread 0 loads the block's own tiles and each loop tile into
// 128-byte-swizzled workgroup memory, completing on mbarriers; the wgmma
// descriptors read them in 128-byte swizzle mode; no per-thread cp.async.
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1" | FileCheck %s
// Under causal _dkdv prefetches nothing for the next block (its blocks
// differ in length and end out of order).
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1" | FileCheck %s --check-prefix=NOPREFETCH
// NOPREFETCH: gpu.func @bwd_d64_attention_backward_0_dkdv(
// NOPREFETCH-NOT: cp.async.bulk.prefetch.tensor
// NOPREFETCH: gpu.func @bwd_d64_attention_backward_0_dq(
// With dq atomics each tile's dK += dS^T Q_i comes from its dS^T registers,
// so Q_i's stage is free at the tile's end: the loop issues both halves of
// tile i + 2 (Q, then dO) at its top and loads nothing after its block
// barrier.
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 dq-atomics=1" | FileCheck %s --check-prefix=ATOM
// ATOM: gpu.func @bwd_d64_attention_backward_0_dkdv(
// ATOM-SAME: %[[QMAP:arg9]]: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %[[DOMAP:arg12]]: !llvm.ptr, %{{.+}}: !llvm.ptr)
// ATOM: scf.for
// ATOM-NOT: gpu.barrier
// ATOM: "cp.async.bulk.tensor.3d{{.*}}" %{{.+}}, %[[QMAP]],
// ATOM-NOT: gpu.barrier
// ATOM: "cp.async.bulk.tensor.3d{{.*}}" %{{.+}}, %[[DOMAP]],
// ATOM-NOT: gpu.barrier
// ATOM: mbarrier.try_wait.parity
// ATOM: mbarrier.try_wait.parity
// Without the producer warpgroup each warp fences its staged dQ and adds it
// at once, before the tile's dS^T stores.
// ATOM: st.shared.v2.f32
// ATOM-NEXT: "fence.proxy.async.shared::cta;\0Abar.warp.sync -1;"
// ATOM: cp.reduce.async.bulk.tensor
// ATOM: "st.shared.b32 [$0], $1;"
// ATOM-NOT: cp.reduce.async.bulk.tensor
// ATOM: gpu.barrier
// ATOM-NOT: cp.async.bulk.tensor.3d.shared
// ATOM: scf.yield
// ATOM: gpu.return
// Without tma the same op keeps cp.async (the default of the pass).
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448" | FileCheck %s --check-prefix=CPASYNC
// CPASYNC-NOT: tensor_map
// CPASYNC: nvgpu.device_async_copy
// CPASYNC-NOT: cp.async.bulk.tensor
// CPASYNC-NOT: mbarrier

// Causal bf16, D = 64, static shapes (Tq 200, Tk 300). _dkdv: own K and V
// (128 x 64 each, 16384 B), three stages of Q and dO tiles (64 x 64, 8192
// B), the lse/delta columns (3 x 2 x 64 f32), then 8 mbarriers (own first,
// own second, 3 + 3 stages): 83520 bytes. _dq: own Q and dO, 128-key
// K and V tiles.
// CHECK-LABEL: module attributes
// CHECK-SAME: kernel = "bwd_d64_attention_backward_0_dkdv"
// CHECK-SAME: params = ["q", "k", "v", "do", "lse", "delta", "dk", "dv"]
// CHECK-SAME: shared_bytes = 83520 : i64
// CHECK-SAME: tensor_map = ["q 64 64 128", "k 64 128 128", "v 64 128 128", "do 64 64 128"]
// CHECK-SAME: kernel = "bwd_d64_attention_backward_0_dq"
// CHECK-SAME: tensor_map = ["q 64 128 128", "k 64 128 128", "v 64 128 128", "do 64 128 128"]
// The delta kernel takes no maps.
// CHECK: gpu.func @bwd_d64_attention_backward_0_delta(
// CHECK-NOT: !llvm.ptr
// CHECK-SAME: known_block_size
// CHECK: gpu.func @bwd_d64_attention_backward_0_dkdv(
// CHECK-SAME: %[[QMAP:arg8]]: !llvm.ptr, %[[KMAP:arg9]]: !llvm.ptr, %[[VMAP:arg10]]: !llvm.ptr, %[[DOMAP:arg11]]: !llvm.ptr)
// CHECK-SAME: fa.tensor_map_params = 4 : i64
// CHECK-NOT: nvgpu.device_async_copy
// Own K/V (A, K-major) and the loop tiles' first use (B, K-major): 128-byte
// swizzle (mode 1), stride byte offset 1024, leading 16: 1 << 62 | 64 <<
// 32 | 1 << 16. Loop tiles N-major (dV += P^T dO_i, dK += dS^T Q_i):
// leading byte offset 8192 (64 rows x 128 bytes): 1 << 62 | 64 << 32 | 512
// << 16.
// CHECK: arith.constant 4611686293305360384 : i64
// CHECK: arith.constant 4611686293338849280 : i64
// CHECK: scf.if
// CHECK: "prefetch.tensormap [$0];", "l" %[[QMAP]]
// CHECK: "prefetch.tensormap [$0];", "l" %[[DOMAP]]
// CHECK-COUNT-8: "mbarrier.init.shared::cta.b64 [$0], 1;"
// CHECK-NOT: mbarrier.init
// CHECK: "fence.mbarrier_init.release.cluster;"
// CHECK: gpu.barrier
// Own tiles: K then V, 128 rows x 64 columns = 16384 bytes each.
// CHECK: scf.if
// CHECK: "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r" %{{.+}}, %c16384_i32
// CHECK: "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$1, {$2, $3, $4}], [$5];", "r,l,r,r,r,r" %{{.+}}, %[[KMAP]], %c0_i32
// CHECK: "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r" %{{.+}}, %c16384_i32
// CHECK: "cp.async.bulk.tensor.3d{{.*}}" %{{.+}}, %[[VMAP]], %c0_i32
// Three stages of Q_i and dO_i (8192 bytes each) before the loop.
// CHECK: %c8192_i32
// CHECK: "cp.async.bulk.tensor.3d{{.*}}" %{{.+}}, %[[QMAP]],
// CHECK: "cp.async.bulk.tensor.3d{{.*}}" %{{.+}}, %[[DOMAP]],
// CHECK: "cp.async.bulk.tensor.3d{{.*}}" %{{.+}}, %[[QMAP]],
// CHECK: "cp.async.bulk.tensor.3d{{.*}}" %{{.+}}, %[[DOMAP]],
// CHECK: "cp.async.bulk.tensor.3d{{.*}}" %{{.+}}, %[[QMAP]],
// CHECK: "cp.async.bulk.tensor.3d{{.*}}" %{{.+}}, %[[DOMAP]],
// Prologue: a block barrier (the column values), then the waits for the
// own tiles (parity 0) and both halves of the first tile; S^T first.
// CHECK: gpu.barrier
// CHECK-COUNT-4: mbarrier.try_wait.parity
// CHECK-NOT: fence.proxy.async
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16
// Loop: dO_{i+2} issued at once, then the waits for tile i; one block
// barrier before Q_{i+2} (none at the top).
// CHECK: scf.for
// CHECK-NOT: gpu.barrier
// CHECK: "cp.async.bulk.tensor.3d{{.*}}" %{{.+}}, %[[DOMAP]],
// CHECK-NOT: gpu.barrier
// CHECK: mbarrier.try_wait.parity
// CHECK: mbarrier.try_wait.parity
// CHECK-NOT: gpu.barrier
// S^T starts from the column terms: the tile's first wgmma (both operands
// from workgroup memory) has scale-d 1 after a fence with tied operands.
// CHECK-NOT: wgmma.mma_async
// CHECK: "wgmma.fence.sync.aligned;", "=f,
// CHECK-NOT: wgmma.mma_async
// CHECK: setp.ne.b32 p, 1, 0;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.{{[a-z0-9]+}}.{{[a-z0-9]+}} {{.*}}, $32, $33, p, 1, 1, 0, 0;
// CHECK: gpu.barrier
// CHECK: "cp.async.bulk.tensor.3d{{.*}}" %{{.+}}, %[[QMAP]],
// CHECK: scf.yield
// No cp.async wait anywhere.
// CHECK-NOT: nvvm.cp.async.wait.group
// CHECK: gpu.return
// _dq: own Q and dO, loop K and V (tile 128: N-major leading byte offset
// 16384, 1 << 62 | 64 << 32 | 1024 << 16).
// CHECK: gpu.func @bwd_d64_attention_backward_0_dq(
// CHECK-SAME: %[[DQQ:arg7]]: !llvm.ptr, %[[DQK:arg8]]: !llvm.ptr, %[[DQV:arg9]]: !llvm.ptr, %[[DQDO:arg10]]: !llvm.ptr)
// CHECK-SAME: fa.tensor_map_params = 4 : i64
// CHECK: arith.constant 4611686293372403712 : i64
// CHECK-COUNT-8: mbarrier.init.shared::cta.b64
// CHECK: "cp.async.bulk.tensor.3d{{.*}}" %{{.+}}, %[[DQQ]], %c0_i32
// CHECK: "cp.async.bulk.tensor.3d{{.*}}" %{{.+}}, %[[DQDO]], %c0_i32
// CHECK: %c16384_i32
// CHECK: "cp.async.bulk.tensor.3d{{.*}}" %{{.+}}, %[[DQK]],
// CHECK: "cp.async.bulk.tensor.3d{{.*}}" %{{.+}}, %[[DQV]],
// CHECK-NOT: nvvm.cp.async.wait.group
// CHECK: gpu.return
func.func @bwd_d64(%q: tensor<2x200x64xbf16>, %k: tensor<2x300x64xbf16>, %v: tensor<2x300x64xbf16>, %o: tensor<2x200x64xbf16>, %do: tensor<2x200x64xbf16>, %lse: tensor<2x200xf32>) -> (tensor<2x200x64xbf16>, tensor<2x300x64xbf16>, tensor<2x300x64xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(top_left) : tensor<2x200x64xbf16>, tensor<2x300x64xbf16>, tensor<2x300x64xbf16>, tensor<2x200x64xbf16>, tensor<2x200x64xbf16>, tensor<2x200xf32> -> tensor<2x200x64xbf16>, tensor<2x300x64xbf16>, tensor<2x300x64xbf16>
  return %dq, %dk, %dv : tensor<2x200x64xbf16>, tensor<2x300x64xbf16>, tensor<2x300x64xbf16>
}

// -----

// D = 32 (64-byte swizzle: 32-column boxes, mode 2) with Dv = 64 (128-byte
// swizzle), dynamic shapes: each operand's box and swizzle follows its own
// head dim. K-major reads of K and Q: 64-byte swizzle (mode 2), stride
// byte offset 512 (8 rows x 64 bytes), leading 16: 2 << 62 | 32 << 32 | 1
// << 16; of V and dO as in D 64. N-major: Q with leading byte offset 4096
// (64 rows x 64 bytes): 2 << 62 | 32 << 32 | 256 << 16; dO as in D 64.
// CHECK-LABEL: module attributes
// CHECK-SAME: tensor_map = ["q 32 64 64", "k 32 128 64", "v 64 128 128", "do 64 64 128"]
// CHECK-SAME: tensor_map = ["q 32 128 64", "k 32 128 64", "v 64 128 128", "do 64 128 128"]
// CHECK: gpu.func @bwd_d32_dv64_attention_backward_0_dkdv(
// CHECK: arith.constant -9223371899415756800 : i64
// CHECK: arith.constant 4611686293305360384 : i64
// CHECK: arith.constant -9223371899399045120 : i64
// CHECK: arith.constant 4611686293338849280 : i64
// Without a mask: when tile `count - 1`'s loads are issued, the block at
// launch index + %nsmid ((ctaid.x + %nsmid) mod nctaid.x, ctaid.y +
// (ctaid.x + %nsmid) / nctaid.x) has its own K rows (k's map, %arg9) and
// V rows (v's map, %arg10) prefetched into L2, when it is in the grid.
// CHECK: "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$1, {$2, $3, $4}], [$5];", "r,l,r,r,r,r" %{{.+}}, %arg11,
// CHECK-NEXT: %[[LAST:.+]] = arith.subi %{{.+}}, %c1 : index
// CHECK-NEXT: %[[ISLAST:.+]] = arith.cmpi eq, %{{.+}}, %[[LAST]] : index
// CHECK-NEXT: scf.if %[[ISLAST]] {
// CHECK-NEXT: %[[NX:.+]] = llvm.inline_asm {{.*}}"mov.u32 $0, %nctaid.x;"
// CHECK-NEXT: %[[NY:.+]] = llvm.inline_asm {{.*}}"mov.u32 $0, %nctaid.y;"
// CHECK-NEXT: %[[NSM:.+]] = llvm.inline_asm {{.*}}"mov.u32 $0, %nsmid;"
// CHECK-NEXT: %[[CX:.+]] = llvm.inline_asm {{.*}}"mov.u32 $0, %ctaid.x;"
// CHECK-NEXT: %[[SUM:.+]] = arith.addi %[[CX]], %[[NSM]] : i32
// CHECK-NEXT: %[[NEXTX:.+]] = arith.remui %[[SUM]], %[[NX]] : i32
// CHECK-NEXT: %[[CARRY:.+]] = arith.divui %[[SUM]], %[[NX]] : i32
// CHECK-NEXT: %[[CY:.+]] = llvm.inline_asm {{.*}}"mov.u32 $0, %ctaid.y;"
// CHECK-NEXT: %[[NEXTY:.+]] = arith.addi %[[CY]], %[[CARRY]] : i32
// CHECK-NEXT: %[[IN:.+]] = arith.cmpi ult, %[[NEXTY]], %[[NY]] : i32
// CHECK-NEXT: %c128_i32 = arith.constant 128 : i32
// CHECK-NEXT: %[[ROW:.+]] = arith.muli %[[NEXTX]], %c128_i32 : i32
// CHECK-NEXT: scf.if %[[IN]] {
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : i32
// CHECK-NEXT: "cp.async.bulk.prefetch.tensor.3d.L2.global.tile [$0, {$1, $2, $3}];", "l,r,r,r" %arg9, %[[C0]], %[[ROW]], %[[NEXTY]]
// CHECK-NEXT: %[[C0V:.+]] = arith.constant 0 : i32
// CHECK-NEXT: "cp.async.bulk.prefetch.tensor.3d.L2.global.tile [$0, {$1, $2, $3}];", "l,r,r,r" %arg10, %[[C0V]], %[[ROW]], %[[NEXTY]]
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK: gpu.func @bwd_d32_dv64_attention_backward_0_dq(
// CHECK-NOT: cp.async.bulk.prefetch.tensor
// CHECK: gpu.return
func.func @bwd_d32_dv64(%q: tensor<?x?x32xf16>, %k: tensor<?x?x32xf16>, %v: tensor<?x?x64xf16>, %o: tensor<?x?x64xf16>, %do: tensor<?x?x64xf16>, %lse: tensor<?x?xf32>) -> (tensor<?x?x32xf16>, tensor<?x?x32xf16>, tensor<?x?x64xf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse : tensor<?x?x32xf16>, tensor<?x?x32xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?xf32> -> tensor<?x?x32xf16>, tensor<?x?x32xf16>, tensor<?x?x64xf16>
  return %dq, %dk, %dv : tensor<?x?x32xf16>, tensor<?x?x32xf16>, tensor<?x?x64xf16>
}
