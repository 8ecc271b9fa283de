//===- TileAttention.cpp - online-softmax tiling of fa.attention --------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// Implements `fa-tile-attention`: fa.attention becomes a loop nest over batch
// indices and query blocks, with an inner loop over key/value blocks that
// carries the running max, the running sum and the unnormalized f32 output
// accumulator (FlashAttention-2, Dao 2023, arXiv:2307.08691, Algorithm 1).
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
#define GEN_PASS_DEF_FATILEATTENTION
#include "fa/Dialect/FA/Transforms/Passes.h.inc"
} // namespace fa
} // namespace mlir

using namespace mlir;
using namespace mlir::fa;

using utils::IteratorType;

using tiling::TileBuilder;

/// Builds the key/value loop body: one online-softmax update
/// (m, l, acc) -> (m', l', acc') for the key block starting at `j0` of
/// `cols` rows. See the pass description for the recurrence.
static SmallVector<Value>
buildKeyBlockUpdate(TileBuilder &tb, AttentionOp op, Value scale,
                    ValueRange batch, Value i0, Value rows, Value j0,
                    Value cols, Value causalOffset, Value qTile, Value m,
                    Value l, Value acc) {
  OpBuilder &b = tb.b;
  Location loc = tb.loc;
  Type f32 = tb.f32;
  constexpr double negInf = -std::numeric_limits<double>::infinity();

  Value kTile = tb.slice2d(op.getK(), batch, j0, cols);
  Value vTile = tb.slice2d(op.getV(), batch, j0, cols);

  // s = q k^T, accumulated in f32. Loop dims (r, c, d).
  Value s = tb.contract(qTile, kTile, tb.filled({rows, cols}, 0.0),
                        tb.map(3, {0, 2}), tb.map(3, {1, 2}),
                        tb.map(3, {0, 1}));

  // The optional mask tile [rows, cols]; broadcast (size-1) batch dims read
  // index 0. A dynamic batch dim broadcasts when it is 1 at run time.
  Value maskTile;
  if (Value mask = op.getMask()) {
    auto mTy = cast<RankedTensorType>(mask.getType());
    SmallVector<Value> mBatch;
    for (auto [i, idx] : llvm::enumerate(batch)) {
      if (!mTy.isDynamicDim(i)) {
        mBatch.push_back(mTy.getDimSize(i) == 1 ? tb.cstIndex(0) : idx);
        continue;
      }
      Value isOne = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::eq,
          tensor::DimOp::create(b, loc, mask, i), tb.cstIndex(1));
      mBatch.push_back(
          arith::SelectOp::create(b, loc, isOne, tb.cstIndex(0), idx));
    }
    SmallVector<OpFoldResult> offsets(mBatch.begin(), mBatch.end());
    SmallVector<OpFoldResult> sizes(mBatch.size(), b.getIndexAttr(1));
    offsets.push_back(i0);
    offsets.push_back(j0);
    sizes.push_back(rows);
    sizes.push_back(cols);
    SmallVector<OpFoldResult> strides(mTy.getRank(), b.getIndexAttr(1));
    auto tileTy = RankedTensorType::get(
        {ShapedType::kDynamic, ShapedType::kDynamic}, mTy.getElementType());
    maskTile = tensor::ExtractSliceOp::create(b, loc, tileTy, mask, offsets,
                                              sizes, strides);
  }

  // Scale, add/apply the mask and, when `causalMask` is set, hide the keys
  // j > i + causalOffset. Loop dims (r, c).
  auto buildScores = [&](bool causalMask) -> Value {
    SmallVector<Value> inputs{s};
    SmallVector<AffineMap> maps{tb.map(2, {0, 1})};
    if (maskTile) {
      inputs.push_back(maskTile);
      maps.push_back(tb.map(2, {0, 1}));
    }
    maps.push_back(tb.map(2, {0, 1}));
    Value init = tensor::EmptyOp::create(
        b, loc, ArrayRef<OpFoldResult>{rows, cols}, f32);
    return linalg::GenericOp::create(
               b, loc, init.getType(), inputs, ValueRange{init}, maps,
               ArrayRef<IteratorType>{IteratorType::parallel,
                                      IteratorType::parallel},
               [&](OpBuilder &nb, Location nl, ValueRange args) {
                 TileBuilder t(nb, nl);
                 Value v = arith::MulFOp::create(nb, nl, args[0], scale);
                 Value ninf = t.cstF32(negInf);
                 if (maskTile) {
                   Value mv = args[1];
                   if (mv.getType().isInteger(1))
                     v = arith::SelectOp::create(nb, nl, mv, v, ninf);
                   else
                     v = arith::AddFOp::create(nb, nl, v, t.toF32(mv));
                 }
                 if (causalMask) {
                   Value r = linalg::IndexOp::create(nb, nl, 0);
                   Value c = linalg::IndexOp::create(nb, nl, 1);
                   Value qi = arith::AddIOp::create(nb, nl, i0, r);
                   Value kj = arith::AddIOp::create(nb, nl, j0, c);
                   Value last =
                       arith::AddIOp::create(nb, nl, qi, causalOffset);
                   Value hidden = arith::CmpIOp::create(
                       nb, nl, arith::CmpIPredicate::sgt, kj, last);
                   v = arith::SelectOp::create(nb, nl, hidden, ninf, v);
                 }
                 linalg::YieldOp::create(nb, nl, ValueRange{v});
               })
        .getResult(0);
  };

  Value scores;
  if (!op.isCausal()) {
    scores = buildScores(false);
  } else {
    // Only a block with a key past the diagonal of its first query row
    // needs the element-wise mask: j0 + cols - 1 > i0 + offset.
    Value lastKey = arith::SubIOp::create(
        b, loc, arith::AddIOp::create(b, loc, j0, cols), tb.cstIndex(1));
    Value firstVisible = arith::AddIOp::create(b, loc, i0, causalOffset);
    Value straddles = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::sgt, lastKey, firstVisible);
    auto ifOp = scf::IfOp::create(
        b, loc, straddles,
        [&](OpBuilder &, Location) {
          scf::YieldOp::create(b, loc, buildScores(true));
        },
        [&](OpBuilder &, Location) {
          scf::YieldOp::create(b, loc, buildScores(false));
        });
    scores = ifOp.getResult(0);
  }

  // m' = max(m, rowmax(scores)): a reduction over c whose init is m.
  Value mNew =
      linalg::GenericOp::create(
          b, loc, m.getType(), ValueRange{scores}, ValueRange{m},
          ArrayRef<AffineMap>{tb.map(2, {0, 1}), tb.map(2, {0})},
          ArrayRef<IteratorType>{IteratorType::parallel,
                                 IteratorType::reduction},
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            linalg::YieldOp::create(
                nb, nl,
                ValueRange{arith::MaximumFOp::create(nb, nl, args[0], args[1])});
          })
          .getResult(0);

  // alpha = m == -inf ? 0 : exp(m - m'); the first block's factor is forced
  // to 0 instead of computing exp(-inf - (-inf)).
  Value alphaInit =
      tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{rows}, f32);
  Value alpha =
      linalg::GenericOp::create(
          b, loc, alphaInit.getType(), ValueRange{m, mNew},
          ValueRange{alphaInit},
          ArrayRef<AffineMap>{tb.map(1, {0}), tb.map(1, {0}), tb.map(1, {0})},
          ArrayRef<IteratorType>{IteratorType::parallel},
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            TileBuilder t(nb, nl);
            Value isFirst = arith::CmpFOp::create(
                nb, nl, arith::CmpFPredicate::OEQ, args[0], t.cstF32(negInf));
            Value e = math::ExpOp::create(
                nb, nl, arith::SubFOp::create(nb, nl, args[0], args[1]));
            linalg::YieldOp::create(
                nb, nl,
                ValueRange{
                    arith::SelectOp::create(nb, nl, isFirst, t.cstF32(0), e)});
          })
          .getResult(0);

  // p = m' == -inf ? 0 : exp(scores - m') (a row with no visible key so far
  // keeps p = 0).
  Value pInit =
      tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{rows, cols}, f32);
  Value p =
      linalg::GenericOp::create(
          b, loc, pInit.getType(), ValueRange{scores, mNew}, ValueRange{pInit},
          ArrayRef<AffineMap>{tb.map(2, {0, 1}), tb.map(2, {0}),
                              tb.map(2, {0, 1})},
          ArrayRef<IteratorType>{IteratorType::parallel,
                                 IteratorType::parallel},
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            TileBuilder t(nb, nl);
            Value none = arith::CmpFOp::create(
                nb, nl, arith::CmpFPredicate::OEQ, args[1], t.cstF32(negInf));
            Value e = math::ExpOp::create(
                nb, nl, arith::SubFOp::create(nb, nl, args[0], args[1]));
            linalg::YieldOp::create(
                nb, nl,
                ValueRange{
                    arith::SelectOp::create(nb, nl, none, t.cstF32(0), e)});
          })
          .getResult(0);

  // l' = alpha * l + rowsum(p).
  Value lScaled =
      linalg::GenericOp::create(
          b, loc, l.getType(), ValueRange{alpha}, ValueRange{l},
          ArrayRef<AffineMap>{tb.map(1, {0}), tb.map(1, {0})},
          ArrayRef<IteratorType>{IteratorType::parallel},
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            linalg::YieldOp::create(
                nb, nl, ValueRange{arith::MulFOp::create(nb, nl, args[0], args[1])});
          })
          .getResult(0);
  Value lNew =
      linalg::GenericOp::create(
          b, loc, l.getType(), ValueRange{p}, ValueRange{lScaled},
          ArrayRef<AffineMap>{tb.map(2, {0, 1}), tb.map(2, {0})},
          ArrayRef<IteratorType>{IteratorType::parallel,
                                 IteratorType::reduction},
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            linalg::YieldOp::create(
                nb, nl, ValueRange{arith::AddFOp::create(nb, nl, args[0], args[1])});
          })
          .getResult(0);

  // acc' = alpha * acc + p v. Loop dims (r, e) then (r, e, c).
  Value accScaled =
      linalg::GenericOp::create(
          b, loc, acc.getType(), ValueRange{alpha}, ValueRange{acc},
          ArrayRef<AffineMap>{tb.map(2, {0}), tb.map(2, {0, 1})},
          ArrayRef<IteratorType>{IteratorType::parallel,
                                 IteratorType::parallel},
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            linalg::YieldOp::create(
                nb, nl, ValueRange{arith::MulFOp::create(nb, nl, args[0], args[1])});
          })
          .getResult(0);
  Value accNew = tb.contract(p, vTile, accScaled, tb.map(3, {0, 2}),
                             tb.map(3, {2, 1}), tb.map(3, {0, 1}));
  return {mNew, lNew, accNew};
}

