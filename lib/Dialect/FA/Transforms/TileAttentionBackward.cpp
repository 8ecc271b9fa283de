//===- TileAttentionBackward.cpp - tiling of fa.attention_backward ------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// Implements `fa-tile-attention-backward`: fa.attention_backward becomes
// delta = rowsum(do * o), then a loop nest over batch indices and key/value
// blocks whose inner loop over query blocks recomputes the probabilities
// from the saved logsumexp and accumulates dk and dv per key block and dq
// in one f32 tensor (FlashAttention-2, Dao 2023, arXiv:2307.08691,
// Algorithm 2).
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FA.h"
#include "fa/Dialect/FA/Transforms/Passes.h"
#include "fa/Dialect/FA/Transforms/Transforms.h"

#include "TileUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

namespace mlir {
namespace fa {
#define GEN_PASS_DEF_FATILEATTENTIONBACKWARD
#include "fa/Dialect/FA/Transforms/Passes.h.inc"
} // namespace fa
} // namespace mlir

using namespace mlir;
using namespace mlir::fa;

using tiling::castTo;
using tiling::TileBuilder;
using utils::IteratorType;

/// `src` (f32) converted element-wise to `elt`; `src` itself when `elt` is
/// f32.
static Value convertTo(TileBuilder &tb, Value src, Type elt) {
  if (elt == tb.f32)
    return src;
  auto srcTy = cast<RankedTensorType>(src.getType());
  unsigned rank = srcTy.getRank();
  Value init = tensor::EmptyOp::create(
      tb.b, tb.loc, tensor::getMixedSizes(tb.b, tb.loc, src), elt);
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, tb.b.getContext());
  return linalg::GenericOp::create(
             tb.b, tb.loc, init.getType(), ValueRange{src}, ValueRange{init},
             ArrayRef<AffineMap>{id, id},
             SmallVector<IteratorType>(rank, IteratorType::parallel),
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               linalg::YieldOp::create(
                   nb, nl,
                   ValueRange{arith::TruncFOp::create(nb, nl, elt, args[0])});
             })
      .getResult(0);
}

/// delta[batch..., i] = sum_e do[batch..., i, e] * o[batch..., i, e], in f32.
static Value buildDelta(TileBuilder &tb, Value o, Value dO) {
  auto oTy = cast<RankedTensorType>(o.getType());
  unsigned rank = oTy.getRank();
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(tb.b, tb.loc, o);
  sizes.pop_back();
  Value init = tb.filled(sizes, 0.0);
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, tb.b.getContext());
  SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  iterators.back() = IteratorType::reduction;
  return linalg::GenericOp::create(
             tb.b, tb.loc, init.getType(), ValueRange{dO, o}, ValueRange{init},
             ArrayRef<AffineMap>{id, id, id.dropResult(rank - 1)}, iterators,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               TileBuilder t(nb, nl);
               Value prod = arith::MulFOp::create(nb, nl, t.toF32(args[0]),
                                                  t.toF32(args[1]));
               linalg::YieldOp::create(
                   nb, nl,
                   ValueRange{arith::AddFOp::create(nb, nl, args[2], prod)});
             })
      .getResult(0);
}

