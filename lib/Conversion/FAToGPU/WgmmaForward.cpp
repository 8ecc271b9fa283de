//===- WgmmaForward.cpp - fa.attention on Hopper warpgroup MMA -----------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// The Hopper forward kernel of convert-fa-to-gpu (`wgmma=true`, chosen by
// fa-to-ptx for sm_90a): FlashAttention-2's forward pass (Dao 2023,
// Algorithm 1) with the products on sm_90a's asynchronous warpgroup MMA
// (`wgmma.mma_async`, PTX ISA 8.0, "Asynchronous Warpgroup Level Matrix
// Multiply-Accumulate Instructions"), as FlashAttention-3 (Shah et al. 2024,
// Section 3) feeds it: S = Q K^T with both operands in workgroup memory,
// O += P V with P from registers.
//
// Block = `num_warps / 4` warpgroups of 128 threads; warpgroup w owns query
// rows [64 w, 64 w + 64) of the block (block_m = 16 * num_warps), warp i of
// the block rows [16 i, 16 i + 16). The accumulator fragments of
// wgmma.m64nNk16 give lane 4 g + t of warp i rows 16 i + g and 16 i + g + 8,
// columns 8 n + 2t (+1) of each n8 slice: the mma.sync C layout, so the
// online softmax, the masking and the P-to-A-fragment conversion are the
// ones of TensorCoreForward.cpp.
//
//   cp.async Q tile, K_0, V_0 (group 0); K_1, V_1 (group 1)
//   for each key block j (causal: blocks past the diagonal never visited):
//     wait for all but the newest group; fence.proxy.async; barrier
//     S = Q K_j^T          D/16 wgmma (A, B from workgroup memory)
//     mask; online softmax; O *= alpha where a row max moved; P in regs
//     O += P V_j           block_n/16 wgmma (A from registers, B = V_j
//                          N-major from workgroup memory)
//     (K_{j+s-1} and V_{j+s-1} load into the stage of block j - 1 once
//     every warpgroup is done with it; s = 2 or 3 stages)
//   o = O / l, lse = m ln 2 + ln l (with the producer warpgroup and o in
//   q's type and head dim, a multiple of 64: each warp writes its rows of
//   o over its rows of the Q tile and stores them by TMA, tmaStoreO)
//
// Tiles use wgmma's canonical layout without swizzling (PTX ISA, "Shared
// Memory Matrix Layout"): 8 rows x 16 bytes core matrices, 128 contiguous
// bytes each; the 16-byte chunk c of tile row r lives at byte
// c * col + (r / 8) * 128 + (r % 8) * 16, col = rows * 16 + 64 (a column of
// cores plus 64 bytes of padding against bank conflicts of the copies).
// For Q and K (K-major operands) cores adjacent along the head dim are
// col bytes apart (leading byte offset) and cores adjacent along rows 128
// (stride byte offset); V is the N-major B operand of P V (N = head dim,
// K = keys): cores adjacent along keys are 128 bytes apart (leading), along
// the head dim col (stride). See CanonicalCopy for the cp.async mapping.
//
// With `producer-warp` (TMA only; FlashAttention-3, Section 3.1) the block
// has one more warpgroup, warps W to W + 3 after the W consumer warps. It
// lowers its registers to kProducerRegisters (setmaxnreg.dec) and its
// first thread loads Q, then K_j and V_j for every visited key block,
// each after waiting on its stage's "empty" mbarrier; the consumers raise
// theirs (setmaxnreg.inc, consumerRegisters) and arrive on a stage's
// empty barrier (every consumer thread) after the wgmma wait that read
// it, so the key loop has no block barrier and the warpgroups drift
// apart; a consumer warpgroup whose rows all lie past Tq exits at once
// (the empty barriers count 128 arrivals per other consumer warpgroup).
// With `pingpong` the consumer warpgroups also take turns issuing their
// products (named barriers 1 + w), and all of them stay. Without it, under
// causal and with one tile per block, each consumer warpgroup runs only the
// key blocks its own 64 rows see (perWarpgroupKeys).
//
// With `tilesPerBlock` 2 (producer, no pingpong) a block computes two query
// tiles one after the other: without a mask 2x and 2x + 1, under causal
// the pair n - 1 - x and x of the n = ceil(Tq / block_m) tiles (equal key
// counts per block, up to the middle tile of an odd n, which is alone).
// Each tile has its own Q buffer and "full" barrier; the producer loads
// both Q tiles first, then the K/V tiles of tile 0 and of tile 1 through
// one ring of stages (tile 1's key block j in ring slot n_0 + j, n_0 the
// key blocks of tile 0), so that tile 1's first loads land while the
// consumers finish tile 0 (its last P V, whose V stage they release, and
// its o stores, whose reads they wait for only before the block exits).
// The boundary is peeled: when both tiles visit a key block, the consumers
// issue tile 1's S_0 right after tile 0's last P V and write tile 0's
// epilogue while it runs (FlashAttention-3's consumers likewise keep the
// tensor cores busy across a tile's end, Section 3.1).
// No warpgroup exits early there (the other tile may have rows for it).
//
// With `persistent` (producer, no pingpong, o stored by TMA) the grid is
// min(query tiles x batch, resident blocks) and block x takes tiles
// L = x, x + nctaid.x, ... of the virtual grid of n query tiles x batch
// entries (L % n, L / n), one per turn; under causal, with n even and at
// least as many pairs as blocks, the pairs (n - 1 - x, x) strided, two
// turns each, else longestFirstBlock on that grid (see setPersistentTile);
// FlashAttention-3's persistent kernel (Shah et al. 2024, Section 3.1)
// with a static tile order. Q has two buffers (turn i uses buffer
// i % 2, phase (i / 2) % 2), each with a "full" barrier and an "empty"
// one on which every consumer warp's lane 0 arrives once the tile's o
// stores have read the buffer (the epilogue stages o there; at a peeled
// boundary lane 0 waits for those reads only after the next tile's
// prologue, so that the wait overlaps S_0 and its softmax: H100, bf16/f16
// D 128, +1.7-2.0% at T 2k, +1% at T 4k-8k without a mask); the producer
// waits on it before loading a later tile's Q, and loads every turn's Q
// (even of a tile without key blocks, so that the phases stay one per
// turn). The K/V ring slots count on across turns (each side carries the
// slot of the tile's first key block). The consumers' turn loop ends the
// previous tile at the start of each turn: with one or two consumer
// warpgroups (240 registers or more) peeled as above when both tiles
// visit a key block,
// else (and with three warpgroups, whose registers do not hold S_0
// across the epilogue) the previous tile's last P V and epilogue, then
// this tile's prologue; each key loop keeps its tile's values fixed. The
// last turn's tile ends after the loop.
//
// wgmma, its fences and the commit/wait are inline PTX (MLIR 22's
// nvvm.wgmma.mma_async takes A only from workgroup memory); the fence and
// the wait take the accumulators as tied operands so that no register
// access moves across them.
//
//===----------------------------------------------------------------------===//

#include "TensorCoreKernels.h"
#include "WgmmaFragments.h"

using namespace mlir;
using namespace mlir::fa;
using namespace mlir::fa::gpukernel;