LogicalResult mlir::fa::tileAttention(RewriterBase &rewriter, AttentionOp op,
                                      const AttentionTilingOptions &options) {
  if (options.blockM <= 0 || options.blockN <= 0)
    return op.emitOpError("expected positive block-m and block-n, got ")
           << options.blockM << " and " << options.blockN;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  TileBuilder tb(rewriter, loc);
  OpBuilder &b = rewriter;
  Type f32 = tb.f32;
  constexpr double negInf = -std::numeric_limits<double>::infinity();

  Value q = op.getQ(), k = op.getK(), v = op.getV();
  int64_t nb = op.getNumBatchDims();
  auto oTy = cast<RankedTensorType>(op.getO().getType());

  SmallVector<Value> batchSizes;
  for (int64_t i = 0; i < nb; ++i)
    batchSizes.push_back(tensor::DimOp::create(b, loc, q, i));
  Value tq = tensor::DimOp::create(b, loc, q, nb);
  Value tk = tensor::DimOp::create(b, loc, k, nb);

  // The scale: the attribute, or 1/sqrt(D) (computed at run time when D is
  // dynamic).
  Value scale = tiling::buildScale(tb, op.getStaticScale(), q);

  // causalOffset: query i sees keys j <= i + causalOffset.
  Value causalOffset = tb.cstIndex(0);
  if (op.getCausal() == CausalKind::bottom_right)
    causalOffset = arith::SubIOp::create(b, loc, tk, tq);

  // Destination tensors.
  SmallVector<OpFoldResult> oSizes = tensor::getMixedSizes(b, loc, q);
  oSizes.back() = tensor::getMixedSize(b, loc, v, nb + 1);
  SmallVector<Value> inits{
      tensor::EmptyOp::create(b, loc, oSizes, oTy.getElementType())};
  if (op.getLse()) {
    SmallVector<OpFoldResult> lSizes(oSizes.begin(), oSizes.end() - 1);
    inits.push_back(tensor::EmptyOp::create(b, loc, lSizes, f32));
  }

  SmallVector<Value> lbs(nb + 1, tb.cstIndex(0));
  SmallVector<Value> ubs(batchSizes);
  ubs.push_back(tq);
  SmallVector<Value> steps(nb, tb.cstIndex(1));
  steps.push_back(tb.cstIndex(options.blockM));
  Value bm = tb.cstIndex(options.blockM);
  Value bn = tb.cstIndex(options.blockN);

  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lbs, ubs, steps, inits,
      [&](OpBuilder &lb, Location ll, ValueRange ivs,
          ValueRange iterArgs) -> scf::ValueVector {
        TileBuilder t(lb, ll);
        ValueRange batch = ivs.drop_back();
        Value i0 = ivs.back();
        Value rows = arith::MinSIOp::create(
            lb, ll, bm, arith::SubIOp::create(lb, ll, tq, i0));
        Value qTile = t.slice2d(q, batch, i0, rows);

        // Key blocks: all of them, or, under causal, those before the end
        // of the diagonal of this query block's last row:
        // kvEnd = clamp(i0 + rows + offset, 0, Tk).
        Value kvEnd = tk;
        if (op.isCausal()) {
          Value end = arith::AddIOp::create(
              lb, ll, arith::AddIOp::create(lb, ll, i0, rows), causalOffset);
          end = arith::MaxSIOp::create(lb, ll, end, t.cstIndex(0));
          kvEnd = arith::MinSIOp::create(lb, ll, end, tk);
        }

        OpFoldResult dv = tensor::getMixedSize(lb, ll, v, nb + 1);
        Value m0 = t.filled({rows}, negInf);
        Value l0 = t.filled({rows}, 0.0);
        Value acc0 = t.filled({rows, dv}, 0.0);

        auto kvLoop = scf::ForOp::create(
            lb, ll, t.cstIndex(0), kvEnd, bn, ValueRange{m0, l0, acc0},
            [&](OpBuilder &kb, Location kl, Value j0, ValueRange carried) {
              TileBuilder kt(kb, kl);
              Value cols = arith::MinSIOp::create(
                  kb, kl, bn, arith::SubIOp::create(kb, kl, kvEnd, j0));
              SmallVector<Value> next = buildKeyBlockUpdate(
                  kt, op, scale, batch, i0, rows, j0, cols, causalOffset,
                  qTile, carried[0], carried[1], carried[2]);
              scf::YieldOp::create(kb, kl, next);
            });
        Value m = kvLoop.getResult(0), l = kvLoop.getResult(1),
              acc = kvLoop.getResult(2);

        // o = l == 0 ? 0 : acc / l, in o's element type.
        Type oElt = oTy.getElementType();
        Value oInit = tensor::EmptyOp::create(
            lb, ll, ArrayRef<OpFoldResult>{rows, dv}, oElt);
        Value oTile =
            linalg::GenericOp::create(
                lb, ll, oInit.getType(), ValueRange{acc, l}, ValueRange{oInit},
                ArrayRef<AffineMap>{t.map(2, {0, 1}), t.map(2, {0}),
                                    t.map(2, {0, 1})},
                ArrayRef<IteratorType>{IteratorType::parallel,
                                       IteratorType::parallel},
                [&](OpBuilder &nb2, Location nl, ValueRange args) {
                  TileBuilder t2(nb2, nl);
                  Value empty = arith::CmpFOp::create(
                      nb2, nl, arith::CmpFPredicate::OEQ, args[1],
                      t2.cstF32(0));
                  Value div = arith::DivFOp::create(nb2, nl, args[0], args[1]);
                  Value r =
                      arith::SelectOp::create(nb2, nl, empty, t2.cstF32(0), div);
                  if (oElt != t2.f32)
                    r = arith::TruncFOp::create(nb2, nl, oElt, r);
                  linalg::YieldOp::create(nb2, nl, ValueRange{r});
                })
                .getResult(0);
        scf::ValueVector results{
            t.insert(oTile, iterArgs[0], batch, i0, rows, /*withCols=*/true)};

        if (op.getLse()) {
          // lse = l == 0 ? -inf : m + log(l).
          Value lInit =
              tensor::EmptyOp::create(lb, ll, ArrayRef<OpFoldResult>{rows}, f32);
          Value lseTile =
              linalg::GenericOp::create(
                  lb, ll, lInit.getType(), ValueRange{m, l}, ValueRange{lInit},
                  ArrayRef<AffineMap>{t.map(1, {0}), t.map(1, {0}),
                                      t.map(1, {0})},
                  ArrayRef<IteratorType>{IteratorType::parallel},
                  [&](OpBuilder &nb2, Location nl, ValueRange args) {
                    TileBuilder t2(nb2, nl);
                    Value empty = arith::CmpFOp::create(
                        nb2, nl, arith::CmpFPredicate::OEQ, args[1],
                        t2.cstF32(0));
                    Value lse = arith::AddFOp::create(
                        nb2, nl, args[0], math::LogOp::create(nb2, nl, args[1]));
                    linalg::YieldOp::create(
                        nb2, nl,
                        ValueRange{arith::SelectOp::create(
                            nb2, nl, empty, t2.cstF32(negInf), lse)});
                  })
                  .getResult(0);
          results.push_back(t.insert(lseTile, iterArgs[1], batch, i0, rows,
                                     /*withCols=*/false));
        }
        return results;
      });

  SmallVector<Value> results;
  for (auto [value, type] : llvm::zip(nest.results, op->getResultTypes()))
    results.push_back(tiling::castTo(tb, value, type));
  rewriter.replaceOp(op, results);
  return success();
}

