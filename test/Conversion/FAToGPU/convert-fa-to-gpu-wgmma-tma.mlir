// The sm_90a wgmma forward with TMA loads (convert-fa-to-gpu tma=1): three
// tensor-map arguments after the memrefs, mbarriers, one thread issuing
// cp.async.bulk.tensor per 64-column box into 128-byte-swizzled tiles, the
// wgmma descriptors in 128-byte swizzle mode, no per-thread cp.async.
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1" | FileCheck %s
// Without tma the same op keeps cp.async (the default).
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448" | FileCheck %s --check-prefix=CPASYNC
// stages=3 given: D 128 keeps block_n 128 with three stages.
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 stages=3" | FileCheck %s --check-prefix=STAGES3
// producer-warp=1: the first op (D 64, causal, default shape) gets three
// consumer warpgroups (block_m 192, 512 threads, 160 registers each) and
// 128-key tiles; the second (D 128) two.
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1" | FileCheck %s --check-prefix=PRODUCER
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 pingpong=1" | FileCheck %s --check-prefix=PINGPONG
// tiles-per-block=2: two query tiles per block (grid over 2 block_m rows),
// a second Q buffer after the first (the K/V stages move up by one Q tile)
// with its own "full" barrier after the K/V ones; the producer loads both
// Q tiles, then the K/V tiles of tile 0 and of tile 1, the latter in ring
// slots after tile 0's key blocks; the consumers build tile 1 when the
// block has it (2x + 1 < ceil(Tq / block_m)) and wait for the o stores'
// reads once, at the end.
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 tiles-per-block=2" | FileCheck %s --check-prefix=TILES2
// tiles-per-block=0 (fa-to-ptx's default): two tiles for the D 128 kernel
// (two consumer warpgroups), with 160-key tiles without a mask when both Q
// buffers fit (229,456 bytes); one for the 12-warp D 64 kernel. With
// max-shared-bytes 212992 the 160-key two-tile kernel does not fit, and
// the 128-key one takes its place (not 160 keys with one tile); with
// 196608 neither fits, and D 128 keeps one tile of 128 keys.
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 tiles-per-block=0" | FileCheck %s --check-prefix=TILESWIDE
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=212992 tma=1 producer-warp=1 tiles-per-block=0" | FileCheck %s --check-prefix=TILESAUTO
// RUN: fa-opt %s -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=196608 tma=1 producer-warp=1 tiles-per-block=0" | FileCheck %s --check-prefix=TILESFIT
// A causal mask keeps 128-key tiles (160 measured slower there).
// RUN: sed -e 's/fa.attention %q, %k, %v :/fa.attention %q, %k, %v causal(top_left) :/' %s | fa-opt -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 tiles-per-block=0" | FileCheck %s --check-prefix=TILESAUTO
// A static Tk of at most five key blocks keeps one tile too (two spilled
// there), and 128-key tiles (768 keys are five 160-key blocks but six
// 128-key ones, so two tiles of 128 keys); two given explicitly stay two.
// RUN: sed -e 's/?x?x128xf16/2x512x128xf16/g' -e 's/tensor<?x?xf32>/tensor<2x512xf32>/g' %s | fa-opt -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 tiles-per-block=0" | FileCheck %s --check-prefix=TILESFIT
// RUN: sed -e 's/?x?x128xf16/2x768x128xf16/g' -e 's/tensor<?x?xf32>/tensor<2x768xf32>/g' %s | fa-opt -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 tiles-per-block=0" | FileCheck %s --check-prefix=TILESAUTO
// RUN: sed -e 's/?x?x128xf16/2x512x128xf16/g' -e 's/tensor<?x?xf32>/tensor<2x512xf32>/g' %s | fa-opt -split-input-file -convert-fa-to-gpu="tensor-cores=1 wgmma=1 max-shared-bytes=232448 tma=1 producer-warp=1 tiles-per-block=2" | FileCheck %s --check-prefix=TILESTWO
// TILESTWO-LABEL: module attributes
// TILESTWO-LABEL: module attributes
// TILESTWO-SAME: grid = ["ceil_div(seqlen_q,256)", "batch", "1"]
// TILESTWO-SAME: seqlen_k = 512 : i64
// TILESAUTO-LABEL: module attributes
// TILESAUTO-SAME: grid = ["ceil_div(seqlen_q,block_m)", "batch", "1"]
// TILESAUTO-LABEL: module attributes
// TILESAUTO-SAME: block_n = 128 : i64
// TILESAUTO-SAME: grid = ["ceil_div(seqlen_q,256)", "batch", "1"]
// TILESAUTO-SAME: shared_bytes = 196688 : i64
// TILESWIDE-LABEL: module attributes
// TILESWIDE-SAME: grid = ["ceil_div(seqlen_q,block_m)", "batch", "1"]
// TILESWIDE-LABEL: module attributes
// TILESWIDE-SAME: block_n = 160 : i64
// TILESWIDE-SAME: grid = ["ceil_div(seqlen_q,256)", "batch", "1"]
// TILESWIDE-SAME: shared_bytes = 229456 : i64
// TILESWIDE-SAME: tensor_map = ["q 64 128 128", "k 64 160 128", "v 64 160 128", "o 64 16 128"]
// TILESWIDE: wgmma.mma_async.sync.aligned.m64n160k16.f32.f16.f16
// TILESWIDE: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// TILESFIT-LABEL: module attributes
// TILESFIT-LABEL: module attributes
// TILESFIT-SAME: grid = ["ceil_div(seqlen_q,block_m)", "batch", "1"]
// TILESFIT-SAME: shared_bytes = 163912 : i64
// CPASYNC-NOT: tensor_map
// CPASYNC: nvgpu.device_async_copy
// CPASYNC-NOT: cp.async.bulk.tensor
// CPASYNC-NOT: mbarrier

