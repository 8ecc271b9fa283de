// convert-fa-to-gpu pair-key-blocks=1: under a causal mask the TMA wgmma
// _dkdv with the producer warpgroup takes key blocks x and n - 1 - x (n =
// ceil(Tk / 128)) in two passes of one block (grid ceil(Tk / 256)); the
// consumers and the producer each run the passes, pass 1 only when
// x < n - 1 - x; the loop tiles of both passes go through one ring of
// stages (ring position = tile + shift, shift = pass 0's tile count in pass
// 1 minus the pass's first tile); the own tiles' barriers complete phase
// `pass`; the last tile releases its Q stage for the next pass's loads; a
// named barrier ends each pass before the next one's own loads; the producer
// prefetches the partner's own K/V rows into L2 in pass 0.
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 dq-atomics=1 backward-producer-warp=true pair-key-blocks=1" | FileCheck %s
// With 32-bit indices (fa-to-ptx's) dK += dS^T Q comes from the dS^T
// registers, so each tile releases both of its halves at its end (dO:
// stage + 11, Q: stage + 8, from ring position tb + shift) and the last
// tile releases nothing; the staged dQ of the previous tile is added after
// the tile's dS^T stores and their fence.
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 dq-atomics=1 backward-producer-warp=true pair-key-blocks=1 index-bitwidth=32" | FileCheck %s --check-prefix=EARLY
// Off (the default): one key block per _dkdv block.
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 dq-atomics=1 backward-producer-warp=true" | FileCheck %s --check-prefix=OFF
// Without the producer warpgroup the option does nothing.
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 dq-atomics=1 backward-producer-warp=false pair-key-blocks=1" | FileCheck %s --check-prefix=OFF

