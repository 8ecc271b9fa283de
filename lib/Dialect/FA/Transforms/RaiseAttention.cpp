//===- RaiseAttention.cpp - raise softmax(Q K^T) V chains to fa.attention ===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// Implements `fa-raise-attention`. Anchored on the P V product, the pass walks
// back through the softmax, the mask/scale/causal steps and the Q K^T
// product (see RaiseAttentionMatchers.h), then builds one fa.attention on
// q/k/v brought to `[batch..., T, D]` and hands the product's users the same
// tensor the product produced.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FA.h"
#include "fa/Dialect/FA/Transforms/Passes.h"
#include "fa/Dialect/FA/Transforms/Transforms.h"

#include "RaiseAttentionMatchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <memory>

namespace mlir {
namespace fa {
#define GEN_PASS_DEF_FARAISEATTENTION
#include "fa/Dialect/FA/Transforms/Passes.h.inc"
} // namespace fa
} // namespace mlir

using namespace mlir;
using namespace mlir::fa;
using namespace mlir::fa::raise;

namespace {

/// A tensor and which logical dim each of its dims holds.
struct ViewedValue {
  Value value;
  View view;
};

/// A matched attention chain: what the replacement is built from.
struct AttentionMatch {
  Contraction pv;
  /// Labels of the P V product's result dims (whole batch dims, i, dv).
  View oView;
  int64_t numBatch = 0;
  std::map<int64_t, BatchSplit> splits;
  ViewedValue q, k, v;
  std::optional<ViewedValue> mask;
  double maskBeta = 1.0;
  std::optional<ViewedValue> boolMask;
  /// The i1 mask hides keys where it is true (the op's keeps them there):
  /// the rewrite passes its negation.
  bool boolMaskHides = false;
  double scale = 1.0;
  CausalKind causal = CausalKind::none;
  /// Every op read through; erased once dead.
  SmallVector<Operation *> cleanup;
};

} // namespace

//===----------------------------------------------------------------------===//
// Labels of canonical tensors
//===----------------------------------------------------------------------===//

/// The canonical batch dims: each batch dim of o, or its parts where a
/// reshape in the chain split it.
static SmallVector<Label> canonicalBatch(const AttentionMatch &m) {
  SmallVector<Label> out;
  for (int64_t b = 0; b < m.numBatch; ++b) {
    auto it = m.splits.find(b);
    int64_t n = it == m.splits.end() ? 1 : it->second.parts.size();
    for (int64_t p = 0; p < n; ++p)
      out.push_back(Label::batchDim(b, p, n));
  }
  return out;
}

/// The position in `target` where a dim labeled `l` goes, or -1.
static int64_t targetPosition(const Label &l, ArrayRef<Label> target) {
  for (auto [t, tl] : llvm::enumerate(target)) {
    if (tl == l)
      return t;
    if (l.isWholeBatch() && tl.isBatch() && tl.batch == l.batch && tl.part == 0)
      return t;
  }
  return -1;
}

/// For each dim of `target`, whether `vv` holds it, when `vv` can be
/// brought to `target` by dropping unit dims, transposing, splitting batch
/// dims and inserting unit dims for the target dims it lacks; std::nullopt
/// when it cannot (a dim that is not in `target`, or one held twice).
static std::optional<SmallVector<bool>> coveredDims(const ViewedValue &vv,
                                                    ArrayRef<Label> target) {
  auto ty = cast<RankedTensorType>(vv.value.getType());
  SmallVector<bool> covered(target.size(), false);
  for (auto [d, l] : llvm::enumerate(vv.view)) {
    if (l.kind == Label::Unit) {
      if (ty.getDimSize(d) != 1)
        return std::nullopt;
      continue;
    }
    int64_t t = targetPosition(l, target);
    if (t < 0)
      return std::nullopt;
    int64_t n = 1;
    if (l.isWholeBatch() && target[t].numParts > 1)
      n = target[t].numParts;
    for (int64_t i = t; i < t + n; ++i) {
      if (covered[i])
        return std::nullopt;
      covered[i] = true;
    }
  }
  return covered;
}

/// True when `vv` can be brought to `target` by dropping unit dims,
/// transposing and splitting batch dims (and, with `allowMissing`,
/// inserting unit dims for the target dims it lacks).
static bool canCanonicalize(const ViewedValue &vv, ArrayRef<Label> target,
                            bool allowMissing) {
  std::optional<SmallVector<bool>> covered = coveredDims(vv, target);
  return covered &&
         (allowMissing || llvm::all_of(*covered, [](bool c) { return c; }));
}

/// The size of part `p` of batch dim `b`.
static OpFoldResult partSize(OpBuilder &b, Location loc,
                             const AttentionMatch &m, const Label &l) {
  auto [src, dim] = m.splits.at(l.batch).parts[l.part];
  auto ty = cast<RankedTensorType>(src.getType());
  if (!ty.isDynamicDim(dim))
    return b.getIndexAttr(ty.getDimSize(dim));
  return tensor::DimOp::create(b, loc, src, dim).getResult();
}

static RankedTensorType typeOf(ArrayRef<OpFoldResult> sizes, Type elt) {
  SmallVector<int64_t> shape;
  for (OpFoldResult s : sizes)
    shape.push_back(getConstantIntValue(s).value_or(ShapedType::kDynamic));
  return RankedTensorType::get(shape, elt);
}

/// `v` transposed so that result dim i is dim `perm[i]` of `v`.
static Value transpose(OpBuilder &b, Location loc, Value v,
                       ArrayRef<int64_t> perm) {
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return v;
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, v);
  SmallVector<OpFoldResult> permuted;
  for (int64_t p : perm)
    permuted.push_back(sizes[p]);
  Value init = tensor::EmptyOp::create(b, loc, permuted,
                                       getElementTypeOrSelf(v.getType()));
  return linalg::TransposeOp::create(b, loc, v, init, perm).getResult()[0];
}

