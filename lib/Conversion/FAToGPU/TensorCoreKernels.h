//===- TensorCoreKernels.h - mma.sync kernels of convert-fa-to-gpu -*- C++ -*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// The tensor-core (sm_80 mma.sync) kernel bodies of convert-fa-to-gpu. See
// TensorCoreForward.cpp for the algorithm.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_CONVERSION_FATOGPU_TENSORCOREKERNELS_H
#define FA_LIB_CONVERSION_FATOGPU_TENSORCOREKERNELS_H

#include "KernelUtils.h"

#include "fa/Dialect/FA/IR/FA.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/Support/MathExtras.h"

namespace mlir {
namespace fa {
namespace gpukernel {

/// Row padding, in elements, of the K/V tiles in workgroup memory (16 bytes
/// for f16/bf16): ldmatrix reads without bank conflicts.
inline constexpr int64_t kTensorCoreRowPad = 8;

/// Bytes of one column of 8 x 16-byte core matrices (16-byte chunk c of
/// every row) of a `rows`-row wgmma tile: 64 bytes of padding shift
/// adjacent columns by half a bank row, so that 8 lanes writing 4 rows of
/// two adjacent chunks hit distinct banks.
inline int64_t wgmmaColumnBytes(int64_t rows) { return rows * 16 + 64; }

/// The static facts that shape a tensor-core forward kernel.
struct TensorCoreForwardShape {
  Type elt;  // q/k/v element type: f16 or bf16
  Type oElt; // o element type
  int64_t d, dv;
  bool hasLse;
  CausalKind causal;
  float scale;
  int64_t numWarps;      // warps per block
  int64_t mTilesPerWarp; // m16 tiles (16 query rows each) per warp
  int64_t blockN;        // keys per tile, a multiple of 16
  /// Q tile in workgroup memory, its A fragments loaded by ldmatrix at each
  /// use; otherwise they stay in registers for the whole key loop.
  bool qInShared;
  /// The Hopper kernel of WgmmaForward.cpp (sm_90a wgmma; numWarps a
  /// multiple of 4, mTilesPerWarp 1, Q always in workgroup memory).
  bool wgmma = false;
  /// wgmma kernel: K/V stages in workgroup memory (2 or 3): K_{j+s-1} and
  /// V_{j+s-1} load while block j is computed.
  int64_t wgmmaStages = 2;
  /// wgmma kernel: Q/K/V tiles by TMA from the tensor maps of the kernel's
  /// last three arguments, completing on mbarriers (unpadded columns);
  /// otherwise by cp.async.
  bool tma = false;
  /// TMA wgmma kernel: one more warpgroup (warps numWarps to numWarps + 3)
  /// whose first thread issues every TMA load, with its registers given to
  /// the consumers (setmaxnreg); the numWarps consumer warps release each
  /// K/V stage on an "empty" mbarrier once their products have read it, so
  /// the block needs no block barrier in its loop (FlashAttention-3,
  /// Section 3.1). (ptxas budgets registers per whole warpgroup: a lone
  /// producer warp would cost the consumers as much.)
  bool producerWarp = false;
  /// With producerWarp and two or more consumer warpgroups: the warpgroups
  /// take turns issuing their products (named barriers 1, 2, ...), so that
  /// one's softmax runs while another's products are on the tensor cores
  /// (FlashAttention-3, Section 3.1, "pingpong scheduling").
  bool pingpong = false;
  /// With producerWarp and without pingpong: query tiles per GPU block (1
  /// or 2; AttentionKernelOptions::tilesPerBlock), each with its own Q
  /// buffer and "full" barrier.
  int64_t tilesPerBlock = 1;
  /// With producerWarp, tma, tmaStoreO and without pingpong
  /// (AttentionKernelOptions::persistent): a persistent grid of
  /// min(query tiles x batch, resident blocks) blocks, each taking the
  /// tiles ctaid.x, ctaid.x + nctaid.x, ... in turn; two Q buffers, each
  /// with a "full" and an "empty" barrier (tilesPerBlock stays 1).
  bool persistent = false;

