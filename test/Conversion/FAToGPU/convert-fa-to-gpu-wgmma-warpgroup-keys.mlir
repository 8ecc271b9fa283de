// Under causal, the one-tile TMA wgmma forward with the producer warpgroup
// and without pingpong runs, in each consumer warpgroup, only the key
// blocks its own 64 query rows see (at least one when the block visits any),
// and starts its masked key loop at the diagonal of its own first row.
// The producer still loads the block's key blocks (the block's count).
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1" | FileCheck %s
// bottom_right: the same, its offset Tk - Tq added to the row ends.
// RUN: sed -e 's/causal(top_left)/causal(bottom_right)/' %s | fa-opt -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1" | FileCheck %s --check-prefix=BR
// The bound: a warpgroup may skip fewer than `stages` key blocks (the
// skipped blocks' stages and its last V stage are not released, and the
// producer waits for the V releases of block jb - stages). 192 rows in
// 64-key blocks skip up to 2: on with 3 stages, off with 2.
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 num-warps=12 block-n=64 stages=3" | FileCheck %s --check-prefix=BN64
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 num-warps=12 block-n=64 stages=2" | FileCheck %s --check-prefix=OFF
// Untouched (every warpgroup runs the block's key blocks): pingpong (the
// warpgroups take turns), two query tiles per block, the persistent kernel,
// no producer warpgroup, and no mask.
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 pingpong=1" | FileCheck %s --check-prefix=BLOCK
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 tiles-per-block=2" | FileCheck %s --check-prefix=BLOCK
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 persistent=true" | FileCheck %s --check-prefix=PERS
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1" | FileCheck %s --check-prefix=BLOCK
// RUN: sed -e 's/ causal(top_left)//' %s | fa-opt -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1" | FileCheck %s --check-prefix=BLOCK

// CHECK-LABEL: gpu.func @d64_attention_0
// The block's 192 rows from i0 and its key blocks of 128.
// CHECK: %[[I0:.+]] = arith.muli %{{.+}}, %c192 : index
// CHECK: %[[N:.+]] = arith.ceildivsi %{{.+}}, %c128 : index
// The producer's loop runs to the block's count.
// CHECK: "setmaxnreg.dec.sync.aligned.u32 24;"
// CHECK: scf.for %{{.+}} = %{{.+}} to %[[N]] step
// The consumers: warpgroup w's rows [i0 + 64 w, i0 + 64 w + 64), cut at Tq.
// CHECK: "setmaxnreg.inc.sync.aligned.u32 160;"
// CHECK: @p exit;
// The warpgroup index, %tid.x / 128, through shfl.sync from lane 0 (a
// warp-uniform value for ptxas).
// CHECK: %[[TID:.+]] = llvm.inline_asm {{.*}}"mov.u32 $0, %tid.x;"
// CHECK-NEXT: %[[WGI:.+]] = arith.shrui %[[TID]], %c7_i32 : i32
// CHECK-NEXT: %[[WGU:.+]] = llvm.inline_asm {{.*}}"shfl.sync.idx.b32 $0, $1, 0, 31, -1;", "=r,r" %[[WGI]]
// CHECK: %[[WG:.+]] = arith.index_castui %[[WGU]] : i32 to index
// CHECK-NEXT: %[[WROW:.+]] = arith.muli %[[WG]], %c64{{.*}} : index
// CHECK-NEXT: %[[W0:.+]] = arith.addi %[[I0]], %[[WROW]] : index
// CHECK: %[[LEFT:.+]] = arith.subi %{{.+}}, %[[W0]] : index
// CHECK: %[[ROWS:.+]] = arith.minsi %c64{{.*}}, %[[LEFT]] : index
// CHECK-NEXT: %[[END:.+]] = arith.addi %[[W0]], %[[ROWS]] : index
// CHECK-NEXT: %[[END1:.+]] = arith.addi %[[END]], %c0{{.*}} : index
// CHECK-NEXT: %[[END2:.+]] = arith.maxsi %[[END1]], %c0{{.*}} : index
// CHECK-NEXT: %[[KV:.+]] = arith.minsi %[[END2]], %{{.+}} : index
// CHECK-NEXT: %[[OWN:.+]] = arith.ceildivsi %[[KV]], %c128{{.*}} : index
// CHECK-NEXT: %[[OWN1:.+]] = arith.maxsi %[[OWN]], %c1 : index
// CHECK-NEXT: %[[NW:.+]] = arith.minsi %[[N]], %[[OWN1]] : index
// The unmasked loop up to the first key block past the diagonal of row
// i0 + 64 w, the masked one from there to the warpgroup's count.
// CHECK: %[[D:.+]] = arith.addi %[[W0]], %c0{{.*}} : index
// CHECK-NEXT: %[[D1:.+]] = arith.addi %[[D]], %c1 : index
// CHECK-NEXT: %[[DB:.+]] = arith.floordivsi %[[D1]], %c128{{.*}} : index
// CHECK: %[[SPLIT:.+]] = arith.minsi %{{.+}}, %[[NW]] : index
// CHECK-NEXT: scf.for %{{.+}} = %c1 to %[[SPLIT]] step %c1 iter_args
// CHECK: scf.for %{{.+}} = %[[SPLIT]] to %[[NW]] step %c1 iter_args
// The last P V is the warpgroup's last key block.
// CHECK: arith.subi %[[NW]], %c1{{.*}} : index