/// Brings `vv` to the dims `target` (see canCanonicalize), inserting unit
/// dims for missing target dims. Returns the value and, for each target dim,
/// whether `vv` had it.
static Value toCanonical(OpBuilder &b, Location loc, const AttentionMatch &m,
                         const ViewedValue &vv, ArrayRef<Label> target,
                         SmallVectorImpl<bool> *present = nullptr) {
  Value v = vv.value;
  auto ty = cast<RankedTensorType>(v.getType());
  int64_t rank = ty.getRank();

  // 1. Drop the unit (broadcast) dims.
  SmallVector<int64_t> keep;
  for (int64_t d = 0; d < rank; ++d)
    if (vv.view[d].kind != Label::Unit)
      keep.push_back(d);
  View cur;
  for (int64_t d : keep)
    cur.push_back(vv.view[d]);
  if (static_cast<int64_t>(keep.size()) != rank) {
    SmallVector<ReassociationIndices> groups(keep.size());
    size_t g = 0;
    for (int64_t d = 0; d < rank && !keep.empty(); ++d) {
      groups[std::min(g, keep.size() - 1)].push_back(d);
      if (g < keep.size() && keep[g] == d)
        ++g;
    }
    v = tensor::CollapseShapeOp::create(b, loc, v, groups);
  }

  // 2. Transpose into the target order.
  SmallVector<int64_t> perm(cur.size());
  std::iota(perm.begin(), perm.end(), 0);
  llvm::stable_sort(perm, [&](int64_t x, int64_t y) {
    return targetPosition(cur[x], target) < targetPosition(cur[y], target);
  });
  v = transpose(b, loc, v, perm);
  View sorted;
  for (int64_t p : perm)
    sorted.push_back(cur[p]);

  // 3. Split batch dims into parts and insert the missing unit dims.
  SmallVector<OpFoldResult> curSizes = tensor::getMixedSizes(b, loc, v);
  SmallVector<ReassociationIndices> groups(sorted.size());
  SmallVector<OpFoldResult> sizes;
  if (present)
    present->assign(target.size(), false);
  size_t c = 0;
  bool identity = sorted.size() == target.size();
  for (auto [t, tl] : llvm::enumerate(target)) {
    if (c < sorted.size() && sorted[c] == tl) {
      groups[c++].push_back(t);
      sizes.push_back(curSizes[c - 1]);
    } else if (c < sorted.size() && sorted[c].isWholeBatch() && tl.isBatch() &&
               tl.batch == sorted[c].batch && tl.numParts > 1) {
      identity = false;
      groups[c].push_back(t);
      sizes.push_back(partSize(b, loc, m, tl));
      if (tl.part == tl.numParts - 1)
        ++c;
    } else {
      identity = false;
      if (!sorted.empty())
        groups[std::min(c, sorted.size() - 1)].push_back(t);
      sizes.push_back(b.getIndexAttr(1));
      continue;
    }
    if (present)
      (*present)[t] = true;
  }
  if (identity)
    return v;
  // A unit dim that precedes the last group's dims must come first in it.
  for (ReassociationIndices &g : groups)
    llvm::sort(g);
  // expand_shape wants each source dim static exactly when its group's
  // sizes all are (their product): a whole batch dim split into parts of
  // another static-ness (a dynamic k expanded to q's static 3x2, or a
  // static 6 to ?x3) is cast first.
  auto vTy = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> srcShape(vTy.getShape());
  for (auto [c, g] : llvm::enumerate(groups)) {
    int64_t product = 1;
    for (int64_t t : g) {
      std::optional<int64_t> size = getConstantIntValue(sizes[t]);
      if (!size) {
        product = ShapedType::kDynamic;
        break;
      }
      product *= *size;
    }
    srcShape[c] = product;
  }
  auto srcTy = RankedTensorType::get(srcShape, vTy.getElementType());
  if (srcTy != vTy && tensor::CastOp::areCastCompatible(vTy, srcTy))
    v = tensor::CastOp::create(b, loc, srcTy, v);
  return tensor::ExpandShapeOp::create(
      b, loc, typeOf(sizes, getElementTypeOrSelf(v.getType())), v, groups,
      sizes);
}

/// A parallel linalg.generic from `v` to a tensor of `sizes` and element
/// type `elt`: each element is `body` of the element of `v` at the same
/// index, or at index 0 along the dims that `read` marks false (unit dims
/// of `v`, broadcast).
static Value
broadcastElements(OpBuilder &b, Location loc, Value v, ArrayRef<bool> read,
                  ArrayRef<OpFoldResult> sizes, Type elt,
                  function_ref<Value(OpBuilder &, Location, Value)> body) {
  int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
  Value init = tensor::EmptyOp::create(b, loc, sizes, elt);
  SmallVector<AffineExpr> in;
  for (int64_t d = 0; d < rank; ++d)
    in.push_back(read[d] ? b.getAffineDimExpr(d) : b.getAffineConstantExpr(0));
  AffineMap inMap = AffineMap::get(rank, 0, in, b.getContext());
  AffineMap id = b.getMultiDimIdentityMap(rank);
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, init.getType(), ValueRange{v}, ValueRange{init},
             ArrayRef<AffineMap>{inMap, id}, iters,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               linalg::YieldOp::create(nb, nl, body(nb, nl, args[0]));
             })
      .getResult(0);
}

/// The canonical `v` ([batch..., T, D] with a unit dim for each batch dim
/// that `present` marks missing) broadcast along those dims to `sizes`
/// (`v` itself when none is missing).
static Value broadcastBatch(OpBuilder &b, Location loc, Value v,
                            ArrayRef<bool> present,
                            ArrayRef<OpFoldResult> sizes) {
  if (llvm::all_of(present, [](bool p) { return p; }))
    return v;
  SmallVector<OpFoldResult> full = tensor::getMixedSizes(b, loc, v);
  for (auto [d, p] : llvm::enumerate(present))
    if (!p)
      full[d] = sizes[d];
  return broadcastElements(b, loc, v, present, full,
                           getElementTypeOrSelf(v.getType()),
                           [](OpBuilder &, Location, Value x) { return x; });
}