namespace {

struct TileAttentionPattern : OpRewritePattern<AttentionOp> {
  TileAttentionPattern(MLIRContext *ctx, AttentionTilingOptions options)
      : OpRewritePattern(ctx), options(options) {}

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    return tileAttention(rewriter, op, options);
  }

  AttentionTilingOptions options;
};

struct FATileAttentionPass
    : fa::impl::FATileAttentionBase<FATileAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    AttentionTilingOptions options;
    options.blockM = blockM;
    options.blockN = blockN;
    if (blockM <= 0 || blockN <= 0) {
      mlir::emitError(getOperation()->getLoc())
          << "fa-tile-attention: expected positive block-m and block-n, got "
          << static_cast<int64_t>(blockM) << " and "
          << static_cast<int64_t>(blockN);
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    SmallVector<AttentionOp> ops;
    getOperation()->walk([&](AttentionOp op) { ops.push_back(op); });
    bool failed = false;
    for (AttentionOp op : ops)
      if (mlir::failed(tileAttention(rewriter, op, options)))
        failed = true;
    if (failed)
      signalPassFailure();
  }
};

} // namespace

void mlir::fa::populateTileAttentionPatterns(
    RewritePatternSet &patterns, const AttentionTilingOptions &options) {
  patterns.add<TileAttentionPattern>(patterns.getContext(), options);
}
