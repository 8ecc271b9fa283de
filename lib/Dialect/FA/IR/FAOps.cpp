//===- FAOps.cpp - fa dialect operations --------------------------------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FA.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fa;

#define GET_OP_CLASSES
#include "fa/Dialect/FA/IR/FAOps.cpp.inc"

/// Renders a dim for diagnostics: "?" for dynamic.
static std::string dimStr(int64_t d) {
  return ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d);
}

/// True when two dims can be equal at run time.
static bool dimsCompatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

static bool isSupportedFloat(Type t) { return t.isF16() || t.isBF16() || t.isF32(); }

std::optional<double> AttentionOp::getStaticScale() {
  if (std::optional<APFloat> s = getScale())
    return s->convertToDouble();
  int64_t d = getQ().getType().getShape().back();
  if (ShapedType::isDynamic(d) || d <= 0)
    return std::nullopt;
  return 1.0 / std::sqrt(static_cast<double>(d));
}

LogicalResult AttentionOp::verify() {
  RankedTensorType qTy = getQ().getType();
  RankedTensorType kTy = getK().getType();
  RankedTensorType vTy = getV().getType();
  int64_t rank = qTy.getRank();

  // Ranks.
  if (rank < 2)
    return emitOpError("expected q of rank >= 2 ([batch..., Tq, D]), got rank ")
           << rank;
  if (kTy.getRank() != rank)
    return emitOpError("expected k of rank ")
           << rank << " (the rank of q), got rank " << kTy.getRank();
  if (vTy.getRank() != rank)
    return emitOpError("expected v of rank ")
           << rank << " (the rank of q), got rank " << vTy.getRank();

  // Element types.
  Type elt = qTy.getElementType();
  if (!isSupportedFloat(elt))
    return emitOpError("expected q element type f16, bf16 or f32, got ") << elt;
  if (kTy.getElementType() != elt)
    return emitOpError("expected k element type ")
           << elt << " (that of q), got " << kTy.getElementType();
  if (vTy.getElementType() != elt)
    return emitOpError("expected v element type ")
           << elt << " (that of q), got " << vTy.getElementType();

  ArrayRef<int64_t> qs = qTy.getShape(), ks = kTy.getShape(),
                    vs = vTy.getShape();
  int64_t nb = rank - 2;

  // Batch dims.
  for (int64_t i = 0; i < nb; ++i) {
    if (!dimsCompatible(qs[i], ks[i]))
      return emitOpError("expected k batch dim ")
             << i << " to be " << dimStr(qs[i]) << " (that of q), got "
             << dimStr(ks[i]);
    if (!dimsCompatible(qs[i], vs[i]))
      return emitOpError("expected v batch dim ")
             << i << " to be " << dimStr(qs[i]) << " (that of q), got "
             << dimStr(vs[i]);
  }
  // Head dim and key length.
  if (!dimsCompatible(qs[nb + 1], ks[nb + 1]))
    return emitOpError("expected k head_dim ")
           << dimStr(qs[nb + 1]) << " (that of q), got " << dimStr(ks[nb + 1]);
  if (!dimsCompatible(ks[nb], vs[nb]))
    return emitOpError("expected v seqlen ")
           << dimStr(ks[nb]) << " (that of k), got " << dimStr(vs[nb]);

  // Mask.
  if (Value mask = getMask()) {
    auto mTy = cast<RankedTensorType>(mask.getType());
    if (mTy.getRank() != rank)
      return emitOpError("expected mask of rank ")
             << rank << " ([batch..., Tq, Tk]), got rank " << mTy.getRank();
    Type mElt = mTy.getElementType();
    if (!mElt.isInteger(1) && mElt != elt && !mElt.isF32())
      return emitOpError("expected mask element type i1, f32 or ")
             << elt << ", got " << mElt;
    ArrayRef<int64_t> ms = mTy.getShape();
    for (int64_t i = 0; i < nb; ++i)
      if (ms[i] != 1 && !dimsCompatible(ms[i], qs[i]))
        return emitOpError("expected mask batch dim ")
               << i << " to be 1 or " << dimStr(qs[i]) << ", got "
               << dimStr(ms[i]);
    if (!dimsCompatible(ms[nb], qs[nb]) || !dimsCompatible(ms[nb + 1], ks[nb]))
      return emitOpError("expected mask shape [..., ")
             << dimStr(qs[nb]) << ", " << dimStr(ks[nb])
             << "] (Tq of q, Tk of k), got [..., " << dimStr(ms[nb]) << ", "
             << dimStr(ms[nb + 1]) << "]";
  }

  // Scale.
  if (std::optional<APFloat> s = getScale()) {
    double d = s->convertToDouble();
    if (!std::isfinite(d) || d <= 0.0)
      return emitOpError("expected a finite, positive scale, got ") << d;
  }

  // Results.
  auto oTy = cast<RankedTensorType>(getO().getType());
  if (oTy.getElementType() != elt && !oTy.getElementType().isF32())
    return emitOpError("expected o element type ")
           << elt << " (that of q) or f32, got " << oTy.getElementType();
  if (oTy.getRank() != rank)
    return emitOpError("expected o of rank ")
           << rank << " ([batch..., Tq, Dv]), got rank " << oTy.getRank();
  ArrayRef<int64_t> os = oTy.getShape();
  for (int64_t i = 0; i < rank; ++i) {
    int64_t want = i == nb + 1 ? vs[nb + 1] : qs[i];
    if (!dimsCompatible(os[i], want))
      return emitOpError("expected o dim ")
             << i << " to be " << dimStr(want) << " ([batch..., Tq, Dv]), got "
             << dimStr(os[i]);
  }
  if (Value lse = getLse()) {
    auto lTy = cast<RankedTensorType>(lse.getType());
    if (!lTy.getElementType().isF32())
      return emitOpError("expected lse element type f32, got ")
             << lTy.getElementType();
    if (lTy.getRank() != rank - 1)
      return emitOpError("expected lse of rank ")
             << rank - 1 << " ([batch..., Tq]), got rank " << lTy.getRank();
    for (int64_t i = 0; i < rank - 1; ++i)
      if (!dimsCompatible(lTy.getShape()[i], qs[i]))
        return emitOpError("expected lse dim ")
               << i << " to be " << dimStr(qs[i]) << " ([batch..., Tq]), got "
               << dimStr(lTy.getShape()[i]);
  }
  return success();
}