/// An elementwise generic that converts `v` to element type `elt`, then
/// multiplies it by `factor` (when not 1).
static Value convertElements(OpBuilder &b, Location loc, Value v, Type elt,
                             double factor = 1.0) {
  auto ty = cast<RankedTensorType>(v.getType());
  if (ty.getElementType() == elt && factor == 1.0)
    return v;
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, v);
  Value init = tensor::EmptyOp::create(b, loc, sizes, elt);
  AffineMap id = b.getMultiDimIdentityMap(ty.getRank());
  SmallVector<utils::IteratorType> iters(ty.getRank(),
                                         utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, init.getType(), ValueRange{v}, ValueRange{init},
             ArrayRef<AffineMap>{id, id}, iters,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value x = args[0];
               unsigned from = x.getType().getIntOrFloatBitWidth();
               unsigned to = elt.getIntOrFloatBitWidth();
               if (x.getType() != elt)
                 x = from < to
                         ? arith::ExtFOp::create(nb, nl, elt, x).getResult()
                         : arith::TruncFOp::create(nb, nl, elt, x).getResult();
               if (factor != 1.0)
                 x = arith::MulFOp::create(
                     nb, nl, x,
                     arith::ConstantOp::create(nb, nl, elt,
                                               nb.getFloatAttr(elt, factor)));
               linalg::YieldOp::create(nb, nl, x);
             })
      .getResult(0);
}

/// Broadcasts the canonical mask `mask` ([batch'..., Tq', Tk'] with
/// Tq' = 1 or Tk' = 1 where `present` says the dim was missing) to
/// [batch'..., Tq, Tk], converting it to `elt` and scaling it by `factor`
/// (an i1 mask: negated when `negate`).
static Value finishMask(OpBuilder &b, Location loc, Value mask,
                        ArrayRef<bool> present, OpFoldResult tq,
                        OpFoldResult tk, Type elt, double factor, bool negate) {
  auto ty = cast<RankedTensorType>(mask.getType());
  int64_t rank = ty.getRank();
  bool hasQ = present[rank - 2], hasK = present[rank - 1];
  if (hasQ && hasK && ty.getElementType() == elt && factor == 1.0 && !negate)
    return mask;
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, mask);
  sizes[rank - 2] = tq;
  sizes[rank - 1] = tk;
  SmallVector<bool> read(rank, true);
  read[rank - 2] = hasQ;
  read[rank - 1] = hasK;
  return broadcastElements(
      b, loc, mask, read, sizes, elt, [&](OpBuilder &nb, Location nl, Value x) {
        if (x.getType() != elt)
          x = arith::ExtFOp::create(nb, nl, elt, x);
        if (factor != 1.0)
          x = arith::MulFOp::create(
              nb, nl, x,
              arith::ConstantOp::create(nb, nl, elt,
                                        nb.getFloatAttr(elt, factor)));
        if (negate)
          x = arith::XOrIOp::create(
              nb, nl, x,
              arith::ConstantOp::create(nb, nl, nb.getBoolAttr(true)));
        return x;
      });
}

//===----------------------------------------------------------------------===//
// Matching
//===----------------------------------------------------------------------===//

/// Labels of the loop dims of `c` when its result dims hold `outView` and
/// its contracted dim holds `kLabel`; std::nullopt when a loop dim is
/// neither written nor contracted.
static std::optional<SmallVector<Label>>
loopLabels(const Contraction &c, const View &outView, Label kLabel) {
  SmallVector<std::optional<Label>> labels(c.numLoops);
  for (unsigned r = 0; r < c.outMap.getNumResults(); ++r)
    labels[c.outMap.getDimPosition(r)] = outView[r];
  labels[c.kDim] = kLabel;
  SmallVector<Label> out;
  for (auto &l : labels) {
    if (!l)
      return std::nullopt;
    out.push_back(*l);
  }
  return out;
}

static View operandView(AffineMap map, ArrayRef<Label> loops) {
  View view;
  for (unsigned r = 0; r < map.getNumResults(); ++r)
    view.push_back(loops[map.getDimPosition(r)]);
  return view;
}

/// Looks through exact upcasts and scalings by a constant of a product
/// operand: returns the tensor to use and the factor to fold into the scale.
/// A scaling is folded when it is exact (a power of two) or computed in f32.
static std::pair<ViewedValue, double>
lookThroughOperand(ChainEvaluator &ev, const ViewedValue &operand) {
  const Expr *e = ev.eval(operand.value, operand.view);
  double factor = 1.0;
  auto isExact = [](double c, Type t) {
    int exp;
    return std::frexp(c, &exp) == 0.5 || (t && t.isF32());
  };
  while (true) {
    if (e->kind == Expr::Leaf) {
      if (llvm::any_of(e->view,
                       [](const Label &l) { return l.kind == Label::Unit; }))
        break;
      return {ViewedValue{e->value, e->view}, factor};
    }
    if (e->kind == Expr::Cast) {
      Type from = e->args[0]->type, to = e->type;
      if (from == to || !isExactFloatCast(from, to))
        break;
      e = e->args[0];
      continue;
    }
    if (e->kind == Expr::Mul || e->kind == Expr::Div) {
      const Expr *c = stripCasts(e->args[1]), *x = e->args[0];
      if (e->kind == Expr::Mul && c->kind != Expr::Const) {
        c = stripCasts(e->args[0]);
        x = e->args[1];
      }
      if (c->kind != Expr::Const || !(c->cst > 0) || !std::isfinite(c->cst) ||
          !isExact(c->cst, e->type))
        break;
      factor *= e->kind == Expr::Mul ? c->cst : 1.0 / c->cst;
      e = x;
      continue;
    }
    break;
  }
  return {operand, 1.0};
}

/// The first step of the scores `e` (above its leaves) that can round a
/// finite value to -inf where fa.attention, adding in f32, does not: a
/// float cast that is not exact, or f16 arithmetic (f16's range, 65504, is
/// within reach of a mask of the f16 lowest plus a score). Null if none.
static const Expr *roundingStep(const Expr *e) {
  if (e->kind == Expr::Leaf)
    return nullptr;
  if (e->kind == Expr::Cast && !isExactFloatCast(e->args[0]->type, e->type))
    return e;
  if (llvm::is_contained({Expr::Add, Expr::Sub, Expr::Mul, Expr::Div},
                         e->kind) &&
      e->type && e->type.isF16())
    return e;
  for (const Expr *a : e->args)
    if (const Expr *r = roundingStep(a))
      return r;
  return nullptr;
}

static bool isSupportedFloat(Type t) {
  return t.isF16() || t.isBF16() || t.isF32();
}