// CHECK-LABEL: module attributes
// CHECK-SAME: grid = ["ceil_div(seqlen_k,256)", "batch", "1"], kernel = "pair_attention_backward_0_dkdv"
// CHECK-LABEL: gpu.func @pair_attention_backward_0_dkdv(
// Consumers.
// CHECK: setmaxnreg.inc.sync.aligned.u32 240;
// CHECK: scf.for %[[PASS:.*]] = %[[C0:.*]] to %[[C2:.*]] step
// CHECK-NEXT: %[[SECOND:.*]] = arith.cmpi ne, %[[PASS]], %[[C0]] : index
// CHECK-NEXT: %[[X32:.*]] = llvm.inline_asm has_side_effects {{.*}}"mov.u32 $0, %ctaid.x;"
// CHECK-NEXT: %[[X:.*]] = arith.index_castui %[[X32]] : i32 to index
// CHECK: %[[N:.*]] = arith.ceildivsi %{{.*}}, %[[C128:.*]] : index
// CHECK-NEXT: %[[NM1:.*]] = arith.subi %[[N]], %{{.*}} : index
// CHECK-NEXT: %[[PARTNER:.*]] = arith.subi %[[NM1]], %[[X]] : index
// CHECK-NEXT: %[[HAS:.*]] = arith.cmpi ult, %[[X]], %[[PARTNER]] : index
// CHECK-NEXT: %[[PASS0:.*]] = arith.cmpi eq, %[[PASS]], %[[C0]] : index
// CHECK-NEXT: %[[ACTIVE:.*]] = arith.ori %[[PASS0]], %[[HAS]] : i1
// CHECK-NEXT: arith.andi %[[PASS0]], %[[HAS]] : i1
// CHECK-NEXT: %[[BLOCK:.*]] = arith.select %[[SECOND]], %[[PARTNER]], %[[X]] : index
// CHECK: %[[OWN0:.*]] = arith.muli %[[BLOCK]], %{{.*}} : index
// CHECK: %[[FIRST:.*]] = arith.divui %{{.*}}, %[[C64:.*]] : index
// CHECK: %[[PAIROWN0:.*]] = arith.muli %[[X]], %{{.*}} : index
// CHECK: %[[PAIRFIRST:.*]] = arith.divui %{{.*}}, %[[C64]] : index
// CHECK-NEXT: %[[LEFT:.*]] = arith.subi %[[COUNT:.*]], %[[PAIRFIRST]] : index
// CHECK-NEXT: %[[BASE1:.*]] = arith.maxsi %[[LEFT]], %[[C0]] : index
// CHECK-NEXT: %[[BASE:.*]] = arith.select %[[SECOND]], %[[BASE1]], %[[C0]] : index
// CHECK-NEXT: %[[SHIFT:.*]] = arith.subi %[[BASE]], %[[FIRST]] : index
// CHECK-NEXT: %[[ANY:.*]] = arith.cmpi slt, %[[FIRST]], %[[COUNT]] : index
// CHECK-NEXT: scf.if %[[ACTIVE]] {
// The own tiles of the pass (thread 0), then their barriers' phase `pass`.
// CHECK: %[[ROW:.*]] = arith.index_cast %[[OWN0]] : index to i32
// CHECK: cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$1, {$2, $3, $4}], [$5];", "r,l,r,r,r,r" %{{.*}}, %{{.*}}, %{{.*}}, %[[ROW]],
// CHECK: scf.if %[[ANY]]
// CHECK-NEXT: %[[PARITY:.*]] = arith.index_cast %[[PASS]] : index to i32
// CHECK: mbarrier.try_wait.parity{{.*}} %{{.*}}, %[[PARITY]] : (i32, i32) -> ()
// CHECK-NEXT: %[[PARITY2:.*]] = arith.index_cast %[[PASS]] : index to i32
// CHECK: mbarrier.try_wait.parity{{.*}} %{{.*}}, %[[PARITY2]] : (i32, i32) -> ()
// The first tile's stage and phase from its ring position.
// CHECK-NEXT: %{{.*}} = arith.constant 2 : i32
// CHECK-NEXT: %{{.*}} = arith.constant 3 : index
// CHECK-NEXT: %[[RING:.*]] = arith.addi %[[FIRST]], %[[SHIFT]] : index
// CHECK-NEXT: arith.remui %[[RING]], %{{.*}} : index
// The key loop, then the last tile: it releases its Q stage.
// CHECK: scf.for %[[TB:.*]] = %{{.*}} to %[[COUNT]] step
// CHECK-NOT: arith.remui %[[TB]], %c3
// CHECK: bar.sync $0, 256;
// The release: stage (ring position mod 3) + 8, the first "empty" barrier
// of the Q half (2 own + 3 + 3 full barriers before it), parity from the
// ring position / 3.
// CHECK: scf.if %[[ANY]]
// CHECK: %[[LASTBAR:.*]] = arith.addi %{{.*}}, %c8_i32{{.*}} : i32
// CHECK-NEXT: arith.constant 3 : index
// CHECK-NEXT: %[[LASTRING:.*]] = arith.addi %{{.*}}, %[[SHIFT]] : index
// CHECK-NEXT: arith.divui %[[LASTRING]], %{{.*}} : index
// CHECK: arith.muli %[[LASTBAR]], %{{.*}} : i32
// CHECK: mbarrier.arrive.shared::cta.b64 _, [$0];
// CHECK-NEXT: scf.yield
// The pass ends with the consumers' named barrier.
// CHECK: vector.store
// CHECK: bar.sync $0, 256;
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: cp.async.bulk.wait_group.read 0;
// Producer: the same passes; the ring position of tile tb is tb + shift.
// CHECK: setmaxnreg.dec.sync.aligned.u32 24;
// CHECK: scf.for %[[PPASS:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT: %[[PSECOND:.*]] = arith.cmpi ne, %[[PPASS]], %{{.*}} : index
// CHECK-NEXT: llvm.inline_asm has_side_effects {{.*}}"mov.u32 $0, %ctaid.x;"
// CHECK: arith.ceildivsi
// CHECK-NEXT: arith.subi
// CHECK-NEXT: %[[PPARTNER:.*]] = arith.subi %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[PHAS:.*]] = arith.cmpi ult, %{{.*}}, %[[PPARTNER]] : index
// CHECK-NEXT: %[[PPASS0:.*]] = arith.cmpi eq, %[[PPASS]], %{{.*}} : index
// CHECK-NEXT: %[[PACTIVE:.*]] = arith.ori %[[PPASS0]], %[[PHAS]] : i1
// CHECK-NEXT: %[[MORE:.*]] = arith.andi %[[PPASS0]], %[[PHAS]] : i1
// CHECK: %[[PFIRST:.*]] = arith.divui %{{.*}}, %{{.*}} : index
// CHECK: %[[PSHIFT:.*]] = arith.subi %{{.*}}, %[[PFIRST]] : index
// The producer waits for both halves' "empty" barriers (Q: stage + 8, dO:
// stage + 11), their stage and phase from the ring position.
// CHECK: scf.if %[[PACTIVE]] {
// CHECK-NEXT: scf.for %[[PTB:.*]] = %[[PFIRST]] to %{{.*}} step
// CHECK: %[[PRING:.*]] = arith.addi %[[PTB]], %[[PSHIFT]] : index
// CHECK-NEXT: %[[PSTAGE:.*]] = arith.remui %[[PRING]], %{{.*}} : index
// CHECK-NEXT: %[[PSTAGE32:.*]] = arith.index_cast %[[PSTAGE]] : index to i32
// CHECK-NEXT: arith.addi %[[PSTAGE32]], %c8_i32 : i32
// CHECK: %[[PRING2:.*]] = arith.addi %[[PTB]], %[[PSHIFT]] : index
// CHECK-NEXT: arith.divui %[[PRING2]], %{{.*}} : index
// CHECK: mbarrier.try_wait.parity
// CHECK: %[[PRING3:.*]] = arith.addi %[[PTB]], %[[PSHIFT]] : index
// CHECK-NEXT: arith.remui %[[PRING3]], %{{.*}} : index
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: arith.addi %{{.*}}, %c11_i32 : i32
// CHECK: %[[PRING4:.*]] = arith.addi %[[PTB]], %[[PSHIFT]] : index
// CHECK-NEXT: arith.divui %[[PRING4]], %{{.*}} : index
// CHECK: mbarrier.try_wait.parity
// The Q tile's load: its workgroup address from the ring position's stage.
// CHECK: scf.if
// CHECK: %[[PRING5:.*]] = arith.addi %[[PTB]], %[[PSHIFT]] : index
// CHECK-NEXT: arith.constant 3 : index
// CHECK-NEXT: %[[PSTAGE5:.*]] = arith.remui %[[PRING5]], %{{.*}} : index
// CHECK-NEXT: arith.index_castui %[[PSTAGE5]] : index to i64
// CHECK: cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// No stage from the tile index itself (the dO load's either).
// CHECK-NOT: arith.remui %[[PTB]], %c3
// Pass 0 with a partner: the partner's own K and V rows (2 boxes each).
// CHECK: scf.if %[[MORE]] {
// CHECK: %[[PROW0:.*]] = arith.muli %[[PPARTNER]], %{{.*}} : index
// CHECK-NEXT: %[[PROW:.*]] = arith.index_cast %[[PROW0]] : index to i32
// CHECK-COUNT-4: cp.async.bulk.prefetch.tensor.3d.L2.global.tile [$0, {$1, $2, $3}];", "l,r,r,r" %{{.*}}, %{{.*}}, %[[PROW]], %{{.*}} :
// CHECK: } else {
// CHECK: %nsmid
// CHECK-COUNT-4: cp.async.bulk.prefetch.tensor.3d.L2.global.tile
// CHECK-LABEL: gpu.func @pair_attention_backward_0_dq_convert(