/// p = exp(scale * s - lse) for the [rows, cols] tile at (i0, j0); 0 where
/// lse is -inf (a row with no visible key) and, with `causalMask`, where
/// the key j0 + c is past the diagonal of the query i0 + r (j > i + offset).
/// Loop dims (r, c).
static Value buildProbabilities(TileBuilder &tb, Value s, Value lseTile,
                                Value scale, Value i0, Value j0,
                                Value causalOffset, bool causalMask) {
  constexpr double negInf = -std::numeric_limits<double>::infinity();
  Value init = tensor::EmptyOp::create(
      tb.b, tb.loc, tensor::getMixedSizes(tb.b, tb.loc, s), tb.f32);
  return linalg::GenericOp::create(
             tb.b, tb.loc, init.getType(), ValueRange{s, lseTile},
             ValueRange{init},
             ArrayRef<AffineMap>{tb.map(2, {0, 1}), tb.map(2, {0}),
                                 tb.map(2, {0, 1})},
             ArrayRef<IteratorType>{IteratorType::parallel,
                                    IteratorType::parallel},
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               TileBuilder t(nb, nl);
               Value zero = t.cstF32(0.0);
               Value scaled = arith::MulFOp::create(nb, nl, args[0], scale);
               Value e = math::ExpOp::create(
                   nb, nl, arith::SubFOp::create(nb, nl, scaled, args[1]));
               Value noKey =
                   arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ,
                                         args[1], t.cstF32(negInf));
               Value p = arith::SelectOp::create(nb, nl, noKey, zero, e);
               if (causalMask) {
                 Value r = linalg::IndexOp::create(nb, nl, 0);
                 Value c = linalg::IndexOp::create(nb, nl, 1);
                 Value qi = arith::AddIOp::create(nb, nl, i0, r);
                 Value kj = arith::AddIOp::create(nb, nl, j0, c);
                 Value last = arith::AddIOp::create(nb, nl, qi, causalOffset);
                 Value hidden = arith::CmpIOp::create(
                     nb, nl, arith::CmpIPredicate::sgt, kj, last);
                 p = arith::SelectOp::create(nb, nl, hidden, zero, p);
               }
               linalg::YieldOp::create(nb, nl, ValueRange{p});
             })
      .getResult(0);
}

/// One (key block, query block) tile of the backward: returns the updated
/// (dq, dk, dv) accumulators. `dq` is the whole f32 [batch..., Tq, D]
/// tensor; `dk` [cols, D] and `dv` [cols, Dv] are those of the key block.
static SmallVector<Value>
buildTileUpdate(TileBuilder &tb, AttentionBackwardOp op, Value scale,
                Value delta, ValueRange batch, Value i0, Value rows, Value j0,
                Value cols, Value causalOffset, Value kTile, Value vTile,
                Value dq, Value dk, Value dv) {
  OpBuilder &b = tb.b;
  Location loc = tb.loc;

  Value qTile = tb.slice2d(op.getQ(), batch, i0, rows);
  Value doTile = tb.slice2d(op.getDout(), batch, i0, rows);
  Value lseTile = tb.slice1d(op.getLse(), batch, i0, rows);
  Value deltaTile = tb.slice1d(delta, batch, i0, rows);

  // s = q k^T, f32. Loop dims (r, c, d).
  Value s =
      tb.contract(qTile, kTile, tb.filled({rows, cols}, 0.0), tb.map(3, {0, 2}),
                  tb.map(3, {1, 2}), tb.map(3, {0, 1}));

  // p, masked element-wise only when the tile straddles the diagonal: its
  // last key is past the diagonal of its first query row,
  // j0 + cols - 1 > i0 + offset.
  Value p;
  if (!op.isCausal()) {
    p = buildProbabilities(tb, s, lseTile, scale, i0, j0, causalOffset,
                           /*causalMask=*/false);
  } else {
    Value lastKey = arith::SubIOp::create(
        b, loc, arith::AddIOp::create(b, loc, j0, cols), tb.cstIndex(1));
    Value firstVisible = arith::AddIOp::create(b, loc, i0, causalOffset);
    Value straddles = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                            lastKey, firstVisible);
    auto ifOp = scf::IfOp::create(
        b, loc, straddles,
        [&](OpBuilder &ib, Location il) {
          TileBuilder t(ib, il);
          scf::YieldOp::create(ib, il,
                               buildProbabilities(t, s, lseTile, scale, i0, j0,
                                                  causalOffset,
                                                  /*causalMask=*/true));
        },
        [&](OpBuilder &ib, Location il) {
          TileBuilder t(ib, il);
          scf::YieldOp::create(ib, il,
                               buildProbabilities(t, s, lseTile, scale, i0, j0,
                                                  causalOffset,
                                                  /*causalMask=*/false));
        });
    p = ifOp.getResult(0);
  }

  // dv += p^T do. Loop dims (c, e, r).
  Value dvNew = tb.contract(p, doTile, dv, tb.map(3, {2, 0}), tb.map(3, {2, 1}),
                            tb.map(3, {0, 1}));

  // dp = do v^T. Loop dims (r, c, e).
  Value dp =
      tb.contract(doTile, vTile, tb.filled({rows, cols}, 0.0),
                  tb.map(3, {0, 2}), tb.map(3, {1, 2}), tb.map(3, {0, 1}));

  // ds = scale * p * (dp - delta). Loop dims (r, c).
  Value dsInit = tensor::EmptyOp::create(
      b, loc, ArrayRef<OpFoldResult>{rows, cols}, tb.f32);
  Value ds =
      linalg::GenericOp::create(
          b, loc, dsInit.getType(), ValueRange{p, dp, deltaTile},
          ValueRange{dsInit},
          ArrayRef<AffineMap>{tb.map(2, {0, 1}), tb.map(2, {0, 1}),
                              tb.map(2, {0}), tb.map(2, {0, 1})},
          ArrayRef<IteratorType>{IteratorType::parallel,
                                 IteratorType::parallel},
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            Value diff = arith::SubFOp::create(nb, nl, args[1], args[2]);
            Value ps = arith::MulFOp::create(nb, nl, args[0], scale);
            linalg::YieldOp::create(
                nb, nl, ValueRange{arith::MulFOp::create(nb, nl, ps, diff)});
          })
          .getResult(0);

  // dk += ds^T q. Loop dims (c, d, r).
  Value dkNew = tb.contract(ds, qTile, dk, tb.map(3, {2, 0}), tb.map(3, {2, 1}),
                            tb.map(3, {0, 1}));

  // dq[rows] += ds k, in place in the whole dq. Loop dims (r, d, c).
  Value dqTile = tb.slice2d(dq, batch, i0, rows);
  Value dqTileNew = tb.contract(ds, kTile, dqTile, tb.map(3, {0, 2}),
                                tb.map(3, {2, 1}), tb.map(3, {0, 1}));
  Value dqNew = tb.insert(dqTileNew, dq, batch, i0, rows, /*withCols=*/true);
  return {dqNew, dkNew, dvNew};
}

