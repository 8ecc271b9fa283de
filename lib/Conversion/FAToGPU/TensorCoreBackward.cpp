//===- TensorCoreBackward.cpp - fa.attention_backward on mma.sync --------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// The tensor-core backward kernels of convert-fa-to-gpu (`tensor-cores=true`,
// f16/bf16 operands): FlashAttention-2's backward pass (Dao 2023, Algorithm
// 2), recomputing P from the saved logsumexp, split into two kernels so that
// every product keeps its operands in warp fragments (no transposes through
// workgroup memory, no atomics; dq is bitwise reproducible):
//
//   _dkdv (grid: key blocks x batch; each warp owns 16 R key rows):
//     K, V fragments (A operands) in registers (or a workgroup tile);
//     dK, dV accumulators in registers
//     for each query block i (causal: from the first that sees the keys),
//     Q_i and dO_i double-buffered in workgroup memory by cp.async:
//       S^T  = K Q_i^T                    (ldmatrix Q rows)
//       P^T  = exp2(S^T c - lse_i log2 e)  (masked on diagonal/ragged blocks)
//       dV  += P^T dO_i                   (P^T from registers, ldmatrix.trans)
//       dP^T = V dO_i^T                   (ldmatrix dO rows)
//       dS^T = P^T (dP^T - delta_i)
//       dK  += dS^T Q_i                   (dS^T from registers, ldmatrix.trans)
//     dk = scale dK, dv = dV
//   _dq (grid: query blocks x batch; each warp owns 16 R query rows):
//     Q, dO fragments in registers (or workgroup tiles); lse, delta per row
//     for each key block j (causal: up to the diagonal), K_j and V_j
//     double-buffered:
//       S = Q K_j^T, P = exp2(S c - lse log2 e), dP = dO V_j^T,
//       dS = P (dP - delta), dQ += dS K_j
//     dq = scale dQ
//
// delta = rowsum(dO o) comes from `_delta` before them
// (buildTensorCoreDeltaBody, at the end of this file: 16-byte loads, Dv / 8
// lanes per row). The price of the split is recomputing S and dP in `_dq`
// (7 instead of 5 tile products).
//
//===----------------------------------------------------------------------===//

#include "TensorCoreFragments.h"
#include "TensorCoreKernels.h"

using namespace mlir;
using namespace mlir::fa;
using namespace mlir::fa::gpukernel;

TensorCoreBackwardLayout
mlir::fa::gpukernel::tensorCoreBackwardLayout(
    const TensorCoreBackwardShape &ks, bool dkdv) {
  TensorCoreBackwardLayout l;
  int64_t rowsPerBlock = 16 * ks.mTilesPerWarp * ks.numWarps;
  int64_t dRow = (ks.d + kTensorCoreRowPad) * 2;
  int64_t dvRow = (ks.dv + kTensorCoreRowPad) * 2;
  int64_t offset = 0;
  // The block's own rows (K, V for _dkdv; Q, dO for _dq), when their
  // fragments do not stay in registers.
  l.ownFirst = offset;
  if (ks.operandsInShared)
    offset += rowsPerBlock * dRow;
  l.ownSecond = offset;
  if (ks.operandsInShared)
    offset += rowsPerBlock * dvRow;
  // The double-buffered tiles of the loop (Q, dO for _dkdv; K, V for _dq).
  int64_t loopRows = dkdv ? ks.dkdvBlockM : ks.dqBlockN;
  l.loopFirst = offset;
  offset += 2 * loopRows * dRow;
  l.loopSecond = offset;
  offset += 2 * loopRows * dvRow;
  l.bytes = offset;
  return l;
}