// OFF-LABEL: module attributes
// OFF-SAME: grid = ["ceil_div(seqlen_k,block_n)", "batch", "1"], kernel = "pair_attention_backward_0_dkdv"
// OFF-LABEL: gpu.func @pair_attention_backward_0_dkdv(
// OFF-NOT: %ctaid.x
// OFF-NOT: cp.async.bulk.prefetch.tensor
// OFF-LABEL: gpu.func @pair_attention_backward_0_dq_convert(

func.func @pair(%q: tensor<16x?x128xbf16>, %k: tensor<16x?x128xbf16>,
                %v: tensor<16x?x128xbf16>, %o: tensor<16x?x128xbf16>,
                %do: tensor<16x?x128xbf16>, %lse: tensor<16x?xf32>)
    -> (tensor<16x?x128xbf16>, tensor<16x?x128xbf16>, tensor<16x?x128xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse causal(top_left)
      : tensor<16x?x128xbf16>, tensor<16x?x128xbf16>, tensor<16x?x128xbf16>,
        tensor<16x?x128xbf16>, tensor<16x?x128xbf16>, tensor<16x?xf32>
      -> tensor<16x?x128xbf16>, tensor<16x?x128xbf16>, tensor<16x?x128xbf16>
  return %dq, %dk, %dv
      : tensor<16x?x128xbf16>, tensor<16x?x128xbf16>, tensor<16x?x128xbf16>
}