LogicalResult
mlir::fa::tileAttentionBackward(RewriterBase &rewriter, AttentionBackwardOp op,
                                const AttentionTilingOptions &options) {
  if (options.blockM <= 0 || options.blockN <= 0)
    return op.emitOpError("expected positive block-m and block-n, got ")
           << options.blockM << " and " << options.blockN;

  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  TileBuilder tb(rewriter, loc);
  OpBuilder &b = rewriter;

  Value q = op.getQ(), k = op.getK(), v = op.getV();
  int64_t nb = op.getNumBatchDims();
  RankedTensorType dqTy = op.getDq().getType(), dkTy = op.getDk().getType(),
                   dvTy = op.getDv().getType();

  SmallVector<Value> batchSizes;
  for (int64_t i = 0; i < nb; ++i)
    batchSizes.push_back(tensor::DimOp::create(b, loc, q, i));
  Value tq = tensor::DimOp::create(b, loc, q, nb);
  Value tk = tensor::DimOp::create(b, loc, k, nb);
  Value scale = tiling::buildScale(tb, op.getStaticScale(), q);

  // causalOffset: query i sees keys j <= i + causalOffset.
  Value causalOffset = tb.cstIndex(0);
  if (op.getCausal() == CausalKind::bottom_right)
    causalOffset = arith::SubIOp::create(b, loc, tk, tq);

  Value delta = buildDelta(tb, op.getO(), op.getDout());

  // Loop-carried destinations: dq accumulates across key blocks in f32; dk
  // and dv are written once per key block.
  SmallVector<Value> inits{
      tb.filled(tensor::getMixedSizes(b, loc, q), 0.0),
      tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, k),
                              dkTy.getElementType()),
      tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, v),
                              dvTy.getElementType())};

  SmallVector<Value> lbs(nb + 1, tb.cstIndex(0));
  SmallVector<Value> ubs(batchSizes);
  ubs.push_back(tk);
  SmallVector<Value> steps(nb, tb.cstIndex(1));
  steps.push_back(tb.cstIndex(options.blockN));
  Value bm = tb.cstIndex(options.blockM);
  Value bn = tb.cstIndex(options.blockN);

  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lbs, ubs, steps, inits,
      [&](OpBuilder &lb, Location ll, ValueRange ivs,
          ValueRange iterArgs) -> scf::ValueVector {
        TileBuilder t(lb, ll);
        ValueRange batch = ivs.drop_back();
        Value j0 = ivs.back();
        Value cols = arith::MinSIOp::create(
            lb, ll, bn, arith::SubIOp::create(lb, ll, tk, j0));
        Value kTile = t.slice2d(k, batch, j0, cols);
        Value vTile = t.slice2d(v, batch, j0, cols);

        // Query blocks: all of them, or, under causal, those from the first
        // row that sees key j0: qStart = clamp(j0 - offset, 0, Tq).
        Value qStart = t.cstIndex(0);
        if (op.isCausal()) {
          Value first = arith::SubIOp::create(lb, ll, j0, causalOffset);
          first = arith::MaxSIOp::create(lb, ll, first, t.cstIndex(0));
          qStart = arith::MinSIOp::create(lb, ll, first, tq);
        }

        OpFoldResult d = tensor::getMixedSize(lb, ll, k, nb + 1);
        OpFoldResult dvSize = tensor::getMixedSize(lb, ll, v, nb + 1);
        Value dk0 = t.filled({cols, d}, 0.0);
        Value dv0 = t.filled({cols, dvSize}, 0.0);

        auto qLoop = scf::ForOp::create(
            lb, ll, qStart, tq, bm, ValueRange{iterArgs[0], dk0, dv0},
            [&](OpBuilder &qb, Location ql, Value i0, ValueRange carried) {
              TileBuilder qt(qb, ql);
              Value rows = arith::MinSIOp::create(
                  qb, ql, bm, arith::SubIOp::create(qb, ql, tq, i0));
              SmallVector<Value> next = buildTileUpdate(
                  qt, op, scale, delta, batch, i0, rows, j0, cols, causalOffset,
                  kTile, vTile, carried[0], carried[1], carried[2]);
              scf::YieldOp::create(qb, ql, next);
            });

        Value dkTile = convertTo(t, qLoop.getResult(1), dkTy.getElementType());
        Value dvTile = convertTo(t, qLoop.getResult(2), dvTy.getElementType());
        return {qLoop.getResult(0),
                t.insert(dkTile, iterArgs[1], batch, j0, cols,
                         /*withCols=*/true),
                t.insert(dvTile, iterArgs[2], batch, j0, cols,
                         /*withCols=*/true)};
      });

  Value dq = convertTo(tb, nest.results[0], dqTy.getElementType());
  rewriter.replaceOp(op, ValueRange{castTo(tb, dq, dqTy),
                                    castTo(tb, nest.results[1], dkTy),
                                    castTo(tb, nest.results[2], dvTy)});
  return success();
}