void mlir::fa::gpukernel::buildTensorCoreDkDvBody(
    OpBuilder &b, Location loc, gpu::GPUFuncOp func,
    const TensorCoreBackwardShape &ks) {
  FragmentBuilder fb(b, loc, ks.elt);
  const int64_t R = ks.mTilesPerWarp, W = ks.numWarps;
  const int64_t threads = 32 * W;
  const int64_t blockN = 16 * R * W; // keys per block
  const int64_t blockM = ks.dkdvBlockM; // queries per tile
  const int64_t qTiles = blockM / 8;

  Value q = func.getArgument(0), k = func.getArgument(1),
        v = func.getArgument(2), dout = func.getArgument(3),
        lse = func.getArgument(4), delta = func.getArgument(5),
        dk = func.getArgument(6), dv = func.getArgument(7);

  b.setInsertionPointToStart(&func.front());
  TensorCoreBackwardLayout layout = tensorCoreBackwardLayout(ks, true);
  Value smem = dynamicShared(fb);
  Value kTile, vTile;
  if (ks.operandsInShared) {
    kTile = sharedTile(fb, smem, layout.ownFirst, 0, blockN, ks.d);
    vTile = sharedTile(fb, smem, layout.ownSecond, 0, blockN, ks.dv);
  }
  Value qBufs = sharedTile(fb, smem, layout.loopFirst, 2, blockM, ks.d);
  Value doBufs = sharedTile(fb, smem, layout.loopSecond, 2, blockM, ks.dv);

  Value c0 = fb.cstIndex(0), c1 = fb.cstIndex(1), c2 = fb.cstIndex(2);
  Value tq = memref::DimOp::create(b, loc, q, 1);
  Value tk = memref::DimOp::create(b, loc, k, 1);
  Value keyBlock = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  LaneIds ids = LaneIds::create(fb);
  WarpMma wm = WarpMma::create(fb, ids.lane);

  Value j0 = fb.mul(keyBlock, fb.cstIndex(blockN));
  Value warpKeyLocal = fb.mul(ids.warp, fb.cstIndex(16 * R));
  Value warpKey0 = fb.add(j0, warpKeyLocal);
  auto keyOf = [&](FragmentBuilder &x, int64_t r, int64_t h) {
    return x.add(x.add(warpKey0, x.cstIndex(16 * r + 8 * h)), ids.g);
  };
  Value causalOffset = c0;
  if (ks.causal == CausalKind::bottom_right)
    causalOffset = fb.sub(tk, tq);

  // Query block range: under causal, from the first block holding a query
  // that sees key j0 (query i sees key j when j <= i + offset).
  Value bm = fb.cstIndex(blockM);
  Value numQueryBlocks = arith::CeilDivSIOp::create(b, loc, tq, bm);
  Value firstBlock = c0;
  if (ks.causal != CausalKind::none)
    firstBlock = arith::DivUIOp::create(
        b, loc, fb.maxS(fb.sub(j0, causalOffset), c0), bm);

  TileCopyPlan qPlan = planTileCopy(fb, ids.tid, blockM, ks.d, threads);
  TileCopyPlan doPlan = planTileCopy(fb, ids.tid, blockM, ks.dv, threads);
  if (ks.operandsInShared) {
    buildAsyncTileCopy(fb, planTileCopy(fb, ids.tid, blockN, ks.d, threads),
                       k, kTile, batch, j0, tk, ids.tid);
    buildAsyncTileCopy(fb, planTileCopy(fb, ids.tid, blockN, ks.dv, threads),
                       v, vTile, batch, j0, tk, ids.tid);
  }
  // The first query tile, unless no query block is visited (Tq = 0 gives
  // q no storage).
  Value i0First = fb.mul(firstBlock, bm);
  scf::IfOp::create(
      b, loc, fb.cmpI(arith::CmpIPredicate::slt, firstBlock, numQueryBlocks),
      [&](OpBuilder &ib, Location il) {
        FragmentBuilder y(ib, il, ks.elt);
        buildAsyncTileCopy(y, qPlan, q, qBufs, batch, i0First, tq, ids.tid,
                           c0);
        buildAsyncTileCopy(y, doPlan, dout, doBufs, batch, i0First, tq,
                           ids.tid, c0);
        scf::YieldOp::create(ib, il);
      });

  // K and V fragments (A operands, rows = keys): registers for the whole
  // loop, or ldmatrix from the block's tiles at each use.
  Value lastKey = fb.maxS(fb.sub(tk, c1), c0);
  SmallVector<SmallVector<Value>> kFrag(R), vFrag(R);
  if (!ks.operandsInShared)
    for (int64_t r = 0; r < R; ++r) {
      Value row0 = fb.minS(keyOf(fb, r, 0), lastKey);
      Value row1 = fb.minS(keyOf(fb, r, 1), lastKey);
      for (int64_t kc = 0; kc < ks.d / 16; ++kc)
        kFrag[r].push_back(loadAFromGlobal(fb, k, batch, row0, row1, ids.t2,
                                           kc));
      for (int64_t kc = 0; kc < ks.dv / 16; ++kc)
        vFrag[r].push_back(loadAFromGlobal(fb, v, batch, row0, row1, ids.t2,
                                           kc));
    }

  const int64_t dkTiles = ks.d / 8, dvTiles = ks.dv / 8;
  SmallVector<Value> init = flatten(zeroTiles(fb, R, dkTiles));
  llvm::append_range(init, flatten(zeroTiles(fb, R, dvTiles)));

  auto loop = scf::ForOp::create(
      b, loc, firstBlock, numQueryBlocks, c1, init,
      [&](OpBuilder &lb, Location ll, Value ib, ValueRange carried) {
        FragmentBuilder x(lb, ll, ks.elt);
        SmallVector<SmallVector<Value>> dK =
            unflatten(carried.take_front(R * dkTiles), R, dkTiles);
        SmallVector<SmallVector<Value>> dV =
            unflatten(carried.drop_front(R * dkTiles), R, dvTiles);
        Value i0 = x.mul(ib, bm);
        Value buf = arith::RemUIOp::create(lb, ll, x.sub(ib, firstBlock), c2);

        // Q_i, dO_i have landed; every warp is done with the other buffer.
        buildWaitAllCopies(x);
        gpu::BarrierOp::create(lb, ll);
        Value hasNext =
            x.cmpI(arith::CmpIPredicate::slt, x.add(ib, c1), numQueryBlocks);
        scf::IfOp::create(lb, ll, hasNext, [&](OpBuilder &ib2, Location il) {
          FragmentBuilder y(ib2, il, ks.elt);
          Value next = y.sub(c1, buf);
          Value i0Next = y.add(i0, bm);
          buildAsyncTileCopy(y, qPlan, q, qBufs, batch, i0Next, tq, ids.tid,
                             next);
          buildAsyncTileCopy(y, doPlan, dout, doBufs, batch, i0Next, tq,
                             ids.tid, next);
          scf::YieldOp::create(ib2, il);
        });

        // lse (as -lse log2 e) or delta of this lane's query columns
        // n * 8 + 2t + e, loaded where they are used (fewer live
        // registers across the products).
        Value lastRow = x.maxS(x.sub(tq, c1), c0);
        auto loadColumns = [&](Value src, bool asNegLse2) {
          SmallVector<std::array<Value, 2>> values(qTiles);
          for (int64_t n = 0; n < qTiles; ++n)
            for (int64_t e = 0; e < 2; ++e) {
              Value col = x.minS(
                  x.add(x.add(i0, ids.t2), x.cstIndex(n * 8 + e)), lastRow);
              Value value = x.load(src, {batch, col});
              values[n][e] =
                  asNegLse2 ? arith::NegFOp::create(lb, ll, lseLog2(x, value))
                                  .getResult()
                            : value;
            }
          return values;
        };

        auto aK = [&](int64_t r, int64_t kc) -> Value {
          if (!ks.operandsInShared)
            return kFrag[r][kc];
          return wm.loadA(x, kTile, {}, x.add(warpKeyLocal,
                                              x.cstIndex(16 * r)),
                          kc);
        };
        auto aV = [&](int64_t r, int64_t kc) -> Value {
          if (!ks.operandsInShared)
            return vFrag[r][kc];
          return wm.loadA(x, vTile, {}, x.add(warpKeyLocal,
                                              x.cstIndex(16 * r)),
                          kc);
        };

        // S^T = K Q_i^T: rows keys, columns queries.
        SmallVector<SmallVector<Value>> s = wm.productABt(
            x, R, ks.d / 16, qTiles, qBufs, ValueRange{buf}, aK);
        Value c = scoreFactor(x, s, ks.scale);
        // Mask query columns past Tq and, under causal, keys past the
        // diagonal, on the blocks that have them.
        Value needMask = x.cmpI(arith::CmpIPredicate::sgt, x.add(i0, bm), tq);
        if (ks.causal != CausalKind::none) {
          Value lastWarpKey = x.add(warpKey0, x.cstIndex(16 * R - 1));
          needMask = arith::OrIOp::create(
              lb, ll, needMask,
              x.cmpI(arith::CmpIPredicate::sgt, lastWarpKey,
                     x.add(i0, causalOffset)));
        }
        maskFragments(x, needMask, s,
                      [&](FragmentBuilder &y, int64_t r, int64_t n, int64_t h,
                          int64_t e) {
                        Value query = y.add(y.add(i0, ids.t2),
                                            y.cstIndex(n * 8 + e));
                        Value hidden =
                            y.cmpI(arith::CmpIPredicate::sge, query, tq);
                        if (ks.causal != CausalKind::none)
                          hidden = arith::OrIOp::create(
                              y.b, y.loc, hidden,
                              y.cmpI(arith::CmpIPredicate::sgt,
                                     keyOf(y, r, h),
                                     y.add(query, causalOffset)));
                        return hidden;
                      });

        // P^T, dV += P^T dO_i.
        SmallVector<std::array<Value, 2>> negLse2 = loadColumns(lse, true);
        SmallVector<SmallVector<Value>> p = probabilities(
            x, s, c, [&](int64_t, int64_t n, int64_t, int64_t e) {
              return negLse2[n][e];
            });
        SmallVector<SmallVector<Value>> pA = toAFragments(x, p);
        wm.accumulateAB(
            x, R, blockM / 16, dvTiles, doBufs, ValueRange{buf},
            [&](int64_t r, int64_t kk) { return pA[r][kk]; }, dV);

        // dP^T = V dO_i^T, dS^T = P^T (dP^T - delta), dK += dS^T Q_i.
        SmallVector<SmallVector<Value>> dp = wm.productABt(
            x, R, ks.dv / 16, qTiles, doBufs, ValueRange{buf}, aV);
        SmallVector<std::array<Value, 2>> rowDelta = loadColumns(delta, false);
        SmallVector<SmallVector<Value>> ds = scoreGradients(
            x, p, dp, [&](int64_t, int64_t n, int64_t, int64_t e) {
              return rowDelta[n][e];
            });
        SmallVector<SmallVector<Value>> dsA = toAFragments(x, ds);
        wm.accumulateAB(
            x, R, blockM / 16, dkTiles, qBufs, ValueRange{buf},
            [&](int64_t r, int64_t kk) { return dsA[r][kk]; }, dK);

        SmallVector<Value> yielded = flatten(dK);
        llvm::append_range(yielded, flatten(dV));
        scf::YieldOp::create(lb, ll, yielded);
      });
  buildWaitAllCopies(fb);

  // dk = scale dK, dv = dV for the keys of this block below Tk.
  SmallVector<SmallVector<Value>> dK =
      unflatten(loop.getResults().take_front(R * dkTiles), R, dkTiles);
  SmallVector<SmallVector<Value>> dV =
      unflatten(loop.getResults().drop_front(R * dkTiles), R, dvTiles);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t h = 0; h < 2; ++h) {
      Value key = keyOf(fb, r, h);
      Value valid = fb.cmpI(arith::CmpIPredicate::slt, key, tk);
      scf::IfOp::create(b, loc, valid, [&](OpBuilder &ib, Location il) {
        FragmentBuilder y(ib, il, ks.elt);
        storeFragmentRow(y, dK[r], h, y.cstF32(ks.scale), dk, batch, key,
                         ids.t2);
        storeFragmentRow(y, dV[r], h, y.cstF32(1.0), dv, batch, key, ids.t2);
        scf::YieldOp::create(ib, il);
      });
    }
  gpu::ReturnOp::create(b, loc);
}

