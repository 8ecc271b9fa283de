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
// Tiles use the canonical no-swizzle layout of WgmmaFragments.h: the own
// tiles and the loop tiles' first use (S, dP) are K-major operands; the
// loop tiles' second use (dV, dK, dQ: K = the loop tile's rows) reads the
// same bytes as an N-major B operand.
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
  const int64_t W = ks.numWarps, threads = 32 * W;
  const int64_t ownRows = ks.ownRows(), tile = ks.tile, stages = ks.stages;

  Value q = func.getArgument(0), k = func.getArgument(1),
        v = func.getArgument(2), dout = func.getArgument(3),
        lse = func.getArgument(4), delta = func.getArgument(5);
  // The block's own operands (A of S and dP) and the loop's tiles.
  Value ownFirst = dkdv ? k : q, ownSecond = dkdv ? v : dout;
  Value loopFirst = dkdv ? q : k, loopSecond = dkdv ? dout : v;
  b.setInsertionPointToStart(&func.front());

  WgmmaBackwardLayout layout = wgmmaBackwardLayout(ks);
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
  Value first = c0, count;
  if (dkdv) {
    count = arith::CeilDivSIOp::create(b, loc, tq, bt);
    if (ks.causal != CausalKind::none)
      first = arith::DivUIOp::create(
          b, loc, fb.maxS(fb.sub(own0, causalOffset), c0), bt);
  } else {
    VisibleKeys keys = visibleKeys(fb, ks.causal, own0, ownRows, tq, tk);
    count = arith::CeilDivSIOp::create(b, loc, keys.kvEnd, bt);
  }

  // Descriptors. Own tiles (A, K-major): this warpgroup's 64 rows start
  // 1024 bytes per warpgroup in; k16 steps two core columns apart.
  Value warpgroup = arith::IndexCastUIOp::create(
      b, loc, i64, arith::DivUIOp::create(b, loc, warp, fb.cstIndex(4)));
  Value wgUnits =
      arith::MulIOp::create(b, loc, warpgroup, cstI64(fb, 1024 >> 4));
  Descriptor ownDesc = makeDescriptor(fb, shared.units, colOwn, 128);
  Value ownFirstBase =
      ownDesc.at(fb, arith::AddIOp::create(b, loc, wgUnits,
                                           cstI64(fb, layout.ownFirst >> 4)));
  Value ownSecondBase =
      ownDesc.at(fb, arith::AddIOp::create(b, loc, wgUnits,
                                           cstI64(fb, layout.ownSecond >> 4)));
  // Loop tiles: K-major B of S and dP; N-major B (K = tile rows) of the
  // accumulating products.
  Descriptor loopK = makeDescriptor(fb, shared.units, colTile, 128);
  Descriptor loopN = makeDescriptor(fb, shared.units, 128, colTile);

  // Copies: one group per loop tile half (first: Q_i or K_j; second: dO_i
  // or V_j), possibly empty so that the group count per iteration is
  // fixed; tile tb goes into stage tb % stages. The own tiles go with the
  // first half of the first tile.
  CanonicalCopy ownCopyFirst =
      CanonicalCopy::plan(fb, ownRows, ks.d, threads, ids);
  CanonicalCopy ownCopySecond =
      ks.dv == ks.d ? ownCopyFirst
                    : CanonicalCopy::plan(fb, ownRows, ks.dv, threads, ids);
  CanonicalCopy copyFirst = CanonicalCopy::plan(fb, tile, ks.d, threads, ids);
  CanonicalCopy copySecond =
      ks.dv == ks.d ? copyFirst
                    : CanonicalCopy::plan(fb, tile, ks.dv, threads, ids);
  auto loadHalf = [&](FragmentBuilder &x, Value tb, bool second) {
    copyStage(x, second ? copySecond : copyFirst,
              second ? loopSecond : loopFirst, shared.tile, tb, count, stages,
              second ? layout.loopSecond : layout.loopFirst,
              second ? layout.secondStageBytes : layout.firstStageBytes, batch,
              loopLimit, ids);
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
    Value colThread = arith::RemUIOp::create(x.b, x.loc, ids.tid, bt);
    Value isDelta = y.cmpI(arith::CmpIPredicate::uge, ids.tid, bt);
    Value row = y.minS(y.add(y.mul(tb, bt), colThread), lastQuery);
    Value fromLse = y.load(lse, {batch, row});
    Value fromDelta = y.load(delta, {batch, row});
    scf::YieldOp::create(x.b, x.loc,
                         ValueRange{y.select(isDelta, fromDelta, fromLse)});
    x.b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(x.b, x.loc, ValueRange{y.cstF32(0.0)});
    return ifOp.getResult(0);
  };
  auto storeColumn = [&](FragmentBuilder &x, Value tb, Value value) {
    scf::IfOp::create(
        x.b, x.loc, colLoader(x), [&](OpBuilder &ib, Location il) {
          FragmentBuilder y(ib, il, ks.elt);
          Value stage = arith::RemUIOp::create(ib, il, tb, y.cstIndex(stages));
          y.store(value, colValues,
                  {y.add(y.mul(stage, y.cstIndex(2 * tile)), ids.tid)});
          scf::YieldOp::create(ib, il);
        });
  };

  Value anyTile = fb.cmpI(arith::CmpIPredicate::slt, first, count);
  scf::IfOp::create(b, loc, anyTile, [&](OpBuilder &ib, Location il) {
    FragmentBuilder y(ib, il, ks.elt);
    ownCopyFirst.copy(y, ownFirst, shared.tile, y.cstIndex(layout.ownFirst / 2),
                      batch, own0, ownLimit, ids);
    ownCopySecond.copy(y, ownSecond, shared.tile,
                       y.cstIndex(layout.ownSecond / 2), batch, own0, ownLimit,
                       ids);
    scf::YieldOp::create(ib, il);
  });
  for (int64_t st = 0; st < stages; ++st) {
    Value tb = fb.add(first, fb.cstIndex(st));
    loadHalf(fb, tb, /*second=*/false);
    loadHalf(fb, tb, /*second=*/true);
    if (dkdv)
      storeColumn(fb, tb, loadColumn(fb, tb));
  }

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
  // The packed dS (dS^T) registers of the previous tile.
  init.append(tile / 4,
              arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0));
  const int64_t dsBase = init.size() - tile / 4;
  auto firstUnitsOf = [&](FragmentBuilder &x, Value tb) {
    return stageUnits(x, tb, stages, layout.loopFirst, layout.firstStageBytes);
  };

  // One tile's products up to dS: S (S^T) and dP (dP^T) back to back, then
  // (after `pendingOld` older groups) P, in _dkdv dV += P^T dO_i, dS.
  // `issueOld` issues the previous tile's dK += dS^T Q_{i-1} (dQ += dS
  // K_{j-1}) between the two products and the first wait; returns the
  // accumulator scalars of the first output (after that group), the second
  // output's (_dkdv) and the packed dS.
  struct TileResult {
    SmallVector<Value> accFirst, accSecond, dsRegs;
  };
  auto tileStep = [&](FragmentBuilder &x, Value tb, SmallVector<Value> accFirst,
                      SmallVector<Value> accSecond,
                      llvm::function_ref<SmallVector<Value>(FragmentBuilder &,
                                                            SmallVector<Value>)>
                          issueOld) {
    Value r0 = x.mul(tb, bt);
    Value secondUnits =
        stageUnits(x, tb, stages, layout.loopSecond, layout.secondStageBytes);
    SmallVector<Value> sAcc =
        wgmmaProductSS(x, tile, ks.d / 16, ownFirstBase, (2 * colOwn) >> 4,
                       loopK.at(x, firstUnitsOf(x, tb)), (2 * colTile) >> 4);
    // _dkdv issues the previous tile's product between S^T and dP^T: it
    // completes with dP^T, so its dS^T registers are free before this
    // tile's dS^T is computed (the kernel runs at the register limit). _dq
    // issues it last, to run while dS is computed.
    if (issueOld && dkdv)
      accFirst = issueOld(x, accFirst);
    SmallVector<Value> dpAcc =
        wgmmaProductSS(x, tile, ks.dv / 16, ownSecondBase, (2 * colOwn) >> 4,
                       loopK.at(x, secondUnits), (2 * colTile) >> 4);
    if (issueOld && !dkdv)
      accFirst = issueOld(x, accFirst);
    const int64_t pendingAfterS = issueOld ? 2 : 1;
    sAcc = wgmmaWait(x, pendingAfterS, sAcc);

    SmallVector<SmallVector<Value>> sTiles(1);
    sTiles[0] = toTiles(x, sAcc);
    Value c = scoreFactor(x, sTiles, ks.scale);
    Value stageCols;
    auto column = [&](int64_t n, int64_t e, bool isDelta) {
      Value idx = x.add(x.add(stageCols, t2),
                        x.cstIndex(n * 8 + e + (isDelta ? tile : 0)));
      return x.load(colValues, {idx});
    };
    if (dkdv) {
      stageCols =
          x.mul(arith::RemUIOp::create(x.b, x.loc, tb, x.cstIndex(stages)),
                x.cstIndex(2 * tile));
      // Columns are queries r0 + 8 n + 2t + e: hide those past Tq and,
      // under causal, those before the diagonal of this warp's keys.
      Value needMask = x.cmpI(arith::CmpIPredicate::sgt, x.add(r0, bt), tq);
      if (ks.causal != CausalKind::none)
        needMask = arith::OrIOp::create(x.b, x.loc, needMask,
                                        x.cmpI(arith::CmpIPredicate::sgt,
                                               x.add(warpRow0, x.cstIndex(15)),
                                               x.add(r0, causalOffset)));
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
          return arith::NegFOp::create(x.b, x.loc,
                                       lseLog2(x, column(n, e, false)))
              .getResult();
        });
    // _dkdv: dV += P^T dO_i while dS^T is computed.
    if (dkdv)
      accSecond =
          wgmmaAccumulateRS(x, ks.dv, accSecond, packARegisters(x, p[0]),
                            loopN.at(x, secondUnits));
    // Groups younger than dP: _dkdv dV; _dq the previous tile's dQ.
    const int64_t pendingAfterDp = dkdv || issueOld ? 1 : 0;
    dpAcc = wgmmaWait(x, pendingAfterDp, dpAcc);
    SmallVector<SmallVector<Value>> dp(1);
    dp[0] = toTiles(x, dpAcc);
    SmallVector<SmallVector<Value>> ds =
        scoreGradients(x, p, dp, [&](int64_t, int64_t n, int64_t h, int64_t e) {
          return dkdv ? column(n, e, true) : rowDelta[h];
        });
    return TileResult{accFirst, accSecond, packARegisters(x, ds[0])};
  };
  // dK += dS^T Q_{tb} (dQ += dS K_{tb}) from the packed dS registers.
  auto accumulateFirst = [&](FragmentBuilder &x, SmallVector<Value> acc,
                             SmallVector<Value> dsRegs, Value tb) {
    return wgmmaAccumulateRS(x, ks.d, acc, dsRegs,
                             loopN.at(x, firstUnitsOf(x, tb)));
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
    landCopies(x, 2 * stages - 2); // own tiles and tile `first` landed
    TileResult init0 = split(init);
    TileResult r = tileStep(x, first, init0.accFirst, init0.accSecond, nullptr);
    scf::YieldOp::create(b, loc, waitAll(x, r));
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
        // tile tb - 1 (its first half feeds the product issued below).
        landCopies(x, 2 * stages - 4);
        Value ahead = x.add(tb, x.cstIndex(stages - 1));
        loadHalf(x, ahead, /*second=*/true);
        Value column = dkdv ? loadColumn(x, ahead) : Value();
        TileResult r =
            tileStep(x, tb, prev.accFirst, prev.accSecond,
                     [&](FragmentBuilder &y, SmallVector<Value> acc) {
                       return accumulateFirst(y, acc, prev.dsRegs, prevTb);
                     });
        SmallVector<Value> yielded = waitAll(x, r);
        // Every warpgroup is done with the first half of tile tb - 1.
        gpu::BarrierOp::create(lb, ll);
        loadHalf(x, ahead, /*second=*/false);
        if (dkdv)
          storeColumn(x, ahead, column);
        scf::YieldOp::create(lb, ll, yielded);
      });

  // The last tile's dK += dS^T Q_i (dQ += dS K_j).
  TileResult lastTile = split(loop.getResults());
  SmallVector<Type> accTypes(lastTile.accFirst.size(), fb.f32);
  auto last = scf::IfOp::create(b, loc, accTypes, anyTile,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(last.thenBlock());
    FragmentBuilder x(b, loc, ks.elt);
    SmallVector<Value> acc = accumulateFirst(x, lastTile.accFirst,
                                             lastTile.dsRegs, x.sub(count, c1));
    acc = wgmmaWait(x, 0, acc);
    scf::YieldOp::create(b, loc, acc);
    b.setInsertionPointToStart(last.elseBlock());
    scf::YieldOp::create(b, loc, lastTile.accFirst);
  }
  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);

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
  gpu::ReturnOp::create(b, loc);
}