  int64_t blockM() const { return 16 * mTilesPerWarp * numWarps; }
  /// TMA wgmma kernel with the producer warpgroup, o in q's element type
  /// and head_dim_v == head_dim (a multiple of 64): each consumer warp
  /// writes its 16 rows of o, swizzled, over its own rows of the Q tile
  /// (no product reads them after the last S) and stores them with TMA
  /// (`cp.async.bulk.tensor` through o's tensor map, boxes of 64 columns x
  /// 16 rows, 128-byte swizzle), as FlashAttention-3's epilogue does
  /// (Shah et al. 2024, Section 3.1). Otherwise o leaves by st.global.
  bool tmaStoreO() const {
    return tma && producerWarp && oElt == elt && dv == d && d % 64 == 0;
  }
  /// The tensor maps that close a TMA kernel's argument list: q, k, v, and
  /// o with tmaStoreO.
  int64_t numTensorMaps() const { return tma ? 3 + (tmaStoreO() ? 1 : 0) : 0; }
  /// Threads per block: the consumer warps and the producer warpgroup.
  int64_t threads() const { return 32 * (numWarps + (producerWarp ? 4 : 0)); }
  /// TMA wgmma kernel: mbarriers in workgroup memory: Q, one "full" barrier
  /// per K and per V stage, with producerWarp one "empty" barrier per K
  /// and per V stage, then those of the other Q buffers (tilesPerBlock).
  int64_t numBarriers() const {
    return tma ? 1 + (producerWarp ? 4 : 2) * wgmmaStages + qBuffers() - 1 +
                     (persistent ? 2 : 0)
               : 0;
  }
  /// Q tiles in workgroup memory: one per tile of the block, two when
  /// persistent (the next tile's Q lands while this one's o leaves).
  int64_t qBuffers() const { return persistent ? 2 : tilesPerBlock; }
  /// TMA wgmma kernel with one query tile per block under causal: the
  /// blocks run longest first (longestFirstBlock, WgmmaFragments.h).
  bool longestFirst() const {
    return wgmma && tma && causal != CausalKind::none && tilesPerBlock == 1 &&
           !persistent;
  }
  /// longestFirst with the producer warpgroup: the block's query tile and
  /// batch entry (two u32) wait in workgroup memory after the mbarriers,
  /// where the consumers' idle-warpgroup test and epilogue read them back.
  bool storesBlockPosition() const { return longestFirst() && producerWarp; }
  /// TMA wgmma kernel with the producer warpgroup, two query tiles per block
  /// or longestFirst: once the block's loads are issued, the producer
  /// prefetches into L2 the Q tiles of the block launched about when this
  /// one ends (launch index + %nsmid), so that its first Q load does not
  /// wait for DRAM (H200, bf16: +0.3-0.8% at D 128, +1.1% at D 64 causal
  /// T 2k; the one-tile D 64 kernel without a mask gained nothing).
  bool prefetchesNextQ() const {
    return wgmma && tma && producerWarp && !persistent &&
           (tilesPerBlock == 2 || longestFirst());
  }
  /// Bytes of one column of core matrices of a `rows`-row wgmma tile: TMA
  /// writes a box densely (rows x 16 bytes); cp.async columns are padded.
  int64_t columnBytes(int64_t rows) const {
    return tma ? rows * 16 : wgmmaColumnBytes(rows);
  }
};

/// Registers per thread of a producer warpgroup after setmaxnreg.dec
/// (FlashAttention-3's count for two consumer warpgroups).
inline constexpr int64_t kProducerRegisters = 24;

/// Registers per thread at launch of a `threads`-thread block that ptxas
/// fits one to a multiprocessor (65536 registers, multiples of 8 per
/// thread, at most 255): what `.maxntid` makes it assume.
inline int64_t launchRegisters(int64_t threads) {
  return std::min<int64_t>(255, 65536 / threads / 8 * 8);
}

/// Registers per thread the `warps` consumer warps of a block with a
/// producer warpgroup take by setmaxnreg.inc: the block's launch
/// allocation less the producer's after its setmaxnreg.dec, in multiples
/// of 8, at most 240 (setmaxnreg.inc only takes what the block gave back:
/// asking more waits forever). At or above the launch count (one consumer
/// warpgroup) neither setmaxnreg runs and this is the launch count.
inline int64_t consumerRegisters(int64_t warps) {
  const int64_t launch = launchRegisters(32 * (warps + 4));
  if (launch >= 240)
    return launch;
  return std::min<int64_t>(
      240, (launch * 32 * (warps + 4) - 128 * kProducerRegisters) /
               (32 * warps) / 8 * 8);
}

/// TMA tiles of `columns` 2-byte elements per row are stored with the
/// 128-byte swizzle (64-byte when a row is 64 bytes: head dim 32), in
/// blocks of swizzleBytes / 2 columns, as the tensor maps load them and
/// the wgmma descriptors read them.
inline int64_t tmaSwizzleBytes(int64_t columns) {
  return std::min<int64_t>(128, columns * 2);
}

/// The function attribute that records the number of tensor-map arguments
/// that close a TMA kernel's argument list until fa-lower-tensor-map-params
/// makes them by-value parameters.
inline constexpr llvm::StringLiteral kTensorMapParamsAttrName =
    "fa.tensor_map_params";

/// Byte offsets of the tiles in the kernel's dynamic workgroup memory and
/// its size: [Q: blockM x (D + pad),] K: blockN x (D + pad),
/// V: blockN x (Dv + pad), 2-byte elements. With TMA, the mbarriers (8
/// bytes each, TensorCoreForwardShape::numBarriers) follow at
/// barrierOffset, then with storesBlockPosition the block's tile and batch
/// entry (two u32).
struct TensorCoreSharedLayout {
  int64_t qOffset, kOffset, vOffset, barrierOffset, bytes;
};

inline TensorCoreSharedLayout
tensorCoreSharedLayout(const TensorCoreForwardShape &ks) {
  TensorCoreSharedLayout l;
  l.qOffset = 0;
  if (ks.wgmma) {
    // Canonical wgmma tiles (columns of core matrices, columnBytes
    // apart): Q (one buffer per tile of the block), then the stages of K,
    // then those of V.
    l.kOffset = ks.qBuffers() * ks.d / 8 * ks.columnBytes(ks.blockM());
    l.vOffset =
        l.kOffset + ks.wgmmaStages * ks.d / 8 * ks.columnBytes(ks.blockN);
    l.barrierOffset =
        l.vOffset + ks.wgmmaStages * ks.dv / 8 * ks.columnBytes(ks.blockN);
    l.bytes = l.barrierOffset + 8 * ks.numBarriers() +
              (ks.storesBlockPosition() ? 8 : 0);
    return l;
  }
  l.kOffset =
      ks.qInShared ? ks.blockM() * (ks.d + kTensorCoreRowPad) * 2 : 0;
  l.vOffset = l.kOffset + ks.blockN * (ks.d + kTensorCoreRowPad) * 2;
  l.bytes = l.vOffset + ks.blockN * (ks.dv + kTensorCoreRowPad) * 2;
  l.barrierOffset = l.bytes;
  return l;
}


/// Fills `func` (arguments q, k, v, o[, lse] as rank-3 [batch, T, D] memrefs
/// with unit innermost stride; launched with tensorCoreSharedLayout(ks).bytes
/// of dynamic workgroup memory) with the FlashAttention-2 forward on
/// mma.sync tensor cores.
void buildTensorCoreForwardBody(OpBuilder &b, Location loc, gpu::GPUFuncOp func,
                                const TensorCoreForwardShape &ks);

/// Fills `func` (as buildTensorCoreForwardBody; ks.wgmma set) with the
/// forward on sm_90a warpgroup MMA (WgmmaForward.cpp).
void buildWgmmaForwardBody(OpBuilder &b, Location loc, gpu::GPUFuncOp func,
                           const TensorCoreForwardShape &ks);

/// The static facts that shape one tensor-core backward kernel
/// (TensorCoreBackward.cpp). For `_dkdv`, warps own key rows and the loop
/// runs over query tiles of `dkdvBlockM` rows; for `_dq`, warps own query
/// rows and the loop runs over key tiles of `dqBlockN` rows.
struct TensorCoreBackwardShape {
  Type elt; // q/k/v/do element type: f16 or bf16
  int64_t d, dv;
  CausalKind causal;
  float scale;
  int64_t numWarps;
  int64_t mTilesPerWarp; // m16 tiles (16 own rows each) per warp
  int64_t dkdvBlockM;    // _dkdv: queries per tile
  int64_t dqBlockN;      // _dq: keys per tile
  /// The block's own rows (K and V for _dkdv, Q and dO for _dq) as tiles in
  /// workgroup memory instead of register fragments.
  bool operandsInShared;
};

/// Byte offsets of a backward kernel's tiles in its dynamic workgroup
/// memory: its own two operands (when operandsInShared), then the two
/// double-buffered operands of the loop.
struct TensorCoreBackwardLayout {
  int64_t ownFirst, ownSecond, loopFirst, loopSecond, bytes;
};

TensorCoreBackwardLayout
tensorCoreBackwardLayout(const TensorCoreBackwardShape &ks, bool dkdv);

/// `_dkdv`: arguments q, k, v, do, lse, delta, dk, dv.
void buildTensorCoreDkDvBody(OpBuilder &b, Location loc, gpu::GPUFuncOp func,
                             const TensorCoreBackwardShape &ks);

/// `_dq`: arguments q, k, v, do, lse, delta, dq.
void buildTensorCoreDqBody(OpBuilder &b, Location loc, gpu::GPUFuncOp func,
                           const TensorCoreBackwardShape &ks);

/// The static facts that shape one sm_90a wgmma backward kernel
/// (WgmmaBackward.cpp). Warpgroup w of the block owns rows [64 w, 64 w + 64)
/// of its `ownRows()` rows (keys for `_dkdv`, queries for `_dq`) and the
/// loop runs over tiles of `tile` rows of the other side (queries for
/// `_dkdv`, keys for `_dq`), `stages` of them in workgroup memory.
struct WgmmaBackwardShape {
  Type elt; // q/k/v/do element type: f16 or bf16
  int64_t d, dv;
  CausalKind causal;
  float scale;
  int64_t numWarps; // 4, 8, 12 or 16
  int64_t tile;     // rows per loop tile, a multiple of 16
  int64_t stages;   // loop tiles in workgroup memory: 2 or 3
  bool dkdv;        // `_dkdv` (else `_dq`)
  /// Tiles by TMA from the tensor maps of q, k, v and do (the kernel's
  /// last four arguments, or the four before dq_accum's with dqBulk())
  /// into swizzled workgroup memory, completing on mbarriers; otherwise by
  /// cp.async into the canonical no-swizzle layout.
  bool tma = false;
  /// `_dkdv` only: also dQ += scale dS K_j for its key block, as f32 atomic
  /// adds into dq_accum (argument 8, before the tensor maps), from dS^T
  /// staged in workgroup memory (FlashAttention-2's backward with dq
  /// atomics, Dao 2023, Algorithm 2 lines 13-14); head dim 64 or 128.
  bool dqAtomic = false;
  /// `_dkdv` with TMA: one more warpgroup (the last) issues every load and
  /// copies the lse/delta columns; the consumers release each stage on an
  /// "empty" mbarrier (FlashAttention-3, Section 3.1).
  bool producerWarp = false;
  /// See pairsKeyBlocks().
  bool pairKeyBlocks = false;
  /// Bits of the kernel's `index` type (the gpu.module's DLTI data layout):
  /// 64, or 32 with TMA (lse/delta/dq_accum addresses then come from the
  /// memref descriptors' 64-bit pointers: alignedPointerOf).
  int64_t indexBitwidth = 64;