void mlir::fa::gpukernel::buildTensorCoreDqBody(
    OpBuilder &b, Location loc, gpu::GPUFuncOp func,
    const TensorCoreBackwardShape &ks) {
  FragmentBuilder fb(b, loc, ks.elt);
  const int64_t R = ks.mTilesPerWarp, W = ks.numWarps;
  const int64_t threads = 32 * W;
  const int64_t blockM = 16 * R * W; // queries per block
  const int64_t blockN = ks.dqBlockN; // keys per tile
  const int64_t kTilesN = blockN / 8;

  Value q = func.getArgument(0), k = func.getArgument(1),
        v = func.getArgument(2), dout = func.getArgument(3),
        lse = func.getArgument(4), delta = func.getArgument(5),
        dq = func.getArgument(6);

  b.setInsertionPointToStart(&func.front());
  TensorCoreBackwardLayout layout = tensorCoreBackwardLayout(ks, false);
  Value smem = dynamicShared(fb);
  Value qTile, doTile;
  if (ks.operandsInShared) {
    qTile = sharedTile(fb, smem, layout.ownFirst, 0, blockM, ks.d);
    doTile = sharedTile(fb, smem, layout.ownSecond, 0, blockM, ks.dv);
  }
  Value kBufs = sharedTile(fb, smem, layout.loopFirst, 2, blockN, ks.d);
  Value vBufs = sharedTile(fb, smem, layout.loopSecond, 2, blockN, ks.dv);

  Value c0 = fb.cstIndex(0), c1 = fb.cstIndex(1), c2 = fb.cstIndex(2);
  Value tq = memref::DimOp::create(b, loc, q, 1);
  Value tk = memref::DimOp::create(b, loc, k, 1);
  Value queryBlock = queryBlockIndex(fb, ks.causal);
  Value batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  LaneIds ids = LaneIds::create(fb);
  WarpMma wm = WarpMma::create(fb, ids.lane);

  Value i0 = fb.mul(queryBlock, fb.cstIndex(blockM));
  Value warpRowLocal = fb.mul(ids.warp, fb.cstIndex(16 * R));
  Value warpRow0 = fb.add(i0, warpRowLocal);
  auto rowOf = [&](FragmentBuilder &x, int64_t r, int64_t h) {
    return x.add(x.add(warpRow0, x.cstIndex(16 * r + 8 * h)), ids.g);
  };
  VisibleKeys keys = visibleKeys(fb, ks.causal, i0, blockM, tq, tk);
  Value causalOffset = keys.causalOffset, kvEnd = keys.kvEnd;
  Value bn = fb.cstIndex(blockN);
  Value numKeyBlocks = arith::CeilDivSIOp::create(b, loc, kvEnd, bn);

  TileCopyPlan kPlan = planTileCopy(fb, ids.tid, blockN, ks.d, threads);
  TileCopyPlan vPlan = planTileCopy(fb, ids.tid, blockN, ks.dv, threads);
  if (ks.operandsInShared) {
    buildAsyncTileCopy(fb, planTileCopy(fb, ids.tid, blockM, ks.d, threads),
                       q, qTile, batch, i0, tq, ids.tid);
    buildAsyncTileCopy(fb, planTileCopy(fb, ids.tid, blockM, ks.dv, threads),
                       dout, doTile, batch, i0, tq, ids.tid);
  }
  // The first key tile, unless no key block is visited (Tk = 0).
  scf::IfOp::create(
      b, loc, fb.cmpI(arith::CmpIPredicate::sgt, numKeyBlocks, c0),
      [&](OpBuilder &ib, Location il) {
        FragmentBuilder y(ib, il, ks.elt);
        buildAsyncTileCopy(y, kPlan, k, kBufs, batch, c0, tk, ids.tid, c0);
        buildAsyncTileCopy(y, vPlan, v, vBufs, batch, c0, tk, ids.tid, c0);
        scf::YieldOp::create(ib, il);
      });

  // Q and dO fragments, -lse log2 e and delta of this lane's rows.
  Value lastRow = fb.maxS(fb.sub(tq, c1), c0);
  SmallVector<SmallVector<Value>> qFrag(R), doFrag(R);
  SmallVector<std::array<Value, 2>> negLse2(R), rowDelta(R);
  for (int64_t r = 0; r < R; ++r) {
    Value row0 = fb.minS(rowOf(fb, r, 0), lastRow);
    Value row1 = fb.minS(rowOf(fb, r, 1), lastRow);
    if (!ks.operandsInShared) {
      for (int64_t kc = 0; kc < ks.d / 16; ++kc)
        qFrag[r].push_back(
            loadAFromGlobal(fb, q, batch, row0, row1, ids.t2, kc));
      for (int64_t kc = 0; kc < ks.dv / 16; ++kc)
        doFrag[r].push_back(
            loadAFromGlobal(fb, dout, batch, row0, row1, ids.t2, kc));
    }
    for (auto [h, row] : llvm::enumerate(std::array<Value, 2>{row0, row1})) {
      negLse2[r][h] = arith::NegFOp::create(
          b, loc, lseLog2(fb, fb.load(lse, {batch, row})));
      rowDelta[r][h] = fb.load(delta, {batch, row});
    }
  }

  const int64_t dqTiles = ks.d / 8;
  auto loop = scf::ForOp::create(
      b, loc, c0, numKeyBlocks, c1, flatten(zeroTiles(fb, R, dqTiles)),
      [&](OpBuilder &lb, Location ll, Value jb, ValueRange carried) {
        FragmentBuilder x(lb, ll, ks.elt);
        SmallVector<SmallVector<Value>> dQ = unflatten(carried, R, dqTiles);
        Value j0 = x.mul(jb, bn);
        Value buf = arith::RemUIOp::create(lb, ll, jb, c2);

        buildWaitAllCopies(x);
        gpu::BarrierOp::create(lb, ll);
        Value hasNext =
            x.cmpI(arith::CmpIPredicate::slt, x.add(jb, c1), numKeyBlocks);
        scf::IfOp::create(lb, ll, hasNext, [&](OpBuilder &ib, Location il) {
          FragmentBuilder y(ib, il, ks.elt);
          Value next = y.sub(c1, buf);
          Value j0Next = y.add(j0, bn);
          buildAsyncTileCopy(y, kPlan, k, kBufs, batch, j0Next, tk, ids.tid,
                             next);
          buildAsyncTileCopy(y, vPlan, v, vBufs, batch, j0Next, tk, ids.tid,
                             next);
          scf::YieldOp::create(ib, il);
        });

        auto aQ = [&](int64_t r, int64_t kc) -> Value {
          if (!ks.operandsInShared)
            return qFrag[r][kc];
          return wm.loadA(x, qTile, {},
                          x.add(warpRowLocal, x.cstIndex(16 * r)), kc);
        };
        auto aDO = [&](int64_t r, int64_t kc) -> Value {
          if (!ks.operandsInShared)
            return doFrag[r][kc];
          return wm.loadA(x, doTile, {},
                          x.add(warpRowLocal, x.cstIndex(16 * r)), kc);
        };

        // S = Q K_j^T, masked past Tk and past the diagonal.
        SmallVector<SmallVector<Value>> s = wm.productABt(
            x, R, ks.d / 16, kTilesN, kBufs, ValueRange{buf}, aQ);
        Value c = scoreFactor(x, s, ks.scale);
        Value needMask = x.cmpI(arith::CmpIPredicate::sgt, x.add(j0, bn), tk);
        if (ks.causal != CausalKind::none)
          needMask = arith::OrIOp::create(
              lb, ll, needMask,
              x.cmpI(arith::CmpIPredicate::sgt,
                     x.add(j0, x.cstIndex(blockN - 1)),
                     x.add(warpRow0, causalOffset)));
        maskFragments(x, needMask, s,
                      [&](FragmentBuilder &y, int64_t r, int64_t n, int64_t h,
                          int64_t e) {
                        Value key = y.add(y.add(j0, ids.t2),
                                          y.cstIndex(n * 8 + e));
                        Value hidden =
                            y.cmpI(arith::CmpIPredicate::sge, key, tk);
                        if (ks.causal != CausalKind::none)
                          hidden = arith::OrIOp::create(
                              y.b, y.loc, hidden,
                              y.cmpI(arith::CmpIPredicate::sgt, key,
                                     y.add(rowOf(y, r, h), causalOffset)));
                        return hidden;
                      });

        SmallVector<SmallVector<Value>> p = probabilities(
            x, s, c, [&](int64_t r, int64_t, int64_t h, int64_t) {
              return negLse2[r][h];
            });
        // dP = dO V_j^T, dS = P (dP - delta), dQ += dS K_j.
        SmallVector<SmallVector<Value>> dp = wm.productABt(
            x, R, ks.dv / 16, kTilesN, vBufs, ValueRange{buf}, aDO);
        SmallVector<SmallVector<Value>> ds = scoreGradients(
            x, p, dp, [&](int64_t r, int64_t, int64_t h, int64_t) {
              return rowDelta[r][h];
            });
        SmallVector<SmallVector<Value>> dsA = toAFragments(x, ds);
        wm.accumulateAB(
            x, R, blockN / 16, dqTiles, kBufs, ValueRange{buf},
            [&](int64_t r, int64_t kk) { return dsA[r][kk]; }, dQ);
        scf::YieldOp::create(lb, ll, flatten(dQ));
      });
  buildWaitAllCopies(fb);

  SmallVector<SmallVector<Value>> dQ =
      unflatten(loop.getResults(), R, dqTiles);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t h = 0; h < 2; ++h) {
      Value row = rowOf(fb, r, h);
      Value valid = fb.cmpI(arith::CmpIPredicate::slt, row, tq);
      scf::IfOp::create(b, loc, valid, [&](OpBuilder &ib, Location il) {
        FragmentBuilder y(ib, il, ks.elt);
        storeFragmentRow(y, dQ[r], h, y.cstF32(ks.scale), dq, batch, row,
                         ids.t2);
        scf::YieldOp::create(ib, il);
      });
    }
  gpu::ReturnOp::create(b, loc);
}