// Causal bf16, D = 64, static shapes (Tq 200, Tk 300). Dense swizzled
// tiles: Q 128 x 64 (16384 B), three stages of K and V 64 x 64 (8192 B
// each), then 7 mbarriers (Q, 3 K, 3 V) at 65536: 65592 bytes.
// CHECK-LABEL: module attributes
// CHECK-SAME: block_m = 128 : i64, block_n = 64 : i64
// CHECK-SAME: shared_bytes = 65592 : i64
// CHECK-SAME: tensor_map = ["q 64 128 128", "k 64 64 128", "v 64 64 128"]
// CHECK: gpu.func @bf16_d64_attention_0(
// CHECK-SAME: %[[Q:arg[0-9]+]]: memref<2x200x64xbf16
// CHECK-SAME: %[[QMAP:arg[0-9]+]]: !llvm.ptr, %[[KMAP:arg[0-9]+]]: !llvm.ptr, %[[VMAP:arg[0-9]+]]: !llvm.ptr)
// CHECK-SAME: fa.tensor_map_params = 3 : i64
// CHECK-NOT: nvgpu.device_async_copy
// Q and K descriptors: 128-byte swizzle (mode 1 in bits 62-63), stride byte
// offset 1024 (64 units), leading 16 (1 unit): 1 << 62 | 64 << 32 | 1 << 16.
// V (N-major): stride byte offset 1024 (8 keys x 128 bytes), leading byte
// offset 8192 (block_n 64 x 128 bytes): 1 << 62 | 64 << 32 | 512 << 16.
// CHECK: arith.constant 4611686293305360384 : i64
// CHECK: arith.constant 4611686293338849280 : i64
// Thread 0 initializes the 7 barriers (one arrival each), then every
// thread syncs.
// CHECK: scf.if
// CHECK: "prefetch.tensormap [$0];", "l" %[[KMAP]]
// CHECK: "prefetch.tensormap [$0];", "l" %[[VMAP]]
// CHECK-COUNT-7: "mbarrier.init.shared::cta.b64 [$0], 1;"
// CHECK: "fence.mbarrier_init.release.cluster;"
// CHECK: gpu.barrier
// Q: 128 rows x 64 columns = 16384 bytes, one 64-column box from the q
// map at column coordinate 0.
// CHECK: scf.if
// CHECK: "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r" %{{.+}}, %c16384_i32
// CHECK: "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$1, {$2, $3, $4}], [$5];", "r,l,r,r,r,r" %{{.+}}, %[[QMAP]], %c0_i32
// CHECK-NOT: cp.async.bulk.tensor
// CHECK: }
// K_0, V_0, K_1, V_1, K_2, V_2 (64 x 64 = 8192 bytes each), each only
// when the block is visited.
// CHECK: arith.cmpi slt
// CHECK: scf.if
// CHECK: "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r" %{{.+}}, %c8192_i32
// CHECK: "cp.async.bulk.tensor.3d{{.*}}" %{{.+}}, %[[KMAP]],
// CHECK: scf.if
// CHECK: "cp.async.bulk.tensor.3d{{.*}}" %{{.+}}, %[[VMAP]],
// Prologue: wait for Q (barrier 0, parity 0) and K_0, then S_0; a block
// barrier after it frees K_0's stage.
// CHECK: scf.if
// CHECK: "{\0A.reg .pred p;\0ALAB_WAIT:\0Ambarrier.try_wait.parity.shared::cta.b64 p, [$0], $1;\0A@!p bra LAB_WAIT;\0A}"
// CHECK: mbarrier.try_wait.parity
// CHECK-NOT: fence.proxy.async
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16
// CHECK: "wgmma.wait_group.sync.aligned 0;"
// CHECK: gpu.barrier
// Key loop: K_{j+2} issued at once (no barrier, no proxy fence), wait for
// K_j, S_j, wait for V_{j-1}, P_{j-1} V_{j-1}; one barrier, then V_{j+2}.
// CHECK: scf.for
// CHECK-NOT: gpu.barrier
// CHECK: %[[KMAP]],
// CHECK-NOT: gpu.barrier
// CHECK: mbarrier.try_wait.parity
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16
// CHECK: mbarrier.try_wait.parity
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, {$32, $33, $34, $35}, $36, p, 1, 1, 1;
// CHECK: gpu.barrier
// CHECK: %[[VMAP]],
// CHECK: scf.yield
// Last P V after waiting for its V; no cp.async wait anywhere.
// CHECK: mbarrier.try_wait.parity
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16
// CHECK-NOT: nvvm.cp.async.wait.group
// CHECK: gpu.return
func.func @bf16_d64(%q: tensor<2x200x64xbf16>, %k: tensor<2x300x64xbf16>, %v: tensor<2x300x64xbf16>) -> tensor<2x200x64xbf16> {
  %o = fa.attention %q, %k, %v causal(top_left) : tensor<2x200x64xbf16>, tensor<2x300x64xbf16>, tensor<2x300x64xbf16> -> tensor<2x200x64xbf16>
  return %o : tensor<2x200x64xbf16>
}