  int64_t ownRows() const { return 16 * numWarps; }
  /// TMA: the mbarriers (own first, own second, one per stage of each loop
  /// tile half; with producerWarp then one "empty" barrier per stage of
  /// each half).
  int64_t numBarriers() const {
    return tma ? 2 + 2 * stages + (producerWarp ? 2 * stages : 0) : 0;
  }
  int64_t threads() const { return 32 * (numWarps + (producerWarp ? 4 : 0)); }
  /// Bytes of a `rows` x `cols` tile of 2-byte elements in workgroup
  /// memory: dense (TMA, swizzled) or in padded columns of core matrices
  /// (cp.async).
  int64_t tileBytes(int64_t rows, int64_t cols) const {
    return tma ? rows * cols * 2 : cols / 8 * wgmmaColumnBytes(rows);
  }
  /// dqAtomic: bytes of one of the two dS^T buffers (ownRows x tile 2-byte
  /// elements in the canonical no-swizzle layout, no padding).
  int64_t dsBufferBytes() const { return dqAtomic ? ownRows() * tile * 2 : 0; }
  /// dqAtomic: the form of the dQ products. With block-m a multiple of 64,
  /// dQ = dS K (M = 64 queries per product, N = head-dim columns), whose
  /// fragments hold pairs of adjacent head-dim columns (one f32x2 atomic
  /// each); with 32-query tiles (D = 128 by default, whose 64-query tiles
  /// do not fit the registers), dQ^T = K^T dS^T (M = 64 head-dim rows, N =
  /// queries; one f32 atomic per value).
  bool dqByQueries() const { return tile % 64 == 0; }
  /// dqAtomic: M blocks of 64 of the dQ (dQ^T) product of a tile.
  int64_t dqBlocks() const { return dqByQueries() ? tile / 64 : d / 64; }
  /// dqAtomic: the products of one warpgroup per tile. Warpgroup w takes M
  /// block w when there are as many blocks as warpgroups, every block with
  /// one warpgroup, or N columns [w N, (w + 1) N) of the one block (N =
  /// dqColumns()).
  int64_t dqProducts() const {
    return std::max<int64_t>(1, dqBlocks() / (numWarps / 4));
  }
  int64_t dqColumns() const {
    int64_t n = dqByQueries() ? d : tile;
    return dqBlocks() >= numWarps / 4 ? n : n / (numWarps / 4);
  }
  /// dqAtomic with TMA and dQ = dS K (dqByQueries(), dqColumns() a
  /// multiple of 32): each warp stages its 16 query rows x dqColumns() of
  /// dQ per product in workgroup memory (conflict-free fragment stores; the
  /// form: dqFragmentOrder), and one lane adds each staged box to dq_accum
  /// with a TMA reduction (cp.reduce.async.bulk.tensor .add) through
  /// dq_accum's tensor map (the kernel's fifth map), in place of one f32
  /// atomic per value pair. FlashAttention-3 (Shah et al. 2024, Section 3)
  /// adds dQ with TMA reductions in the same way.
  bool dqBulk() const {
    return dqAtomic && tma && dqByQueries() && dqColumns() % 32 == 0;
  }
  /// dqBulk with the producer warpgroup: each product's dQ is staged
  /// unscaled as one unswizzled box of 16 rows x dqColumns() f32 with the
  /// n8 blocks of each 32-column group in a row-dependent order
  /// (DqAccumLayout; no selects or multiplies per value, one reduction per
  /// product), which dq_accum keeps and _dq_convert undoes. Otherwise scale
  /// * dQ goes in order, as 128-byte-swizzled boxes of 16 rows x 32 f32.
  /// H200, bf16, T 2k-16k: D 128 causal +4-5%; without the producer, D 128
  /// lost 1-2% and D 64 neither gained nor lost.
  bool dqFragmentOrder() const { return dqBulk() && producerWarp; }
  /// dqAtomic: each tile's dK += dS^T Q is issued from its packed dS^T
  /// registers at the end of the tile (the five-product form's other
  /// products unchanged), rather than from the dS^T buffer in workgroup
  /// memory in the next tile: 16 KiB (64-query tiles, two warpgroups) less
  /// workgroup-memory traffic per tile, where the wgmma operands and the dQ
  /// staging share the pipe. Measured on the H100 (bf16, T 2k-16k): D 128
  /// +1.5-5%, D 128 causal +1-9%, D 64 +0.2-2%, D 64 causal -2 to +4%
  /// (docs/PERFORMANCE.md, thirty-fourth session). Not with the producer
  /// warpgroup and 64-bit indices, where ptxas spilled 4 bytes of the
  /// causal D 128 consumer.
  bool dkFromRegisters() const {
    return dqAtomic && !(producerWarp && indexBitwidth == 64);
  }
  /// TMA _dkdv without a mask: when the loads of its last query tile are
  /// issued, the block prefetches into L2 the own K/V rows of the block
  /// launched about when it ends (launch index + %nsmid), so that the next
  /// block's first loads do not all wait for DRAM at once (the blocks run
  /// equally long and end in waves). H200, bf16, T 2k-8k: D 128 +3-4%,
  /// D 64 +1-2%. Under causal the blocks differ in length, the guess
  /// misses, and D 64 lost 3-4%: not there, except with pairsKeyBlocks()
  /// (blocks of about equal length; the first pass prefetches the second
  /// pass's own rows, the last the next block's).
  bool prefetchesNextOwn() const {
    return dkdv && tma && (causal == CausalKind::none || pairsKeyBlocks());
  }
  /// TMA _dkdv with the producer warpgroup under a causal mask: block x
  /// takes key blocks x and n - 1 - x one after the other (n =
  /// ceil(Tk / ownRows()); the middle block of an odd n alone), so that
  /// every block visits about n + 1 key blocks' worth of query tiles and the
  /// blocks end in waves, as without a mask (grid ceil(Tk / (2 ownRows()))).
  /// The loop tiles of both key blocks share one ring of stages, so that
  /// the producer loads the second one's first tiles while the consumers
  /// finish the first; the second key block's own K/V rows are prefetched
  /// into L2 with the first one's last loop tile.
  bool pairsKeyBlocks() const {
    return pairKeyBlocks && dkdv && tma && producerWarp &&
           causal != CausalKind::none;
  }
  /// dqBulk without a mask and with 128-query tiles: each key block starts
  /// its query loop at its own tile offset (WgmmaBackward.cpp).
  bool rotateQueryTiles() const {
    return dqBulk() && causal == CausalKind::none && tile >= 128;
  }
  /// dqBulk: bytes of the staging boxes (every warp's, every product's).
  int64_t dqStageBytes() const { return dqBulk() ? tile * d * 4 : 0; }
  /// The operands of the tensor maps that close the argument list, in
  /// order: q, k, v, do (TMA), then dq_accum (dqBulk). The kernel's
  /// `tensor_map` manifest lines are made from this list too.
  SmallVector<StringRef, 5> tensorMapOperands() const {
    SmallVector<StringRef, 5> operands;
    if (tma)
      operands = {"q", "k", "v", "do"};
    if (dqBulk())
      operands.push_back("dq_accum");
    return operands;
  }
  int64_t numTensorMaps() const { return tensorMapOperands().size(); }
};

/// Byte offsets of a wgmma backward kernel's tiles in its dynamic
/// workgroup memory: its own rows (K then V for _dkdv, Q then dO for _dq),
/// then the stages of the loop's first (Q or K, head dim D) and second (dO
/// or V, head dim Dv) tiles, then (_dkdv) the stages of the query tiles'
/// lse and delta (f32), then (dqAtomic) two dS^T buffers, then (dqBulk)
/// the dQ staging rows, then (TMA) the mbarriers, 8 bytes each: own first,
/// own second, one per first-tile stage, one per second-tile stage.
struct WgmmaBackwardLayout {
  int64_t ownFirst, ownSecond, loopFirst, loopSecond;
  int64_t firstStageBytes, secondStageBytes, columnValues, dsBuffers, dqStage,
      barrierOffset, bytes;
};

inline WgmmaBackwardLayout wgmmaBackwardLayout(const WgmmaBackwardShape &ks) {
  WgmmaBackwardLayout l;
  l.ownFirst = 0;
  l.ownSecond = ks.tileBytes(ks.ownRows(), ks.d);
  l.loopFirst = l.ownSecond + ks.tileBytes(ks.ownRows(), ks.dv);
  l.firstStageBytes = ks.tileBytes(ks.tile, ks.d);
  l.secondStageBytes = ks.tileBytes(ks.tile, ks.dv);
  l.loopSecond = l.loopFirst + ks.stages * l.firstStageBytes;
  l.columnValues = l.loopSecond + ks.stages * l.secondStageBytes;
  l.dsBuffers = l.columnValues + (ks.dkdv ? ks.stages * 2 * ks.tile * 4 : 0);
  // The staging boxes start on a 1024-byte boundary (the 128-byte swizzle
  // repeats every 8 rows of 128 bytes).
  l.dqStage = llvm::alignTo(l.dsBuffers + 2 * ks.dsBufferBytes(),
                            ks.dqBulk() ? 1024 : 8);
  l.barrierOffset = l.dqStage + ks.dqStageBytes();
  l.bytes = l.barrierOffset + 8 * ks.numBarriers();
  return l;
}

/// `_delta` of the tensor-core backward (arguments o, do, delta[,
/// dq_accum]; o and do with unit innermost stride and 16-byte aligned
/// rows): delta = rowsum(dO o) in f32, Dv / 8 lanes per row (one 16-byte
/// load of each operand per lane, xor-shuffle sum), `threads` / (Dv / 8)
/// rows per block. With a fourth argument (f32 [batch, Tq, D], unit
/// innermost stride, D a multiple of Dv / 8 elements) it also zeroes that
/// row of dq_accum, D / (Dv / 8) elements per lane.
void buildTensorCoreDeltaBody(OpBuilder &b, Location loc, gpu::GPUFuncOp func,
                              int64_t dv, int64_t threads);

/// How `_dkdv` leaves dq_accum for `_dq_convert`: `scale` is the factor
/// still to apply (1 where `_dkdv` added scale dQ), and with
/// `fragmentOrder` row r holds column c of each 32-column group at c ^ 8 (r
/// % 4): the order in which the dqBulk `_dkdv` stages its wgmma fragments
/// (WgmmaBackwardShape::dqBulk).
struct DqAccumLayout {
  float scale = 1.0f;
  bool fragmentOrder = false;
};

/// `_dq_convert` of the wgmma backward with dq atomics (arguments dq_accum
/// (f32) and dq, [batch, Tq, D] with unit innermost stride): dq = scale x
/// dq_accum (columns put back in order with layout.fragmentOrder) in dq's
/// element type, D / 8 lanes per row (one 32-byte load and one store of 8
/// elements per lane), `threads` / (D / 8) rows per block.
void buildTensorCoreConvertBody(OpBuilder &b, Location loc, gpu::GPUFuncOp func,
                                int64_t d, int64_t threads,
                                const DqAccumLayout &layout);

/// `_dkdv` (arguments q, k, v, do, lse, delta, dk, dv[, dq_accum with
/// ks.dqAtomic]) or `_dq` (q, k, v, do, lse, delta, dq) on sm_90a
/// warpgroup MMA; launched with
/// wgmmaBackwardLayout(ks).bytes of dynamic workgroup memory.
void buildWgmmaBackwardBody(OpBuilder &b, Location loc, gpu::GPUFuncOp func,
                            const WgmmaBackwardShape &ks);

} // namespace gpukernel
} // namespace fa
} // namespace mlir

#endif // FA_LIB_CONVERSION_FATOGPU_TENSORCOREKERNELS_H