/// The row kernels' thread mapping (`lanes` lanes per row, `threads` /
/// `lanes` rows per block, grid (ceil(Tq / rows), batch)): this thread's
/// batch index, row, and lane within the row.
namespace {
struct RowLane {
  Value batch, row, lane;
};
} // namespace
static RowLane rowLane(FragmentBuilder &fb, int64_t lanes, int64_t threads) {
  OpBuilder &b = fb.b;
  Location loc = fb.loc;
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  RowLane r;
  r.batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  r.row = fb.add(fb.mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
                        fb.cstIndex(threads / lanes)),
                 arith::DivUIOp::create(b, loc, tid, fb.cstIndex(lanes)));
  r.lane = arith::RemUIOp::create(b, loc, tid, fb.cstIndex(lanes));
  return r;
}

void mlir::fa::gpukernel::buildTensorCoreDeltaBody(OpBuilder &b, Location loc,
                                                   gpu::GPUFuncOp func,
                                                   int64_t dv,
                                                   int64_t threads) {
  b.setInsertionPointToStart(&func.front());
  Value o = func.getArgument(0), dout = func.getArgument(1),
        delta = func.getArgument(2);
  Type oElt = cast<MemRefType>(o.getType()).getElementType();
  Type doElt = cast<MemRefType>(dout.getType()).getElementType();
  FragmentBuilder fb(b, loc, doElt);
  const int64_t lanes = dv / 8;
  RowLane ids = rowLane(fb, lanes, threads);
  Value batch = ids.batch, row = ids.row, chunk = ids.lane;
  Value tq = memref::DimOp::create(b, loc, o, 1);
  // Rows past Tq read the last row (every lane takes part in the shuffles)
  // and store nothing.
  Value readRow = fb.minS(row, fb.maxS(fb.sub(tq, fb.cstIndex(1)),
                                       fb.cstIndex(0)));
  Value col = fb.mul(chunk, fb.cstIndex(8));
  auto loadF32 = [&](Value src, Type elt) -> Value {
    // Rows start 16-byte aligned (row_align; the runtime and the Python
    // package check o and do) and `col` is a multiple of 8 elements of at
    // least 2 bytes: one 16-byte (32 for f32) load per lane.
    Value v = vector::LoadOp::create(b, loc, fb.vec({8}, elt), src,
                                     ValueRange{batch, readRow, col},
                                     /*nontemporal=*/false, llvm::Align(16));
    if (elt != fb.f32)
      v = arith::ExtFOp::create(b, loc, fb.vec({8}, fb.f32), v);
    return v;
  };
  Value product = fb.mulF(loadF32(dout, doElt), loadF32(o, oElt));
  Value sum = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD,
                                          product);
  for (int32_t offset = lanes / 2; offset >= 1; offset /= 2)
    sum = fb.addF(sum, gpu::ShuffleOp::create(b, loc, sum, offset, 32,
                                              gpu::ShuffleMode::XOR)
                           .getShuffleResult());
  Value store = arith::AndIOp::create(
      b, loc, fb.cmpI(arith::CmpIPredicate::slt, row, tq),
      fb.cmpI(arith::CmpIPredicate::eq, chunk, fb.cstIndex(0)));
  scf::IfOp::create(b, loc, store, [&](OpBuilder &ib, Location il) {
    FragmentBuilder y(ib, il, doElt);
    y.store(sum, delta, {batch, row});
    scf::YieldOp::create(ib, il);
  });
  // dq atomics: this lane's D / lanes elements of the row's dq_accum.
  if (func.getNumArguments() > 3) {
    Value dqAccum = func.getArgument(3);
    int64_t d = cast<MemRefType>(dqAccum.getType()).getDimSize(2);
    int64_t perLane = d / lanes;
    Value inRange = fb.cmpI(arith::CmpIPredicate::slt, row, tq);
    scf::IfOp::create(b, loc, inRange, [&](OpBuilder &ib, Location il) {
      FragmentBuilder y(ib, il, doElt);
      Value zeros = arith::ConstantOp::create(
          ib, il,
          DenseElementsAttr::get(y.vec({perLane}, y.f32), 0.0f));
      vector::StoreOp::create(ib, il, zeros, dqAccum,
                              ValueRange{batch, row,
                                         y.mul(chunk, y.cstIndex(perLane))},
                              /*nontemporal=*/false,
                              llvm::Align(std::min<int64_t>(16, perLane * 4)));
      scf::YieldOp::create(ib, il);
    });
  }
  gpu::ReturnOp::create(b, loc);
}