/// For a remark only: the op that produces a leaf of `e` from an operand of
/// the leaf's shape that reads as a softmax (matchProbabilities): a P the
/// evaluator took as an opaque tensor because an op it does not read (e.g.
/// a `tosa.floor`) lies between the softmax and the product. Null when
/// there is none. Products are not looked into.
static Operation *opHidingSoftmax(const Expr *e) {
  if (e->kind != Expr::Leaf) {
    for (const Expr *a : e->args)
      if (Operation *op = opHidingSoftmax(a))
        return op;
    return nullptr;
  }
  Operation *op = e->value ? e->value.getDefiningOp() : nullptr;
  std::string ignored;
  if (!op || matchContraction(op, ignored))
    return nullptr;
  for (Value operand : op->getOperands()) {
    if (operand.getType() != e->value.getType())
      continue;
    ChainEvaluator ev;
    const Expr *x = ev.eval(operand, e->view);
    if (containsExpOrSoftmax(x) && matchProbabilities(x, ignored))
      return op;
  }
  return nullptr;
}

/// Matches the chain ending at the P V product `pv`, taking as the query
/// axis choice `pick` of the output dims that P holds and V does not (see
/// below; `numPicks` is set to their count). Sets `candidate` when the
/// product consumes an exp or softmax result (a near miss is worth a
/// remark), and `why` on failure.
static std::optional<AttentionMatch>
matchAttentionPick(const Contraction &pv, int64_t pick, int64_t &numPicks,
                   bool &candidate, std::string &why) {
  candidate = false;
  AttentionMatch m;
  m.pv = pv;
  std::unique_ptr<ChainEvaluator> ev;
  const Expr *p = nullptr;
  Operation *nearMiss = nullptr;
  View vView;
  Value vValue;
  for (bool pIsLhs : {true, false}) {
    AffineMap pMap = pIsLhs ? pv.lhsMap : pv.rhsMap;
    AffineMap vMap = pIsLhs ? pv.rhsMap : pv.lhsMap;
    SmallVector<std::optional<Label>> loops(pv.numLoops);
    loops[pv.kDim] = Label::of(Label::Key);
    // The output dims that P holds and V does not: the query axis and,
    // where V is broadcast along them (MQA's k and v without a head dim,
    // read with a broadcast map), batch dims. In order of preference, the
    // query axis is the one right before the key axis in P's layout (the
    // scores' [..., Tq, Tk], whatever layout the output is written in),
    // then the others, last first; matchAttention tries them in turn, so
    // that a pick that k holds (not q k^T) or that a causal select does
    // not compare with the keys gives way to the next.
    SmallVector<int64_t> pOnly, picks;
    for (unsigned r = 0; r < pv.outMap.getNumResults(); ++r) {
      unsigned d = pv.outMap.getDimPosition(r);
      if (pMap.isFunctionOfDim(d) && !vMap.isFunctionOfDim(d))
        pOnly.push_back(r);
    }
    for (unsigned t = 0; t + 1 < pMap.getNumResults(); ++t) {
      auto before = dyn_cast<AffineDimExpr>(pMap.getResult(t));
      auto key = dyn_cast<AffineDimExpr>(pMap.getResult(t + 1));
      if (!before || !key || key.getPosition() != pv.kDim)
        continue;
      for (int64_t r : pOnly)
        if (pv.outMap.getDimPosition(r) == before.getPosition())
          picks.push_back(r);
    }
    for (int64_t r : llvm::reverse(pOnly))
      if (!llvm::is_contained(picks, r))
        picks.push_back(r);
    int64_t queryResult =
        picks.empty() ? -1 : picks[std::min<int64_t>(pick, picks.size() - 1)];
    int64_t numQ = queryResult >= 0 ? 1 : 0, numV = 0, numBatch = 0;
    bool ok = true;
    View oView;
    for (unsigned r = 0; r < pv.outMap.getNumResults(); ++r) {
      unsigned d = pv.outMap.getDimPosition(r);
      bool inP = pMap.isFunctionOfDim(d), inV = vMap.isFunctionOfDim(d);
      if (inP && inV)
        loops[d] = Label::batchDim(numBatch++);
      else if (inP)
        loops[d] = static_cast<int64_t>(r) == queryResult
                       ? Label::of(Label::Query)
                       : Label::batchDim(numBatch++);
      else if (inV && numV++ == 0)
        loops[d] = Label::of(Label::ValueHead);
      else
        ok = false;
      if (ok)
        oView.push_back(*loops[d]);
    }
    if (!ok || numQ != 1 || numV != 1 ||
        llvm::any_of(loops, [](auto &l) { return !l; }))
      continue;
    SmallVector<Label> loopVec;
    for (auto &l : loops)
      loopVec.push_back(*l);
    auto candidateEv = std::make_unique<ChainEvaluator>();
    const Expr *candidateP =
        candidateEv->eval(pIsLhs ? pv.lhs : pv.rhs, operandView(pMap, loopVec));
    if (!containsExpOrSoftmax(candidateP)) {
      if (Operation *hiding = opHidingSoftmax(candidateP); hiding && !nearMiss)
        nearMiss = hiding;
      continue;
    }
    ev = std::move(candidateEv);
    p = candidateP;
    numPicks = picks.size();
    m.oView = oView;
    m.numBatch = numBatch;
    vValue = pIsLhs ? pv.rhs : pv.lhs;
    vView = operandView(vMap, loopVec);
    break;
  }
  if (!p) {
    if (nearMiss) {
      candidate = true;
      why = "the probabilities reach the product through an unsupported op '" +
            nearMiss->getName().getStringRef().str() + "'";
    }
    return std::nullopt;
  }
  candidate = true;
  std::string pvName = pv.op->getName().getStringRef().str();

  // The softmax and the scores.
  auto probs = matchProbabilities(p, why);
  if (!probs)
    return std::nullopt;
  auto scores = matchScores(probs->scores, why);
  if (!scores)
    return std::nullopt;
  if (ev->splitError) {
    why = *ev->splitError;
    return std::nullopt;
  }

  // The q k^T product.
  const Expr *product = scores->product;
  std::string ignored;
  Contraction qk = *matchContraction(product->value.getDefiningOp(), ignored);
  if (llvm::any_of(product->view,
                   [](const Label &l) { return l.kind == Label::Unit; })) {
    why = "the scores broadcast the q k^T product";
    return std::nullopt;
  }
  auto qkLoops = loopLabels(qk, product->view, Label::of(Label::Head));
  if (!qkLoops) {
    why = "the q k^T product has a loop dim that is neither written nor "
          "contracted";
    return std::nullopt;
  }
  View lhsView = operandView(qk.lhsMap, *qkLoops);
  View rhsView = operandView(qk.rhsMap, *qkLoops);
  bool lhsIsQ = llvm::any_of(
      lhsView, [](const Label &l) { return l.kind == Label::Query; });
  ViewedValue qOperand{lhsIsQ ? qk.lhs : qk.rhs, lhsIsQ ? lhsView : rhsView};
  ViewedValue kOperand{lhsIsQ ? qk.rhs : qk.lhs, lhsIsQ ? rhsView : lhsView};
  if (!llvm::any_of(kOperand.view,
                    [](const Label &l) { return l.kind == Label::Key; }) ||
      llvm::any_of(kOperand.view,
                   [](const Label &l) { return l.kind == Label::Query; })) {
    why = "the first product is not q k^T (its operands do not hold the "
          "query and the key axis apart)";
    return std::nullopt;
  }

  // The chain must be free of other users.
  llvm::SetVector<Operation *> chain(ev->getVisited().begin(),
                                     ev->getVisited().end());
  chain.insert(qk.op);
  for (Operation *op : chain)
    for (Operation *user : op->getUsers())
      if (user != pv.op && !chain.contains(user) && !isa<tensor::DimOp>(user) &&
          !isOpTriviallyDead(user)) {
        why = "the result of '" + op->getName().getStringRef().str() +
              "' in the attention chain has another user ('" +
              user->getName().getStringRef().str() + "')";
        return std::nullopt;
      }

  // q, k, v, looking through exact upcasts and constant scalings. An
  // operand whose reshapes split a batch dim otherwise than the operands
  // before it (GQA's k and v after canonicalization: [B, Hkv, G] collapsed
  // at once where q's [B, H] is) is taken as the product reads it; the
  // split recorded first applies to it as to the others.
  auto lookThrough = [&](const ViewedValue &operand) {
    auto looked = lookThroughOperand(*ev, operand);
    if (ev->splitError) {
      ev->splitError.reset();
      return std::make_pair(operand, 1.0);
    }
    return looked;
  };
  auto [q, qFactor] = lookThrough(qOperand);
  auto [k, kFactor] = lookThrough(kOperand);
  m.q = q;
  m.k = k;
  // A scaled v is not foldable: only exact upcasts and layout changes are
  // looked through.
  ViewedValue vOperand{vValue, vView};
  auto [vLooked, vFactor] = lookThrough(vOperand);
  m.v = vFactor == 1.0 ? vLooked : vOperand;
  m.splits = ev->getSplits();

  SmallVector<Label> batch = canonicalBatch(m);
  auto with = [&](Label::Kind a, Label::Kind b) {
    SmallVector<Label> t = batch;
    t.push_back(Label::of(a));
    t.push_back(Label::of(b));
    return t;
  };
  // An operand that looking through leaves without a batch dim was
  // broadcast along it (k and v repeated over the query heads of a group,
  // as GQA/MQA models write it): fa.attention takes it as the product
  // reads it, the broadcast materialized as in the original. An operand
  // that the product itself reads without a batch dim (a broadcast map,
  // as elementwise fusion folds a linalg.broadcast into the product) is
  // broadcast by the rewrite (broadcastBatch); it must hold its own two
  // axes, and every batch dim must be held by q, k or v (the rewrite takes
  // its size from them).
  SmallVector<bool> heldBatch(batch.size(), false);
  auto covering = [&](ViewedValue &x, double &factor,
                      const ViewedValue &operand, Label::Kind a,
                      Label::Kind b) {
    // The target dims `y` holds, where it holds its own two axes.
    auto holdsAxes =
        [&](const ViewedValue &y) -> std::optional<SmallVector<bool>> {
      std::optional<SmallVector<bool>> covered = coveredDims(y, with(a, b));
      if (!covered || !covered->back() || !(*covered)[batch.size()])
        return std::nullopt;
      return covered;
    };
    if (!canCanonicalize(x, with(a, b), false) &&
        (canCanonicalize(operand, with(a, b), false) || !holdsAxes(x))) {
      x = operand;
      factor = 1.0;
    }
    std::optional<SmallVector<bool>> covered = holdsAxes(x);
    if (!covered)
      return false;
    for (size_t t = 0; t < batch.size(); ++t)
      heldBatch[t] = heldBatch[t] || (*covered)[t];
    return true;
  };
  double unusedFactor = 1.0;
  if (!covering(m.q, qFactor, qOperand, Label::Query, Label::Head) ||
      !covering(m.k, kFactor, kOperand, Label::Key, Label::Head) ||
      !covering(m.v, unusedFactor, vOperand, Label::Key, Label::ValueHead)) {
    why = "q, k or v has a dim that is not a batch dim or one of its own "
          "two axes, or lacks one of those axes";
    return std::nullopt;
  }
  if (!llvm::all_of(heldBatch, [](bool h) { return h; })) {
    why = "a batch dim of the output is held by none of q, k and v (the "
          "scores are broadcast along it)";
    return std::nullopt;
  }
  m.scale = scores->alpha * qFactor * kFactor;
  if (!(m.scale > 0) || !std::isfinite(m.scale)) {
    why = "the scale is not finite and positive";
    return std::nullopt;
  }
  // fa.attention scales the scores in f32 (its verifier's rule): scalings
  // whose product leaves f32's range (two 1e30 factors) are not folded.
  if (float f = static_cast<float>(m.scale); !std::isfinite(f) || f == 0.0f) {
    why = "the scale " + llvm::formatv("{0:e}", m.scale).str() +
          " (the product of the scalings) is not representable in f32, "
          "where fa.attention scales the scores";
    return std::nullopt;
  }
  // A head dim of 0 (scores all 0, or rows of no values) is no
  // fa.attention (its verifier's rule).
  auto staticSize = [](const ViewedValue &x, Label::Kind kind) {
    auto ty = cast<RankedTensorType>(x.value.getType());
    for (auto [d, l] : llvm::enumerate(x.view))
      if (l.kind == kind)
        return ty.getDimSize(d);
    return ShapedType::kDynamic;
  };
  if (staticSize(m.q, Label::Head) == 0 ||
      staticSize(m.v, Label::ValueHead) == 0) {
    why = "a head dim is 0 (q and k, or v, have rows of no elements)";
    return std::nullopt;
  }
  for (const ViewedValue *x : {&m.q, &m.k, &m.v}) {
    Type elt = getElementTypeOrSelf(x->value.getType());
    if (!isSupportedFloat(elt)) {
      why = "expected q, k and v of element type f16, bf16 or f32, got " +
            std::string(llvm::isa<FloatType>(elt) ? "another float type"
                                                  : "a non-float type");
      return std::nullopt;
    }
  }

  // Masks.
  std::optional<int64_t> offset = scores->causalOffset;
  // A finite fill (the lowest finite value) stands for -inf only where it
  // is far enough below 0 after the scale applied after it: a small scale
  // (1e-38 x -FLT_MAX = -3.4) leaves hidden keys a weight.
  auto fillTooSmall = [&](double fill) {
    if (!std::isfinite(fill) || fill <= -kMinFillMagnitude)
      return false;
    why = "the scores hide keys with " + std::to_string(fill) +
          " (the lowest finite value times the scale after it), which is "
          "not below -" +
          std::to_string(static_cast<int64_t>(kMinFillMagnitude)) +
          ": hidden keys would keep a weight";
    return true;
  };
  if (fillTooSmall(scores->fill))
    return std::nullopt;
  // The largest value a select or a constant causal mask puts in place of
  // hidden scores (-inf: none, or all -inf).
  double hiddenFill = scores->fill;
  if (scores->mask) {
    // The mask reaches the scores through float casts that must be exact:
    // a rounding to f16/bf16 on the way changes the mask the op would add.
    if (const Expr *c = firstInexactCast(scores->mask)) {
      why = maskRoundedReason(c);
      return std::nullopt;
    }
    const Expr *leaf = stripCasts(scores->mask);
    double hiddenMax;
    if (auto c = matchCausalConstant(leaf, scores->mask->type, hiddenMax)) {
      if (fillTooSmall(hiddenMax * scores->beta))
        return std::nullopt;
      hiddenFill = std::max(hiddenFill, hiddenMax * scores->beta);
      if (offset) {
        why = "the scores are causally masked twice";
        return std::nullopt;
      }
      offset = c;
    } else {
      m.mask = ViewedValue{leaf->value, leaf->view};
      m.maskBeta = scores->beta;
      if (!canCanonicalize(*m.mask, with(Label::Query, Label::Key), true)) {
        why = "the additive mask has a dim that is not a batch, query or "
              "key dim";
        return std::nullopt;
      }
    }
  }
  if (scores->boolMask) {
    if (m.mask) {
      why = "the scores take both an additive and an i1 mask";
      return std::nullopt;
    }
    m.boolMask = ViewedValue{scores->boolMask->value, scores->boolMask->view};
    m.boolMaskHides = scores->boolMaskHides;
    if (!canCanonicalize(*m.boolMask, with(Label::Query, Label::Key), true)) {
      why = "the i1 mask has a dim that is not a batch, query or key dim";
      return std::nullopt;
    }
  }
  // torch's _safe_softmax zeroes the rows whose scores are all -inf;
  // fa.attention zeroes the rows with no visible key. The two agree when
  // every hidden score is -inf in the original and no finite one rounds to
  // -inf there.
  if (probs->zeroesHiddenRows) {
    if (std::isfinite(hiddenFill)) {
      why = "the softmax zeroes the rows whose scores are all -inf "
            "(_safe_softmax), but the mask hides keys with a finite value (" +
            llvm::formatv("{0:e}", hiddenFill).str() +
            "): a row it hides completely keeps its weights in the original "
            "and gets 0 from fa.attention";
      return std::nullopt;
    }
    if (m.mask)
      if (const Expr *r = roundingStep(probs->scores)) {
        why = "the softmax zeroes the rows whose scores are all -inf "
              "(_safe_softmax), and the scores with the additive mask are " +
              std::string(r->kind == Expr::Cast ? "rounded to "
                                                : "computed in ") +
              typeString(r->type) +
              ", where a finite mask value plus a score can round to -inf";
        return std::nullopt;
      }
  }
  if (offset) {
    auto sTy = cast<RankedTensorType>(product->value.getType());
    int64_t tq = ShapedType::kDynamic, tk = ShapedType::kDynamic;
    for (auto [d, l] : llvm::enumerate(product->view)) {
      if (l.kind == Label::Query)
        tq = sTy.getDimSize(d);
      if (l.kind == Label::Key)
        tk = sTy.getDimSize(d);
    }
    if (*offset == 0) {
      m.causal = CausalKind::top_left;
    } else if (!ShapedType::isDynamic(tq) && !ShapedType::isDynamic(tk) &&
               *offset == tk - tq) {
      // With Tq > Tk the first Tq - Tk rows see no key. fa.attention gives
      // them 0; the original gives them the mean of v where the hidden
      // scores are a finite value (all equal), NaN where they are -inf.
      if (tq > tk && std::isfinite(hiddenFill)) {
        why = "the causal mask hides every key of the first " +
              std::to_string(tq - tk) +
              " query rows (Tq > Tk, bottom-right aligned) with a finite "
              "value (" +
              llvm::formatv("{0:e}", hiddenFill).str() +
              "): the original gives those rows the mean of v, "
              "fa.attention gives them 0";
        return std::nullopt;
      }
      m.causal = CausalKind::bottom_right;
    } else {
      why = "the causal mask keeps keys j <= i + " + std::to_string(*offset) +
            ", expected an offset of 0 (top_left) or Tk - Tq (bottom_right)";
      return std::nullopt;
    }
  }

  for (Operation *op : ev->getVisited())
    m.cleanup.push_back(op);
  m.cleanup.push_back(qk.op);

  // fa.attention takes and gives dense tensors: a chain that reads or
  // writes a tensor with an encoding (sparse, layout) stays as it is.
  SmallVector<Operation *> chainOps(m.cleanup);
  chainOps.push_back(pv.op);
  for (Operation *op : chainOps)
    for (Type t :
         llvm::concat<const Type>(op->getOperandTypes(), op->getResultTypes()))
      if (auto ty = dyn_cast<RankedTensorType>(t); ty && ty.getEncoding()) {
        llvm::raw_string_ostream os(why);
        os << "the chain has a tensor with an encoding (" << ty
           << "); fa.attention takes dense tensors";
        return std::nullopt;
      }
  return m;
}

