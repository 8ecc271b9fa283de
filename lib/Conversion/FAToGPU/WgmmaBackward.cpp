//===- WgmmaBackward.cpp - fa.attention_backward on Hopper wgmma ---------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// The Hopper backward kernels of convert-fa-to-gpu (`wgmma=true`, chosen by
// fa-to-ptx for sm_90a): FlashAttention-2's backward pass (Dao 2023,
// Algorithm 2, P recomputed from the saved logsumexp) in the split form of
// TensorCoreBackward.cpp (no atomics, dq bitwise reproducible), with every
// tile product on sm_90a's asynchronous warpgroup MMA (FlashAttention-3,
// Shah et al. 2024, Section 3; operands as WgmmaForward.cpp feeds them).
//
// Both kernels share one shape: the block owns 16 x num-warps rows (64 per
// warpgroup) of one side, held in workgroup memory for the whole kernel,
// and loops over tiles of the other side, `stages` of them in flight:
//
//   _dkdv (block: keys; loop: query tiles Q_i, dO_i; lse, delta per column)
//     S^T  = K Q_i^T            wgmma, both operands in workgroup memory
//     dP^T = V dO_i^T           wgmma, same
//     P^T  = exp2(S^T c - lse_i log2 e)   (masked on diagonal/ragged tiles)
//     dV  += P^T dO_i           wgmma, P^T from registers, dO_i N-major
//     dS^T = P^T (dP^T - delta_i)
//     dK  += dS^T Q_i           wgmma, dS^T from registers, Q_i N-major
//     dk = scale dK, dv = dV
//   _dq (block: queries; loop: key tiles K_j, V_j; lse, delta per row)
//     S = Q K_j^T, dP = dO V_j^T, P = exp2(S c - lse log2 e),
//     dS = P (dP - delta), dQ += dS K_j (K_j N-major)
//     dq = scale dQ
//
// Per tile: the two products from workgroup memory are issued back to
// back; P is computed once the first is done while the second runs
// (wgmma.wait_group 1), and in _dkdv dV += P^T dO_i runs while dS^T is
// computed. The copy of tile i + stages - 1 is issued at the top of
// iteration i into the stage that iteration i - 1 used.
//
// dq atomics (`dqAtomic`, fa-to-ptx's `dq-atomics=true`; _dkdv only): the
// five-product form (FlashAttention-2, Algorithm 2, lines 13-14). Each
// tile's dK += dS^T Q_i is issued from the dS^T registers as soon as they
// are computed (dkFromRegisters; else from workgroup memory in the next
// tile; no dS^T registers carried either way), and dS^T goes to workgroup
// memory, where dQ_i = dS_i K (64-query tiles and more;
// dS_i M-major from the dS^T buffers, K N-major from the own K tile) or
// dQ_i^T = K^T dS_i^T (32-query tiles) is issued ahead of the next tile's
// S^T; its scale * dQ values go to the f32 dq_accum: with TMA (dqBulk),
// each warp stores them into swizzled boxes in workgroup memory and one
// lane adds each box with a TMA reduction (cp.reduce.async.bulk.tensor
// .add, through dq_accum's tensor map); with cp.async tiles, by
// red.global.add.v2.f32 (two adjacent head-dim columns each) or
// red.global.add.f32. _delta zeroes dq_accum and _dq_convert writes dq.
//
// With cp.async, tiles use the canonical no-swizzle layout of
// WgmmaFragments.h; with TMA (`tma`, fa-to-ptx's default), the swizzled
// layout of WgmmaForward.cpp's TMA tiles: thread 0 loads the own tiles and
// each loop tile half from the tensor maps of q, k, v and do (the last four
// arguments; then dq_accum's with dqBulk), completing on mbarriers (own
// first, own second, one per stage of each half; the n-th load into a stage
// completes its phase n), and
// every thread waits on a tile's barriers before its products. Either way
// the own tiles and the loop tiles' first use (S, dP) are K-major
// operands; the loop tiles' second use (dV, dK, dQ: K = the loop tile's
// rows) reads the same bytes as an N-major B operand.
//
//===----------------------------------------------------------------------===//

#include "TensorCoreKernels.h"
#include "WgmmaFragments.h"

using namespace mlir;
using namespace mlir::fa;
using namespace mlir::fa::gpukernel;