// -----

// Without a mask the blocks are equally long already: one key block each.
// CHECK-LABEL: module attributes
// CHECK-SAME: grid = ["ceil_div(seqlen_k,block_n)", "batch", "1"], kernel = "nomask_attention_backward_0_dkdv"
// CHECK-LABEL: gpu.func @nomask_attention_backward_0_dkdv(
// CHECK: setmaxnreg.inc.sync.aligned.u32 240;
// CHECK-NOT: scf.for
// CHECK: mbarrier.try_wait.parity{{.*}} %{{.*}}, %c0_i32{{.*}} : (i32, i32) -> ()
// CHECK-LABEL: gpu.func @nomask_attention_backward_0_dq_convert(
func.func @nomask(%q: tensor<16x?x128xbf16>, %k: tensor<16x?x128xbf16>,
                  %v: tensor<16x?x128xbf16>, %o: tensor<16x?x128xbf16>,
                  %do: tensor<16x?x128xbf16>, %lse: tensor<16x?xf32>)
    -> (tensor<16x?x128xbf16>, tensor<16x?x128xbf16>, tensor<16x?x128xbf16>) {
  %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse
      : tensor<16x?x128xbf16>, tensor<16x?x128xbf16>, tensor<16x?x128xbf16>,
        tensor<16x?x128xbf16>, tensor<16x?x128xbf16>, tensor<16x?xf32>
      -> tensor<16x?x128xbf16>, tensor<16x?x128xbf16>, tensor<16x?x128xbf16>
  return %dq, %dk, %dv
      : tensor<16x?x128xbf16>, tensor<16x?x128xbf16>, tensor<16x?x128xbf16>
}

// EARLY-LABEL: gpu.func @pair_attention_backward_0_dkdv(
// EARLY: setmaxnreg.inc.sync.aligned.u32 240;
// EARLY: scf.for %[[TB:[^ ]*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// The previous tile's dQ is staged early and added at the tile's end: the
// dS^T stores' fence covers both (no fence of its own).
// EARLY: st.shared.v2.f32
// EARLY-NOT: fence.proxy.async
// EARLY-NOT: cp.reduce.async.bulk.tensor
// EARLY: "st.shared.b32 [$0], $1;"
// EARLY-NOT: cp.reduce.async.bulk.tensor
// EARLY: "fence.proxy.async.shared::cta;", ""
// EARLY-NEXT: "bar.warp.sync -1;", ""
// EARLY: cp.reduce.async.bulk.tensor
// EARLY: arith.constant 11 : i32
// EARLY-NEXT: arith.constant 3 : index
// EARLY-NEXT: %[[R1:.*]] = arith.addi %[[TB]], %{{.*}} : index
// EARLY-NEXT: arith.remui %[[R1]], %{{.*}} : index
// EARLY: mbarrier.arrive.shared::cta.b64 _, [$0];
// EARLY-NEXT: arith.constant 8 : i32
// EARLY-NEXT: arith.constant 3 : index
// EARLY-NEXT: %[[R2:.*]] = arith.addi %[[TB]], %{{.*}} : index
// EARLY-NEXT: arith.remui %[[R2]], %{{.*}} : index
// EARLY: mbarrier.arrive.shared::cta.b64 _, [$0];
// EARLY-NEXT: scf.yield
// EARLY-NOT: mbarrier.arrive
// EARLY: setmaxnreg.dec.sync.aligned.u32 24;
