// Causal TMA wgmma forwards with one query tile per block run their blocks
// longest first (longestFirstBlock in WgmmaFragments.h): launch index
// L = ctaid.x + ctaid.y * nctaid.x; sections of S = max(1, 32 MiB / (Tk x
// (D + Dv) x 2 bytes)) batch entries (S x nctaid.x blocks, the last section
// possibly narrower); within a section the rank of L divided by the
// section's width picks the tile (the longest, nctaid.x - 1, first) and
// the remainder the entry. With the producer warpgroup thread 0 leaves
// (tile, entry) in workgroup memory after the mbarriers (8 more bytes)
// and the consumers read it back for the idle-warpgroup exit and the TMA
// epilogue instead of dividing again or reading %ctaid.y. Once its loads
// are issued it prefetches into L2 the Q tile of the block at launch index
// L + %nsmid, through the same mapping.
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1" | FileCheck %s
// bottom_right orders its blocks the same way.
// RUN: sed -e 's/causal(top_left)/causal(bottom_right)/' %s | fa-opt -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1" | FileCheck %s
// Without the producer warpgroup the order is the same, and nothing is
// stored (nothing reads it back).
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1" | FileCheck %s --check-prefix=PLAIN
// Untouched: two query tiles per block (the causal pairs n - 1 - x and x
// balance the blocks already), cp.async tiles (tma=0), and no mask: the
// query tile is ctaid.x (reversed under causal) and the entry ctaid.y.
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 tiles-per-block=2" | FileCheck %s --check-prefix=GRID
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448" | FileCheck %s --check-prefix=GRID
// RUN: sed -e 's/ causal(top_left)//' %s | fa-opt -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1" | FileCheck %s --check-prefix=GRID