/// Matches the chain ending at the P V product `pv` (matchAttentionPick),
/// trying each choice of the query axis in turn; on failure `candidate` and
/// `why` are those of the first choice.
static std::optional<AttentionMatch>
matchAttention(const Contraction &pv, bool &candidate, std::string &why) {
  int64_t numPicks = 1;
  auto m = matchAttentionPick(pv, 0, numPicks, candidate, why);
  for (int64_t pick = 1; !m && pick < numPicks; ++pick) {
    bool otherCandidate = false;
    std::string otherWhy;
    int64_t unused = 0;
    m = matchAttentionPick(pv, pick, unused, otherCandidate, otherWhy);
  }
  return m;
}

//===----------------------------------------------------------------------===//
// Rewriting
//===----------------------------------------------------------------------===//

/// Replaces the P V product of `m` by fa.attention.
static AttentionOp buildAttention(RewriterBase &rewriter, AttentionMatch &m) {
  Operation *pvOp = m.pv.op;
  Location loc = pvOp->getLoc();
  for (Value operand : pvOp->getOperands())
    if (Operation *def = operand.getDefiningOp())
      m.cleanup.push_back(def);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(pvOp);
  Operation *first = pvOp->getPrevNode();
  Block *block = pvOp->getBlock();
  OpBuilder &b = rewriter;

  SmallVector<Label> batch = canonicalBatch(m);
  auto with = [&](Label::Kind x, Label::Kind y) {
    SmallVector<Label> t = batch;
    t.push_back(Label::of(x));
    t.push_back(Label::of(y));
    return t;
  };
  SmallVector<bool> qHas, kHas, vHas;
  Value q = toCanonical(b, loc, m, m.q, with(Label::Query, Label::Head), &qHas);
  Value k = toCanonical(b, loc, m, m.k, with(Label::Key, Label::Head), &kHas);
  Value v =
      toCanonical(b, loc, m, m.v, with(Label::Key, Label::ValueHead), &vHas);
  // Operands read with a broadcast map: each missing batch dim takes its
  // size from an operand that holds it (matching checked there is one).
  if (!llvm::all_of(qHas, [](bool h) { return h; }) ||
      !llvm::all_of(kHas, [](bool h) { return h; }) ||
      !llvm::all_of(vHas, [](bool h) { return h; })) {
    SmallVector<OpFoldResult> sizes;
    for (size_t t = 0; t < batch.size(); ++t) {
      Value from = qHas[t] ? q : kHas[t] ? k : v;
      sizes.push_back(tensor::getMixedSize(b, loc, from, t));
    }
    auto finish = [&](Value x, ArrayRef<bool> has) {
      SmallVector<OpFoldResult> full(sizes);
      full.append(2, b.getIndexAttr(1)); // its own axes: present
      return broadcastBatch(b, loc, x, has, full);
    };
    q = finish(q, qHas);
    k = finish(k, kHas);
    v = finish(v, vHas);
  }
  Type qElt = getElementTypeOrSelf(q.getType());
  if (qElt != getElementTypeOrSelf(k.getType()) ||
      qElt != getElementTypeOrSelf(v.getType())) {
    qElt = b.getF32Type();
    q = convertElements(b, loc, q, qElt);
    k = convertElements(b, loc, k, qElt);
    v = convertElements(b, loc, v, qElt);
  }
  int64_t rank = batch.size() + 2;
  SmallVector<OpFoldResult> qSizes = tensor::getMixedSizes(b, loc, q);
  SmallVector<OpFoldResult> kSizes = tensor::getMixedSizes(b, loc, k);
  SmallVector<OpFoldResult> vSizes = tensor::getMixedSizes(b, loc, v);

  Value mask;
  if (m.mask || m.boolMask) {
    const ViewedValue &mv = m.mask ? *m.mask : *m.boolMask;
    SmallVector<bool> present;
    Value canon =
        toCanonical(b, loc, m, mv, with(Label::Query, Label::Key), &present);
    Type elt = getElementTypeOrSelf(canon.getType());
    double factor = m.mask ? m.maskBeta : 1.0;
    if (m.mask && ((elt != qElt && !elt.isF32()) || factor != 1.0))
      elt = b.getF32Type();
    mask =
        finishMask(b, loc, canon, present, qSizes[rank - 2], kSizes[rank - 2],
                   elt, factor, !m.mask && m.boolMaskHides);
  }

  // o in the canonical layout, in the product's element type when fa can
  // produce it.
  auto pvTy = cast<RankedTensorType>(m.pv.result.getType());
  Type oElt = pvTy.getElementType();
  if (oElt != qElt && !oElt.isF32())
    oElt = b.getF32Type();
  SmallVector<OpFoldResult> oSizes(qSizes.begin(), qSizes.end() - 1);
  oSizes.push_back(vSizes.back());
  SmallVector<Value> operands = {q, k, v};
  if (mask)
    operands.push_back(mask);
  auto attention =
      AttentionOp::create(b, loc, TypeRange{typeOf(oSizes, oElt)}, operands);
  attention.setScaleAttr(b.getF64FloatAttr(m.scale));
  attention.setCausal(m.causal);
  Value o = attention.getO();

  // Merge split batch dims, then transpose to the product's layout.
  SmallVector<ReassociationIndices> groups;
  int64_t d = 0;
  for (int64_t bi = 0; bi < m.numBatch; ++bi) {
    auto it = m.splits.find(bi);
    int64_t n = it == m.splits.end() ? 1 : it->second.parts.size();
    ReassociationIndices g;
    for (int64_t p = 0; p < n; ++p)
      g.push_back(d++);
    groups.push_back(g);
  }
  groups.push_back({d++});
  groups.push_back({d++});
  if (static_cast<int64_t>(groups.size()) != rank)
    o = tensor::CollapseShapeOp::create(b, loc, o, groups);
  SmallVector<Label> whole;
  for (int64_t bi = 0; bi < m.numBatch; ++bi)
    whole.push_back(Label::batchDim(bi));
  whole.push_back(Label::of(Label::Query));
  whole.push_back(Label::of(Label::ValueHead));
  SmallVector<int64_t> perm;
  for (const Label &l : m.oView)
    perm.push_back(targetPosition(l, whole));
  o = transpose(b, loc, o, perm);
  o = convertElements(b, loc, o, pvTy.getElementType());
  if (o.getType() != pvTy)
    o = tensor::CastOp::create(b, loc, pvTy, o);
  rewriter.replaceOp(pvOp, o);

  // Drop the size queries and reshapes built but not used.
  SmallVector<Operation *> built;
  for (Operation *op = first ? first->getNextNode() : &block->front();
       op && op != o.getDefiningOp(); op = op->getNextNode())
    built.push_back(op);
  for (Operation *op : llvm::reverse(built))
    if (op != attention && isOpTriviallyDead(op))
      rewriter.eraseOp(op);

  // A frontend that collapsed the batch dims around the product expands
  // them right after it: a reshape of our collapse back to fa.attention's
  // shape is the identity (both are row-major), so its users take o. Equal
  // types mean equal sizes here: a split into more than one dynamic part
  // is never recorded (the evaluator's splitError), so each group has at
  // most one dynamic size, which the group's product fixes.
  if (auto collapse = o.getDefiningOp<tensor::CollapseShapeOp>()) {
    for (Operation *user : llvm::make_early_inc_range(o.getUsers())) {
      if (!isa<tensor::ExpandShapeOp, tosa::ReshapeOp>(user) ||
          user->getResult(0).getType() != collapse.getSrcType())
        continue;
      rewriter.replaceOp(user, collapse.getSrc());
    }
    if (collapse->use_empty())
      rewriter.eraseOp(collapse);
  }
  return attention;
}