void mlir::fa::gpukernel::buildTensorCoreConvertBody(
    OpBuilder &b, Location loc, gpu::GPUFuncOp func, int64_t d, int64_t threads,
    const DqAccumLayout &layout) {
  b.setInsertionPointToStart(&func.front());
  Value dqAccum = func.getArgument(0), dq = func.getArgument(1);
  Type dqElt = cast<MemRefType>(dq.getType()).getElementType();
  FragmentBuilder fb(b, loc, dqElt);
  RowLane ids = rowLane(fb, d / 8, threads);
  Value batch = ids.batch, row = ids.row;
  Value col = fb.mul(ids.lane, fb.cstIndex(8));
  // Fragment order: the lane's n8 block (lane % 4 of group lane / 4) is
  // held at block (lane ^ row) % 4 of the group.
  Value from = col;
  if (layout.fragmentOrder)
    from = fb.mul(arith::XOrIOp::create(
                      b, loc, ids.lane,
                      arith::AndIOp::create(b, loc, row, fb.cstIndex(3)))
                      .getResult(),
                  fb.cstIndex(8));
  Value tq = memref::DimOp::create(b, loc, dq, 1);
  scf::IfOp::create(
      b, loc, fb.cmpI(arith::CmpIPredicate::slt, row, tq),
      [&](OpBuilder &ib, Location il) {
        FragmentBuilder y(ib, il, dqElt);
        // Rows start 16-byte aligned (row_align); col and from are
        // multiples of 8.
        Value v = vector::LoadOp::create(
            ib, il, y.vec({8}, y.f32), dqAccum, ValueRange{batch, row, from},
            /*nontemporal=*/false, llvm::Align(16));
        if (layout.scale != 1.0f)
          v = arith::MulFOp::create(
              ib, il, v,
              arith::ConstantOp::create(
                  ib, il,
                  DenseElementsAttr::get(y.vec({8}, y.f32), layout.scale)));
        if (dqElt != y.f32)
          v = arith::TruncFOp::create(ib, il, y.vec({8}, dqElt), v);
        vector::StoreOp::create(ib, il, v, dq, ValueRange{batch, row, col},
                                /*nontemporal=*/false,
                                llvm::Align(dqElt == y.f32 ? 16 : 8 * 2));
        scf::YieldOp::create(ib, il);
      });
  gpu::ReturnOp::create(b, loc);
}