void mlir::fa::gpukernel::buildWgmmaBackwardBody(OpBuilder &b, Location loc,
                                                 gpu::GPUFuncOp func,
                                                 const WgmmaBackwardShape &ks) {
  FragmentBuilder fb(b, loc, ks.elt);
  Type i64 = b.getI64Type();
  const bool dkdv = ks.dkdv;
  const bool dqAtomic = dkdv && ks.dqAtomic;
  const int64_t W = ks.numWarps, threads = 32 * W; // consumer threads
  // A producer warpgroup (warps W to W + 3) issues the loads (ks.tma and
  // ks.dkdv are set with it).
  const bool producer = ks.producerWarp;
  const bool reallocate =
      producer && consumerRegisters(W) > launchRegisters(ks.threads());
  const int64_t ownRows = ks.ownRows(), tile = ks.tile, stages = ks.stages;

  Value q = func.getArgument(0), k = func.getArgument(1),
        v = func.getArgument(2), dout = func.getArgument(3),
        lse = func.getArgument(4), delta = func.getArgument(5);
  // The block's own operands (A of S and dP) and the loop's tiles.
  Value ownFirst = dkdv ? k : q, ownSecond = dkdv ? v : dout;
  Value loopFirst = dkdv ? q : k, loopSecond = dkdv ? dout : v;
  b.setInsertionPointToStart(&func.front());

  WgmmaBackwardLayout layout = wgmmaBackwardLayout(ks);
  const bool tma = ks.tma;
  const int64_t colOwn = wgmmaColumnBytes(ownRows);
  const int64_t colTile = wgmmaColumnBytes(tile);
  WgmmaSharedMemory shared = wgmmaSharedMemory(fb, layout.bytes);

  Value c0 = fb.cstIndex(0), c1 = fb.cstIndex(1);
  Value tq = memref::DimOp::create(b, loc, q, 1);
  Value tk = memref::DimOp::create(b, loc, k, 1);
  Value ownLimit = dkdv ? tk : tq, loopLimit = dkdv ? tq : tk;
  Value block =
      dkdv ? gpu::BlockIdOp::create(b, loc, gpu::Dimension::x).getResult()
           : queryBlockIndex(fb, ks.causal);
  Value batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  LaneIds ids = LaneIds::create(fb);
  Value warp = ids.warp, g = ids.g, t2 = ids.t2;

  Value own0 = fb.mul(block, fb.cstIndex(ownRows));
  Value warpRow0 = fb.add(own0, fb.mul(warp, fb.cstIndex(16)));
  // Own row (key for _dkdv, query for _dq) of accumulator half h.
  auto rowOf = [&](FragmentBuilder &x, int64_t h) {
    return x.add(x.add(warpRow0, x.cstIndex(8 * h)), g);
  };
  Value causalOffset = c0;
  if (ks.causal == CausalKind::bottom_right)
    causalOffset = fb.sub(tk, tq);

  // Loop tiles [first, count). _dq: the key tiles any row of the block
  // sees. _dkdv: under causal, from the first query tile holding a query
  // that sees key own0 (query i sees key j when j <= i + offset).
  Value bt = fb.cstIndex(tile);
  // _dkdv under causal: the first query tile of the key block at `keyRow`.
  auto causalFirstTile = [&](FragmentBuilder &x, Value keyRow) -> Value {
    return arith::DivUIOp::create(
        x.b, x.loc, x.maxS(x.sub(keyRow, causalOffset), c0), bt);
  };
  Value first = c0, count;
  if (dkdv) {
    count = arith::CeilDivSIOp::create(b, loc, tq, bt);
    if (ks.causal != CausalKind::none)
      first = causalFirstTile(fb, own0);
  } else {
    VisibleKeys keys = visibleKeys(fb, ks.causal, own0, ownRows, tq, tk);
    count = arith::CeilDivSIOp::create(b, loc, keys.kvEnd, bt);
  }

  // ks.pairsKeyBlocks(): block x runs key block x (pass 0), then, when
  // x < n - 1 - x, key block n - 1 - x (pass 1). The values above are pass
  // 0's; setPass rebuilds those of a pass (block, own0, warpRow0, first,
  // anyTile below) where a pass loop opens, in the consumers' and in the
  // producer's. The loop tiles of both passes go through one ring of
  // stages: tile tb of a pass is ring position ringBase + tb - first, where
  // ringBase is pass 0's tile count in pass 1; the stage and the barrier
  // phases follow the ring position, the own rows' barriers the pass.
  const bool paired = ks.pairsKeyBlocks();
  // passIndex: the pass's index (0 or 1); passActive: whether the block
  // runs it (pass 1 only when n - 1 - x > x); morePasses: whether a pass
  // follows it; ringShift: ring position - tb.
  Value passIndex, passActive, morePasses, partner, ringShift;
  Value anyTile;
  auto setPass = [&](FragmentBuilder &x, Value pass) {
    passIndex = pass;
    Value second = x.cmpI(arith::CmpIPredicate::ne, pass, c0);
    // The pair's key blocks from %ctaid.x read again (else kept, spilled,
    // across the loops).
    Value pair = arith::IndexCastUIOp::create(
        x.b, x.loc, x.b.getIndexType(), readSpecialRegister(x, "%ctaid.x"));
    partner = x.sub(
        x.sub(arith::CeilDivSIOp::create(x.b, x.loc, tk, x.cstIndex(ownRows)),
              c1),
        pair);
    Value hasPartner = x.cmpI(arith::CmpIPredicate::ult, pair, partner);
    Value firstPass = x.cmpI(arith::CmpIPredicate::eq, pass, c0);
    passActive = arith::OrIOp::create(x.b, x.loc, firstPass, hasPartner);
    morePasses = arith::AndIOp::create(x.b, x.loc, firstPass, hasPartner);
    block = arith::SelectOp::create(x.b, x.loc, second, partner, pair);
    own0 = x.mul(block, x.cstIndex(ownRows));
    warpRow0 = x.add(own0, x.mul(warp, x.cstIndex(16)));
    first = causalFirstTile(x, own0);
    // Pass 1 starts at ring position max(count - pass 0's first, 0).
    Value pairFirst = causalFirstTile(x, x.mul(pair, x.cstIndex(ownRows)));
    Value ringBase = arith::SelectOp::create(
        x.b, x.loc, second, x.maxS(x.sub(count, pairFirst), c0), c0);
    ringShift = x.sub(ringBase, first);
    anyTile = x.cmpI(arith::CmpIPredicate::slt, first, count);
  };

  // dq by TMA reductions, no mask, 128-query tiles (the D 64 kernels):
  // iteration tb of block j visits query tile (tb + j ownRows / tile) mod
  // count, so that the blocks of one head, which run side by side, add into
  // different dq_accum rows at a time rather than all into the same ones
  // (under causal each block starts at its own diagonal already). Only the
  // tile's rows follow the rotation; stages, barrier phases and dS^T
  // buffers follow the iteration. Measured on the H200 (bf16, T 2k-8k):
  // +7% at D 64; -1 to -2% at D 128 (64-query tiles, whether the start
  // moves one or two tiles per block), which keeps the order.
  const bool rotate = ks.rotateQueryTiles();
  Value rotation;
  if (rotate)
    rotation = arith::RemUIOp::create(
        b, loc,
        fb.mul(block, fb.cstIndex(std::max<int64_t>(1, ownRows / tile))),
        fb.maxS(count, c1));
  auto queryTile = [&](FragmentBuilder &x, Value tb) -> Value {
    if (!rotate)
      return tb;
    Value s = x.add(tb, rotation);
    return arith::SelectOp::create(x.b, x.loc,
                                   x.cmpI(arith::CmpIPredicate::uge, s, count),
                                   x.sub(s, count), s);
  };

  // Descriptors. cp.async (canonical no-swizzle layout): own tiles (A,
  // K-major): this warpgroup's 64 rows start 1024 bytes per warpgroup in;
  // k16 steps two core columns apart. Loop tiles: K-major B of S and dP;
  // N-major B (K = tile rows) of the accumulating products, 16 rows (256
  // bytes) per k16 step.
  //
  // TMA (swizzled, as WgmmaForward.cpp's Q/K/V): a tile of head dim c is
  // blocks of one swizzle row (sw = tmaSwizzleBytes(c) bytes) per tile row;
  // K-major reads have their 8-row groups 8 sw apart, k16 step kc at 32
  // bytes x (kc % steps per row) within block kc / (steps per row), blocks
  // rows x sw apart; this warpgroup's own rows start 64 sw in. N-major
  // reads (N = head dim) have their 8-row groups 8 sw apart (stride) and
  // their column blocks tile x sw apart (leading); a k16 step is 16 rows.
  const int64_t swFirst = tma ? tmaSwizzleBytes(ks.d) : 0;
  const int64_t swSecond = tma ? tmaSwizzleBytes(ks.dv) : 0;
  Value warpgroup = arith::IndexCastUIOp::create(
      b, loc, i64, arith::DivUIOp::create(b, loc, warp, fb.cstIndex(4)));
  // With the producer warpgroup (consumers at 240 registers): the index
  // through shfl.sync from lane 0, which ptxas takes as warp-uniform, so
  // that the own tiles' descriptors can live in uniform registers (without
  // it the causal D 128 consumer spilled one of them: 8 bytes).
  if (producer)
    warpgroup = arith::ExtUIOp::create(
        b, loc, i64,
        broadcastLane0(
            fb, arith::TruncIOp::create(b, loc, b.getI32Type(), warpgroup)));
  auto ownBase = [&](int64_t offset, int64_t sw) {
    Descriptor desc = tma ? makeDescriptor(fb, shared.units, 16, 8 * sw, sw)
                          : makeDescriptor(fb, shared.units, colOwn, 128);
    int64_t warpgroupBytes = tma ? 64 * sw : 1024;
    return desc.at(fb, arith::AddIOp::create(
                           b, loc,
                           arith::MulIOp::create(
                               b, loc, warpgroup,
                               cstI64(fb, warpgroupBytes >> 4)),
                           cstI64(fb, offset >> 4)));
  };
  Value ownFirstBase = ownBase(layout.ownFirst, swFirst);
  Value ownSecondBase = ownBase(layout.ownSecond, swSecond);
  auto loopKDesc = [&](int64_t sw) {
    return tma ? makeDescriptor(fb, shared.units, 16, 8 * sw, sw)
               : makeDescriptor(fb, shared.units, colTile, 128);
  };
  auto loopNDesc = [&](int64_t sw) {
    return tma ? makeDescriptor(fb, shared.units, tile * sw, 8 * sw, sw)
               : makeDescriptor(fb, shared.units, 128, colTile);
  };
  Descriptor loopKFirst = loopKDesc(swFirst), loopKSecond = loopKDesc(swSecond);
  Descriptor loopNFirst = loopNDesc(swFirst), loopNSecond = loopNDesc(swSecond);
  // The descriptor advance of one k16 step of an N-major loop tile.
  auto nStepUnits = [&](int64_t sw) { return tma ? (16 * sw) >> 4 : 256 >> 4; };
  // S (dP) = own x loop tile^T over head dim c: kSteps k16 steps.
  // `init`: the accumulators' initial values (none: zero).
  auto productOwnLoop = [&](FragmentBuilder &x, int64_t c, Value ownDesc,
                            Value loopDesc, ArrayRef<Value> init = {}) {
    if (!tma)
      return wgmmaProductSS(x, tile, c / 16, ownDesc, (2 * colOwn) >> 4,
                            loopDesc, (2 * colTile) >> 4, /*zeroInit=*/false,
                            SwizzledSteps{}, /*transA=*/false,
                            /*transB=*/false, init, /*fenceOnto=*/true);
    int64_t sw = tmaSwizzleBytes(c);
    return wgmmaProductSS(
        x, tile, c / 16, ownDesc, 32 >> 4, loopDesc, 32 >> 4,
        /*zeroInit=*/false,
        SwizzledSteps{sw / 32, (ownRows * sw) >> 4, (tile * sw) >> 4},
        /*transA=*/false, /*transB=*/false, init, /*fenceOnto=*/true);
  };

  // cp.async copies: one group per loop tile half (first: Q_i or K_j;
  // second: dO_i or V_j), possibly empty so that the group count per
  // iteration is fixed; tile tb goes into stage tb % stages. The own tiles
  // go with the first half of the first tile.
  //
  // TMA: thread 0 issues every load; mbarriers at barrierOffset (own
  // first, own second, then one per stage of each half) complete with the
  // bytes; every thread waits on a tile's barrier before its products.
  // The tensor maps of q, k, v and do close the argument list.
  std::optional<CanonicalCopy> ownCopyFirst, ownCopySecond, copyFirst,
      copySecond;
  if (!tma) {
    ownCopyFirst = CanonicalCopy::plan(fb, ownRows, ks.d, threads, ids);
    ownCopySecond =
        ks.dv == ks.d ? ownCopyFirst
                      : CanonicalCopy::plan(fb, ownRows, ks.dv, threads, ids);
    copyFirst = CanonicalCopy::plan(fb, tile, ks.d, threads, ids);
    copySecond = ks.dv == ks.d
                     ? copyFirst
                     : CanonicalCopy::plan(fb, tile, ks.dv, threads, ids);
  }
  const int64_t numArgs = func.getNumArguments();
  auto mapOf = [&](int64_t operand) { // 0 q, 1 k, 2 v, 3 do, 4 dq_accum
    return func.getArgument(numArgs - ks.numTensorMaps() + operand);
  };
  Value ownFirstMap, ownSecondMap, loopFirstMap, loopSecondMap;
  if (tma) {
    ownFirstMap = mapOf(dkdv ? 1 : 0);
    ownSecondMap = mapOf(dkdv ? 2 : 3);
    loopFirstMap = mapOf(dkdv ? 0 : 1);
    loopSecondMap = mapOf(dkdv ? 3 : 2);
  }
  auto barrierAt = [&](FragmentBuilder &x, Value index) {
    return arith::AddIOp::create(
        x.b, x.loc, shared.addr,
        arith::AddIOp::create(
            x.b, x.loc, cstI32(x, layout.barrierOffset),
            arith::MulIOp::create(x.b, x.loc, index, cstI32(x, 8))));
  };
  // Tile tb's stage (index), and its barrier and the parity of its phase
  // there: the loads into a stage are tiles first + s, first + s + stages,
  // ..., the n-th of them completing phase n.
  // (paired: of its ring position.)
  auto ringOf = [&](FragmentBuilder &x, Value tb) {
    return paired ? x.add(tb, ringShift) : tb;
  };
  auto stageOf = [&](FragmentBuilder &x, Value tb) {
    return arith::RemUIOp::create(x.b, x.loc, ringOf(x, tb), x.cstIndex(stages))
        .getResult();
  };
  // The loads into tile tb's stage before tile tb's.
  auto useOf = [&](FragmentBuilder &x, Value tb) {
    return arith::DivUIOp::create(x.b, x.loc,
                                  paired ? ringOf(x, tb) : x.sub(tb, first),
                                  x.cstIndex(stages))
        .getResult();
  };
  auto stageBarrier = [&](FragmentBuilder &x, Value tb, bool second) {
    Value index = arith::AddIOp::create(
        x.b, x.loc, toI32(x, stageOf(x, tb)),
        cstI32(x, second ? 2 + stages : 2));
    Value use = useOf(x, tb);
    Value parity =
        arith::RemUIOp::create(x.b, x.loc, toI32(x, use), cstI32(x, 2));
    return std::make_pair(barrierAt(x, index), parity);
  };
  // Producer warpgroup: tile tb's "empty" barrier of its half and the
  // parity of the tile's phase there (after the full barriers).
  auto emptyBarrier = [&](FragmentBuilder &x, Value tb, bool second) {
    Value index = arith::AddIOp::create(
        x.b, x.loc, toI32(x, stageOf(x, tb)),
        cstI32(x, 2 + 2 * stages + (second ? stages : 0)));
    Value use = useOf(x, tb);
    Value parity =
        arith::RemUIOp::create(x.b, x.loc, toI32(x, use), cstI32(x, 2));
    return std::make_pair(barrierAt(x, index), parity);
  };
  Value isThread0 = fb.cmpI(arith::CmpIPredicate::eq, ids.tid, c0);
  Value batch32 = tma ? toI32(fb, batch) : Value();
  // ks.prefetchesNextOwn: the own K/V rows of the block launched about
  // when this one ends (nextLaunchedBlock), prefetched into L2 by the
  // thread that issues the last loop tile's loads. A hint only: a wrong
  // guess costs L2 lines, never a result; past the grid nothing is
  // prefetched. Paired: pass 0, when a pass 1 follows, prefetches pass
  // 1's own rows (this block's, known exactly); the last pass those of the
  // next block's pass 0 (key block next.x).
  auto prefetchOwnRows = [&](FragmentBuilder &z, Value row, Value entry) {
    tmaPrefetchTile(z, ownFirstMap, ks.d, swFirst / 2, row, entry);
    tmaPrefetchTile(z, ownSecondMap, ks.dv, swSecond / 2, row, entry);
  };
  auto prefetchNextLaunched = [&](FragmentBuilder &y) {
    NextLaunchedBlock next = nextLaunchedBlock(y);
    Value row = arith::MulIOp::create(y.b, y.loc, next.x, cstI32(y, ownRows));
    scf::IfOp::create(y.b, y.loc, next.inGrid, [&](OpBuilder &ib, Location il) {
      FragmentBuilder z(ib, il, y.elt);
      prefetchOwnRows(z, row, next.y);
      scf::YieldOp::create(ib, il);
    });
  };
  auto prefetchNextOwn = [&](FragmentBuilder &y) {
    if (!paired)
      return prefetchNextLaunched(y);
    scf::IfOp::create(
        y.b, y.loc, morePasses,
        [&](OpBuilder &ib, Location il) {
          FragmentBuilder z(ib, il, y.elt);
          prefetchOwnRows(z, toI32(z, z.mul(partner, z.cstIndex(ownRows))),
                          batch32);
          scf::YieldOp::create(ib, il);
        },
        [&](OpBuilder &ib, Location il) {
          FragmentBuilder z(ib, il, y.elt);
          prefetchNextLaunched(z);
          scf::YieldOp::create(ib, il);
        });
  };
  auto loadHalf = [&](FragmentBuilder &x, Value tb, bool second,
                      Value issuer = Value()) {
    int64_t offset = second ? layout.loopSecond : layout.loopFirst;
    int64_t stageBytes =
        second ? layout.secondStageBytes : layout.firstStageBytes;
    if (!tma) {
      copyStage(x, second ? *copySecond : *copyFirst,
                second ? loopSecond : loopFirst, shared.tile, tb, count,
                stages, offset, stageBytes, batch, loopLimit, ids);
      return;
    }
    Value issue =
        arith::AndIOp::create(x.b, x.loc, issuer ? issuer : isThread0,
                              x.cmpI(arith::CmpIPredicate::slt, tb, count));
    scf::IfOp::create(x.b, x.loc, issue, [&](OpBuilder &ib, Location il) {
      FragmentBuilder y(ib, il, x.elt);
      Value dst = arith::AddIOp::create(
          ib, il, shared.addr,
          arith::TruncIOp::create(
              ib, il, ib.getI32Type(),
              arith::ShLIOp::create(
                  ib, il,
                  stageUnits(y, ringOf(y, tb), stages, offset, stageBytes),
                  cstI64(y, 4))));
      int64_t cols = second ? ks.dv : ks.d;
      tmaLoadTile(y, second ? loopSecondMap : loopFirstMap, dst, tile, cols,
                  tmaSwizzleBytes(cols) / 2,
                  toI32(y, y.mul(queryTile(y, tb), bt)), batch32,
                  stageBarrier(y, tb, second).first);
      if (second && ks.prefetchesNextOwn()) {
        Value lastTile = y.cmpI(arith::CmpIPredicate::eq, tb, y.sub(count, c1));
        scf::IfOp::create(ib, il, lastTile, [&](OpBuilder &jb, Location jl) {
          FragmentBuilder z(jb, jl, y.elt);
          prefetchNextOwn(z);
          scf::YieldOp::create(jb, jl);
        });
      }
      scf::YieldOp::create(ib, il);
    });
  };
  // Every thread waits for both halves of tile tb (TMA).
  auto waitTile = [&](FragmentBuilder &x, Value tb) {
    for (bool second : {false, true}) {
      auto [bar, parity] = stageBarrier(x, tb, second);
      mbarrierWait(x, bar, parity);
    }
  };

  // _dkdv: lse and delta of each query tile in workgroup memory (f32,
  // [stage][lse | delta][tile]), loaded by the block's first 2 x tile
  // threads with plain loads: issued when the tile's copies are, stored at
  // the end of the iteration (the barriers of the copies order them).
  Value colValues;
  Value lastQuery = fb.maxS(fb.sub(tq, c1), c0);
  // Thread facts of the column copies, rebuilt where used (fewer live
  // registers across the loop).
  auto colLoader = [&](FragmentBuilder &x) {
    return x.cmpI(arith::CmpIPredicate::ult, ids.tid, x.cstIndex(2 * tile));
  };
  if (dkdv) {
    auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(),
                                                gpu::AddressSpace::Workgroup);
    colValues = memref::ViewOp::create(
        b, loc,
        MemRefType::get({stages * 2 * tile}, fb.f32,
                        MemRefLayoutAttrInterface(), workgroup),
        shared.raw, fb.cstIndex(layout.columnValues), ValueRange{});
  }
  // A loader thread's column: whether it copies delta (else lse), and the
  // query r0 + tid % tile of tile tb (clamped to the last one).
  auto columnOf = [&](FragmentBuilder &y, Value tb) {
    Value colThread = arith::RemUIOp::create(y.b, y.loc, ids.tid, bt);
    Value isDelta = y.cmpI(arith::CmpIPredicate::uge, ids.tid, bt);
    Value row =
        y.minS(y.add(y.mul(queryTile(y, tb), bt), colThread), lastQuery);
    return std::make_pair(isDelta, row);
  };
  // The lse (or delta) of query r0 + tid % tile of tile tb, for a loader
  // thread of a tile in range (0 otherwise).
  auto loadColumn = [&](FragmentBuilder &x, Value tb) -> Value {
    Value wanted = arith::AndIOp::create(
        x.b, x.loc, colLoader(x), x.cmpI(arith::CmpIPredicate::slt, tb, count));
    auto ifOp = scf::IfOp::create(x.b, x.loc, TypeRange{x.f32}, wanted,
                                  /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(x.b);
    x.b.setInsertionPointToStart(ifOp.thenBlock());
    FragmentBuilder y(x.b, x.loc, ks.elt);
    auto [isDelta, row] = columnOf(y, tb);
    Value fromLse = y.load(lse, {batch, row});
    Value fromDelta = y.load(delta, {batch, row});
    scf::YieldOp::create(x.b, x.loc,
                         ValueRange{y.select(isDelta, fromDelta, fromLse)});
    x.b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(x.b, x.loc, ValueRange{y.cstF32(0.0)});
    return ifOp.getResult(0);
  };
  // TMA: the same copy as one 4-byte cp.async per loader thread (zero-fill
  // past the last tile), completed by the loader's cp.async.wait_all before
  // the block barrier that ends the iteration: no register holds the value
  // across the iteration.
  // The global address (i64) of f32 element [batch, row(, column)] of
  // `memref` (a unit-stride innermost dim when a column is given): the
  // descriptor's aligned pointer plus the element offset in bytes, in 64
  // bits whatever the index type (memref.extract_aligned_pointer_as_index
  // would truncate the pointer to a 32-bit index).
  auto addressOf = [&](FragmentBuilder &x, Value memref, Value row,
                       Value column = Value()) {
    auto meta = memref::ExtractStridedMetadataOp::create(x.b, x.loc, memref);
    Value ptr = LLVM::PtrToIntOp::create(
        x.b, x.loc, i64,
        alignedPointerOf(x.b, x.loc, memref, ks.indexBitwidth));
    Value element =
        x.add(x.add(meta.getOffset(), x.mul(batch, meta.getStrides()[0])),
              x.mul(row, meta.getStrides()[1]));
    if (column)
      element = x.add(element, column);
    // Offsets are below 2^31 elements with 32-bit indices (the runtimes'
    // launch check), their bytes not.
    Value bytes = arith::MulIOp::create(
        x.b, x.loc, arith::IndexCastUIOp::create(x.b, x.loc, i64, element),
        arith::ConstantIntOp::create(x.b, x.loc, i64, 4));
    return arith::AddIOp::create(x.b, x.loc, ptr, bytes).getResult();
  };
  auto copyColumnAsync = [&](FragmentBuilder &x, Value tb) {
    scf::IfOp::create(
        x.b, x.loc, colLoader(x), [&](OpBuilder &ib, Location il) {
          FragmentBuilder y(ib, il, ks.elt);
          auto [isDelta, row] = columnOf(y, tb);
          Value src = arith::SelectOp::create(ib, il, isDelta,
                                              addressOf(y, delta, row),
                                              addressOf(y, lse, row));
          Value stage = stageOf(y, tb);
          Value dst = arith::AddIOp::create(
              ib, il, shared.addr,
              toI32(y, y.add(y.cstIndex(layout.columnValues),
                             y.mul(y.add(y.mul(stage, y.cstIndex(2 * tile)),
                                         ids.tid),
                                   y.cstIndex(4)))));
          Value srcBytes = arith::SelectOp::create(
              ib, il, y.cmpI(arith::CmpIPredicate::slt, tb, count),
              cstI32(y, 4), cstI32(y, 0));
          inlinePtx(y, "cp.async.ca.shared.global [$0], [$1], 4, $2;", {},
                    ValueRange{dst, src, srcBytes});
          scf::YieldOp::create(ib, il);
        });
  };
  auto storeColumn = [&](FragmentBuilder &x, Value tb, Value value) {
    scf::IfOp::create(
        x.b, x.loc, colLoader(x), [&](OpBuilder &ib, Location il) {
          FragmentBuilder y(ib, il, ks.elt);
          Value stage = stageOf(y, tb);
          y.store(value, colValues,
                  {y.add(y.mul(stage, y.cstIndex(2 * tile)), ids.tid)});
          scf::YieldOp::create(ib, il);
        });
  };

  anyTile = fb.cmpI(arith::CmpIPredicate::slt, first, count);
  // TMA: thread 0 loads the own tiles of the pass when it visits any loop
  // tile (every issued load is waited for), completing phase passIndex of
  // the own barriers.
  auto issueOwnLoads = [&](FragmentBuilder &x) {
    Value issueOwn = arith::AndIOp::create(x.b, x.loc, isThread0, anyTile);
    scf::IfOp::create(x.b, x.loc, issueOwn, [&](OpBuilder &ib, Location il) {
      FragmentBuilder y(ib, il, ks.elt);
      Value row = toI32(y, own0);
      tmaLoadTile(y, ownFirstMap,
                  arith::AddIOp::create(ib, il, shared.addr,
                                        cstI32(y, layout.ownFirst)),
                  ownRows, ks.d, swFirst / 2, row, batch32,
                  barrierAt(y, cstI32(y, 0)));
      tmaLoadTile(y, ownSecondMap,
                  arith::AddIOp::create(ib, il, shared.addr,
                                        cstI32(y, layout.ownSecond)),
                  ownRows, ks.dv, swSecond / 2, row, batch32,
                  barrierAt(y, cstI32(y, 1)));
      scf::YieldOp::create(ib, il);
    });
  };
  if (tma) {
    // Thread 0 initializes the barriers (one arrival per phase), visible to
    // the other threads and the copy engine before any use; then loads the
    // own tiles when any loop tile is visited (every issued load is waited
    // for).
    scf::IfOp::create(b, loc, isThread0, [&](OpBuilder &ib, Location il) {
      FragmentBuilder y(ib, il, ks.elt);
      for (Value map : {loopFirstMap, loopSecondMap})
        inlinePtx(y, "prefetch.tensormap [$0];", {}, ValueRange{map});
      // Producer warpgroup: the first half's "full" barriers also count
      // the producer threads' column copies (cp.async.mbarrier.arrive
      // .noinc); the "empty" ones every consumer thread.
      for (int64_t i = 0; i < ks.numBarriers(); ++i) {
        int64_t arrivals = 1;
        if (producer && i >= 2 && i < 2 + stages)
          arrivals = 1 + 128;
        else if (producer && i >= 2 + 2 * stages)
          arrivals = threads;
        mbarrierInit(y, barrierAt(y, cstI32(y, i)), arrivals);
      }
      inlinePtx(y, "fence.mbarrier_init.release.cluster;", {}, ValueRange{});
      scf::YieldOp::create(ib, il);
    });
    gpu::BarrierOp::create(b, loc);
    // Paired: each consumer pass loads its own.
    if (!paired)
      issueOwnLoads(fb);
  } else {
    scf::IfOp::create(b, loc, anyTile, [&](OpBuilder &ib, Location il) {
      FragmentBuilder y(ib, il, ks.elt);
      ownCopyFirst->copy(y, ownFirst, shared.tile,
                         y.cstIndex(layout.ownFirst / 2), batch, own0,
                         ownLimit, ids);
      ownCopySecond->copy(y, ownSecond, shared.tile,
                          y.cstIndex(layout.ownSecond / 2), batch, own0,
                          ownLimit, ids);
      scf::YieldOp::create(ib, il);
    });
  }
  for (int64_t st = 0; st < stages && !producer; ++st) {
    Value tb = fb.add(first, fb.cstIndex(st));
    loadHalf(fb, tb, /*second=*/false);
    loadHalf(fb, tb, /*second=*/true);
    if (dkdv)
      storeColumn(fb, tb, loadColumn(fb, tb));
  }
  // Producer warpgroup (threads `threads` on): gives its registers to the
  // consumers, then for each loop tile waits until the consumers released
  // its stage (the tile `stages` earlier; a fresh barrier passes parity 1
  // at once), and loads it: its first thread the Q (then dO) tile by TMA,
  // every producer thread 2 x tile / 128 lse/delta values by 4-byte
  // cp.async, whose completion arrives on the Q tile's barrier.
  // Paired: opens the loop over the block's passes at b's insertion point,
  // leaves b in its body (after setPass) and returns it; else nothing.
  auto openPassLoop = [&]() -> scf::ForOp {
    if (!paired)
      return nullptr;
    auto passLoop = scf::ForOp::create(b, loc, c0, fb.cstIndex(2), c1);
    b.setInsertionPoint(passLoop.getBody()->getTerminator());
    setPass(fb, passLoop.getInductionVar());
    auto active = scf::IfOp::create(b, loc, passActive);
    b.setInsertionPoint(active.thenBlock()->getTerminator());
    return passLoop;
  };
  scf::IfOp consumers;
  auto buildProducer = [&]() {
    scf::IfOp producers = openWarpgroupRole(fb, ids.tid, threads,
                                            /*producerRole=*/true, reallocate,
                                            /*warpUniform=*/false);
    Value issuer =
        fb.cmpI(arith::CmpIPredicate::eq, ids.tid, fb.cstIndex(threads));
    scf::ForOp passLoop = openPassLoop();
    scf::ForOp::create(
        b, loc, first, count, c1, ValueRange{},
        [&](OpBuilder &pb, Location pl, Value tb, ValueRange) {
          FragmentBuilder z(pb, pl, ks.elt);
          // Every producer thread waits for both halves' stages before its
          // column copies arrive on the Q barrier: no thread can then miss
          // a phase of either empty barrier (the consumers release tile tb
          // only after that barrier completed).
          for (bool second : {false, true}) {
            auto [bar, parity] = emptyBarrier(z, tb, second);
            mbarrierWait(z, bar,
                         arith::XOrIOp::create(pb, pl, parity, cstI32(z, 1)));
          }
          for (bool second : {false, true}) {
            loadHalf(z, tb, second, issuer);
            if (second)
              continue;
            Value stage = stageOf(z, tb);
            Value ptid = z.sub(ids.tid, z.cstIndex(threads));
            for (int64_t r = 0; r < 2 * tile / 128; ++r) {
              Value idx = z.add(ptid, z.cstIndex(128 * r));
              Value isDelta = z.cmpI(arith::CmpIPredicate::uge, idx, bt);
              Value row = z.minS(z.add(z.mul(queryTile(z, tb), bt),
                                       arith::RemUIOp::create(pb, pl, idx, bt)),
                                 lastQuery);
              Value src = arith::SelectOp::create(pb, pl, isDelta,
                                                  addressOf(z, delta, row),
                                                  addressOf(z, lse, row));
              Value dst = arith::AddIOp::create(
                  pb, pl, shared.addr,
                  toI32(z, z.add(z.cstIndex(layout.columnValues),
                                 z.mul(z.add(z.mul(stage, z.cstIndex(2 * tile)),
                                             idx),
                                       z.cstIndex(4)))));
              inlinePtx(z, "cp.async.ca.shared.global [$0], [$1], 4;", {},
                        ValueRange{dst, src});
            }
            inlinePtx(z, "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [$0];",
                      {}, ValueRange{stageBarrier(z, tb, false).first});
          }
          scf::YieldOp::create(pb, pl);
        });
    if (passLoop)
      b.setInsertionPointAfter(passLoop);
    // The last column copies have landed before the thread exits.
    inlinePtx(fb, "cp.async.wait_all;", {}, ValueRange{});
    return producers;
  };
  if (producer) {
    consumers = openWarpgroupRole(fb, ids.tid, threads,
                                  /*producerRole=*/false, reallocate,
                                  /*warpUniform=*/false);
  }
  scf::ForOp consumerPasses = openPassLoop();
  // Paired: LLVM would hoist the prologue's and the last tile's descriptors
  // and workgroup addresses (pass-invariant) out of the pass loop, where
  // they stay live across it (ptxas spilled 68 bytes): the bases pass
  // through empty inline PTX in each pass and the own tiles' descriptors
  // are rebuilt there (restored after the loop, for the producer's
  // branch).
  WgmmaSharedMemory sharedOutside = shared;
  SmallVector<Descriptor *> loopDescs = {&loopKFirst, &loopKSecond, &loopNFirst,
                                         &loopNSecond};
  SmallVector<Descriptor> loopDescsOutside;
  Value ownFirstOutside = ownFirstBase, ownSecondOutside = ownSecondBase;
  for (Descriptor *d : loopDescs)
    loopDescsOutside.push_back(*d);
  if (consumerPasses) {
    shared.units = inLoop(fb, shared.units);
    shared.addr = inLoop(fb, shared.addr);
    for (Descriptor *d : loopDescs)
      d->base = inLoop(fb, d->base);
    ownFirstBase = ownBase(layout.ownFirst, swFirst);
    ownSecondBase = ownBase(layout.ownSecond, swSecond);
    issueOwnLoads(fb);
  }
  // Consumers: every thread's arrival once its products have read the
  // stage of tile tb's first (Q) or second (dO) half.
  auto releaseHalf = [&](FragmentBuilder &x, Value tb, bool second) {
    if (producer)
      mbarrierArrive(x, emptyBarrier(x, tb, second).first);
  };
  // With TMA and dK from registers (ks.dkFromRegisters()), tile tb's first
  // half (Q_tb) is last read by the tile's own dK += dS^T Q_tb, which its
  // last wait completes: the half is free at the end of the tile, as the
  // second half is. Then both halves of tile tb + stages - 1 are loaded at
  // the top of iteration tb (into the stage of tile tb - 1), and the
  // producer gets tile tb's stage back one tile earlier. Otherwise the
  // first half of tile tb - 1 feeds iteration tb's dK product, so it is
  // released at the end of iteration tb and loaded after that iteration's
  // block barrier: a Q tile issued there was waited for at the top of the
  // next iteration with no tile of lead (ncu, H100, bf16 D 64 T 4k: 5.5%
  // of the _dkdv's stall samples on that wait).
  const bool firstHalfFreeAtEnd = tma && ks.dkFromRegisters();
  // The consumers' block-wide barrier: the block barrier, or with the
  // producer warpgroup named barrier 1 over the consumer threads.
  auto consumerBarrier = [&](OpBuilder &ob, Location ol) {
    if (!producer) {
      gpu::BarrierOp::create(ob, ol);
      return;
    }
    FragmentBuilder y(ob, ol, ks.elt);
    namedBarrierSync(y, cstI32(y, 1), threads);
  };

  // _dq: -lse log2 e and delta of this lane's two rows, for the whole loop.
  std::array<Value, 2> rowNegLse2, rowDelta;
  if (!dkdv)
    for (int64_t h = 0; h < 2; ++h) {
      Value row = fb.minS(rowOf(fb, h), lastQuery);
      rowNegLse2[h] = arith::NegFOp::create(
          b, loc, lseLog2(fb, fb.load(lse, {batch, row})));
      rowDelta[h] = fb.load(delta, {batch, row});
    }

  const int64_t firstN8 = ks.d / 8, secondN8 = ks.dv / 8;
  SmallVector<Value> init(firstN8 * 4, fb.cstF32(0.0));
  if (dkdv)
    init.append(secondN8 * 4, fb.cstF32(0.0));
  const int64_t numFirst = firstN8 * 4;
  // The packed dS (dS^T) registers of the previous tile (dq atomics: none,
  // each tile issues its own dK product or dK reads dS^T from workgroup
  // memory).
  const int64_t carriedDs = dqAtomic ? 0 : tile / 4;
  init.append(carriedDs,
              arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0));
  const int64_t dsBase = init.size() - carriedDs;
  auto firstUnitsOf = [&](FragmentBuilder &x, Value tb) {
    return stageUnits(x, ringOf(x, tb), stages, layout.loopFirst,
                      layout.firstStageBytes);
  };

  // dq atomics (_dkdv with ks.dqAtomic). With ks.dkFromRegisters(), tile
  // tb's dK += dS^T Q_tb is issued from the packed dS^T registers at the
  // end of the tile, before they are stored (completing with the tile's
  // last wait); otherwise the next tile issues it from the dS^T buffer
  // between its S^T and dP^T. dS^T of tile tb goes to buffer tb % 2 (keys
  // x queries, canonical no-swizzle layout: byte (key r, query c) = (c /
  // 8) colDs + 16 r + 2 (c % 8), colDs = 16 ownRows): a K-major A in the
  // dK product's terms. Once both warpgroups have stored it (the
  // next block barrier), the tile's dQ products (K = the block's keys) are
  // issued ahead of the next tile's S^T, so the wait for S^T also
  // completes them, and their scale * dQ values go to dq_accum with f32
  // atomic adds. Two forms (WgmmaBackwardShape::dqByQueries):
  //  - block-m a multiple of 64: dQ_tb = dS_tb K (M = 64 queries, dS M-major
  //    from the buffer, K the own K tile read N-major, N = head-dim
  //    columns), two adjacent columns per red.global.add.v2.f32;
  //  - 32-query tiles: dQ_tb^T = K^T dS_tb^T (M = 64 head-dim rows, K^T the
  //    own K tile read M-major, dS^T N-major, N = queries), one
  //    red.global.add.f32 per value.
  // Warpgroup w takes M block w (as many blocks as warpgroups), every block
  // (one warpgroup), or N columns [w N, (w + 1) N) of the one block.
  const bool byQueries = ks.dqByQueries();
  const bool dkFromRegisters = ks.dkFromRegisters();
  Value dqAccum = dqAtomic ? func.getArgument(8) : Value();
  const int64_t colDs = ownRows * 16, warpgroups = W / 4;
  const int64_t mBlocks = ks.dqBlocks();
  const int64_t dqPerWarpgroup = ks.dqProducts();
  const int64_t dqN = ks.dqColumns();
  Value dsThreadBytes, dqThreadRow, warpgroupIndex;
  if (dqAtomic) {
    // Byte of (key 16 warp + g, query 2t) in a dS^T buffer; row 16 (warp %
    // 4) + g of an M block (query or head dim): this thread's first dQ
    // (dQ^T) fragment row.
    dsThreadBytes = toI32(
        fb, fb.add(fb.mul(fb.add(fb.mul(warp, fb.cstIndex(16)), g),
                          fb.cstIndex(16)),
                   fb.mul(ids.t, fb.cstIndex(4))));
    warpgroupIndex = arith::DivUIOp::create(b, loc, warp, fb.cstIndex(4));
    dqThreadRow = fb.add(
        fb.mul(arith::RemUIOp::create(b, loc, warp, fb.cstIndex(4)),
               fb.cstIndex(16)),
        g);
  }
  // The (M block, N offset) of this warpgroup's p-th dQ (dQ^T) product.
  auto dqPart = [&](FragmentBuilder &x, int64_t p) {
    if (mBlocks >= warpgroups)
      return std::make_pair(
          x.add(x.mul(warpgroupIndex, x.cstIndex(dqPerWarpgroup)),
                x.cstIndex(p)),
          x.cstIndex(0));
    return std::make_pair(x.cstIndex(0),
                          x.mul(warpgroupIndex, x.cstIndex(dqN)));
  };
  auto unitsOf = [&](FragmentBuilder &x, Value bytes) {
    return arith::IndexCastUIOp::create(
               x.b, x.loc, i64,
               arith::ShRUIOp::create(x.b, x.loc, bytes, x.cstIndex(4)))
        .getResult();
  };
  // Stores the packed dS^T registers of tile tb (A fragments: word i of
  // k16 step kk holds keys +8 (i % 2) and queries 16 kk + 2t + 8 (i / 2))
  // and makes them visible to wgmma.
  auto storeDs = [&](FragmentBuilder &x, Value tb, ArrayRef<Value> dsRegs) {
    Value buffer = toI32(x, arith::RemUIOp::create(x.b, x.loc, tb,
                                                   x.cstIndex(2)));
    Value base = arith::AddIOp::create(
        x.b, x.loc,
        arith::AddIOp::create(
            x.b, x.loc, shared.addr,
            arith::MulIOp::create(x.b, x.loc, buffer,
                                  cstI32(x, ks.dsBufferBytes()))),
        arith::AddIOp::create(x.b, x.loc, dsThreadBytes,
                              cstI32(x, layout.dsBuffers)));
    for (auto [i, word] : llvm::enumerate(dsRegs)) {
      int64_t kk = i / 4, hiRow = i % 2, hiCol = (i % 4) / 2;
      Value addr = arith::AddIOp::create(
          x.b, x.loc, base,
          cstI32(x, (2 * kk + hiCol) * colDs + 8 * hiRow * 16));
      inlinePtx(x, "st.shared.b32 [$0], $1;", {}, ValueRange{addr, word});
    }
    inlinePtx(x, "fence.proxy.async.shared::cta;", {}, ValueRange{});
  };
  // dq atomics with the producer warpgroup (splitDsBarrier): the dS^T
  // exchange between the consumer warpgroups on named barriers rather than
  // the block-wide consumer barrier at the end of each tile. Warpgroup w
  // arrives on barrier 2 + 2 w + tb % 2 once its rows of dS^T(tb) are
  // stored (after the fence), and every other warpgroup syncs there
  // before its dQ_tb products read them: a warpgroup waits only for the
  // data it reads, not for the others to finish their tile. Two barriers
  // per warpgroup (one per dS^T buffer): w arrives on the same one again
  // (tile tb + 2) only after syncing on the others' tb + 1 barriers, which
  // they arrive on after their tb sync, so no barrier sees a second
  // arrival before its sync (FlashAttention-3, Shah et al. 2024, Section
  // 3.1, hands tiles between warpgroups with named barriers the same way).
  // The loads need no block barrier here: the producer waits on the
  // stages' "empty" mbarriers. The buffer's reuse (tile tb + 2) comes
  // after w's tb + 1 sync, so after every reader's dQ_tb wait. A sync
  // counts the syncing warpgroup's own threads too: its warps have all
  // stored their dS^T rows before its dK and dQ products read them. (One
  // consumer warpgroup keeps the block barrier: nothing else orders its
  // warps' stores.)
  const bool splitDsBarrier = dqAtomic && producer && warpgroups >= 2;
  auto dsBarrier = [&](FragmentBuilder &x, Value wg, Value tb) {
    Value parity =
        toI32(x, arith::RemUIOp::create(x.b, x.loc, tb, x.cstIndex(2)));
    return arith::AddIOp::create(
               x.b, x.loc,
               arith::AddIOp::create(
                   x.b, x.loc, cstI32(x, 2),
                   arith::MulIOp::create(x.b, x.loc, wg, cstI32(x, 2))),
               parity)
        .getResult();
  };
  // This thread's warpgroup (i32), from %tid.x where used (no register
  // across the loop).
  auto ownWarpgroup = [&](FragmentBuilder &x) {
    return arith::ShRUIOp::create(x.b, x.loc, readSpecialRegister(x, "%tid.x"),
                                  cstI32(x, 7))
        .getResult();
  };
  auto signalDs = [&](FragmentBuilder &x, Value tb) {
    if (splitDsBarrier)
      namedBarrierArrive(x, dsBarrier(x, ownWarpgroup(x), tb), threads);
  };
  auto awaitDs = [&](FragmentBuilder &x, Value tb) {
    if (!splitDsBarrier)
      return;
    Value own = ownWarpgroup(x);
    for (int64_t k = 1; k < warpgroups; ++k) {
      Value other = arith::RemUIOp::create(
          x.b, x.loc, arith::AddIOp::create(x.b, x.loc, own, cstI32(x, k)),
          cstI32(x, warpgroups));
      namedBarrierSync(x, dsBarrier(x, other, tb), threads);
    }
  };
  // Issues this warpgroup's dQ_tb (dQ_tb^T) products, one wgmma group each;
  // a k16 step is 16 keys. The dS^T buffer is read with 8-query groups
  // colDs apart and 8-key groups 128 bytes apart (M-major A of dQ, N-major
  // B of dQ^T). The own K tile (TMA: swizzled, head-dim blocks of 64
  // columns ownRows x sw apart, 8-key groups 8 sw apart; cp.async: core
  // columns colOwn apart, 8-key groups 128 bytes apart) is the N-major B of
  // dQ (a column offset inside a block moves the start address) or the
  // M-major A of dQ^T.
  const int64_t swK = tma ? tmaSwizzleBytes(ks.d) : 0;
  Descriptor dsDqDesc, kDqDesc, dsADesc;
  if (dqAtomic) {
    dsDqDesc = makeDescriptor(fb, shared.units, 128, colDs);
    kDqDesc = tma ? makeDescriptor(fb, shared.units, ownRows * swK, 8 * swK,
                                   swK)
                  : makeDescriptor(fb, shared.units, 128, colOwn);
    if (!dkFromRegisters)
      dsADesc = makeDescriptor(fb, shared.units, colDs, 128);
  }
  const int64_t kDqStep = (tma ? 16 * swK : 256) >> 4;
  auto issueDq = [&](FragmentBuilder &x, Value tb) {
    SmallVector<SmallVector<Value>> accs;
    Value buffer = arith::RemUIOp::create(x.b, x.loc, tb, x.cstIndex(2));
    Value dsBytes = x.add(x.cstIndex(layout.dsBuffers),
                          x.mul(buffer, x.cstIndex(ks.dsBufferBytes())));
    // The byte of head-dim column c (a multiple of 8) in the own K tile.
    auto kColumnBytes = [&](Value c) {
      if (!tma)
        return x.mul(arith::DivUIOp::create(x.b, x.loc, c, x.cstIndex(8)),
                     x.cstIndex(colOwn));
      return x.add(
          x.mul(arith::DivUIOp::create(x.b, x.loc, c, x.cstIndex(64)),
                x.cstIndex(ownRows * swK)),
          x.mul(arith::RemUIOp::create(x.b, x.loc, c, x.cstIndex(64)),
                x.cstIndex(2)));
    };
    // The byte of query c (a multiple of 8) in the dS^T buffer.
    auto dsColumnBytes = [&](Value c) {
      return x.add(dsBytes,
                   x.mul(arith::DivUIOp::create(x.b, x.loc, c, x.cstIndex(8)),
                         x.cstIndex(colDs)));
    };
    for (int64_t p = 0; p < dqPerWarpgroup; ++p) {
      auto [mBlock, nOffset] = dqPart(x, p);
      Value m0 = x.mul(mBlock, x.cstIndex(64));
      Value dsAt = dsColumnBytes(byQueries ? m0 : nOffset);
      Value kAt = x.add(x.cstIndex(layout.ownFirst),
                        kColumnBytes(byQueries ? nOffset : m0));
      Value dsDesc = dsDqDesc.at(x, unitsOf(x, dsAt));
      Value kDesc = inLoop(x, kDqDesc.at(x, unitsOf(x, kAt)));
      accs.push_back(byQueries ? wgmmaProductSS(x, dqN, ownRows / 16, dsDesc,
                                                256 >> 4, kDesc, kDqStep,
                                                /*zeroInit=*/false,
                                                SwizzledSteps{},
                                                /*transA=*/true,
                                                /*transB=*/true)
                               : wgmmaProductSS(x, dqN, ownRows / 16, kDesc,
                                                kDqStep, dsDesc, 256 >> 4,
                                                /*zeroInit=*/false,
                                                SwizzledSteps{},
                                                /*transA=*/true,
                                                /*transB=*/true));
    }
    return accs;
  };
  // dq_accum[batch, query, d] += scale * dQ[query, d] for this thread's
  // fragment values of tile tb, queries past Tq skipped: one inline-PTX
  // block per product (the row addresses are made from one base and the
  // row stride inside it, so that no per-element address stays live across
  // the loop). Value i of a fragment is row + 8 ((i % 4) / 2), column
  // 8 (i / 4) + 2t + i % 2: dQ rows are queries (values i, i + 1 go
  // together, red.global.add.v2.f32), dQ^T rows head-dim columns (one
  // red.global.add.f32 each).
  Value dqBase, dqRowBytes;
  const bool dqBulk = ks.dqBulk();
  Value dqMap = dqBulk ? mapOf(4) : Value();
  if (dqAtomic && !dqBulk) {
    // This thread's first fragment value: [batch, 16 (warp % 4) + g, 2t]
    // (dQ rows are queries) or [batch, 0, 16 (warp % 4) + g] (dQ^T rows are
    // head-dim columns).
    dqBase = byQueries ? addressOf(fb, dqAccum, dqThreadRow, t2)
                       : addressOf(fb, dqAccum, c0, dqThreadRow);
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, dqAccum);
    // 32 bits (dq_accum rows are head dim x 4 bytes): one register less
    // across the loop.
    dqRowBytes = toI32(fb, fb.mul(meta.getStrides()[1], fb.cstIndex(4)));
  }
  // dqBulk: the warp's staging boxes are free once its earlier TMA
  // reductions have read them; every lane stores its dQ values, makes them
  // visible to the async proxy, and lane 0 adds each box to dq_accum at
  // (head-dim column nOffset + the box's first column, the warp's first
  // query row, batch); rows past Tq fall outside the map and are dropped.
  // Only the warp syncs: its boxes are its own. Warp w's product p is
  // staged at (w P + p) 64 dqN bytes (P products), in one of two forms
  // (WgmmaBackwardShape::dqFragmentOrder):
  //  - scale * dQ in boxes of 16 rows x 32 f32 (box b of a product at 2048
  //    b; row r at 128 r, 16-byte chunk c at 16 (c ^ (r % 8)): the 128-byte
  //    swizzle), dq_accum in order;
  //  - dQ unscaled in one box of 16 rows x dqN f32, no swizzle (row r at 4
  //    dqN r), where row r stores n8 block j of each 32-column group at
  //    block j ^ (r % 4) (DqAccumLayout): each lane's value pairs go as the
  //    wgmma left them (no selects, no multiplies), and _dq_convert scales
  //    and reorders.
  // Either way, the 8-byte stores of each half-warp (rows g of 4
  // consecutive g) cover all 32 banks.
  const bool dqFragmentOrder = ks.dqFragmentOrder();
  const int64_t dqBoxColumns = dqFragmentOrder ? ks.dqColumns() : 32;
  const int64_t dqBoxes = ks.dqColumns() / dqBoxColumns;
  const int64_t dqBoxBytes = 16 * dqBoxColumns * 4;
  // This warp's staging region (i32 workgroup address) for `products`
  // products, from %tid.x (read where used: the kernel runs at the
  // register limit).
  auto dqWarpRegion = [&](FragmentBuilder &x, Value tid, int64_t products) {
    return arith::AddIOp::create(
               x.b, x.loc,
               arith::AddIOp::create(x.b, x.loc, shared.addr,
                                     cstI32(x, layout.dqStage)),
               arith::MulIOp::create(
                   x.b, x.loc,
                   arith::ShRUIOp::create(x.b, x.loc, tid, cstI32(x, 5)),
                   cstI32(x, products * dqBoxes * dqBoxBytes)))
        .getResult();
  };
  // Lane 0 of each warp adds the warp's staged boxes of tile tb to
  // dq_accum (the lanes' stores fenced to the async proxy and the warp
  // synced before) and commits them as one bulk group. `tid` and `region`:
  // the stager's (else read again).
  auto issueDqReductions = [&](FragmentBuilder &x, Value tb, int64_t products,
                               Value tid = Value(), Value region = Value()) {
    if (!tid) {
      tid = readSpecialRegister(x, "%tid.x");
      region = dqWarpRegion(x, tid, products);
    }
    Value lane = arith::AndIOp::create(x.b, x.loc, tid, cstI32(x, 31));
    Value leader = arith::CmpIOp::create(x.b, x.loc, arith::CmpIPredicate::eq,
                                         lane, cstI32(x, 0));
    scf::IfOp::create(x.b, x.loc, leader, [&](OpBuilder &ib, Location il) {
      FragmentBuilder y(ib, il, ks.elt);
      Value warpRows = arith::MulIOp::create(
          ib, il,
          arith::AndIOp::create(
              ib, il, arith::ShRUIOp::create(ib, il, tid, cstI32(y, 5)),
              cstI32(y, 3)),
          cstI32(y, 16));
      for (int64_t p = 0; p < products; ++p) {
        auto [mBlock, nOffset] = dqPart(y, p);
        Value row = arith::AddIOp::create(
            ib, il,
            toI32(y, y.add(y.mul(queryTile(y, tb), bt),
                           y.mul(mBlock, y.cstIndex(64)))),
            warpRows);
        for (int64_t box = 0; box < dqBoxes; ++box)
          inlinePtx(
              y,
              "cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile."
              "bulk_group [$0, {$1, $2, $3}], [$4];",
              {},
              ValueRange{
                  dqMap,
                  toI32(y, y.add(nOffset, y.cstIndex(dqBoxColumns * box))), row,
                  toI32(y, batch),
                  arith::AddIOp::create(
                      ib, il, region,
                      cstI32(y, (p * dqBoxes + box) * dqBoxBytes))});
      }
      inlinePtx(y, "cp.async.bulk.commit_group;", {}, ValueRange{});
      scf::YieldOp::create(ib, il);
    });
  };
  // `issue` false: the values are staged but neither fenced nor added;
  // the caller fences (storeDs) and calls issueDqReductions.
  auto dqBulkAdds = [&](FragmentBuilder &x, Value tb,
                        ArrayRef<SmallVector<Value>> accs, bool issue) {
    auto cst = [&](int64_t v) { return cstI32(x, v); };
    auto add = [&](Value a, Value c) {
      return arith::AddIOp::create(x.b, x.loc, a, c).getResult();
    };
    auto mul = [&](Value a, int64_t c) {
      return arith::MulIOp::create(x.b, x.loc, a, cst(c)).getResult();
    };
    auto andI = [&](Value a, int64_t c) {
      return arith::AndIOp::create(x.b, x.loc, a, cst(c)).getResult();
    };
    auto shr = [&](Value a, int64_t c) {
      return arith::ShRUIOp::create(x.b, x.loc, a, cst(c)).getResult();
    };
    auto xorI = [&](Value a, Value c) {
      return arith::XOrIOp::create(x.b, x.loc, a, c).getResult();
    };
    // The thread index read here, not carried across the loop (the kernel
    // runs at the register limit).
    Value tid = readSpecialRegister(x, "%tid.x");
    Value lane = andI(tid, 31), g = shr(lane, 2), t = andI(lane, 3);
    const int64_t products = accs.size();
    Value region = dqWarpRegion(x, tid, products);
    // The address of this lane's pair of n8 block k (mod 4) in row g of a
    // box (of a 32-column group with dqFragmentOrder).
    SmallVector<Value> blockAt;
    Value oddRow;
    if (dqFragmentOrder) {
      // Column 2t of n8 block k ^ (g % 4).
      Value rowBase = add(add(region, mul(g, dqBoxColumns * 4)), mul(t, 8));
      for (int64_t k = 0; k < 4; ++k)
        blockAt.push_back(add(rowBase, mul(xorI(andI(g, 3), cst(k)), 32)));
    } else {
      // The t % 2 half of 16-byte chunk 2 a + t / 2 (swizzled): 128 g + 8
      // (t % 2) + 16 ((t / 2 ^ g) % 2) + 32 (a ^ g / 2). Store k of a box
      // writes n8 block a = k ^ 2 (g % 2) of it, so that rows g and g ^ 1
      // fall in different chunk pairs.
      Value threadBase =
          add(add(region, mul(g, 128)),
              add(mul(andI(t, 1), 8), mul(andI(xorI(shr(t, 1), g), 1), 16)));
      oddRow = arith::CmpIOp::create(x.b, x.loc, arith::CmpIPredicate::ne,
                                     andI(g, 1), cst(0));
      Value pairOf = xorI(shr(g, 1), mul(andI(g, 1), 2));
      for (int64_t k = 0; k < 4; ++k)
        blockAt.push_back(add(threadBase, mul(xorI(pairOf, cst(k)), 32)));
    }
    inlinePtx(x, "cp.async.bulk.wait_group.read 0;\nbar.warp.sync -1;", {},
              ValueRange{});
    for (auto [p, acc] : llvm::enumerate(accs)) {
      // Value i of the fragment: row g + 8 ((i % 4) / 2), column 8 (i / 4)
      // + 2t + i % 2: n8 block j = i / 4 is block j % 4 of 32-column group
      // j / 4; block j ^ 2 of the same group is value i ^ 8.
      std::string text;
      SmallVector<Value> ins(blockAt.begin(), blockAt.end());
      auto stored = [&](int64_t i) {
        if (dqFragmentOrder)
          return acc[i];
        Value v =
            arith::SelectOp::create(x.b, x.loc, oddRow, acc[i ^ 8], acc[i]);
        return x.mulF(v, x.cstF32(ks.scale));
      };
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t i = 0; i < (int64_t)acc.size(); i += 4) {
          int64_t j = i / 4;
          int64_t offset =
              (int64_t)p * dqBoxes * dqBoxBytes +
              (dqFragmentOrder ? 8 * h * dqBoxColumns * 4 + (j / 4) * 128
                               : (j / 4) * 2048 + h * 1024);
          text += "st.shared.v2.f32 [$" + std::to_string(j % 4) + "+" +
                  std::to_string(offset) + "], {$" +
                  std::to_string(ins.size()) + ", $" +
                  std::to_string(ins.size() + 1) + "};\n";
          ins.push_back(stored(i + 2 * h));
          ins.push_back(stored(i + 2 * h + 1));
        }
      inlinePtx(x, text, {}, ins);
    }
    if (!issue)
      return;
    inlinePtx(x, "fence.proxy.async.shared::cta;\nbar.warp.sync -1;", {},
              ValueRange{});
    issueDqReductions(x, tb, products, tid, region);
  };
  auto dqAtomics = [&](FragmentBuilder &x, Value tb,
                       ArrayRef<SmallVector<Value>> accs, bool issue = true) {
    if (dqBulk)
      return dqBulkAdds(x, tb, accs, issue);
    for (auto [p, acc] : llvm::enumerate(accs)) {
      auto [mBlock, nOffset] = dqPart(x, p);
      Value m0 = x.mul(mBlock, x.cstIndex(64));
      // The first query of this thread's fragment rows (columns).
      Value query0 =
          x.add(x.mul(queryTile(x, tb), bt),
                byQueries ? x.add(m0, dqThreadRow) : x.add(nOffset, t2));
      Value column0 = byQueries ? nOffset : m0;
      Value rowBase = arith::AddIOp::create(
          x.b, x.loc, dqBase,
          arith::AddIOp::create(
              x.b, x.loc,
              arith::MulIOp::create(
                  x.b, x.loc,
                  arith::IndexCastOp::create(
                      x.b, x.loc, i64,
                      byQueries ? x.sub(query0, dqThreadRow) : query0),
                  arith::ExtSIOp::create(x.b, x.loc, i64, dqRowBytes)),
              arith::IndexCastOp::create(x.b, x.loc, i64,
                                         x.mul(column0, x.cstIndex(4)))));
      Value rowsLeft = toI32(x, x.sub(tq, query0));
      std::string text = "{\n.reg .b64 ra;\n.reg .pred pv;\n";
      SmallVector<Value> ins = {rowBase, dqRowBytes, rowsLeft};
      auto scaled = [&](int64_t i) {
        return x.mulF(acc[i], x.cstF32(ks.scale));
      };
      auto rowStart = [&](int64_t row) {
        text += "mad.wide.s32 ra, $1, " + std::to_string(row) + ", $0;\n";
        text += "setp.gt.s32 pv, $2, " + std::to_string(row) + ";\n";
      };
      const int64_t size = acc.size();
      if (byQueries) {
        for (int64_t h = 0; h < 2; ++h) {
          rowStart(8 * h);
          for (int64_t i = 0; i < size; i += 4) {
            text += "@pv red.global.add.v2.f32 [ra+" + std::to_string(8 * i) +
                    "], {$" + std::to_string(ins.size()) + ", $" +
                    std::to_string(ins.size() + 1) + "};\n";
            ins.push_back(scaled(i + 2 * h));
            ins.push_back(scaled(i + 2 * h + 1));
          }
        }
      } else {
        for (int64_t i = 0; i < size; i += 4)
          for (int64_t e = 0; e < 2; ++e) {
            rowStart(8 * (i / 4) + e);
            for (int64_t h = 0; h < 2; ++h) {
              text += "@pv red.global.add.f32 [ra+" +
                      std::to_string(32 * h) + "], $" +
                      std::to_string(ins.size()) + ";\n";
              ins.push_back(scaled(i + 2 * h + e));
            }
          }
      }
      text += "}";
      inlinePtx(x, text, {}, ins);
    }
  };
  auto flatten = [](ArrayRef<SmallVector<Value>> accs) {
    SmallVector<Value> all;
    for (const SmallVector<Value> &acc : accs)
      llvm::append_range(all, acc);
    return all;
  };
  auto unflatten = [](ArrayRef<Value> all, size_t parts) {
    SmallVector<SmallVector<Value>> accs(parts);
    size_t each = parts ? all.size() / parts : 0;
    for (size_t p = 0; p < parts; ++p)
      accs[p].assign(all.begin() + p * each, all.begin() + (p + 1) * each);
    return accs;
  };

  // One tile's products up to dS: S (S^T) and dP (dP^T) back to back, then
  // (after `pendingOld` older groups) P, in _dkdv dV += P^T dO_i, dS.
  // `issueOld` issues the previous tile's dK += dS^T Q_{i-1} (dQ += dS
  // K_{j-1}) between the two products and the first wait (none with
  // dkFromRegisters: the tile issues its own dK at its end); returns the
  // accumulator scalars of the first output (after that group), the second
  // output's (_dkdv) and the packed dS (none with dq atomics). `dqTb`: the
  // tile whose dQ products go first (dq atomics); `prologue`: the first
  // tile, before the loop.
  struct TileResult {
    SmallVector<Value> accFirst, accSecond, dsRegs;
  };
  auto tileStep = [&](FragmentBuilder &x, Value tb, SmallVector<Value> accFirst,
                      SmallVector<Value> accSecond,
                      llvm::function_ref<SmallVector<Value>(FragmentBuilder &,
                                                            SmallVector<Value>)>
                          issueOld,
                      Value dqTb = Value(), bool prologue = false) {
    Value r0 = x.mul(queryTile(x, tb), bt);
    Value secondUnits = stageUnits(x, ringOf(x, tb), stages, layout.loopSecond,
                                   layout.secondStageBytes);
    // dq atomics: the previous tile's dQ^T products go first.
    SmallVector<SmallVector<Value>> dqAcc;
    if (dqTb) {
      awaitDs(x, dqTb);
      dqAcc = issueDq(x, dqTb);
    }
    Value stageCols;
    auto column = [&](int64_t n, int64_t e, bool isDelta) {
      Value idx = x.add(x.add(stageCols, t2),
                        x.cstIndex(n * 8 + e + (isDelta ? tile : 0)));
      return x.load(colValues, {idx});
    };
    // _dkdv with a positive scale: the column terms start the accumulators,
    // S^T at -lse / scale (P = exp2(c S^T - lse log2 e) = exp2(c acc), c =
    // scale log2 e; -inf where lse is -inf, so that P is 0) and dP^T at
    // -delta (dS^T = P^T acc): no column value is read between a product's
    // wait and its use, and dS^T takes no subtraction. Fragment value i is
    // column 8 (i / 4) + 2t + i % 2.
    // A scale of at least 2^-20 keeps -lse / scale finite wherever lse is
    // (|lse| < 2^108). The start adds an error of the order of |lse| 2^-23
    // per k16 step to the exponent c acc (the tensor cores align each
    // step's addends to the largest and truncate), about 1e-5 relative in
    // P at D 128: far below the f16/bf16 rounding of P and dS.
    constexpr float kMinScaleInAcc = 0x1p-20f;
    // Measured (H100, fa-run, bf16, T 2k-16k): +3-13% with 64-query tiles
    // (D 128, with and without a causal mask); with 128-query tiles (D 64)
    // the S^T start was 4-12% slower (twice the column values per thread),
    // so those keep the reads at the use; 32-query tiles (D 128 without
    // TMA) were not timed and keep them too. Not dP^T's in the prologue's
    // tile (issued right after S^T): there ptxas waited for S^T before the
    // init values' moves (C7517).
    const bool columnsInAcc = dkdv && ks.scale >= kMinScaleInAcc && tile == 64;
    // The stage's column base, computed where the columns are first read
    // (the kernels without the starts keep their instruction order).
    auto setStageCols = [&] {
      stageCols = x.mul(stageOf(x, tb), x.cstIndex(2 * tile));
    };
    if (columnsInAcc)
      setStageCols();
    const bool dpInAcc = columnsInAcc && !prologue;
    auto columnInit = [&](bool isDelta) {
      SmallVector<Value> perColumn, init;
      for (int64_t n = 0; n < tile / 8; ++n)
        for (int64_t e = 0; e < 2; ++e) {
          Value v = column(n, e, isDelta);
          perColumn.push_back(
              isDelta ? arith::NegFOp::create(x.b, x.loc, v).getResult()
                      : x.select(x.isNegInf(v), x.cstF32(kNegInf),
                                 x.mulF(v, x.cstF32(-1.0f / ks.scale))));
        }
      for (int64_t i = 0; i < tile / 2; ++i)
        init.push_back(perColumn[2 * (i / 4) + i % 2]);
      return init;
    };
    SmallVector<Value> sAcc = productOwnLoop(
        x, ks.d, inLoop(x, ownFirstBase), loopKFirst.at(x, firstUnitsOf(x, tb)),
        columnsInAcc ? columnInit(false) : SmallVector<Value>());
    // dq atomics: once the dQ^T products are done (S^T still running), their
    // values go out, before the next products take registers.
    // dqFragmentOrder (the producer warpgroup): the staged values are
    // added at the end of the tile, after the dS^T stores, whose fence
    // covers both (one fence per tile, not two). H100, bf16, fa-run: D 128
    // +0.6-1.4% at T 2k, -1 to +3.4% at T 4k, causal +1.6-1.8%. Without
    // the producer (D 64) the same placement was 12-17% slower (not
    // profiled; likely the next tile's staging then waits for these
    // reductions to read its boxes, issued only one product earlier). Only
    // with 64-query tiles: the D 64 producer kernel (128-query tiles,
    // backward-producer-warp=true) spilled 388-396 bytes with it.
    const bool dqAfterDs = dqTb && dqFragmentOrder && tile == 64;
    if (dqTb) {
      SmallVector<Value> waited = wgmmaWait(x, 1, flatten(dqAcc));
      dqAtomics(x, dqTb, unflatten(waited, dqAcc.size()), !dqAfterDs);
    }
    // _dkdv issues the previous tile's product between S^T and dP^T: it
    // completes with dP^T, so its dS^T registers are free before this
    // tile's dS^T is computed (the kernel runs at the register limit). _dq
    // issues it last, to run while dS is computed.
    if (issueOld && dkdv)
      accFirst = issueOld(x, accFirst);
    SmallVector<Value> dpAcc = productOwnLoop(
        x, ks.dv, inLoop(x, ownSecondBase), loopKSecond.at(x, secondUnits),
        dpInAcc ? columnInit(true) : SmallVector<Value>());
    if (issueOld && !dkdv)
      accFirst = issueOld(x, accFirst);
    const int64_t pendingAfterS = issueOld ? 2 : 1;
    sAcc = wgmmaWait(x, pendingAfterS, sAcc);

    SmallVector<SmallVector<Value>> sTiles(1);
    sTiles[0] = toTiles(x, sAcc);
    Value c = scoreFactor(x, sTiles, ks.scale);
    if (dkdv) {
      if (!columnsInAcc)
        setStageCols();
      // Columns are queries r0 + 8 n + 2t + e: hide those past Tq and,
      // under causal, those before the diagonal of this warp's keys.
      Value needMask = x.cmpI(arith::CmpIPredicate::sgt, x.add(r0, bt), tq);
      if (ks.causal != CausalKind::none)
        needMask = arith::OrIOp::create(x.b, x.loc, needMask,
                                        x.cmpI(arith::CmpIPredicate::sgt,
                                               x.add(warpRow0, x.cstIndex(15)),
                                               x.add(r0, causalOffset)));
      // dq atomics: keys past Tk (their K/V rows load as zeros) are hidden
      // too. Unmasked, their P = exp(-lse) is not bounded by 1 (S = 0), and
      // with strongly negative scores (lse < 0) their dS overflowed f16:
      // inf x the zero K rows made dq NaN. Without dq atomics only their
      // dK/dV rows, which are not stored, see them. Warp-uniform: the
      // warp's last key.
      if (dqAtomic)
        needMask =
            arith::OrIOp::create(x.b, x.loc, needMask,
                                 x.cmpI(arith::CmpIPredicate::sge,
                                        x.add(warpRow0, x.cstIndex(15)), tk));
      maskFragments(
          x, needMask, sTiles,
          [&](FragmentBuilder &y, int64_t, int64_t n, int64_t h, int64_t e) {
            Value query = y.add(y.add(r0, t2), y.cstIndex(n * 8 + e));
            Value hidden = y.cmpI(arith::CmpIPredicate::sge, query, tq);
            if (ks.causal != CausalKind::none)
              hidden = arith::OrIOp::create(y.b, y.loc, hidden,
                                            y.cmpI(arith::CmpIPredicate::sgt,
                                                   rowOf(y, h),
                                                   y.add(query, causalOffset)));
            if (dqAtomic)
              hidden = arith::OrIOp::create(
                  y.b, y.loc, hidden,
                  y.cmpI(arith::CmpIPredicate::sge, rowOf(y, h), tk));
            return hidden;
          });
    } else {
      maskScoreBlock(
          x, sTiles, ks.causal, r0, tile, tk, warpRow0, causalOffset, t2,
          [&](FragmentBuilder &y, int64_t, int64_t h) { return rowOf(y, h); });
    }
    SmallVector<SmallVector<Value>> p = probabilities(
        x, sTiles, c, [&](int64_t, int64_t n, int64_t h, int64_t e) {
          if (!dkdv)
            return rowNegLse2[h];
          if (columnsInAcc)
            return Value();
          return arith::NegFOp::create(x.b, x.loc,
                                       lseLog2(x, column(n, e, false)))
              .getResult();
        });
    // _dkdv: dV += P^T dO_i while dS^T is computed.
    if (dkdv)
      accSecond = wgmmaAccumulateRS(x, ks.dv, accSecond,
                                    packARegisters(x, p[0]),
                                    loopNSecond.at(x, secondUnits),
                                    nStepUnits(swSecond));
    // Groups younger than dP: _dkdv dV; _dq the previous tile's dQ.
    const int64_t pendingAfterDp = dkdv || issueOld ? 1 : 0;
    dpAcc = wgmmaWait(x, pendingAfterDp, dpAcc);
    SmallVector<SmallVector<Value>> dp(1);
    dp[0] = toTiles(x, dpAcc);
    SmallVector<SmallVector<Value>> ds =
        scoreGradients(x, p, dp, [&](int64_t, int64_t n, int64_t h, int64_t e) {
          if (dpInAcc)
            return Value();
          return dkdv ? column(n, e, true) : rowDelta[h];
        });
    SmallVector<Value> dsRegs = packARegisters(x, ds[0]);
    if (!dqAtomic)
      return TileResult{accFirst, accSecond, dsRegs};
    // dK += dS^T Q_tb now (the stores only read the registers).
    if (dkFromRegisters)
      accFirst = wgmmaAccumulateRS(x, ks.d, accFirst, dsRegs,
                                   loopNFirst.at(x, firstUnitsOf(x, tb)),
                                   nStepUnits(swFirst));
    storeDs(x, tb, dsRegs);
    if (dqAfterDs) {
      inlinePtx(x, "bar.warp.sync -1;", {}, ValueRange{});
      issueDqReductions(x, dqTb, (int64_t)dqAcc.size());
    }
    signalDs(x, tb);
    return TileResult{accFirst, accSecond, {}};
  };
  // dK += dS^T Q_{tb} (dQ += dS K_{tb}) from the packed dS registers of the
  // previous tile, or with dq atomics (not dkFromRegisters) from its dS^T
  // buffer.
  auto accumulateFirst = [&](FragmentBuilder &x, SmallVector<Value> acc,
                             SmallVector<Value> dsRegs, Value tb) {
    if (dqAtomic) {
      // A = this warpgroup's 64 keys of dS^T (K-major: core columns colDs
      // apart, 8-key groups 128 bytes apart), B = Q_tb N-major.
      Value buffer = arith::RemUIOp::create(x.b, x.loc, tb, x.cstIndex(2));
      Value aBytes = x.add(
          x.add(x.cstIndex(layout.dsBuffers),
                x.mul(buffer, x.cstIndex(ks.dsBufferBytes()))),
          x.mul(warpgroupIndex, x.cstIndex(1024)));
      return wgmmaProductSS(x, ks.d, tile / 16,
                            dsADesc.at(x, unitsOf(x, aBytes)),
                            (2 * colDs) >> 4,
                            loopNFirst.at(x, firstUnitsOf(x, tb)),
                            nStepUnits(swFirst), /*zeroInit=*/false,
                            SwizzledSteps{}, /*transA=*/false,
                            /*transB=*/true, acc);
    }
    return wgmmaAccumulateRS(x, ks.d, acc, dsRegs,
                             loopNFirst.at(x, firstUnitsOf(x, tb)),
                             nStepUnits(swFirst));
  };
  // Waits for every wgmma group; returns the accumulators (tied).
  auto waitAll = [&](FragmentBuilder &x, TileResult r) {
    SmallVector<Value> all = r.accFirst;
    llvm::append_range(all, r.accSecond);
    all = wgmmaWait(x, 0, all);
    SmallVector<Value> out = all;
    llvm::append_range(out, r.dsRegs);
    return out;
  };
  auto split = [&](ValueRange values) {
    TileResult r;
    r.accFirst.assign(values.begin(), values.begin() + numFirst);
    r.accSecond.assign(values.begin() + numFirst, values.begin() + dsBase);
    r.dsRegs.assign(values.begin() + dsBase, values.end());
    return r;
  };
  SmallVector<Type> carriedTypes;
  for (Value val : init)
    carriedTypes.push_back(val.getType());

  // Prologue: the first tile up to its dS (FlashAttention-3, Section 3.2:
  // the loop then issues each tile's S and dP before the previous tile's
  // last product, so that the tensor cores run while P and dS are
  // computed).
  auto prologue = scf::IfOp::create(b, loc, carriedTypes, anyTile,
                                    /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(prologue.thenBlock());
    FragmentBuilder x(b, loc, ks.elt);
    if (tma) {
      // The column values stored above are visible; own tiles and tile
      // `first` landed.
      if (!producer)
        gpu::BarrierOp::create(b, loc);
      for (int64_t i = 0; i < 2; ++i)
        mbarrierWait(x, barrierAt(x, cstI32(x, i)),
                     paired ? toI32(x, passIndex) : cstI32(x, 0));
      waitTile(x, first);
    } else {
      landCopies(x, 2 * stages - 2); // own tiles and tile `first` landed
    }
    TileResult init0 = split(init);
    TileResult r = tileStep(x, first, init0.accFirst, init0.accSecond, nullptr,
                            Value(), /*prologue=*/true);
    SmallVector<Value> yielded = waitAll(x, r);
    // TMA: every warpgroup is done with the second half of tile `first`
    // before the loop's first load replaces it. dq atomics: both halves of
    // dS^T of tile `first` are stored before any dQ product reads them.
    releaseHalf(x, first, /*second=*/true);
    if (firstHalfFreeAtEnd)
      releaseHalf(x, first, /*second=*/false);
    if ((tma || dqAtomic) && !splitDsBarrier)
      consumerBarrier(b, loc);
    scf::YieldOp::create(b, loc, yielded);
    b.setInsertionPointToStart(prologue.elseBlock());
    scf::YieldOp::create(b, loc, init);
  }

  auto loop = scf::ForOp::create(
      b, loc, fb.add(first, c1), count, c1, prologue.getResults(),
      [&](OpBuilder &lb, Location ll, Value tb, ValueRange carried) {
        FragmentBuilder x(lb, ll, ks.elt);
        TileResult prev = split(carried);
        Value prevTb = x.sub(tb, c1);
        // Tile tb landed; every warpgroup is done with the second half of
        // tile tb - 1 (its first half feeds the product issued below,
        // unless firstHalfFreeAtEnd).
        // TMA: the last block barrier (end of the previous iteration or of
        // the prologue) came after every warpgroup's last use of it; each
        // thread waits for tile tb on its barriers.
        if (!tma)
          landCopies(x, 2 * stages - 4);
        Value ahead = x.add(tb, x.cstIndex(stages - 1));
        if (!producer && firstHalfFreeAtEnd)
          loadHalf(x, ahead, /*second=*/false);
        if (!producer)
          loadHalf(x, ahead, /*second=*/true);
        if (tma)
          waitTile(x, tb);
        Value column;
        if (dkdv && tma && !producer)
          copyColumnAsync(x, ahead);
        else if (dkdv && !tma)
          column = loadColumn(x, ahead);
        auto issuePrev = [&](FragmentBuilder &y, SmallVector<Value> acc) {
          return accumulateFirst(y, acc, prev.dsRegs, prevTb);
        };
        // dkFromRegisters: tile tb - 1 issued its dK product itself.
        TileResult r = tileStep(
            x, tb, prev.accFirst, prev.accSecond,
            dkFromRegisters ? llvm::function_ref<SmallVector<Value>(
                                  FragmentBuilder &, SmallVector<Value>)>()
                            : issuePrev,
            dqAtomic ? prevTb : Value());
        SmallVector<Value> yielded = waitAll(x, r);
        // TMA: the column values of tile `ahead` replace those of tile
        // tb - 1, read before the last block barrier, and are read after
        // the next one.
        if (tma && dkdv && !producer)
          inlinePtx(x, "cp.async.wait_all;", {}, ValueRange{});
        releaseHalf(x, tb, /*second=*/true);
        releaseHalf(x, firstHalfFreeAtEnd ? tb : prevTb, /*second=*/false);
        // Every warpgroup is done with the first half of tile tb - 1
        // (firstHalfFreeAtEnd: with all of tile tb) before the next loads
        // replace it (splitDsBarrier: the producer waits for the releases
        // instead).
        if (!splitDsBarrier)
          consumerBarrier(lb, ll);
        if (!producer && !firstHalfFreeAtEnd)
          loadHalf(x, ahead, /*second=*/false);
        if (!tma && dkdv)
          storeColumn(x, ahead, column);
        scf::YieldOp::create(lb, ll, yielded);
      });

  // The last tile's dK += dS^T Q_i (dQ += dS K_j; with dkFromRegisters
  // its dK went with the tile); with dq atomics its dQ products.
  TileResult lastTile = split(loop.getResults());
  SmallVector<Type> accTypes(lastTile.accFirst.size(), fb.f32);
  auto last = scf::IfOp::create(b, loc, accTypes, anyTile,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(last.thenBlock());
    FragmentBuilder x(b, loc, ks.elt);
    Value lastTb = x.sub(count, c1);
    SmallVector<SmallVector<Value>> dqAcc;
    if (dqAtomic) {
      awaitDs(x, lastTb);
      dqAcc = issueDq(x, lastTb);
    }
    SmallVector<Value> acc =
        dkFromRegisters
            ? lastTile.accFirst
            : accumulateFirst(x, lastTile.accFirst, lastTile.dsRegs, lastTb);
    if (dqAtomic) {
      SmallVector<Value> waited = flatten(dqAcc);
      llvm::append_range(waited, acc);
      waited = wgmmaWait(x, 0, waited);
      size_t dqCount = waited.size() - acc.size();
      acc.assign(waited.begin() + dqCount, waited.end());
      dqAtomics(x, lastTb,
                unflatten(ArrayRef<Value>(waited).take_front(dqCount),
                          dqAcc.size()));
    } else {
      acc = wgmmaWait(x, 0, acc);
    }
    // Paired: the ring goes on into the next pass, whose loads wait for
    // every stage's release (the last tile's second half was released in
    // the loop).
    if (paired && !firstHalfFreeAtEnd)
      releaseHalf(x, lastTb, /*second=*/false);
    scf::YieldOp::create(b, loc, acc);
    b.setInsertionPointToStart(last.elseBlock());
    scf::YieldOp::create(b, loc, lastTile.accFirst);
  }
  if (!tma)
    NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
  // dqBulk: the bulk reductions have read the staging rows before the block
  // exits (their adds complete with the grid).
  auto waitDqReductions = [&]() {
    if (dqBulk)
      inlinePtx(fb, "cp.async.bulk.wait_group.read 0;", {}, ValueRange{});
  };
  if (!paired)
    waitDqReductions();

  // dk = scale dK, dv = dV (or dq = scale dQ) for the own rows in range.
  SmallVector<Value> first8 =
      toTiles(fb, SmallVector<Value>(last.getResults()));
  SmallVector<Value> second8 = toTiles(fb, lastTile.accSecond);
  Value firstOut = func.getArgument(6);
  Value secondOut = dkdv ? func.getArgument(7) : Value();
  for (int64_t h = 0; h < 2; ++h) {
    Value row = rowOf(fb, h);
    Value valid = fb.cmpI(arith::CmpIPredicate::slt, row, ownLimit);
    scf::IfOp::create(b, loc, valid, [&](OpBuilder &ib, Location il) {
      FragmentBuilder y(ib, il, ks.elt);
      storeFragmentRow(y, first8, h, y.cstF32(ks.scale), firstOut, batch, row,
                       t2);
      if (dkdv)
        storeFragmentRow(y, second8, h, y.cstF32(1.0), secondOut, batch, row,
                         t2);
      scf::YieldOp::create(ib, il);
    });
  }
  if (consumerPasses) {
    // Every warpgroup is done with the own tiles before the next pass's
    // loads replace them.
    consumerBarrier(b, loc);
    b.setInsertionPointAfter(consumerPasses);
    waitDqReductions();
    shared = sharedOutside;
    for (auto [d, outside] : llvm::zip(loopDescs, loopDescsOutside))
      *d = outside;
    ownFirstBase = ownFirstOutside;
    ownSecondBase = ownSecondOutside;
  }
  // The producer's branch comes after the consumers' in the kernel, so
  // that no consumer value is live across it (it runs at 24 registers).
  if (producer) {
    b.setInsertionPointAfter(consumers);
    scf::IfOp producers = buildProducer();
    b.setInsertionPointAfter(producers);
  }
  gpu::ReturnOp::create(b, loc);
}
