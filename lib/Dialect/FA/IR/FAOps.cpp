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

static bool isSupportedFloat(Type t) {
  return t.isF16() || t.isBF16() || t.isF32();
}

/// The scale applied to q k^T when statically known: `attr`, or 1/sqrt(D)
/// when D (the last dim of `qTy`) is static.
static std::optional<double> staticScale(std::optional<APFloat> attr,
                                         RankedTensorType qTy) {
  if (attr)
    return attr->convertToDouble();
  int64_t d = qTy.getShape().back();
  if (ShapedType::isDynamic(d) || d <= 0)
    return std::nullopt;
  return 1.0 / std::sqrt(static_cast<double>(d));
}

std::optional<double> AttentionOp::getStaticScale() {
  return staticScale(getScale(), getQ().getType());
}

std::optional<double> AttentionBackwardOp::getStaticScale() {
  return staticScale(getScale(), getQ().getType());
}

/// Every tensor of `op` dense: no operand or result (named by `operandNames`
/// and `resultNames`, in order) carries a tensor encoding, which no lowering
/// of the fa ops reads (a sparse or layout encoding would be dropped
/// silently by tiling and bufferization).
static LogicalResult verifyNoEncodings(Operation *op,
                                       ArrayRef<StringRef> operandNames,
                                       ArrayRef<StringRef> resultNames) {
  auto check = [&](ValueRange values,
                   ArrayRef<StringRef> names) -> LogicalResult {
    for (auto [value, name] : llvm::zip(values, names))
      if (auto ty = dyn_cast<RankedTensorType>(value.getType());
          ty && ty.getEncoding())
        return op->emitOpError("expected ")
               << name << " without a tensor encoding (the fa ops take and "
               << "give dense tensors), got " << ty;
    return success();
  };
  return failure(failed(check(op->getOperands(), operandNames)) ||
                 failed(check(op->getResults(), resultNames)));
}

/// The rules on q, k and v shared by fa.attention and fa.attention_backward:
/// one rank >= 2, one supported float element type, batch dims that agree,
/// k's head dim that of q and v's length that of k.
static LogicalResult verifyQKV(Operation *op, RankedTensorType qTy,
                               RankedTensorType kTy, RankedTensorType vTy) {
  int64_t rank = qTy.getRank();

  // Ranks.
  if (rank < 2)
    return op->emitOpError(
               "expected q of rank >= 2 ([batch..., Tq, D]), got rank ")
           << rank;
  if (kTy.getRank() != rank)
    return op->emitOpError("expected k of rank ")
           << rank << " (the rank of q), got rank " << kTy.getRank();
  if (vTy.getRank() != rank)
    return op->emitOpError("expected v of rank ")
           << rank << " (the rank of q), got rank " << vTy.getRank();

  // Element types.
  Type elt = qTy.getElementType();
  if (!isSupportedFloat(elt))
    return op->emitOpError("expected q element type f16, bf16 or f32, got ")
           << elt;
  if (kTy.getElementType() != elt)
    return op->emitOpError("expected k element type ")
           << elt << " (that of q), got " << kTy.getElementType();
  if (vTy.getElementType() != elt)
    return op->emitOpError("expected v element type ")
           << elt << " (that of q), got " << vTy.getElementType();

  ArrayRef<int64_t> qs = qTy.getShape(), ks = kTy.getShape(),
                    vs = vTy.getShape();
  int64_t nb = rank - 2;

  // Batch dims.
  for (int64_t i = 0; i < nb; ++i) {
    if (!dimsCompatible(qs[i], ks[i]))
      return op->emitOpError("expected k batch dim ")
             << i << " to be " << dimStr(qs[i]) << " (that of q), got "
             << dimStr(ks[i]);
    if (!dimsCompatible(qs[i], vs[i]))
      return op->emitOpError("expected v batch dim ")
             << i << " to be " << dimStr(qs[i]) << " (that of q), got "
             << dimStr(vs[i]);
  }
  // Head dim and key length.
  if (!dimsCompatible(qs[nb + 1], ks[nb + 1]))
    return op->emitOpError("expected k head_dim ")
           << dimStr(qs[nb + 1]) << " (that of q), got " << dimStr(ks[nb + 1]);
  if (!dimsCompatible(ks[nb], vs[nb]))
    return op->emitOpError("expected v seqlen ")
           << dimStr(ks[nb]) << " (that of k), got " << dimStr(vs[nb]);
  // A head dim of 0 leaves nothing to attend with (every score 0). Either
  // of q and k may carry it (the other's dynamic).
  if (qs[nb + 1] == 0 || ks[nb + 1] == 0)
    return op->emitOpError("expected a positive head_dim, got 0");
  // Nor is there an output row to write with a value head dim of 0.
  if (vs[nb + 1] == 0)
    return op->emitOpError("expected a positive head_dim_v (the last dim "
                           "of v), got 0");
  return success();
}

/// Checks the `scale` attribute: finite and positive when present.
static LogicalResult verifyScale(Operation *op, std::optional<APFloat> scale) {
  if (!scale)
    return success();
  double d = scale->convertToDouble();
  if (!std::isfinite(d) || d <= 0.0)
    return op->emitOpError("expected a finite, positive scale, got ") << d;
  // Scores are computed in f32: the scale must stay finite and non-zero
  // there.
  float f = static_cast<float>(d);
  if (!std::isfinite(f) || f == 0.0f)
    return op->emitOpError("expected a scale representable in f32 "
                           "(about 1.4e-45 to 3.4e+38), got ")
           << d;
  return success();
}