void mlir::fa::gpukernel::buildWgmmaForwardBody(
    OpBuilder &b, Location loc, gpu::GPUFuncOp func,
    const TensorCoreForwardShape &ks) {
  FragmentBuilder fb(b, loc, ks.elt);
  Type f32 = fb.f32, i32 = b.getI32Type(), i64 = b.getI64Type();
  const int64_t W = ks.numWarps, threads = 32 * W; // consumer threads
  // A producer warpgroup (warps W to W + 3) issues the loads; the
  // consumers release the stages on "empty" mbarriers (ks.tma is set with
  // it).
  const bool producer = ks.producerWarp;
  const int64_t warpgroups = W / 4;
  const bool pingpong = ks.pingpong; // set only with two or more warpgroups
  // Consumer warpgroups whose query rows all lie past Tq (the last query
  // block, when block_m does not divide Tq) exit at once, and the stage
  // releases count only the others: with the producer warpgroup (no block
  // barrier after the split) and without pingpong's turns.
  // Query tiles per block (ks.tilesPerBlock, 1 or 2; 2 only with the
  // producer and without pingpong): the tile being built is the one whose
  // values i0 ... qBase below hold (setTile moves them).
  const int64_t tiles = ks.tilesPerBlock;
  // Persistent (ks.persistent): the block takes query tiles ctaid.x +
  // i nctaid.x in turn (tiles stays 1); see the file comment.
  const bool persistent = ks.persistent;
  // (Its Q buffers are freed by the o stores' TMA epilogue.)
  assert((!persistent ||
          (producer && !pingpong && tiles == 1 && ks.tmaStoreO())) &&
         "persistent needs the producer, no pingpong, one tile per turn and "
         "the TMA o store");
  const bool idleExit =
      producer && !pingpong && warpgroups > 1 && tiles == 1 && !persistent;
  // Under causal, with the producer and without pingpong's turns (the
  // warpgroups drift apart), one tile per block, not persistent: each
  // consumer warpgroup runs only the key blocks its own 64 rows see, and
  // its mask loop starts at its own diagonal, rather than the block's
  // (FlashAttention-2, Dao 2023, Section 3.1, skips the blocks past each
  // row block's diagonal; here the row block is the warpgroup). A
  // warpgroup that stops early does not release the stages of the blocks
  // it skips, nor (one tile per block: nothing refills it) the V stage of
  // its own last block. The producer loads V of block jb <= n - 1 (the
  // tile's n blocks) after the V releases of block jb - stages, so it
  // needs every warpgroup's V releases up to n - 1 - stages; a warpgroup
  // running n_w blocks gives them up to n_w - 2. So a warpgroup may skip
  // at most stages - 1 blocks, and it skips at most
  // ceil((block_m - 64) / block_n) of the last ones, hence the bound
  // (with one more, the last warpgroup would wait forever on a V load).
  const bool perWarpgroupKeys =
      idleExit && ks.causal != CausalKind::none &&
      (16 * W - 64 + ks.blockN - 1) / ks.blockN < ks.wgmmaStages;
  // Registers move from the producer warpgroup to the consumers unless the
  // launch count already gives the consumers what they may take.
  const bool reallocate =
      producer && consumerRegisters(W) > launchRegisters(ks.threads());
  const int64_t blockM = 16 * W, blockN = ks.blockN;
  const int64_t dChunks = ks.d / 16; // k16 steps of S = Q K^T
  const int64_t sTiles = blockN / 8; // n8 slices of S
  const int64_t oTiles = ks.dv / 8;  // n8 slices of O

  Value q = func.getArgument(0), k = func.getArgument(1),
        v = func.getArgument(2), o = func.getArgument(3);
  Value lse = ks.hasLse ? func.getArgument(4) : Value();
  b.setInsertionPointToStart(&func.front());

  TensorCoreSharedLayout layout = tensorCoreSharedLayout(ks);
  const int64_t stages = ks.wgmmaStages;
  const int64_t colM = ks.columnBytes(blockM),
                colN = ks.columnBytes(blockN);
  const int64_t qTileBytes = ks.d / 8 * colM; // one Q buffer
  const int64_t kStageBytes = ks.d / 8 * colN, vStageBytes = ks.dv / 8 * colN;
  WgmmaSharedMemory shared = wgmmaSharedMemory(fb, layout.bytes);
  Value tile = shared.tile, smemUnits = shared.units;

  Value c0 = fb.cstIndex(0), c1 = fb.cstIndex(1);
  Value zero = fb.cstF32(0.0), ninf = fb.cstF32(kNegInf);
  Value tq = memref::DimOp::create(b, loc, q, 1);
  Value tk = memref::DimOp::create(b, loc, k, 1);
  // A static Tk through empty inline PTX, so that the kernel is the one of
  // a dynamic Tk: LLVM specialized the key loop of a constant Tk and ptxas
  // spilled (24-476 bytes of the two-tile D 128 kernel at Tk 640-4096;
  // the dynamic one does not).
  if (!ShapedType::isDynamic(cast<MemRefType>(k.getType()).getDimSize(1))) {
    Value bits = arith::IndexCastOp::create(b, loc, b.getI64Type(), tk);
    tk = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                    ptxWith(fb, "", ValueRange{bits}).front());
  }
  // Query tile r of this block: with one tile per block queryBlockIndex;
  // with two, 2x + r without a mask, and under causal the pair n - 1 - x
  // (r = 0, the longer) and x (r = 1) of the n = ceil(Tq / block_m) tiles,
  // so that every block sees about n + 1 key blocks.
  auto numQueryTiles = [&](FragmentBuilder &x) -> Value {
    return arith::CeilDivSIOp::create(x.b, x.loc, tq, x.cstIndex(blockM));
  };
  // One TMA tile per block under causal: the blocks run longest first
  // (longestFirstBlock: sections of batch entries whose K/V rows fit the L2
  // budget, each entry's last query tile first), so that the grid ends on
  // the short tiles. With the producer, thread 0 leaves the block's tile
  // and batch entry in workgroup memory (after the mbarriers), where the
  // consumers read them back rather than carrying them across the key loop
  // or dividing again (H200, bf16 D 64 causal, T 2k: the divisions
  // repeated lost 1% against the grid order, the slot gains 1%).
  const bool longestFirst = ks.longestFirst();
  auto asIndex = [&](FragmentBuilder &x, Value v) -> Value {
    return arith::IndexCastUIOp::create(x.b, x.loc, x.b.getIndexType(), v);
  };
  std::pair<Value, Value> longestFirst32; // (tile, entry), i32
  if (longestFirst)
    longestFirst32 =
        longestFirstBlock(fb, memref::DimOp::create(b, loc, k, 1),
                          (ks.d + ks.dv) * ks.elt.getIntOrFloatBitWidth() / 8,
                          /*heaviestLast=*/true);
  // Query tile r of block x with two tiles per block: 2x + r without a
  // mask, under causal the pair n - 1 - x (r = 0) and x (r = 1); in x's
  // integer type (index, or i32 from the special registers). `tileCount`
  // gives n (causal only).
  auto pairTile = [&](FragmentBuilder &x, Value bx, int64_t r,
                      llvm::function_ref<Value()> tileCount) -> Value {
    auto cst = [&](int64_t v) -> Value {
      return arith::ConstantOp::create(x.b, x.loc,
                                       x.b.getIntegerAttr(bx.getType(), v));
    };
    if (ks.causal == CausalKind::none)
      return arith::AddIOp::create(
          x.b, x.loc, arith::MulIOp::create(x.b, x.loc, bx, cst(tiles)),
          cst(r));
    if (r == 1)
      return bx;
    return arith::SubIOp::create(
        x.b, x.loc, arith::SubIOp::create(x.b, x.loc, tileCount(), cst(1)), bx);
  };
  auto tileQueryBlock = [&](FragmentBuilder &x, int64_t r) -> Value {
    if (longestFirst)
      return asIndex(x, longestFirst32.first);
    if (tiles == 1)
      return queryBlockIndex(x, ks.causal);
    return pairTile(x, gpu::BlockIdOp::create(x.b, x.loc, gpu::Dimension::x), r,
                    [&] { return numQueryTiles(x); });
  };
  // Whether tile 1 of this block exists (tiles == 2): 2x + 1 < n, or under
  // causal x < n - 1 - x (the middle tile of an odd n has no partner).
  auto secondTileExists = [&](FragmentBuilder &x) -> Value {
    Value bx = gpu::BlockIdOp::create(x.b, x.loc, gpu::Dimension::x);
    Value n = numQueryTiles(x);
    if (ks.causal == CausalKind::none)
      return x.cmpI(arith::CmpIPredicate::slt, tileQueryBlock(x, 1), n);
    return x.cmpI(arith::CmpIPredicate::slt, bx,
                  x.sub(x.sub(n, x.cstIndex(1)), bx));
  };
  Value queryBlock = tileQueryBlock(fb, 0);
  Value batch =
      longestFirst
          ? asIndex(fb, longestFirst32.second)
          : gpu::BlockIdOp::create(b, loc, gpu::Dimension::y).getResult();
  LaneIds ids = LaneIds::create(fb);
  Value warp = ids.warp, g = ids.g, t = ids.t, t2 = ids.t2;

  Value i0 = fb.mul(queryBlock, fb.cstIndex(blockM));
  Value warpRow0 = fb.add(i0, fb.mul(warp, fb.cstIndex(16)));
  auto rowOf = [&](FragmentBuilder &x, int64_t h) {
    return x.add(x.add(warpRow0, x.cstIndex(8 * h)), g);
  };

  VisibleKeys keys = visibleKeys(fb, ks.causal, i0, blockM, tq, tk);
  Value causalOffset = keys.causalOffset, kvEnd = keys.kvEnd;
  Value numKeyBlocks =
      arith::CeilDivSIOp::create(b, loc, kvEnd, fb.cstIndex(blockN));
  Value anyBlock = fb.cmpI(arith::CmpIPredicate::sgt, numKeyBlocks, c0);
  // The first row whose diagonal starts the masked key loop (null: i0).
  Value maskRow0;

  // Descriptors. cp.async (canonical no-swizzle layout): Q (A, K-major):
  // this warpgroup's 64 rows start at byte 1024 * warpgroup; k16 step kc
  // two core columns (2 * colM bytes) more. V (B, N-major): the leading
  // byte offset steps along K (keys: 128), the stride byte offset along N
  // (head dim: one core column, colN).
  //
  // TMA (swizzled layout: blocks of one swizzle row, `swizzle` bytes, per
  // row; 8-row atoms of 8 x swizzle bytes): Q and K (K-major) have their
  // 8-row groups 8 x swizzle bytes apart (stride byte offset; the leading
  // one is unused), k16 step kc at 32 bytes x (kc % steps per row) within
  // block kc / (steps per row); this warpgroup's Q rows at 64 x swizzle
  // bytes. V (N-major) has its 8-key groups 8 x swizzle bytes apart (stride
  // byte offset) and its blocks of head-dim columns blockN x swizzle bytes
  // apart (leading byte offset); a k16 step is 16 keys.
  const int64_t swizzleQK = ks.tma ? tmaSwizzleBytes(ks.d) : 0;
  const int64_t swizzleV = ks.tma ? tmaSwizzleBytes(ks.dv) : 0;
  Value warpgroup = arith::DivUIOp::create(b, loc, warp, fb.cstIndex(4));
  Descriptor qDesc =
      ks.tma ? makeDescriptor(fb, smemUnits, 16, 8 * swizzleQK, swizzleQK)
             : makeDescriptor(fb, smemUnits, colM, 128);
  const int64_t warpgroupRows = ks.tma ? 64 * swizzleQK : 1024;
  // The tile's Q buffer (and its "full" barrier, qBarrier) and the K/V
  // ring slots the block's earlier tiles used (null: none).
  int64_t qBuffer = 0;
  Value ringBase;
  // Persistent: the tile's Q buffer (index: 0 or 1, i = tile turn % 2)
  // and the parity of its use ((i / 2) % 2, i32); qBuffer is unused.
  Value qBufferV, qPhase;
  // Byte offset of the tile's Q buffer in workgroup memory (index).
  auto qBufferBytes = [&](FragmentBuilder &x) -> Value {
    if (qBufferV)
      return x.add(x.cstIndex(layout.qOffset),
                   x.mul(qBufferV, x.cstIndex(qTileBytes)));
    return x.cstIndex(layout.qOffset + qBuffer * qTileBytes);
  };
  auto makeQBase = [&](FragmentBuilder &x) {
    Value units =
        qBufferV
            ? arith::ShRUIOp::create(x.b, x.loc, qBufferBytes(x), x.cstIndex(4))
                  .getResult()
            : x.cstIndex((layout.qOffset + qBuffer * qTileBytes) >> 4);
    return qDesc.at(
        x, arith::IndexCastUIOp::create(
               x.b, x.loc, i64,
               x.add(x.mul(warpgroup, x.cstIndex(warpgroupRows >> 4)), units)));
  };
  Value qBase = makeQBase(fb);
  // Moves the tile values above to tile r (built at x's insertion point);
  // tile 1's ring slots follow tile 0's key blocks (`tile0KeyBlocks`).
  // The rows and key blocks of query tile `queryTile` (index).
  auto setTileRows = [&](FragmentBuilder &x, Value queryTile) {
    i0 = x.mul(queryTile, x.cstIndex(blockM));
    warpRow0 = x.add(i0, x.mul(warp, x.cstIndex(16)));
    numKeyBlocks = arith::CeilDivSIOp::create(
        x.b, x.loc, visibleKeys(x, ks.causal, i0, blockM, tq, tk).kvEnd,
        x.cstIndex(blockN));
    anyBlock = x.cmpI(arith::CmpIPredicate::sgt, numKeyBlocks, x.cstIndex(0));
  };
  auto setTile = [&](FragmentBuilder &x, int64_t r, Value tile0KeyBlocks) {
    setTileRows(x, tileQueryBlock(x, r));
    qBuffer = r;
    qBase = makeQBase(x);
    ringBase = r == 0 ? Value() : tile0KeyBlocks;
  };
  // (Persistent: also the tile's batch entry, its Q buffer and phase,
  // and its query tile index, i32, for the o store.)
  Value tileIndex32;
  struct TileValues {
    Value i0, warpRow0, numKeyBlocks, anyBlock, qBase, ringBase;
    int64_t qBuffer;
    Value batch, batch32, qBufferV, qPhase, tileIndex32;
  };
  // (batch and batch32 are defined below; the lambdas run after.)
  Value batch32;
  auto saveTile = [&] {
    return TileValues{i0,      warpRow0, numKeyBlocks, anyBlock,
                      qBase,   ringBase, qBuffer,      batch,
                      batch32, qBufferV, qPhase,       tileIndex32};
  };
  auto restoreTile = [&](const TileValues &t) {
    i0 = t.i0;
    warpRow0 = t.warpRow0;
    numKeyBlocks = t.numKeyBlocks;
    anyBlock = t.anyBlock;
    qBase = t.qBase;
    ringBase = t.ringBase;
    qBuffer = t.qBuffer;
    batch = t.batch;
    batch32 = t.batch32;
    qBufferV = t.qBufferV;
    qPhase = t.qPhase;
    tileIndex32 = t.tileIndex32;
  };
  // Persistent: the tile values of the block's turn `turn` (index), tile
  // L = ctaid.x + turn x nctaid.x of the virtual grid of query tiles x
  // batch entries (x fastest), mapped as the one-tile grid maps its blocks
  // (causal: longestFirstBlock, or the pairs below), with its key blocks in
  // the K/V ring slots from `ring` on. `persistentTurns`: the block's turn
  // count, ceil((tiles x entries - ctaid.x) / nctaid.x) (pairs: twice
  // ceil((pairs - ctaid.x) / nctaid.x)), at least 1 (the grid has at most
  // tiles x entries blocks, and the pairs are taken only when they are at
  // least as many as the blocks; 0 for a block past them).
  // The tile arithmetic is u32 (as longestFirstBlock's): the virtual grid
  // holds fewer than 2^32 tiles (q would hold over 2^39 rows), and 64-bit
  // divisions cost the 12-warp D 64 kernel a spill.
  auto gridX32 = [&](FragmentBuilder &x) {
    return readSpecialRegister(x, "%nctaid.x");
  };
  auto blockX32 = [&](FragmentBuilder &x) {
    return readSpecialRegister(x, "%ctaid.x");
  };
  // Under causal, the block takes pairs of tiles (n - 1 - x, x) in two
  // turns each, pair P = ctaid.x + (turn / 2) x nctaid.x of the n / 2 x
  // entries pairs (x = P % (n / 2), entry P / (n / 2)): every pair sees
  // about the same key blocks (n + 1 when block_n = block_m), so strided turns
  // stay balanced. The longest-first order taken strided left the blocks
  // 15% apart at D 128 in a list-scheduling model (the blocks of a round
  // get ever lighter tiles within each L2 section), against 1-3% for the
  // pairs and the hardware's own greedy order of one-tile blocks
  // (docs/PERFORMANCE.md, thirty-seventh session). The pairs need an even
  // n (no tile without a partner) and at least as many pairs as blocks;
  // otherwise the longest-first order is taken strided.
  auto entries32 = [&](FragmentBuilder &x) {
    return toI32(x, memref::DimOp::create(x.b, x.loc, q, 0));
  };
  auto usePairs = [&](FragmentBuilder &x, Value n) -> Value {
    Value even = arith::CmpIOp::create(
        x.b, x.loc, arith::CmpIPredicate::eq,
        arith::AndIOp::create(x.b, x.loc, n, cstI32(x, 1)), cstI32(x, 0));
    Value pairs = arith::MulIOp::create(
        x.b, x.loc, arith::ShRUIOp::create(x.b, x.loc, n, cstI32(x, 1)),
        entries32(x));
    return arith::AndIOp::create(
        x.b, x.loc, even,
        arith::CmpIOp::create(x.b, x.loc, arith::CmpIPredicate::uge, pairs,
                              gridX32(x)));
  };
  auto setPersistentTile = [&](FragmentBuilder &x, Value turn, Value ring) {
    Value n = toI32(x, numQueryTiles(x));
    Value turn32 = toI32(x, turn);
    Value lin = arith::AddIOp::create(
        x.b, x.loc, blockX32(x),
        arith::MulIOp::create(x.b, x.loc, turn32, gridX32(x)));
    Value tile32 = arith::RemUIOp::create(x.b, x.loc, lin, n);
    Value entry32 = arith::DivUIOp::create(x.b, x.loc, lin, n);
    if (ks.causal != CausalKind::none) {
      // (With the pairs a turn's L may pass the tiles, where the
      // longest-first order, not taken, would divide by 0: L is clamped.)
      Value lastTile = arith::SubIOp::create(
          x.b, x.loc, arith::MulIOp::create(x.b, x.loc, n, entries32(x)),
          cstI32(x, 1));
      Value clamped = arith::MinUIOp::create(x.b, x.loc, lin, lastTile);
      tile32 = arith::RemUIOp::create(x.b, x.loc, clamped, n);
      entry32 = arith::DivUIOp::create(x.b, x.loc, clamped, n);
      std::tie(tile32, entry32) = longestFirstBlock(
          x, memref::DimOp::create(x.b, x.loc, k, 1),
          (ks.d + ks.dv) * ks.elt.getIntOrFloatBitWidth() / 8,
          /*heaviestLast=*/true, tile32, entry32, n, entries32(x));
      // The pair order (half = n / 2, at least 1 for the divisions of an
      // odd n, where it is not taken).
      Value half = arith::MaxUIOp::create(
          x.b, x.loc, arith::ShRUIOp::create(x.b, x.loc, n, cstI32(x, 1)),
          cstI32(x, 1));
      Value pair = arith::AddIOp::create(
          x.b, x.loc, blockX32(x),
          arith::MulIOp::create(
              x.b, x.loc,
              arith::ShRUIOp::create(x.b, x.loc, turn32, cstI32(x, 1)),
              gridX32(x)));
      Value px = arith::RemUIOp::create(x.b, x.loc, pair, half);
      Value first = arith::CmpIOp::create(
          x.b, x.loc, arith::CmpIPredicate::eq,
          arith::AndIOp::create(x.b, x.loc, turn32, cstI32(x, 1)),
          cstI32(x, 0));
      Value pairTile = arith::SelectOp::create(
          x.b, x.loc, first,
          arith::SubIOp::create(
              x.b, x.loc, arith::SubIOp::create(x.b, x.loc, n, cstI32(x, 1)),
              px),
          px);
      Value pairs = usePairs(x, n);
      tile32 = arith::SelectOp::create(x.b, x.loc, pairs, pairTile, tile32);
      entry32 = arith::SelectOp::create(
          x.b, x.loc, pairs, arith::DivUIOp::create(x.b, x.loc, pair, half),
          entry32);
    }
    setTileRows(x, asIndex(x, tile32));
    qBufferV =
        asIndex(x, arith::AndIOp::create(x.b, x.loc, turn32, cstI32(x, 1)));
    qPhase = arith::AndIOp::create(
        x.b, x.loc, arith::ShRUIOp::create(x.b, x.loc, turn32, cstI32(x, 1)),
        cstI32(x, 1));
    qBase = makeQBase(x);
    ringBase = ring;
    batch = asIndex(x, entry32);
    batch32 = entry32;
    tileIndex32 = tile32;
  };
  // ceil((count - ctaid.x) / nctaid.x), 0 for a block past `count` (a
  // launch of more blocks than tiles, not the manifest's grid).
  auto stridedCount = [&](FragmentBuilder &x, Value count) -> Value {
    Value grid = gridX32(x), block = blockX32(x);
    Value turns = arith::DivUIOp::create(
        x.b, x.loc,
        arith::AddIOp::create(
            x.b, x.loc, arith::SubIOp::create(x.b, x.loc, count, block),
            arith::SubIOp::create(x.b, x.loc, grid, cstI32(x, 1))),
        grid);
    Value inGrid = arith::CmpIOp::create(x.b, x.loc, arith::CmpIPredicate::ult,
                                         block, count);
    return arith::SelectOp::create(x.b, x.loc, inGrid, turns, cstI32(x, 0))
        .getResult();
  };
  auto persistentTurns = [&](FragmentBuilder &x) -> Value {
    Value n = toI32(x, numQueryTiles(x));
    Value turns =
        stridedCount(x, arith::MulIOp::create(x.b, x.loc, n, entries32(x)));
    if (ks.causal != CausalKind::none) {
      Value pairs = arith::MulIOp::create(
          x.b, x.loc, arith::ShRUIOp::create(x.b, x.loc, n, cstI32(x, 1)),
          entries32(x));
      Value pairTurns = arith::ShLIOp::create(
          x.b, x.loc, stridedCount(x, pairs), cstI32(x, 1));
      turns =
          arith::SelectOp::create(x.b, x.loc, usePairs(x, n), pairTurns, turns);
    }
    return asIndex(x, turns);
  };
  // The K/V ring slot of the tile's key block jb.
  auto ringSlot = [&](FragmentBuilder &x, Value jb) -> Value {
    return ringBase ? x.add(ringBase, jb) : jb;
  };
  Descriptor kDesc =
      ks.tma ? makeDescriptor(fb, smemUnits, 16, 8 * swizzleQK, swizzleQK)
             : makeDescriptor(fb, smemUnits, colN, 128);
  Descriptor vDesc =
      ks.tma ? makeDescriptor(fb, smemUnits, blockN * swizzleV,
                              8 * swizzleV, swizzleV)
             : makeDescriptor(fb, smemUnits, 128, colN);

  // cp.async of key block jb's K (or V) tile into stage jb % 2, when jb is
  // a block this query block visits; always commits a group (possibly
  // empty) so that the group count per iteration is fixed.
  std::optional<CanonicalCopy> kCopy, vCopy;
  if (!ks.tma) {
    kCopy = CanonicalCopy::plan(fb, blockN, ks.d, threads, ids);
    vCopy = ks.dv == ks.d
                ? kCopy
                : CanonicalCopy::plan(fb, blockN, ks.dv, threads, ids);
  }
  //
  // With TMA: the tensor maps of q, k and v are the last three arguments;
  // mbarriers (one arrival, plus the bytes of the tile) at barrierOffset:
  // Q, then one per K stage, then one per V stage. Thread 0 issues every
  // load; every thread waits on the barrier before the tile's first use.
  const int64_t firstMap = func.getNumArguments() - ks.numTensorMaps();
  Value qMap, kMap, vMap, oMap;
  if (ks.tma) {
    qMap = func.getArgument(firstMap);
    kMap = func.getArgument(firstMap + 1);
    vMap = func.getArgument(firstMap + 2);
    if (ks.tmaStoreO())
      oMap = func.getArgument(firstMap + 3);
  }
  auto barrier = [&](FragmentBuilder &x, int64_t index) {
    return arith::AddIOp::create(
        x.b, x.loc, shared.addr,
        cstI32(x, layout.barrierOffset + 8 * index));
  };
  // storesBlockPosition: the block's query tile and batch entry (u32 each)
  // after the mbarriers, written by thread 0 before the block barrier that
  // follows the mbarrier init. Only the consumers read them back (the
  // idle-warpgroup test and the TMA epilogue exist only with the producer).
  auto longestFirstSlot = [&](FragmentBuilder &x) -> Value {
    return barrier(x, ks.numBarriers());
  };
  auto readLongestFirst = [&](FragmentBuilder &x) -> std::pair<Value, Value> {
    assert(ks.storesBlockPosition() && "no block position to read back");
    Type u32 = x.b.getI32Type();
    SmallVector<Value> v =
        inlinePtx(x, "ld.shared.v2.u32 {$0, $1}, [$2];", {u32, u32},
                  ValueRange{longestFirstSlot(x)});
    return {v[0], v[1]};
  };
  // The "full" barrier of Q buffer `buffer`: 0, else after the K/V ones.
  const int64_t kvBarriers = (producer ? 4 : 2) * stages;
  auto qBarrier = [&](FragmentBuilder &x, int64_t buffer) {
    return barrier(x, buffer == 0 ? 0 : kvBarriers + buffer);
  };
  // The "full" barrier of the tile's Q buffer; persistent: buffer 0's or
  // buffer 1's (kvBarriers + 1 barriers further), and the "empty" ones
  // after them (kvBarriers + 2 + buffer: every consumer warp's lane 0
  // arrives once the buffer's o store has read it).
  auto qFullBarrier = [&](FragmentBuilder &x) -> Value {
    if (!qBufferV)
      return qBarrier(x, qBuffer);
    return arith::AddIOp::create(
        x.b, x.loc, barrier(x, 0),
        arith::MulIOp::create(x.b, x.loc, toI32(x, qBufferV),
                              cstI32(x, 8 * (kvBarriers + 1))));
  };
  auto qEmptyBarrier = [&](FragmentBuilder &x) -> Value {
    return arith::AddIOp::create(
        x.b, x.loc, barrier(x, kvBarriers + 2),
        arith::MulIOp::create(x.b, x.loc, toI32(x, qBufferV), cstI32(x, 8)));
  };
  // Waits until the tile's Q landed (persistent: the phase of this use of
  // its buffer).
  auto waitQ = [&](FragmentBuilder &x) {
    Value bar = qFullBarrier(x);
    mbarrierWait(x, bar, qPhase ? qPhase : cstI32(x, 0));
  };
  // The barrier of stage jb % stages of K (or V) and the parity of block
  // jb's phase on it: the "full" barriers (the tile landed), or with the
  // producer warpgroup the "empty" ones (every consumer thread is done
  // with the tile: 32 W arrivals per phase) after them.
  auto stageBarrier = [&](FragmentBuilder &x, Value jb, bool isV,
                          bool empty = false) {
    jb = ringSlot(x, jb);
    Value stage = arith::RemUIOp::create(x.b, x.loc, jb, x.cstIndex(stages));
    Value bar = arith::AddIOp::create(
        x.b, x.loc,
        barrier(x, 1 + (isV ? stages : 0) + (empty ? 2 * stages : 0)),
        arith::MulIOp::create(x.b, x.loc, toI32(x, stage), cstI32(x, 8)));
    Value use = arith::DivUIOp::create(x.b, x.loc, jb, x.cstIndex(stages));
    Value parity = arith::RemUIOp::create(x.b, x.loc, toI32(x, use),
                                          cstI32(x, 2));
    return std::make_pair(bar, parity);
  };
  Value isThread0 = fb.cmpI(arith::CmpIPredicate::eq, ids.tid, c0);
  batch32 = ks.tma ? toI32(fb, batch) : Value();
  // Thread 0 issues the TMA load of K (or V) block jb into its stage when
  // jb is a block this query block visits.
  auto tmaIssue = [&](FragmentBuilder &y, Value jb, bool isV) {
    OpBuilder &ib = y.b;
    Location il = y.loc;
    Value stage =
        arith::RemUIOp::create(ib, il, ringSlot(y, jb), y.cstIndex(stages));
    int64_t offset = isV ? layout.vOffset : layout.kOffset;
    int64_t stageBytes = isV ? vStageBytes : kStageBytes;
    Value dst = arith::AddIOp::create(
        ib, il, arith::AddIOp::create(ib, il, shared.addr, cstI32(y, offset)),
        arith::MulIOp::create(ib, il, toI32(y, stage), cstI32(y, stageBytes)));
    tmaLoadTile(y, isV ? vMap : kMap, dst, blockN, isV ? ks.dv : ks.d,
                (isV ? swizzleV : swizzleQK) / 2,
                toI32(y, y.mul(jb, y.cstIndex(blockN))), batch32,
                stageBarrier(y, jb, isV).first);
  };
  auto tmaStage = [&](FragmentBuilder &x, Value jb, bool isV) {
    Value issue = arith::AndIOp::create(
        x.b, x.loc, isThread0,
        x.cmpI(arith::CmpIPredicate::slt, jb, numKeyBlocks));
    scf::IfOp::create(x.b, x.loc, issue, [&](OpBuilder &ib, Location il) {
      FragmentBuilder y(ib, il, x.elt);
      tmaIssue(y, jb, isV);
      scf::YieldOp::create(ib, il);
    });
  };
  // Producer: its first thread (thread 32 W) waits until the consumers
  // released the stage's previous tile (block jb - stages; the first use
  // of a stage waits on parity 1 of a fresh barrier, which passes at
  // once), then issues the load of block jb.
  auto produceStage = [&](FragmentBuilder &y, Value jb, bool isV) {
    auto [bar, parity] = stageBarrier(y, jb, isV, /*empty=*/true);
    mbarrierWait(y, bar,
                 arith::XOrIOp::create(y.b, y.loc, parity, cstI32(y, 1)));
    tmaIssue(y, jb, isV);
  };
  // Consumers: every thread's arrival on the stage of block jb once its
  // products have read the tile (after their wgmma wait).
  auto releaseStage = [&](FragmentBuilder &x, Value jb, bool isV) {
    if (producer)
      mbarrierArrive(x, stageBarrier(x, jb, isV, /*empty=*/true).first);
  };
  // Pingpong: warpgroup w waits for its turn (named barrier 1 + w, its
  // 128 threads and the previous warpgroup's), issues its products, then
  // passes the turn to warpgroup w + 1 (cyclically).
  auto turnId = [&](FragmentBuilder &x, Value wg) {
    return toI32(x, x.add(wg, x.cstIndex(1)));
  };
  auto takeTurn = [&](FragmentBuilder &x) {
    if (pingpong)
      namedBarrierSync(x, turnId(x, warpgroup), 256);
  };
  auto passTurn = [&](FragmentBuilder &x) {
    if (!pingpong)
      return;
    Value next = arith::RemUIOp::create(
        x.b, x.loc, x.add(warpgroup, x.cstIndex(1)), x.cstIndex(warpgroups));
    namedBarrierArrive(x, turnId(x, next), 256);
  };
  auto waitStage = [&](FragmentBuilder &x, Value jb, bool isV) {
    auto [bar, parity] = stageBarrier(x, jb, isV);
    mbarrierWait(x, bar, parity);
  };
  auto loadTile = [&](FragmentBuilder &x, Value jb, bool isV) {
    if (ks.tma)
      return tmaStage(x, jb, isV);
    copyStage(x, isV ? *vCopy : *kCopy, isV ? v : k, tile, jb, numKeyBlocks,
              stages, isV ? layout.vOffset : layout.kOffset,
              isV ? vStageBytes : kStageBytes, batch, tk, ids);
  };
  // With a causal mask, the Q descriptor base goes through (empty) inline
  // PTX where S is issued (inLoop): LLVM would otherwise hoist each k16
  // step's descriptor out of the key loop, and the 12-warp kernel at D 64
  // would spill. Without a mask the hoisted descriptors fit, and keeping
  // them measured 2-4% faster there (H200, D 64).
  const bool qBaseInLoop = ks.causal != CausalKind::none || persistent;
  // Issues S = Q K_jb^T (dChunks wgmma m64n{blockN}k16, both operands from
  // workgroup memory) as one wgmma group; the accumulators are valid after
  // the matching wait.
  auto issueS = [&](FragmentBuilder &x, Value jb) {
    Value kBase = kDesc.at(
        x, stageUnits(x, ringSlot(x, jb), stages, layout.kOffset, kStageBytes));
    Value qDescBase = qBaseInLoop ? inLoop(x, qBase) : qBase;
    if (ks.tma)
      return wgmmaProductSS(
          x, blockN, dChunks, qDescBase, 32 >> 4, kBase, 32 >> 4,
          /*zeroInit=*/false,
          SwizzledSteps{swizzleQK / 32, (blockM * swizzleQK) >> 4,
                        (blockN * swizzleQK) >> 4});
    return wgmmaProductSS(x, blockN, dChunks, qDescBase, (2 * colM) >> 4, kBase,
                          (2 * colN) >> 4);
  };
  // Issues O += P V_jb (blockN/16 wgmma m64n{dv}k16, A = P from the
  // registers `pRegs`, B = V_jb N-major from workgroup memory) as one
  // wgmma group on the accumulator scalars `oAcc`.
  auto issuePV = [&](FragmentBuilder &x, SmallVector<Value> oAcc,
                     SmallVector<Value> pRegs, Value jb) {
    Value vBase = vDesc.at(
        x, stageUnits(x, ringSlot(x, jb), stages, layout.vOffset, vStageBytes));
    return wgmmaAccumulateRS(x, ks.dv, oAcc, pRegs, vBase,
                             ks.tma ? (16 * swizzleV) >> 4 : 256 >> 4);
  };

  // The online softmax of key block jb on the S accumulators (R = 1 m16
  // tile per warp; the helpers of TensorCoreFragments.h): masking, new m
  // and l, the rescale factors alpha of O, whether any row max moved, and P
  // in q's type as the 32-bit A registers of P V.
  struct Softmax {
    OnlineSoftmaxStep step;
    SmallVector<Value> pRegs;
  };
  auto softmax = [&](FragmentBuilder &x, ArrayRef<Value> sAcc, Value jb,
                     ArrayRef<Value> m, ArrayRef<Value> l, bool masked = true) {
    Value j0 = x.mul(jb, x.cstIndex(blockN));
    SmallVector<SmallVector<Value>> s(1);
    s[0] = toTiles(x, sAcc);
    Value scaleC = scoreFactor(x, s, ks.scale);
    if (masked)
      maskScoreBlock(
          x, s, ks.causal, j0, blockN, tk, warpRow0, causalOffset, t2,
          [&](FragmentBuilder &y, int64_t, int64_t h) { return rowOf(y, h); },
          // bottom_right's offset Tk - Tq through inline PTX in the masked
          // branch: hoisted row limits would spill the 12-warp D 64 kernel.
          [](FragmentBuilder &y, Value v) -> Value {
            if (matchPattern(v, m_Constant()))
              return v;
            return arith::IndexCastOp::create(y.b, y.loc, y.b.getIndexType(),
                                              inLoop(y, toI32(y, v)));
          });
    Softmax r{onlineSoftmaxStep(x, s, m, l, scaleC), {}};
    r.pRegs = packARegisters(x, r.step.p[0]);
    return r;
  };

  // Copies, one group each: (Q, K_0), V_0, K_1, V_1, ... up to the last
  // stage (every stage is free). Rows past Tq are zero-filled; no copy of a
  // block that is not visited (Tk = 0 gives k and v no storage).
  if (ks.tma) {
    // Thread 0 initializes the barriers; the init is made visible to the
    // other threads and to the copy engine before anyone uses them. Q only
    // when a key block is visited: every issued load is waited for.
    scf::IfOp::create(b, loc, isThread0, [&](OpBuilder &ib, Location il) {
      FragmentBuilder y(ib, il, fb.elt);
      inlinePtx(y, "prefetch.tensormap [$0];", {}, ValueRange{kMap});
      inlinePtx(y, "prefetch.tensormap [$0];", {}, ValueRange{vMap});
      if (oMap)
        inlinePtx(y, "prefetch.tensormap [$0];", {}, ValueRange{oMap});
      // The "empty" barriers count the arrivals of the warpgroups that
      // compute (idleExit).
      Value arrivals;
      if (idleExit)
        arrivals =
            toI32(y, y.mul(y.minS(arith::CeilDivSIOp::create(
                                      ib, il, y.sub(tq, i0), y.cstIndex(64)),
                                  y.cstIndex(warpgroups)),
                           y.cstIndex(128)));
      for (int64_t i = 0; i < ks.numBarriers(); ++i) {
        const bool empty = i > 2 * stages && i <= kvBarriers;
        if (empty && arrivals)
          mbarrierInit(y, barrier(y, i), arrivals);
        else if (persistent && i >= kvBarriers + 2) // Q buffers' "empty"
          mbarrierInit(y, barrier(y, i), W);
        else
          mbarrierInit(y, barrier(y, i), empty ? threads : 1);
      }
      inlinePtx(y, "fence.mbarrier_init.release.cluster;", {}, ValueRange{});
      if (ks.storesBlockPosition())
        inlinePtx(y, "st.shared.v2.u32 [$0], {$1, $2};", {},
                  ValueRange{longestFirstSlot(y), longestFirst32.first,
                             longestFirst32.second});
      scf::YieldOp::create(ib, il);
    });
    gpu::BarrierOp::create(b, loc);
    // Producer warpgroup (threads 32 W on): gives back registers for the
    // consumers (setmaxnreg, PTX ISA 8.0; every warp of a warpgroup runs
    // it), then its first thread issues the loads.
    scf::IfOp producers;
    if (producer) {
      producers = openWarpgroupRole(fb, ids.tid, threads,
                                    /*producerRole=*/true, reallocate,
                                    /*warpUniform=*/true);
    }
    // The issuing thread: thread 0, or thread 0 of the producer warpgroup.
    Value issuer = producer ? fb.cmpI(arith::CmpIPredicate::eq, ids.tid,
                                      fb.cstIndex(threads))
                            : isThread0;
    auto loadQ = [&](FragmentBuilder &y) {
      Value offset = qBufferV
                         ? toI32(y, qBufferBytes(y))
                         : cstI32(y, layout.qOffset + qBuffer * qTileBytes);
      Value bar = qFullBarrier(y);
      tmaLoadTile(y, qMap,
                  arith::AddIOp::create(y.b, y.loc, shared.addr, offset),
                  blockM, ks.d, swizzleQK / 2, toI32(y, i0), batch32, bar);
    };
    // ks.prefetchesNextQ: the Q tiles of the block launched about when
    // this one ends (nextLaunchedBlock) are prefetched into L2 once this
    // block's loads are issued, so that its first Q load need not wait
    // for DRAM. A hint only: a wrong guess costs L2 lines, never a result;
    // blocks past the grid and rows past Tq are not prefetched.
    auto prefetchNextQ = [&](FragmentBuilder &y) {
      if (!ks.prefetchesNextQ())
        return;
      auto u32 = [&](int64_t v) { return cstI32(y, v); };
      NextLaunchedBlock next = nextLaunchedBlock(y);
      Value tq32 = toI32(y, tq);
      // The tiles of the next block, as tileQueryBlock maps them.
      SmallVector<Value, 2> tiles32;
      Value entry = next.y;
      if (longestFirst) {
        // Past the grid the sections' width can be 0 (a division by it):
        // map entry 0 there instead; that block is not prefetched.
        auto position = longestFirstBlock(
            y, memref::DimOp::create(y.b, y.loc, k, 1),
            (ks.d + ks.dv) * ks.elt.getIntOrFloatBitWidth() / 8,
            /*heaviestLast=*/true, next.x,
            arith::SelectOp::create(y.b, y.loc, next.inGrid, next.y, u32(0)));
        tiles32.push_back(position.first);
        entry = position.second;
      } else {
        // Two tiles per block (prefetchesNextQ).
        for (int64_t r = 0; r < 2; ++r)
          tiles32.push_back(pairTile(
              y, next.x, r, [&] { return toI32(y, numQueryTiles(y)); }));
      }
      for (Value tile : tiles32) {
        Value row = arith::MulIOp::create(y.b, y.loc, tile, u32(blockM));
        Value valid = arith::AndIOp::create(
            y.b, y.loc, next.inGrid,
            arith::CmpIOp::create(y.b, y.loc, arith::CmpIPredicate::ult, row,
                                  tq32));
        scf::IfOp::create(y.b, y.loc, valid, [&](OpBuilder &ib, Location il) {
          FragmentBuilder z(ib, il, y.elt);
          tmaPrefetchTile(z, qMap, ks.d, swizzleQK / 2, row, entry);
          scf::YieldOp::create(ib, il);
        });
      }
    };
    // The producer goes on with every K and V tile of the tile, each once
    // its stage is free.
    auto produceKeyBlocks = [&](FragmentBuilder &y, Value count) {
      scf::ForOp::create(y.b, y.loc, c0, count, c1, ValueRange{},
                         [&](OpBuilder &pb, Location pl, Value jb, ValueRange) {
                           FragmentBuilder z(pb, pl, fb.elt);
                           produceStage(z, jb, /*isV=*/false);
                           produceStage(z, jb, /*isV=*/true);
                           scf::YieldOp::create(pb, pl);
                         });
    };
    auto ifThen = [&](FragmentBuilder &y, Value cond,
                      llvm::function_ref<void(FragmentBuilder &)> body) {
      scf::IfOp::create(y.b, y.loc, cond, [&](OpBuilder &ib, Location il) {
        FragmentBuilder z(ib, il, y.elt);
        body(z);
        scf::YieldOp::create(ib, il);
      });
    };
    if (persistent) {
      // Every turn's Q (even of a tile without key blocks: its barrier's
      // phases then stay one per turn), once the buffer's previous tile
      // stored its o; then the tile's K/V tiles through the one ring.
      ifThen(fb, issuer, [&](FragmentBuilder &y) {
        TileValues saved = saveTile();
        scf::ForOp::create(
            y.b, y.loc, c0, persistentTurns(y), c1, ValueRange{c0},
            [&](OpBuilder &pb, Location pl, Value turn, ValueRange ring) {
              FragmentBuilder z(pb, pl, fb.elt);
              setPersistentTile(z, turn, ring[0]);
              mbarrierWait(z, qEmptyBarrier(z),
                           arith::XOrIOp::create(pb, pl, qPhase, cstI32(z, 1)));
              loadQ(z);
              produceKeyBlocks(z, numKeyBlocks);
              scf::YieldOp::create(pb, pl,
                                   ValueRange{z.add(ring[0], numKeyBlocks)});
            });
        restoreTile(saved);
      });
    } else if (tiles == 1) {
      ifThen(fb, arith::AndIOp::create(b, loc, issuer, anyBlock),
             [&](FragmentBuilder &y) {
               loadQ(y);
               if (producer) {
                 produceKeyBlocks(y, numKeyBlocks);
                 prefetchNextQ(y);
               }
             });
    } else {
      // Two tiles: both Q tiles first (two buffers), then the K/V tiles
      // of tile 0 and of tile 1 through one ring of stages.
      ifThen(fb, issuer, [&](FragmentBuilder &y) {
        TileValues tile0 = saveTile();
        ifThen(y, anyBlock, loadQ);
        Value second = secondTileExists(y);
        setTile(y, 1, tile0.numKeyBlocks);
        Value secondBlocks = arith::SelectOp::create(
            y.b, y.loc, second, numKeyBlocks, y.cstIndex(0));
        ifThen(y, arith::AndIOp::create(y.b, y.loc, second, anyBlock), loadQ);
        TileValues tile1 = saveTile();
        restoreTile(tile0);
        produceKeyBlocks(y, numKeyBlocks);
        restoreTile(tile1);
        produceKeyBlocks(y, secondBlocks);
        restoreTile(tile0);
        prefetchNextQ(y);
      });
    }
    if (producer)
      b.setInsertionPointAfter(producers);
  } else {
    CanonicalCopy::plan(fb, blockM, ks.d, threads, ids)
        .copy(fb, q, tile, fb.cstIndex(layout.qOffset / 2), batch, i0, tq,
              ids);
  }
  // With the producer warpgroup, the rest of the kernel is the consumers'.
  scf::IfOp consumers;
  if (producer) {
    consumers = openWarpgroupRole(fb, ids.tid, threads,
                                  /*producerRole=*/false, reallocate,
                                  /*warpUniform=*/true);
    // A warpgroup whose rows all lie past Tq exits here (the "empty"
    // barriers do not count it). The indices are read again, as in the
    // epilogue, so that the test extends no live range of the kernel's
    // own values.
    if (idleExit) {
      Value block =
          asIndex(fb, longestFirst ? readLongestFirst(fb).first
                                   : rereadQueryBlockIndex(fb, ks.causal));
      Value wgRow0 = fb.add(
          fb.mul(block, fb.cstIndex(blockM)),
          fb.mul(arith::DivUIOp::create(
                     b, loc, asIndex(fb, readSpecialRegister(fb, "%tid.x")),
                     fb.cstIndex(128)),
                 fb.cstIndex(64)));
      Value idle = arith::ExtUIOp::create(
          b, loc, i32, fb.cmpI(arith::CmpIPredicate::sge, wgRow0, tq));
      inlinePtx(fb, "{\n.reg .pred p;\nsetp.ne.u32 p, $0, 0;\n@p exit;\n}", {},
                ValueRange{idle});
    }
  } else {
    for (int64_t j = 0; j < stages; ++j) {
      loadTile(fb, fb.cstIndex(j), /*isV=*/false);
      loadTile(fb, fb.cstIndex(j), /*isV=*/true);
    }
  }

  // The consumers' work on the tile that the tile values hold: the key
  // loop and the epilogue. With tiles == 2 tile 1's key loop is built
  // once, after the peeled boundary (below).
  auto rereadTileQueryBlock = [&](FragmentBuilder &x) -> Value {
    if (tiles == 1)
      return rereadQueryBlockIndex(x, ks.causal);
    return pairTile(x, readSpecialRegister(x, "%ctaid.x"), qBuffer,
                    [&] { return toI32(x, numQueryTiles(x)); });
  };
  // Loop-carried: O accumulator tiles, m and l of rows g / g + 8, and the
  // P registers of the previous key block (FlashAttention-3, Section 3.2,
  // intra-warpgroup overlap: P_{j-1} V_{j-1} runs on the tensor cores while
  // the softmax of S_j runs).
  const int64_t mBase = oTiles, lBase = mBase + 2, pBase = lBase + 2;
  // The key loop of the tile that the tile values hold: prologue (S_0, its
  // softmax, P_0) and the loop over key blocks 1 on. `issuedS`: S_0 was
  // issued already (its wgmma group in flight, any key block visited), so
  // the prologue only waits for it.
  // The carried values before any key block: O = 0, m = -inf, l = 0, P = 0.
  auto initialCarried = [&] {
    SmallVector<Value> init;
    for (int64_t i = 0; i < oTiles; ++i)
      init.push_back(fb.zeroAcc());
    init.push_back(ninf);
    init.push_back(ninf);
    init.push_back(zero);
    init.push_back(zero);
    Value zeroWord = arith::ConstantIntOp::create(b, loc, i32, 0);
    for (int64_t i = 0; i < sTiles * 2; ++i)
      init.push_back(zeroWord);
    return init;
  };
  auto emitPrologue =
      [&](const SmallVector<Value> *issuedS) -> SmallVector<Value> {
    SmallVector<Value> init = initialCarried();
    SmallVector<Type> carriedTypes;
    for (Value val : init)
      carriedTypes.push_back(val.getType());

    auto prologueStep = [&](FragmentBuilder &x, SmallVector<Value> sAcc) {
      sAcc = wgmmaWait(x, 0, sAcc);
      releaseStage(x, c0, /*isV=*/false);
      Softmax sm = softmax(x, sAcc, c0, {init[mBase], init[mBase + 1]},
                           {init[lBase], init[lBase + 1]});
      SmallVector<Value> yielded(init.begin(), init.begin() + oTiles);
      llvm::append_range(yielded, sm.step.m);
      llvm::append_range(yielded, sm.step.l);
      llvm::append_range(yielded, sm.pRegs);
      return yielded;
    };
    SmallVector<Value> loopInit;
    if (issuedS) {
      loopInit = prologueStep(fb, *issuedS);
    } else {
      // Prologue (when any key block is visited): S_0, its softmax, P_0.
      auto prologue = scf::IfOp::create(b, loc, carriedTypes, anyBlock,
                                        /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(prologue.thenBlock());
        FragmentBuilder x(b, loc, ks.elt);
        if (ks.tma) {
          waitQ(x); // Q landed
          waitStage(x, c0, /*isV=*/false);
        } else {
          landCopies(x, 2 * stages - 1); // (Q, K_0) landed
        }
        // Pingpong: the last warpgroup hands the first its first turn.
        if (pingpong) {
          Value last = x.cmpI(arith::CmpIPredicate::eq, warpgroup,
                              x.cstIndex(warpgroups - 1));
          scf::IfOp::create(b, loc, last, [&](OpBuilder &ib, Location il) {
            FragmentBuilder y(ib, il, x.elt);
            namedBarrierArrive(y, cstI32(y, 1), 256);
            scf::YieldOp::create(ib, il);
          });
        }
        takeTurn(x);
        SmallVector<Value> sAcc = issueS(x, c0);
        passTurn(x);
        SmallVector<Value> yielded = prologueStep(x, sAcc);
        // TMA: every warpgroup is done with K_0 before K_s replaces it (in the
        // loop, the previous iteration's barrier gives this). The producer
        // warp waits for the release instead.
        if (ks.tma && !producer)
          gpu::BarrierOp::create(b, loc);
        scf::YieldOp::create(b, loc, yielded);
        b.setInsertionPointToStart(prologue.elseBlock());
        scf::YieldOp::create(b, loc, init);
      }
      loopInit = prologue.getResults();
    }
    return loopInit;
  };
  // The key loops of the tile that the tile values hold, from the
  // prologue's results `loopInit`; returns the last loop.
  auto emitKeyLoops = [&](ValueRange loopInit) -> scf::ForOp {
    // The key blocks that need no mask for any row of the block (below the
    // one holding key Tk - 1 when Tk is not a multiple of block-n, and
    // under causal below the first that reaches past the diagonal of the
    // block's first row) run in a loop without the mask code, the others
    // in a second loop with it: ptxas if-converts the masked branch, which
    // in one loop cost every key block its compares and selects (bf16 D
    // 128 without a mask: 82 selects per iteration). The split is the
    // block's, so every warpgroup (pingpong) runs the same iterations,
    // except with perWarpgroupKeys, where it is the warpgroup's (maskRow0).
    Value maskStart = arith::DivSIOp::create(b, loc, tk, fb.cstIndex(blockN));
    if (ks.causal != CausalKind::none)
      maskStart = fb.minS(
          maskStart,
          fb.maxS(
              arith::FloorDivSIOp::create(
                  b, loc,
                  fb.add(fb.add(maskRow0 ? maskRow0 : i0, causalOffset), c1),
                  fb.cstIndex(blockN)),
              c0));
    Value split = fb.minS(fb.maxS(maskStart, c1), numKeyBlocks);
    auto keyLoopBody = [&](bool masked) {
      return [&, masked](OpBuilder &lb, Location ll, Value jb,
                         ValueRange carried) {
        FragmentBuilder x(lb, ll, ks.elt);
        SmallVector<Value> acc(carried.begin(), carried.begin() + mBase);
        SmallVector<Value> m(carried.begin() + mBase, carried.begin() + lBase);
        SmallVector<Value> l(carried.begin() + lBase, carried.begin() + pBase);
        SmallVector<Value> pPrev(carried.begin() + pBase, carried.end());

        // K_j and V_{j-1} landed (V_j, K_{j+1}, V_{j+1} may be in flight);
        // every warpgroup is done with S_{j-1}, so K_{j+s-1} may replace
        // K_{j-1}. (TMA: the last iteration's barrier came after every
        // warpgroup's wait for S_{j-1}; each tile is waited for on its
        // barrier just before its product.)
        Value ahead = x.add(jb, x.cstIndex(stages - 1));
        if (!ks.tma)
          landCopies(x, 2 * stages - 3);
        if (!producer)
          loadTile(x, ahead, /*isV=*/false);

        // S_j first, then P_{j-1} V_{j-1}; wait for S_j only and run its
        // softmax while the P V group is on the tensor cores. (Producer
        // warp: both tiles are waited for before the turn is taken, and
        // each stage is released once its product is done.)
        if (ks.tma)
          waitStage(x, jb, /*isV=*/false);
        if (producer)
          waitStage(x, x.sub(jb, c1), /*isV=*/true);
        takeTurn(x);
        SmallVector<Value> sAcc = issueS(x, jb);
        if (ks.tma && !producer)
          waitStage(x, x.sub(jb, c1), /*isV=*/true);
        SmallVector<Value> oAcc =
            issuePV(x, toScalars(x, acc), pPrev, x.sub(jb, c1));
        passTurn(x);
        sAcc = wgmmaWait(x, 1, sAcc);
        releaseStage(x, jb, /*isV=*/false);
        Softmax sm = softmax(x, sAcc, jb, m, l, masked);
        oAcc = wgmmaWait(x, 0, oAcc);
        releaseStage(x, x.sub(jb, c1), /*isV=*/true);
        SmallVector<Value> newAcc = toTiles(x, oAcc);

        // O *= alpha_j where some row's max moved (else alpha = 1).
        rescaleIfMaxMoved(x, sm.step.anyMaxChanged, newAcc, oTiles,
                          sm.step.alphas);

        // Every warpgroup is done with V_{j-1}: V_{j+s-1} replaces it.
        if (!producer) {
          gpu::BarrierOp::create(lb, ll);
          loadTile(x, ahead, /*isV=*/true);
        }

        SmallVector<Value> yielded = newAcc;
        llvm::append_range(yielded, sm.step.m);
        llvm::append_range(yielded, sm.step.l);
        llvm::append_range(yielded, sm.pRegs);
        scf::YieldOp::create(lb, ll, yielded);
      };
    };
    auto unmasked =
        scf::ForOp::create(b, loc, c1, split, c1, loopInit, keyLoopBody(false));
    return scf::ForOp::create(b, loc, split, numKeyBlocks, c1,
                              unmasked.getResults(), keyLoopBody(true));
  };
  auto emitKeyLoop = [&](const SmallVector<Value> *issuedS) -> scf::ForOp {
    return emitKeyLoops(emitPrologue(issuedS));
  };

  // The last block's P V (when any block was visited): the final O tiles.
  // Waits for the V tile of the tile's key block `lastBlock` and issues
  // that block's P V (one wgmma group) on the key loop's results.
  auto issueLastPV = [&](FragmentBuilder &x, ValueRange results,
                         Value lastBlock) {
    if (ks.tma)
      waitStage(x, lastBlock, /*isV=*/true);
    else
      landCopies(x, 0);
    SmallVector<Value> acc(results.begin(), results.begin() + oTiles);
    SmallVector<Value> pLast(results.begin() + pBase, results.end());
    takeTurn(x);
    return issuePV(x, toScalars(x, acc), pLast, lastBlock);
  };
  auto emitLastPV = [&](ValueRange results) -> SmallVector<Value> {
    SmallVector<Type> accTypes(oTiles, fb.vec({2, 2}, f32));
    auto last = scf::IfOp::create(b, loc, accTypes, anyBlock,
                                  /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(last.thenBlock());
      FragmentBuilder x(b, loc, ks.elt);
      Value lastBlock = x.sub(numKeyBlocks, c1);
      SmallVector<Value> oAcc = issueLastPV(x, results, lastBlock);
      // Pingpong: every turn taken was passed, except the last warpgroup's
      // last (its first-turn gift to the first warpgroup balances it).
      if (pingpong) {
        Value notLast = x.cmpI(arith::CmpIPredicate::ne, warpgroup,
                               x.cstIndex(warpgroups - 1));
        scf::IfOp::create(b, loc, notLast, [&](OpBuilder &ib, Location il) {
          FragmentBuilder y(ib, il, x.elt);
          passTurn(y);
          scf::YieldOp::create(ib, il);
        });
      }
      oAcc = wgmmaWait(x, 0, oAcc);
      // With two tiles per block (or persistent) the producer refills this
      // stage with the block's next tile.
      if (tiles > 1 || persistent)
        releaseStage(x, lastBlock, /*isV=*/true);
      scf::YieldOp::create(b, loc, toTiles(x, oAcc));
      b.setInsertionPointToStart(last.elseBlock());
      scf::YieldOp::create(b, loc, ValueRange(results.slice(0, oTiles)));
    }
    if (!ks.tma)
      NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
    return SmallVector<Value>(last.getResults());
  };

  // Epilogue of the tile: o = O / l, lse = m ln 2 + ln l, with m and l
  // those of `carried` (the key loop's results or the initial values).
  // `deferStagedO` (persistent, at a peeled boundary): the o stores' read
  // wait and the Q buffer's release are left to the turn loop's peeled
  // branch, which emits them after the next tile's prologue.
  auto emitEpilogue = [&](ValueRange carried, SmallVector<Value> oFinal,
                          bool deferStagedO = false) {
    // Persistent: a tile without key blocks was not waited for, but its Q
    // load (always issued) must land before o is staged over it.
    if (persistent)
      waitQ(fb);
    if (!ks.tmaStoreO()) {
      for (int64_t h = 0; h < 2; ++h)
        storeForwardRow(
            fb, oFinal, carried[mBase + h], carried[lBase + h], h,
            [&] { return rowOf(fb, h); }, tq, o, lse, batch, t, t2);
    } else {
      // tmaStoreO: warp i's rows [16 i, 16 i + 16) of box c of the Q tile
      // (boxes of 64 columns x blockM rows, 128-byte swizzle) take its rows
      // of o: row r, 16-byte chunk a at 128 r + 16 (a ^ r % 8). Value pair
      // n8 slice n of row g + 8h: box n / 8, chunk n % 8, bytes 4t.
      // The thread and block indices are read again here: carried across
      // the key loop they cost the 12-warp D 64 kernel a spill.
      const int64_t boxBytes = blockM * 128;
      auto special = [&](StringRef reg) {
        return readSpecialRegister(fb, reg);
      };
      auto shrI32 = [&](Value a, int64_t c) -> Value {
        return arith::ShRUIOp::create(b, loc, a, cstI32(fb, c));
      };
      auto andI32 = [&](Value a, int64_t c) -> Value {
        return arith::AndIOp::create(b, loc, a, cstI32(fb, c));
      };
      Value tid32 = special("%tid.x");
      Value lane32 = andI32(tid32, 31);
      std::pair<Value, Value> position;
      if (longestFirst)
        position = readLongestFirst(fb);
      else if (persistent)
        position = {tileIndex32, batch32};
      else
        position = {rereadTileQueryBlock(fb), special("%ctaid.y")};
      Value block32 = position.first, oBatch32 = position.second;
      Value warpRow32 = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, block32, cstI32(fb, blockM)),
          arith::MulIOp::create(b, loc, shrI32(tid32, 5), cstI32(fb, 16)));
      Value warpBase = arith::AddIOp::create(
          b, loc, shared.addr,
          arith::AddIOp::create(
              b, loc,
              qBufferV ? toI32(fb, qBufferBytes(fb))
                       : cstI32(fb, layout.qOffset + qBuffer * qTileBytes),
              arith::MulIOp::create(b, loc, shrI32(tid32, 5),
                                    cstI32(fb, 16 * 128))));
      // Thread (g, t): row g (+ 8h) at 128 g, bytes 4t of its chunks; the
      // chunk a address, threadBase + 16 (a ^ g), is made inside each
      // store's PTX, so that two address registers are live, not eight.
      Value g32 = shrI32(lane32, 2);
      Value threadBase = arith::AddIOp::create(
          b, loc, warpBase,
          arith::AddIOp::create(
              b, loc, arith::MulIOp::create(b, loc, g32, cstI32(fb, 128)),
              arith::MulIOp::create(b, loc, andI32(lane32, 3), cstI32(fb, 4))));
      Value g16 = arith::MulIOp::create(b, loc, g32, cstI32(fb, 16));
      for (int64_t h = 0; h < 2; ++h) {
        auto stage = [&](FragmentBuilder &x, Value inv) {
          Value splat =
              vector::BroadcastOp::create(x.b, x.loc, x.vec({2}, f32), inv);
          for (auto [n, tile] : llvm::enumerate(oFinal)) {
            Value pair =
                arith::TruncFOp::create(x.b, x.loc, x.vec({2}, ks.elt),
                                        x.mulF(x.extract(tile, {h}), splat));
            Value word =
                vector::BitCastOp::create(x.b, x.loc, x.vec({1}, i32), pair);
            inlinePtx(x,
                      "{\n.reg .b32 a;\nxor.b32 a, $1, " +
                          std::to_string(16 * (n % 8)) +
                          ";\nadd.u32 a, a, $0;\nst.shared.b32 [a+" +
                          std::to_string((n / 8) * boxBytes + h * 1024) +
                          "], $2;\n}",
                      {}, ValueRange{threadBase, g16, x.extract(word, {0})});
          }
        };
        storeForwardRow(
            fb, oFinal, carried[mBase + h], carried[lBase + h], h,
            [&] { return rowOf(fb, h); }, tq, o, lse, batch, t, t2, stage);
      }
      // Visible to the async proxy, then lane 0 stores the warp's boxes
      // (rows past Tq are outside o's map and not written; a warp whose
      // rows all are issues nothing) and waits until they were read out of
      // workgroup memory before the block may exit.
      inlinePtx(fb, "fence.proxy.async.shared::cta;\nbar.warp.sync -1;", {},
                ValueRange{});
      Value issue = arith::AndIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane32,
                                cstI32(fb, 0)),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, warpRow32,
                                toI32(fb, tq)));
      scf::IfOp::create(b, loc, issue, [&](OpBuilder &ib, Location il) {
        FragmentBuilder y(ib, il, fb.elt);
        for (int64_t c = 0; c < ks.dv / 64; ++c)
          inlinePtx(y,
                    "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group "
                    "[$0, {$1, $2, $3}], [$4];",
                    {},
                    ValueRange{oMap, cstI32(y, 64 * c), warpRow32, oBatch32,
                               arith::AddIOp::create(ib, il, warpBase,
                                                     cstI32(y, c * boxBytes))});
        // With two tiles per block, the reads are waited for once, after
        // the last tile.
        inlinePtx(y,
                  tiles == 1 && !deferStagedO
                      ? "cp.async.bulk.commit_group;\n"
                        "cp.async.bulk.wait_group.read 0;"
                      : "cp.async.bulk.commit_group;",
                  {}, ValueRange{});
        scf::YieldOp::create(ib, il);
      });
      // Persistent: the o stores have read the Q buffer (waited above),
      // so the producer may load a later tile's Q into it.
      if (persistent && !deferStagedO) {
        Value lane0 = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                            lane32, cstI32(fb, 0));
        scf::IfOp::create(b, loc, lane0, [&](OpBuilder &ib, Location il) {
          FragmentBuilder y(ib, il, fb.elt);
          mbarrierArrive(y, qEmptyBarrier(y));
          scf::YieldOp::create(ib, il);
        });
      }
    }
  };
  auto emitTile = [&] {
    scf::ForOp loop = emitKeyLoop(nullptr);
    emitEpilogue(loop.getResults(), emitLastPV(loop.getResults()));
  };
  // Two tiles per block: the boundary between them is peeled. When the
  // block has tile 1 and both tiles visit a key block, tile 1's S_0 is
  // issued right after tile 0's last P V, and tile 0's epilogue runs while
  // it is on the tensor cores; tile 1's prologue only waits for it
  // (H200, bf16 D 128: +0.8-1.1% without a mask at T 2k-8k, +0.6-1.6%
  // causal). Otherwise tile 0 ends as alone, and tile 1 (if any), which
  // then visits no key block, writes its rows from the initial values.
  // The branch is uniform over the block (the key block counts and the
  // tile test are the block's), so no wgmma is in flight across divergent
  // code.
  if (persistent) {
    // Turn i's consumers: the boundary with turn i - 1 peeled as the
    // two-tile kernel peels its one (when both tiles visit a key block:
    // the previous tile's last P V, this tile's S_0, the previous tile's
    // epilogue while S_0 runs; else the previous tile ends alone), then
    // this tile's key loops with its values fixed. Carried: the key loop's
    // values, the ring slot of this tile's first key block and the
    // previous tile's key block count (0 before the first turn).
    // The boundary is peeled only where the registers hold S_0's
    // accumulators across the epilogue (240 or more per consumer thread:
    // one or two consumer warpgroups); with three (160) ptxas spilled 172
    // bytes of
    // the bf16 D 64 kernel (184 with the last P V waited for before S_0).
    const bool peelBoundary = consumerRegisters(W) >= 200;
    Value turns = persistentTurns(fb);
    SmallVector<Value> init = initialCarried();
    const int64_t carriedCount = init.size();
    SmallVector<Type> carriedTypes;
    for (Value val : init)
      carriedTypes.push_back(val.getType());
    init.push_back(c0);
    init.push_back(c0);
    auto outer = scf::ForOp::create(
        b, loc, c0, turns, c1, init,
        [&](OpBuilder &ob, Location ol, Value turn, ValueRange carried) {
          FragmentBuilder x(ob, ol, ks.elt);
          SmallVector<Value> prevCarried(carried.take_front(carriedCount));
          Value ring = carried[carriedCount];
          Value prevBlocks = carried[carriedCount + 1];
          setPersistentTile(x, turn, ring);
          TileValues cur = saveTile();
          auto setPrevious = [&](FragmentBuilder &y) {
            setPersistentTile(y, y.sub(turn, c1), y.sub(ring, prevBlocks));
          };
          // The previous tile (if any) ends alone: its last P V, its
          // epilogue; then this tile's prologue. Returns the key loop's
          // initial values.
          auto endPrevious = [&](FragmentBuilder &y) -> SmallVector<Value> {
            auto hasPrev = scf::IfOp::create(
                ob, ol, y.cmpI(arith::CmpIPredicate::sgt, turn, c0),
                /*withElseRegion=*/false);
            {
              OpBuilder::InsertionGuard guard(ob);
              ob.setInsertionPoint(hasPrev.thenBlock()->getTerminator());
              setPrevious(y);
              emitEpilogue(prevCarried, emitLastPV(prevCarried));
            }
            restoreTile(cur);
            return emitPrologue(nullptr);
          };
          SmallVector<Value> loopInit;
          if (!peelBoundary) {
            loopInit = endPrevious(x);
          } else {
            Value peel = arith::AndIOp::create(
                ob, ol, x.cmpI(arith::CmpIPredicate::sgt, prevBlocks, c0),
                cur.anyBlock);
            auto split = scf::IfOp::create(ob, ol, carriedTypes, peel,
                                           /*withElseRegion=*/true);
            OpBuilder::InsertionGuard guard(ob);
            ob.setInsertionPointToStart(split.thenBlock());
            FragmentBuilder y(ob, ol, ks.elt);
            setPrevious(y);
            TileValues prev = saveTile();
            Value lastBlock = y.sub(prevBlocks, c1);
            SmallVector<Value> oAcc = issueLastPV(y, prevCarried, lastBlock);
            restoreTile(cur);
            waitQ(y);
            waitStage(y, c0, /*isV=*/false);
            SmallVector<Value> sAcc = issueS(y, c0);
            restoreTile(prev);
            oAcc = wgmmaWait(y, 1, oAcc);
            releaseStage(y, lastBlock, /*isV=*/true);
            // The previous tile's o stores read its Q buffer while this
            // tile's prologue runs: each warp's lane 0 waits for them only
            // after it (cp.async.bulk.wait_group.read) and then frees the
            // buffer for the producer, which loads into it two turns on.
            Value prevQEmpty = qEmptyBarrier(y);
            emitEpilogue(prevCarried, toTiles(y, oAcc),
                         /*deferStagedO=*/true);
            restoreTile(cur);
            SmallVector<Value> first = emitPrologue(&sAcc);
            Value lane0 = y.cmpI(
                arith::CmpIPredicate::eq,
                arith::AndIOp::create(ob, ol, readSpecialRegister(y, "%tid.x"),
                                      cstI32(y, 31)),
                cstI32(y, 0));
            scf::IfOp::create(ob, ol, lane0, [&](OpBuilder &ib, Location il) {
              FragmentBuilder z(ib, il, y.elt);
              inlinePtx(z, "cp.async.bulk.wait_group.read 0;", {},
                        ValueRange{});
              mbarrierArrive(z, prevQEmpty);
              scf::YieldOp::create(ib, il);
            });
            scf::YieldOp::create(ob, ol, first);
            ob.setInsertionPointToStart(split.elseBlock());
            scf::YieldOp::create(ob, ol, endPrevious(y));
            loopInit.assign(split.getResults().begin(),
                            split.getResults().end());
          }
          scf::ForOp loop = emitKeyLoops(loopInit);
          SmallVector<Value> yielded(loop.getResults());
          yielded.push_back(x.add(ring, numKeyBlocks));
          yielded.push_back(numKeyBlocks);
          scf::YieldOp::create(ob, ol, yielded);
        });
    // The last turn's tile ends alone (a block without turns, launched
    // past the tiles, has none).
    auto anyTurn =
        scf::IfOp::create(b, loc, fb.cmpI(arith::CmpIPredicate::sgt, turns, c0),
                          /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(anyTurn.thenBlock()->getTerminator());
      SmallVector<Value> last(outer.getResults().take_front(carriedCount));
      setPersistentTile(fb, fb.sub(turns, c1),
                        fb.sub(outer.getResult(carriedCount),
                               outer.getResult(carriedCount + 1)));
      emitEpilogue(last, emitLastPV(last));
    }
  } else if (tiles == 2) {
    scf::ForOp loop0 = emitKeyLoop(nullptr);
    TileValues tile0 = saveTile();
    setTile(fb, 1, tile0.numKeyBlocks);
    TileValues tile1 = saveTile();
    restoreTile(tile0);
    Value second = secondTileExists(fb);
    auto split = scf::IfOp::create(
        b, loc,
        arith::AndIOp::create(
            b, loc, arith::AndIOp::create(b, loc, second, tile0.anyBlock),
            tile1.anyBlock),
        /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(split.thenBlock()->getTerminator());
      FragmentBuilder x(b, loc, ks.elt);
      Value lastBlock = x.sub(tile0.numKeyBlocks, c1);
      SmallVector<Value> oAcc = issueLastPV(x, loop0.getResults(), lastBlock);
      restoreTile(tile1);
      mbarrierWait(x, qBarrier(x, 1), cstI32(x, 0));
      waitStage(x, c0, /*isV=*/false);
      SmallVector<Value> sAcc = issueS(x, c0);
      restoreTile(tile0);
      oAcc = wgmmaWait(x, 1, oAcc);
      releaseStage(x, lastBlock, /*isV=*/true);
      emitEpilogue(loop0.getResults(), toTiles(x, oAcc));
      restoreTile(tile1);
      scf::ForOp loop1 = emitKeyLoop(&sAcc);
      emitEpilogue(loop1.getResults(), emitLastPV(loop1.getResults()));
      b.setInsertionPoint(split.elseBlock()->getTerminator());
      restoreTile(tile0);
      emitEpilogue(loop0.getResults(), emitLastPV(loop0.getResults()));
      // Tile 1 here visits no key block: tile 0 sees at least as many
      // keys (the same count without a mask; under causal the later tile
      // of the pair, and the visible key count grows with the query
      // block), so tile 0 without any or tile 1 without any leaves tile 1
      // without any. It only writes its rows from the initial values.
      auto rest = scf::IfOp::create(b, loc, second, /*withElseRegion=*/false);
      b.setInsertionPoint(rest.thenBlock()->getTerminator());
      restoreTile(tile1);
      SmallVector<Value> init = initialCarried();
      emitEpilogue(init,
                   SmallVector<Value>(init.begin(), init.begin() + oTiles));
    }
    b.setInsertionPointAfter(split);
    restoreTile(tile0);
    // The o stores of both tiles have read their workgroup memory before
    // the block exits.
    if (ks.tmaStoreO())
      inlinePtx(fb, "cp.async.bulk.wait_group.read 0;", {}, ValueRange{});
  } else {
    if (perWarpgroupKeys) {
      // This warpgroup's key blocks: those its 64 rows see (at least one
      // when the block visits any, so that rows seeing no key are written
      // as before), and its masked loop from the diagonal of its first row.
      // The warpgroup index through broadcastLane0, which ptxas takes as
      // warp-uniform: the loop bounds stay uniform values, as the block's
      // are (taken from %tid.x alone the kernel ran 5-13% slower than
      // without perWarpgroupKeys, H100 bf16 T 2k-8k; this form 3-5%
      // faster, H200).
      Value wgU = broadcastLane0(
          fb, arith::ShRUIOp::create(b, loc, readSpecialRegister(fb, "%tid.x"),
                                     cstI32(fb, 7)));
      Value wgRow0 =
          fb.add(i0, fb.mul(asIndex(fb, wgU), fb.cstIndex(64)));
      Value own = arith::CeilDivSIOp::create(
          b, loc, visibleKeys(fb, ks.causal, wgRow0, 64, tq, tk).kvEnd,
          fb.cstIndex(blockN));
      numKeyBlocks = fb.minS(numKeyBlocks, fb.maxS(own, c1));
      maskRow0 = wgRow0;
    }
    emitTile();
  }
  if (producer)
    b.setInsertionPointAfter(consumers);
  gpu::ReturnOp::create(b, loc);
}