/// Adds to `work` the producers of the values `op` (and its regions) read.
static void addProducers(Operation *op, llvm::SetVector<Operation *> &work,
                         const DenseSet<Operation *> &erased) {
  op->walk([&](Operation *nested) {
    for (Value operand : nested->getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (!erased.contains(def) && !op->isAncestor(def))
          work.insert(def);
  });
}

/// Erases the ops of `ops` (and the producers of what they read) that are
/// dead, until none is.
/// Rewrites the `tensor.dim` users of the chain's ops in terms of the sizes
/// of their operands (upstream's resolve-ranked-shaped-type-result-dims
/// patterns, to a fixpoint), so that a shape query (as TorchToLinalg sizes
/// each `tensor.empty`) does not keep a chain op alive. A query that does
/// not resolve keeps its op, which stays correct.
static void resolveChainDims(ArrayRef<Operation *> ops) {
  SmallVector<Operation *> dims;
  for (Operation *op : ops)
    for (Operation *user : op->getUsers())
      if (isa<tensor::DimOp>(user))
        dims.push_back(user);
  if (dims.empty())
    return;
  RewritePatternSet patterns(dims.front()->getContext());
  memref::populateResolveRankedShapedTypeResultDimsPatterns(patterns);
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
  (void)applyOpPatternsGreedily(dims, std::move(patterns), config);
}

static void eraseDeadChain(RewriterBase &rewriter, ArrayRef<Operation *> ops,
                           DenseSet<Operation *> &erased) {
  resolveChainDims(ops);
  // Unused users of the chain (TorchToTosa's argmax beside the max of a
  // max.dim) die with it.
  SmallVector<Operation *> deadUsers;
  for (Operation *op : ops)
    if (!erased.contains(op))
      for (Operation *user : op->getUsers())
        if (!llvm::is_contained(ops, user) && isOpTriviallyDead(user) &&
            !llvm::is_contained(deadUsers, user))
          deadUsers.push_back(user);
  // Recorded as erased: the pass's list of products may hold them.
  for (Operation *user : deadUsers) {
    erased.insert(user);
    rewriter.eraseOp(user);
  }
  llvm::SetVector<Operation *> work;
  for (Operation *op : ops)
    if (!erased.contains(op))
      work.insert(op);
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t i = 0; i < work.size(); ++i) {
      Operation *op = work[i];
      if (erased.contains(op) || !isOpTriviallyDead(op))
        continue;
      // Its producers may die with it.
      addProducers(op, work, erased);
      erased.insert(op);
      rewriter.eraseOp(op);
      changed = true;
    }
  }
}