// CHECK-LABEL: module attributes
// The slot after the 13 mbarriers of the 12-warp kernel: 90184 + 8 bytes.
// CHECK-SAME: shared_bytes = 90192
// CHECK-LABEL: gpu.func @d64_attention_0
// Tk (the kernel's, then the order's own read).
// CHECK: memref.dim %arg1, %{{.+}} : memref<?x?x64xbf16
// CHECK: %[[TK:.+]] = memref.dim %arg1, %{{.+}} : memref<?x?x64xbf16
// CHECK: %[[NX:.+]] = llvm.inline_asm {{.*}}"mov.u32 $0, %nctaid.x;"
// CHECK-NEXT: %[[NY:.+]] = llvm.inline_asm {{.*}}"mov.u32 $0, %nctaid.y;"
// CHECK-NEXT: %[[CY:.+]] = llvm.inline_asm {{.*}}"mov.u32 $0, %ctaid.y;"
// CHECK-NEXT: %[[CX:.+]] = llvm.inline_asm {{.*}}"mov.u32 $0, %ctaid.x;"
// CHECK: %[[ROWS:.+]] = arith.minui %[[TK]], %c1073741824 : index
// CHECK: %[[ROWS32:.+]] = arith.index_castui %[[ROWS]] : index to i32
// CHECK: %[[ROWS1:.+]] = arith.maxui %[[ROWS32]], %{{.+}} : i32
// 32 MiB / (64 + 64) x 2 bytes per K/V row.
// CHECK: %[[S0:.+]] = arith.divui %c131072_i32, %[[ROWS1]] : i32
// CHECK-NEXT: %[[S:.+]] = arith.maxui %[[S0]], %c1_i32 : i32
// The section of L = cx + cy x nctaid.x is cy / S; its first entry
// (cy / S) x S; the rank of L in it cx + (cy - first) x nctaid.x (no
// product above the block count: nothing wraps in 32 bits).
// CHECK-NEXT: %[[SEC:.+]] = arith.divui %[[CY]], %[[S]] : i32
// CHECK-NEXT: %[[FIRST:.+]] = arith.muli %[[SEC]], %[[S]] : i32
// CHECK-NEXT: %[[DY:.+]] = arith.subi %[[CY]], %[[FIRST]] : i32
// CHECK-NEXT: %[[DYNX:.+]] = arith.muli %[[DY]], %[[NX]] : i32
// CHECK-NEXT: %[[R:.+]] = arith.addi %[[CX]], %[[DYNX]] : i32
// CHECK-NEXT: %[[LEFT:.+]] = arith.subi %[[NY]], %[[FIRST]] : i32
// CHECK-NEXT: %[[W:.+]] = arith.minui %[[S]], %[[LEFT]] : i32
// CHECK-NEXT: %[[RANK:.+]] = arith.divui %[[R]], %[[W]] : i32
// CHECK-NEXT: %[[RW:.+]] = arith.muli %[[RANK]], %[[W]] : i32
// CHECK-NEXT: %[[E:.+]] = arith.subi %[[R]], %[[RW]] : i32
// CHECK-NEXT: %[[ENTRY:.+]] = arith.addi %[[FIRST]], %[[E]] : i32
// CHECK-NEXT: %{{.+}} = arith.constant 1 : i32
// CHECK-NEXT: %[[LAST:.+]] = arith.subi %[[NX]], %{{.+}} : i32
// CHECK-NEXT: %[[TILE:.+]] = arith.subi %[[LAST]], %[[RANK]] : i32
// CHECK-NOT: gpu.block_id
// CHECK: "fence.mbarrier_init.release.cluster;"
// CHECK: %c90184_i32 = arith.constant 90184 : i32
// CHECK-NEXT: %[[SLOT:.+]] = arith.addi %{{.+}}, %c90184_i32 : i32
// CHECK-NEXT: "st.shared.v2.u32 [$0], {$1, $2};", "r,r,r" %[[SLOT]], %[[TILE]], %[[ENTRY]]
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// The producer, after its loads: the block at launch index L + %nsmid,
// (ctaid.x + %nsmid) mod nctaid.x and ctaid.y + (ctaid.x + %nsmid) /
// nctaid.x, through the same sections; its Q tile prefetched into L2 when
// that block is in the grid and its rows start before Tq.
// CHECK: %[[NX2:.+]] = llvm.inline_asm {{.*}}"mov.u32 $0, %nctaid.x;"
// CHECK-NEXT: %[[NY2:.+]] = llvm.inline_asm {{.*}}"mov.u32 $0, %nctaid.y;"
// CHECK-NEXT: %[[NSM:.+]] = llvm.inline_asm {{.*}}"mov.u32 $0, %nsmid;"
// CHECK-NEXT: %[[CX2:.+]] = llvm.inline_asm {{.*}}"mov.u32 $0, %ctaid.x;"
// CHECK-NEXT: %[[SUM:.+]] = arith.addi %[[CX2]], %[[NSM]] : i32
// CHECK-NEXT: %[[NEXTX:.+]] = arith.remui %[[SUM]], %[[NX2]] : i32
// CHECK-NEXT: %[[CARRY:.+]] = arith.divui %[[SUM]], %[[NX2]] : i32
// CHECK-NEXT: %[[CY2:.+]] = llvm.inline_asm {{.*}}"mov.u32 $0, %ctaid.y;"
// CHECK-NEXT: %[[NEXTY:.+]] = arith.addi %[[CY2]], %[[CARRY]] : i32
// CHECK-NEXT: %[[IN:.+]] = arith.cmpi ult, %[[NEXTY]], %[[NY2]] : i32
// CHECK-NEXT: %[[TQ32:.+]] = arith.index_cast %dim : index to i32
// Past the grid the mapping takes entry 0 (its section width is never 0).
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[CLAMPED:.+]] = arith.select %[[IN]], %[[NEXTY]], %[[Z]] : i32
// CHECK: arith.divui %c131072_i32{{.*}}
// CHECK: %[[SEC2:.+]] = arith.divui %[[CLAMPED]], %{{.+}} : i32
// CHECK: %[[R2:.+]] = arith.addi %[[NEXTX]], %{{.+}} : i32
// CHECK: %[[RANK2:.+]] = arith.divui %[[R2]], %{{.+}} : i32
// CHECK: %[[ENTRY2:.+]] = arith.addi %{{.+}}, %{{.+}} : i32
// CHECK: %[[TILE2:.+]] = arith.subi %{{.+}}, %[[RANK2]] : i32
// CHECK-NEXT: %c192_i32 = arith.constant 192 : i32
// CHECK-NEXT: %[[ROW2:.+]] = arith.muli %[[TILE2]], %c192_i32 : i32
// CHECK-NEXT: %[[BEFORE:.+]] = arith.cmpi ult, %[[ROW2]], %[[TQ32]] : i32
// CHECK-NEXT: %[[VALID:.+]] = arith.andi %[[IN]], %[[BEFORE]] : i1
// CHECK-NEXT: scf.if %[[VALID]] {
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : i32
// CHECK-NEXT: "cp.async.bulk.prefetch.tensor.3d.L2.global.tile [$0, {$1, $2, $3}];", "l,r,r,r" %arg4, %[[C0]], %[[ROW2]], %[[ENTRY2]]
// CHECK-NOT: cp.async.bulk.prefetch.tensor
// CHECK: "setmaxnreg.inc.sync.aligned.u32 160;"
// CHECK-NOT: cp.async.bulk.prefetch.tensor
// CHECK: "ld.shared.v2.u32 {$0, $1}, [$2];"
// CHECK: "{\0A.reg .pred p;\0Asetp.ne.u32 p, $0, 0;\0A@p exit;\0A}"
// CHECK-NOT: %ctaid
// CHECK: "ld.shared.v2.u32 {$0, $1}, [$2];"
// CHECK-NOT: %ctaid
// CHECK: cp.async.bulk.tensor.3d.global.shared::cta.bulk_group
// CHECK-NOT: %ctaid
// CHECK: gpu.return