// -----

// D = 128, dynamic shapes, with lse: block_n 128 takes two stages by
// default with TMA (32768 + 4 x 32768 + 5 x 8 = 163880 bytes), and the
// K/V tiles need not split over the warps' copy groups. Each tile is two
// 64-column boxes, the second at column 64, one block of 128 rows x 128
// bytes (16384) further.
// STAGES3: shared_bytes = 229432 : i64
// CHECK-LABEL: module attributes
// CHECK-SAME: block_m = 128 : i64, block_n = 128 : i64
// CHECK-SAME: params = ["q", "k", "v", "o", "lse"]
// CHECK-SAME: shared_bytes = 163880 : i64
// CHECK-SAME: tensor_map = ["q 64 128 128", "k 64 128 128", "v 64 128 128"]
// CHECK: gpu.func @f16_d128_attention_0(
// CHECK-SAME: memref<?x?xf32
// CHECK-SAME: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr)
// V (N-major): 128-byte swizzle, stride byte offset 1024 (8 keys x 128
// bytes), leading byte offset 16384 (block_n x 128 bytes: the next 64
// head-dim columns): 1 << 62 | 64 << 32 | 1024 << 16.
// CHECK: arith.constant 4611686293372403712 : i64
// CHECK-COUNT-5: mbarrier.init.shared::cta.b64
// CHECK-NOT: mbarrier.init
// CHECK: %c32768_i32
// CHECK: "cp.async.bulk.tensor.3d{{.*}}" %{{.+}}, %{{.+}}, %c0_i32
// CHECK: arith.constant 16384 : i32
// CHECK: "cp.async.bulk.tensor.3d{{.*}}" %{{.+}}, %{{.+}}, %c64_i32
// The producer warpgroup (warps 8 to 11: 384 threads): 4 more mbarriers
// ("empty", one per K and V stage, 256 consumer arrivals per phase) after
// the 5 "full" ones: 163912 bytes. Thread 256 gives its warpgroup's
// registers away, loads Q, then per key block waits for the stage's
// release (parity flipped: a fresh stage passes) and loads K, then V; the
// consumers (threads below 256) take 240 registers each and arrive on the
// stage's empty barrier after the wgmma wait that read it; no block
// barrier after the initial one.
// PRODUCER-LABEL: module attributes
// PRODUCER-SAME: block_m = 192 : i64, block_n = 128 : i64
// PRODUCER-SAME: threads = 512 : i64
// PRODUCER: known_block_size = array<i32: 512, 1, 1>
// PRODUCER: "setmaxnreg.dec.sync.aligned.u32 24;"
// PRODUCER: "setmaxnreg.inc.sync.aligned.u32 160;"
// PRODUCER-LABEL: module attributes
// PRODUCER-SAME: block_m = 128 : i64, block_n = 128 : i64
// PRODUCER-SAME: shared_bytes = 163912 : i64
// PRODUCER-SAME: tensor_map = ["q 64 128 128", "k 64 128 128", "v 64 128 128", "o 64 16 128"]
// PRODUCER-SAME: threads = 384 : i64
// o leaves by TMA stores: a fourth tensor map closes the arguments.
// PRODUCER: %[[OMAP:arg[0-9]+]]: !llvm.ptr)
// PRODUCER-SAME: fa.tensor_map_params = 4 : i64
// PRODUCER-SAME: known_block_size = array<i32: 384, 1, 1>
// PRODUCER: "prefetch.tensormap [$0];", "l" %[[OMAP]]
// The empty barriers count the consumer warpgroups with a row before Tq:
// min(ceil((Tq - i0) / 64), 2) x 128 arrivals.
// PRODUCER: %[[ROWS:.+]] = arith.ceildivsi %{{.+}}, %c64
// PRODUCER: %[[WGS:.+]] = arith.minsi %[[ROWS]], %c2
// PRODUCER: %[[ARRIVALS:.+]] = arith.muli %[[WGS]], %c128
// PRODUCER: %[[ARRIVALS32:.+]] = arith.index_cast %[[ARRIVALS]] : index to i32
// PRODUCER-COUNT-5: "mbarrier.init.shared::cta.b64 [$0], 1;"
// PRODUCER-COUNT-4: "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r" %{{.+}}, %[[ARRIVALS32]]
// PRODUCER: gpu.barrier
// PRODUCER-NOT: gpu.barrier
// The roles from the warp index through shfl.sync (warp-uniform: warps 8
// on are the producer's).
// PRODUCER: %[[WARP:.+]] = llvm.inline_asm {{.*}}"shfl.sync.idx.b32 $0, $1, 0, 31, -1;"
// PRODUCER: %[[PRODUCERS:.+]] = arith.cmpi uge, %[[WARP]], %c8_i32
// PRODUCER: scf.if %[[PRODUCERS]] {
// PRODUCER-NEXT: "setmaxnreg.dec.sync.aligned.u32 24;"
// PRODUCER: %c32768_i32
// PRODUCER: scf.for
// PRODUCER: arith.xori %{{.+}}, %c1_i32
// PRODUCER-NEXT: mbarrier.try_wait.parity
// PRODUCER: cp.async.bulk.tensor.3d
// PRODUCER: arith.xori %{{.+}}, %c1_i32
// PRODUCER-NEXT: mbarrier.try_wait.parity
// PRODUCER: cp.async.bulk.tensor.3d
// PRODUCER: %[[CONSUMERS:.+]] = arith.cmpi ult, %{{.+}}, %c8_i32{{.*}} : i32
// PRODUCER: scf.if %[[CONSUMERS]] {
// PRODUCER-NEXT: "setmaxnreg.inc.sync.aligned.u32 240;"
// A consumer warpgroup whose first row (64 x (tid / 128) into the block)
// is past Tq exits: indices read again from %ctaid.x and %tid.x.
// PRODUCER-NEXT: "mov.u32 $0, %ctaid.x;"
// PRODUCER: "mov.u32 $0, %tid.x;"
// PRODUCER: arith.divui %{{.+}}, %c128
// PRODUCER: %[[IDLE:.+]] = arith.cmpi sge, %{{.+}}, %{{.+}} : index
// PRODUCER: %[[IDLE32:.+]] = arith.extui %[[IDLE]] : i1 to i32
// PRODUCER-NEXT: "{\0A.reg .pred p;\0Asetp.ne.u32 p, $0, 0;\0A@p exit;\0A}", "r" %[[IDLE32]]
// PRODUCER-NOT: cp.async.bulk.tensor
// PRODUCER: "wgmma.wait_group.sync.aligned 0;"
// PRODUCER-NOT: wgmma.mma_async
// PRODUCER: "mbarrier.arrive.shared::cta.b64 _, [$0];"
// PRODUCER: scf.for
// PRODUCER: "wgmma.wait_group.sync.aligned 1;"
// PRODUCER: "mbarrier.arrive.shared::cta.b64 _, [$0];"
// PRODUCER: "wgmma.wait_group.sync.aligned 0;"
// PRODUCER: "mbarrier.arrive.shared::cta.b64 _, [$0];"
// PRODUCER-NOT: gpu.barrier
// PRODUCER-NOT: cp.async.bulk.tensor
// Epilogue: each warp writes its 16 rows of o (16 n8 slices per row half;
// slice n at chunk n % 8 xor g of box n / 8, box 1 at 128 x 128 bytes,
// row g + 8 at 1024 bytes) over its rows of the Q tile, fences them to
// the async proxy, and lane 0 stores two 64-column boxes through o's map
// and waits until they were read.
// PRODUCER: "mov.u32 $0, %tid.x;"
// PRODUCER: "{\0A.reg .b32 a;\0Axor.b32 a, $1, 0;\0Aadd.u32 a, a, $0;\0Ast.shared.b32 [a+0], $2;\0A}"
// PRODUCER: "{\0A.reg .b32 a;\0Axor.b32 a, $1, 112;\0Aadd.u32 a, a, $0;\0Ast.shared.b32 [a+0], $2;\0A}"
// PRODUCER: "{\0A.reg .b32 a;\0Axor.b32 a, $1, 0;\0Aadd.u32 a, a, $0;\0Ast.shared.b32 [a+16384], $2;\0A}"
// PRODUCER: "{\0A.reg .b32 a;\0Axor.b32 a, $1, 0;\0Aadd.u32 a, a, $0;\0Ast.shared.b32 [a+1024], $2;\0A}"
// PRODUCER: "fence.proxy.async.shared::cta;\0Abar.warp.sync -1;"
// PRODUCER: scf.if
// PRODUCER: "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [$0, {$1, $2, $3}], [$4];", "l,r,r,r,r" %[[OMAP]], %c0_i32
// PRODUCER: "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [$0, {$1, $2, $3}], [$4];", "l,r,r,r,r" %[[OMAP]], %c64_i32
// PRODUCER: "cp.async.bulk.commit_group;\0Acp.async.bulk.wait_group.read 0;"
// PRODUCER-NOT: gpu.barrier
// PRODUCER-NOT: cp.async.bulk.tensor
// PRODUCER: gpu.return
// Pingpong: the last warpgroup's first-turn gift to warpgroup 0 (barrier
// 1), then in the prologue, each loop iteration and the last P V: wait
// for the turn, issue, pass it on (the D 64 causal op's three consumer
// warpgroups as well).
// PINGPONG-LABEL: module attributes
// PINGPONG-SAME: threads = 512 : i64
// PINGPONG: "bar.sync $0, 256;"
// PINGPONG-LABEL: module attributes
// PINGPONG-SAME: threads = 384 : i64
// With turns, every consumer warpgroup stays (no exit, fixed arrivals).
// PINGPONG-COUNT-4: "mbarrier.init.shared::cta.b64 [$0], 256;"
// PINGPONG-NOT: @p exit
// PINGPONG: "bar.arrive $0, 256;", "r" %c1_i32
// PINGPONG: "bar.sync $0, 256;"
// PINGPONG: wgmma.mma_async
// PINGPONG: "bar.arrive $0, 256;"
// PINGPONG: "wgmma.wait_group.sync.aligned 0;"
// PINGPONG: scf.for
// PINGPONG: "bar.sync $0, 256;"
// PINGPONG: wgmma.mma_async
// PINGPONG: "bar.arrive $0, 256;"
// PINGPONG: "wgmma.wait_group.sync.aligned 1;"
// PINGPONG: scf.yield
// PINGPONG: "bar.sync $0, 256;"
// PINGPONG: wgmma.mma_async
// PINGPONG: arith.cmpi ne
// PINGPONG-NEXT: scf.if
// PINGPONG: arith.remui
// PINGPONG: "bar.arrive $0, 256;"
// PINGPONG-NEXT: }
// PINGPONG: gpu.return
// TILES2-LABEL: module attributes
// TILES2-SAME: grid = ["ceil_div(seqlen_q,384)", "batch", "1"]
// TILES2-LABEL: module attributes
// TILES2-SAME: grid = ["ceil_div(seqlen_q,256)", "batch", "1"]
// TILES2-SAME: shared_bytes = 196688 : i64
// TILES2-COUNT-5: "mbarrier.init.shared::cta.b64 [$0], 1;"
// TILES2-COUNT-4: "mbarrier.init.shared::cta.b64 [$0], 256;"
// TILES2-NEXT: arith.constant 196680 : i32
// TILES2: "mbarrier.init.shared::cta.b64 [$0], 1;"
// TILES2-NEXT: "fence.mbarrier_init.release.cluster;"
// TILES2: "setmaxnreg.dec.sync.aligned.u32 24;"
// TILES2: arith.constant 196608 : i32
// TILES2: mbarrier.arrive.expect_tx
// TILES2: cp.async.bulk.tensor.3d.shared::cluster.global.tile
// TILES2: %[[TILES:.+]] = arith.ceildivsi %dim, %c128
// TILES2: %[[TWICE:.+]] = arith.muli %block_id_x{{.*}}, %c2
// TILES2-NEXT: %[[ROW1:.+]] = arith.addi %[[TWICE]], %c1
// TILES2-NEXT: %[[SECOND:.+]] = arith.cmpi slt, %[[ROW1]], %[[TILES]]
// TILES2: %[[BLOCKS1:.+]] = arith.select %[[SECOND]], %{{.+}}, %c0
// TILES2: arith.constant 196680 : i32
// TILES2: arith.constant 32768 : i32
// TILES2: mbarrier.arrive.expect_tx
// TILES2: scf.for %{{.+}} = %{{.+}} to %[[BLOCKS0:.+]] step
// TILES2: scf.for %[[JB:.+]] = %{{.+}} to %[[BLOCKS1]] step
// TILES2-NEXT: %[[SLOT:.+]] = arith.addi %[[BLOCKS0]], %[[JB]]
// TILES2-NEXT: arith.constant 2 : index
// TILES2-NEXT: arith.remui %[[SLOT]]
// After both tiles' loads the producer prefetches into L2 the Q tiles
// (q's map, %arg5; two 64-column boxes each) of the block at launch
// index + %nsmid: rows 2x' x 128 and (2x' + 1) x 128 of entry y', each
// when that block is in the grid and its rows start before Tq.
// TILES2: %[[NX:.+]] = llvm.inline_asm {{.*}}"mov.u32 $0, %nctaid.x;"
// TILES2-NEXT: %[[NY:.+]] = llvm.inline_asm {{.*}}"mov.u32 $0, %nctaid.y;"
// TILES2-NEXT: %[[NSM:.+]] = llvm.inline_asm {{.*}}"mov.u32 $0, %nsmid;"
// TILES2-NEXT: %[[CX:.+]] = llvm.inline_asm {{.*}}"mov.u32 $0, %ctaid.x;"
// TILES2-NEXT: %[[SUM:.+]] = arith.addi %[[CX]], %[[NSM]] : i32
// TILES2-NEXT: %[[NEXTX:.+]] = arith.remui %[[SUM]], %[[NX]] : i32
// TILES2-NEXT: %[[CARRY:.+]] = arith.divui %[[SUM]], %[[NX]] : i32
// TILES2-NEXT: %[[CY:.+]] = llvm.inline_asm {{.*}}"mov.u32 $0, %ctaid.y;"
// TILES2-NEXT: %[[NEXTY:.+]] = arith.addi %[[CY]], %[[CARRY]] : i32
// TILES2-NEXT: %[[IN:.+]] = arith.cmpi ult, %[[NEXTY]], %[[NY]] : i32
// TILES2-NEXT: %[[TQ:.+]] = arith.index_cast %dim : index to i32
// TILES2-NEXT: %[[R0:.+]] = arith.constant 0 : i32
// TILES2-NEXT: %[[TWO0:.+]] = arith.constant 2 : i32
// TILES2-NEXT: %[[X2:.+]] = arith.muli %[[NEXTX]], %[[TWO0]] : i32
// TILES2-NEXT: %[[T0:.+]] = arith.addi %[[X2]], %[[R0]] : i32
// TILES2-NEXT: %[[R1:.+]] = arith.constant 1 : i32
// TILES2-NEXT: %[[TWO1:.+]] = arith.constant 2 : i32
// TILES2-NEXT: %[[X2B:.+]] = arith.muli %[[NEXTX]], %[[TWO1]] : i32
// TILES2-NEXT: %[[T1:.+]] = arith.addi %[[X2B]], %[[R1]] : i32
// TILES2-NEXT: %c128_i32 = arith.constant 128 : i32
// TILES2-NEXT: %[[ROW0:.+]] = arith.muli %[[T0]], %c128_i32 : i32
// TILES2-NEXT: %[[BEFORE0:.+]] = arith.cmpi ult, %[[ROW0]], %[[TQ]] : i32
// TILES2-NEXT: %[[VALID0:.+]] = arith.andi %[[IN]], %[[BEFORE0]] : i1
// TILES2-NEXT: scf.if %[[VALID0]] {
// TILES2-NEXT: %[[B0:.+]] = arith.constant 0 : i32
// TILES2-NEXT: "cp.async.bulk.prefetch.tensor.3d.L2.global.tile [$0, {$1, $2, $3}];", "l,r,r,r" %arg5, %[[B0]], %[[ROW0]], %[[NEXTY]]
// TILES2-NEXT: %[[B1:.+]] = arith.constant 64 : i32
// TILES2-NEXT: "cp.async.bulk.prefetch.tensor.3d.L2.global.tile [$0, {$1, $2, $3}];", "l,r,r,r" %arg5, %[[B1]], %[[ROW0]], %[[NEXTY]]
// TILES2-NEXT: }
// TILES2-NEXT: %{{.+}} = arith.constant 128 : i32
// TILES2-NEXT: %[[ROW1:.+]] = arith.muli %[[T1]], %{{.+}} : i32
// TILES2-NEXT: %[[BEFORE1:.+]] = arith.cmpi ult, %[[ROW1]], %[[TQ]] : i32
// TILES2-NEXT: %[[VALID1:.+]] = arith.andi %[[IN]], %[[BEFORE1]] : i1
// TILES2-NEXT: scf.if %[[VALID1]] {
// TILES2: "cp.async.bulk.prefetch.tensor.3d.L2.global.tile [$0, {$1, $2, $3}];", "l,r,r,r" %arg5, %{{.+}}, %[[ROW1]], %[[NEXTY]]
// TILES2-NEXT: %{{.+}} = arith.constant 64 : i32
// TILES2-NEXT: "cp.async.bulk.prefetch.tensor.3d.L2.global.tile [$0, {$1, $2, $3}];", "l,r,r,r" %arg5, %{{.+}}, %[[ROW1]], %[[NEXTY]]
// TILES2-NOT: cp.async.bulk.prefetch.tensor
// TILES2: "setmaxnreg.inc.sync.aligned.u32 240;"
// TILES2-NOT: cp.async.bulk.prefetch.tensor
// TILES2-NOT: @p exit
// TILES2: "cp.async.bulk.commit_group;"
// TILES2-NOT: wait_group.read
// Tile 1's o after its key loop; then the boundary not peeled (the
// split's else branch): tile 0's last P V and its o, then tile 1's rows,
// which then see no key, from the initial values: no barrier wait, no
// product.
// TILES2: "cp.async.bulk.commit_group;"
// TILES2-NEXT: }
// TILES2-NEXT: } else {
// TILES2: mbarrier.try_wait.parity
// TILES2: wgmma.mma_async
// TILES2: "cp.async.bulk.commit_group;"
// TILES2: scf.if
// TILES2-NOT: mbarrier.try_wait
// TILES2-NOT: wgmma
// TILES2: "cp.async.bulk.commit_group;"
// TILES2-NOT: wgmma
// TILES2: "cp.async.bulk.wait_group.read 0;"
// TILES2-NEXT: }
// TILES2-NEXT: gpu.return
func.func @f16_d128(%q: tensor<?x?x128xf16>, %k: tensor<?x?x128xf16>, %v: tensor<?x?x128xf16>) -> (tensor<?x?x128xf16>, tensor<?x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v : tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?x128xf16> -> tensor<?x?x128xf16>, tensor<?x?xf32>
  return %o, %lse : tensor<?x?x128xf16>, tensor<?x?xf32>
}