FailureOr<AttentionOp> mlir::fa::raiseAttention(RewriterBase &rewriter,
                                                Operation *pvProduct,
                                                std::string *why) {
  std::string reason;
  auto pv = matchContraction(pvProduct, reason);
  if (!pv) {
    if (why)
      *why = reason.empty() ? "not a product" : reason;
    return failure();
  }
  bool candidate = false;
  auto m = matchAttention(*pv, candidate, reason);
  if (!m) {
    if (why)
      *why =
          candidate ? reason : "the product does not consume a softmax result";
    return failure();
  }
  AttentionOp result = buildAttention(rewriter, *m);
  DenseSet<Operation *> erased;
  eraseDeadChain(rewriter, m->cleanup, erased);
  return result;
}

namespace {

struct FARaiseAttentionPass
    : fa::impl::FARaiseAttentionBase<FARaiseAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<Operation *> products;
    getOperation()->walk([&](Operation *op) {
      std::string ignored;
      if (matchContraction(op, ignored))
        products.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    DenseSet<Operation *> erased;
    for (Operation *op : products) {
      if (erased.contains(op))
        continue;
      std::string ignored;
      auto pv = matchContraction(op, ignored);
      if (!pv)
        continue;
      bool candidate = false;
      std::string why;
      auto m = matchAttention(*pv, candidate, why);
      if (!m) {
        if (candidate && explain)
          op->emitRemark() << "not raised to fa.attention: " << why;
        continue;
      }
      erased.insert(op);
      buildAttention(rewriter, *m);
      eraseDeadChain(rewriter, m->cleanup, erased);
    }
  }
};

} // namespace