// PLAIN-LABEL: gpu.func @d64_attention_0
// PLAIN: "mov.u32 $0, %nctaid.y;"
// PLAIN: arith.divui %c131072_i32
// PLAIN-NOT: st.shared.v2.u32
// PLAIN-NOT: ld.shared.v2.u32
// PLAIN-NOT: cp.async.bulk.prefetch.tensor
// PLAIN: gpu.return

// GRID-LABEL: gpu.func @d64_attention_0
// GRID-NOT: arith.divui %c131072_i32
// GRID-NOT: st.shared.v2.u32
// GRID: gpu.block_id y
// GRID-NOT: arith.divui %c131072_i32
// GRID-NOT: st.shared.v2.u32
// GRID: gpu.return
func.func @d64(%q: tensor<?x?x64xbf16>, %k: tensor<?x?x64xbf16>, %v: tensor<?x?x64xbf16>) -> tensor<?x?x64xbf16> {
  %o = fa.attention %q, %k, %v causal(top_left) : tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x64xbf16> -> tensor<?x?x64xbf16>
  return %o : tensor<?x?x64xbf16>
}

// -----

// D 128, f16, with lse: 32 MiB / (128 + 128) x 2 bytes per K/V row.
// CHECK-LABEL: gpu.func @d128_attention_0
// CHECK: arith.divui %c65536_i32
// CHECK: "st.shared.v2.u32 [$0], {$1, $2};"
// CHECK: "mov.u32 $0, %nsmid;"
// CHECK: arith.divui %c65536_i32
// Two 64-column boxes of the 128-column Q tile.
// CHECK-COUNT-2: "cp.async.bulk.prefetch.tensor.3d.L2.global.tile [$0, {$1, $2, $3}];"
// CHECK-NOT: cp.async.bulk.prefetch.tensor
// CHECK: gpu.return
// PLAIN-LABEL: gpu.func @d128_attention_0
// PLAIN: arith.divui %c65536_i32
// PLAIN-NOT: st.shared.v2.u32
// PLAIN: gpu.return
// GRID-LABEL: gpu.func @d128_attention_0
// GRID-NOT: arith.divui %c65536_i32
// GRID-NOT: st.shared.v2.u32
// GRID: gpu.return
func.func @d128(%q: tensor<?x?x128xf16>, %k: tensor<?x?x128xf16>, %v: tensor<?x?x128xf16>) -> (tensor<?x?x128xf16>, tensor<?x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(top_left) : tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?x128xf16> -> tensor<?x?x128xf16>, tensor<?x?xf32>
  return %o, %lse : tensor<?x?x128xf16>, tensor<?x?xf32>
}
