//===- GenerateBackward.cpp - fa.attention_backward from fa.attention ---===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// Builds the fa.attention_backward of an fa.attention: the forward's q, k, v,
// its output o and its logsumexp lse (added to the forward when it is not
// produced yet) are all the backward needs besides the output gradient.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FA.h"
#include "fa/Dialect/FA/Transforms/Transforms.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::fa;

/// The attributes the backward takes from the forward: scale and causal.
static SmallVector<NamedAttribute> forwardAttributes(AttentionOp forward) {
  SmallVector<NamedAttribute> attrs;
  if (FloatAttr scale = forward.getScaleAttr())
    attrs.emplace_back(forward.getScaleAttrName(), scale);
  attrs.emplace_back(forward.getCausalAttrName(), forward.getCausalAttr());
  return attrs;
}

FailureOr<AttentionBackwardOp>
mlir::fa::createAttentionBackward(RewriterBase &rewriter, AttentionOp forward,
                                  Value dO, Type gradElementType) {
  if (forward.getMask())
    return rewriter.notifyMatchFailure(forward,
                                       "fa.attention_backward takes no mask");
  RankedTensorType qTy = forward.getQ().getType();
  if (gradElementType != qTy.getElementType() && !gradElementType.isF32())
    return rewriter.notifyMatchFailure(
        forward, "expected a gradient element type that of q or f32");
  if (!isa<RankedTensorType>(dO.getType()))
    return rewriter.notifyMatchFailure(forward, "expected a ranked tensor dO");

  OpBuilder::InsertionGuard guard(rewriter);
  Location loc = forward.getLoc();
  SmallVector<NamedAttribute> attrs = forwardAttributes(forward);

  // The same forward, now also producing lse.
  if (!forward.getLse()) {
    rewriter.setInsertionPoint(forward);
    auto lseTy = RankedTensorType::get(qTy.getShape().drop_back(),
                                       rewriter.getF32Type());
    auto withLse = AttentionOp::create(
        rewriter, loc, TypeRange{forward.getO().getType(), lseTy},
        ValueRange{forward.getQ(), forward.getK(), forward.getV()}, attrs);
    rewriter.replaceOp(forward, withLse.getO());
    forward = withLse;
  }

  // After both the forward and the definition of dO.
  rewriter.setInsertionPointAfter(forward);
  if (Operation *def = dO.getDefiningOp())
    if (def->getBlock() == forward->getBlock() && forward->isBeforeInBlock(def))
      rewriter.setInsertionPointAfter(def);

  Value q = forward.getQ(), k = forward.getK(), v = forward.getV();
  auto gradType = [&](Value x) -> Type {
    return cast<RankedTensorType>(x.getType()).clone(gradElementType);
  };
  return AttentionBackwardOp::create(
      rewriter, loc, TypeRange{gradType(q), gradType(k), gradType(v)},
      ValueRange{q, k, v, forward.getO(), dO, forward.getLse()}, attrs);
}