/// Checks a tensor named `name` (o, do, dq, dk, dv) whose element type must
/// be `elt` (that of q) or f32 and whose shape must agree with `want`;
/// `layout` names the dims in diagnostics, e.g. "[batch..., Tq, Dv]".
static LogicalResult verifyTensorLike(Operation *op, StringRef name,
                                      RankedTensorType ty, Type elt,
                                      ArrayRef<int64_t> want,
                                      StringRef layout) {
  if (ty.getElementType() != elt && !ty.getElementType().isF32()) {
    // When q is f32 the two allowed types coincide: name it once.
    if (elt.isF32())
      return op->emitOpError("expected ")
             << name << " element type f32 (that of q), got "
             << ty.getElementType();
    return op->emitOpError("expected ")
           << name << " element type " << elt << " (that of q) or f32, got "
           << ty.getElementType();
  }
  int64_t rank = want.size();
  if (ty.getRank() != rank)
    return op->emitOpError("expected ")
           << name << " of rank " << rank << " (" << layout << "), got rank "
           << ty.getRank();
  for (int64_t i = 0; i < rank; ++i)
    if (!dimsCompatible(ty.getShape()[i], want[i]))
      return op->emitOpError("expected ")
             << name << " dim " << i << " to be " << dimStr(want[i]) << " ("
             << layout << "), got " << dimStr(ty.getShape()[i]);
  return success();
}

/// Checks lse: f32 of shape [batch..., Tq], the leading dims of `qTy`.
static LogicalResult verifyLse(Operation *op, RankedTensorType lTy,
                               RankedTensorType qTy) {
  if (!lTy.getElementType().isF32())
    return op->emitOpError("expected lse element type f32, got ")
           << lTy.getElementType();
  int64_t rank = qTy.getRank();
  if (lTy.getRank() != rank - 1)
    return op->emitOpError("expected lse of rank ")
           << rank - 1 << " ([batch..., Tq]), got rank " << lTy.getRank();
  for (int64_t i = 0; i < rank - 1; ++i)
    if (!dimsCompatible(lTy.getShape()[i], qTy.getShape()[i]))
      return op->emitOpError("expected lse dim ")
             << i << " to be " << dimStr(qTy.getShape()[i])
             << " ([batch..., Tq]), got " << dimStr(lTy.getShape()[i]);
  return success();
}

/// The shape [batch..., Tq, Dv] of o (and do): q's with v's last dim.
static SmallVector<int64_t> outputShape(RankedTensorType qTy,
                                        RankedTensorType vTy) {
  SmallVector<int64_t> shape(qTy.getShape());
  shape.back() = vTy.getShape().back();
  return shape;
}

LogicalResult AttentionOp::verify() {
  RankedTensorType qTy = getQ().getType();
  RankedTensorType kTy = getK().getType();
  RankedTensorType vTy = getV().getType();
  if (failed(verifyNoEncodings(*this, {"q", "k", "v", "mask"}, {"o", "lse"})) ||
      failed(verifyQKV(*this, qTy, kTy, vTy)))
    return failure();
  int64_t rank = qTy.getRank();
  int64_t nb = rank - 2;
  Type elt = qTy.getElementType();
  ArrayRef<int64_t> qs = qTy.getShape(), ks = kTy.getShape();

  // Mask.
  if (Value mask = getMask()) {
    auto mTy = cast<RankedTensorType>(mask.getType());
    if (mTy.getRank() != rank)
      return emitOpError("expected mask of rank ")
             << rank << " ([batch..., Tq, Tk]), got rank " << mTy.getRank();
    Type mElt = mTy.getElementType();
    if (!mElt.isInteger(1) && mElt != elt && !mElt.isF32())
      return emitOpError("expected mask element type i1, f32 or that of q (")
             << elt << "), got " << mElt;
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

  if (failed(verifyScale(*this, getScale())))
    return failure();

  // Results.
  if (failed(verifyTensorLike(*this, "o",
                              cast<RankedTensorType>(getO().getType()), elt,
                              outputShape(qTy, vTy), "[batch..., Tq, Dv]")))
    return failure();
  if (Value lse = getLse())
    return verifyLse(*this, cast<RankedTensorType>(lse.getType()), qTy);
  return success();
}

LogicalResult AttentionBackwardOp::verify() {
  RankedTensorType qTy = getQ().getType();
  RankedTensorType kTy = getK().getType();
  RankedTensorType vTy = getV().getType();
  if (failed(verifyNoEncodings(*this, {"q", "k", "v", "o", "do", "lse"},
                               {"dq", "dk", "dv"})) ||
      failed(verifyQKV(*this, qTy, kTy, vTy)))
    return failure();
  Type elt = qTy.getElementType();
  SmallVector<int64_t> oShape = outputShape(qTy, vTy);

  // The forward's output, the output gradient and the logsumexp.
  if (failed(verifyTensorLike(*this, "o", getO().getType(), elt, oShape,
                              "[batch..., Tq, Dv]")) ||
      failed(verifyTensorLike(*this, "do", getDout().getType(), elt, oShape,
                              "[batch..., Tq, Dv]")) ||
      failed(verifyLse(*this, getLse().getType(), qTy)) ||
      failed(verifyScale(*this, getScale())))
    return failure();

  // Gradients: the shapes of q, k and v.
  if (failed(verifyTensorLike(*this, "dq", getDq().getType(), elt,
                              qTy.getShape(),
                              "that of q, [batch..., Tq, D]")) ||
      failed(verifyTensorLike(*this, "dk", getDk().getType(), elt,
                              kTy.getShape(),
                              "that of k, [batch..., Tk, D]")) ||
      failed(verifyTensorLike(*this, "dv", getDv().getType(), elt,
                              vTy.getShape(), "that of v, [batch..., Tk, Dv]")))
    return failure();
  return success();
}