namespace {

struct TileAttentionBackwardPattern : OpRewritePattern<AttentionBackwardOp> {
  TileAttentionBackwardPattern(MLIRContext *ctx, AttentionTilingOptions options)
      : OpRewritePattern(ctx), options(options) {}

  LogicalResult matchAndRewrite(AttentionBackwardOp op,
                                PatternRewriter &rewriter) const override {
    return tileAttentionBackward(rewriter, op, options);
  }

  AttentionTilingOptions options;
};

struct FATileAttentionBackwardPass
    : fa::impl::FATileAttentionBackwardBase<FATileAttentionBackwardPass> {
  using Base::Base;

  void runOnOperation() override {
    if (blockM <= 0 || blockN <= 0) {
      mlir::emitError(getOperation()->getLoc())
          << "fa-tile-attention-backward: expected positive block-m and "
             "block-n, got "
          << static_cast<int64_t>(blockM) << " and "
          << static_cast<int64_t>(blockN);
      return signalPassFailure();
    }
    AttentionTilingOptions options;
    options.blockM = blockM;
    options.blockN = blockN;
    IRRewriter rewriter(&getContext());
    SmallVector<AttentionBackwardOp> ops;
    getOperation()->walk([&](AttentionBackwardOp op) { ops.push_back(op); });
    bool failed = false;
    for (AttentionBackwardOp op : ops)
      if (mlir::failed(tileAttentionBackward(rewriter, op, options)))
        failed = true;
    if (failed)
      signalPassFailure();
  }
};

} // namespace

void mlir::fa::populateTileAttentionBackwardPatterns(
    RewritePatternSet &patterns, const AttentionTilingOptions &options) {
  patterns.add<TileAttentionBackwardPattern>(patterns.getContext(), options);
}