// BR-LABEL: gpu.func @d64_attention_0
// BR: %[[I0:.+]] = arith.muli %{{.+}}, %c192 : index
// The block's offset Tk - Tq.
// BR: %[[BOFF:.+]] = arith.subi %{{.+}}, %{{.+}} : index
// BR: %[[N:.+]] = arith.ceildivsi %{{.+}}, %c128 : index
// BR: "setmaxnreg.inc.sync.aligned.u32 160;"
// BR: @p exit;
// BR: "shfl.sync.idx.b32 $0, $1, 0, 31, -1;"
// BR: %[[WG:.+]] = arith.index_castui %{{.+}} : i32 to index
// BR-NEXT: %[[WROW:.+]] = arith.muli %[[WG]], %c64{{.*}} : index
// BR-NEXT: %[[W0:.+]] = arith.addi %[[I0]], %[[WROW]] : index
// BR: %[[OFFSET:.+]] = arith.subi %{{.+}}, %{{.+}} : index
// BR-NEXT: arith.subi %{{.+}}, %[[W0]] : index
// BR: %[[END:.+]] = arith.addi %[[W0]], %{{.+}} : index
// BR-NEXT: arith.addi %[[END]], %[[OFFSET]] : index
// BR: %[[OWN:.+]] = arith.ceildivsi %{{.+}}, %c128{{.*}} : index
// BR-NEXT: %[[OWN1:.+]] = arith.maxsi %[[OWN]], %c1 : index
// BR-NEXT: %[[NW:.+]] = arith.minsi %[[N]], %[[OWN1]] : index
// The masked loop from the diagonal of row W0 + Tk - Tq.
// BR: %[[D:.+]] = arith.addi %[[W0]], %[[BOFF]] : index
// BR-NEXT: %[[D1:.+]] = arith.addi %[[D]], %c1 : index
// BR-NEXT: arith.floordivsi %[[D1]], %c128{{.*}} : index
// BR: %[[SPLIT:.+]] = arith.minsi %{{.+}}, %[[NW]] : index
// BR-NEXT: scf.for %{{.+}} = %c1 to %[[SPLIT]] step %c1 iter_args
// BR: scf.for %{{.+}} = %[[SPLIT]] to %[[NW]] step %c1 iter_args

// BN64-LABEL: gpu.func @d64_attention_0
// BN64: %[[N:.+]] = arith.ceildivsi %{{.+}}, %c64 : index
// BN64: "setmaxnreg.inc.sync.aligned.u32 160;"
// BN64: @p exit;
// BN64: "shfl.sync.idx.b32 $0, $1, 0, 31, -1;"
// BN64: %[[OWN:.+]] = arith.ceildivsi %{{.+}}, %c64{{.*}} : index
// BN64-NEXT: %[[OWN1:.+]] = arith.maxsi %[[OWN]], %c1 : index
// BN64-NEXT: %[[NW:.+]] = arith.minsi %[[N]], %[[OWN1]] : index

// OFF-LABEL: gpu.func @d64_attention_0
// OFF: "setmaxnreg.inc.sync.aligned.u32 160;"
// OFF: @p exit;
// OFF-NOT: shfl.sync
// OFF: scf.for

// (Without the producer the key blocks are 64 keys.)
// BLOCK-LABEL: gpu.func @d64_attention_0
// BLOCK: %[[N:.+]] = arith.ceildivsi %{{.+}}, %c{{64|128}} : index
// BLOCK-NOT: arith.minsi %[[N]],
// BLOCK: scf.for %{{.+}} = %{{.+}} to %[[N]] step %c1 iter_args
// The persistent kernel: each turn's tile count, unchanged.
// PERS-LABEL: gpu.func @d64_attention_0
// PERS: "setmaxnreg.inc.sync.aligned.u32 160;"
// PERS: %[[N:.+]] = arith.ceildivsi %{{.+}}, %c128{{.*}} : index
// PERS-NOT: arith.minsi %[[N]],
// PERS: scf.for %{{.+}} = %{{.+}} to %[[N]] step %c1 iter_args
func.func @d64(%q: tensor<?x?x64xbf16>, %k: tensor<?x?x64xbf16>, %v: tensor<?x?x64xbf16>) -> (tensor<?x?x64xbf16>, tensor<?x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v causal(top_left) : tensor<?x?x64xbf16>, tensor<?x?x64xbf16>, tensor<?x?x64xbf16> -> tensor<?x?x64xbf16>, tensor<?x?xf32>
  return %o, %lse : tensor<?x?x64xbf16>, tensor<?x?xf32>
}
