//===- RaiseAttentionMatchers.cpp - matchers of fa-raise-attention ------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// The chain evaluator and the structural matchers of `fa-raise-attention`
// (see RaiseAttentionMatchers.h).
//
//===----------------------------------------------------------------------===//

#include "RaiseAttentionMatchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::fa;
using namespace mlir::fa::raise;

//===----------------------------------------------------------------------===//
// Labels and expressions
//===----------------------------------------------------------------------===//

std::string Label::str() const {
  switch (kind) {
  case Unit:
    return "1";
  case Query:
    return "i";
  case Key:
    return "j";
  case Head:
    return "d";
  case ValueHead:
    return "dv";
  case Batch:
    if (numParts == 1)
      return "b" + std::to_string(batch);
    return "b" + std::to_string(batch) + "." + std::to_string(part);
  }
  return "?";
}

bool raise::equalExprs(const Expr *a, const Expr *b, bool ignoreCasts) {
  if (ignoreCasts) {
    a = stripCasts(a);
    b = stripCasts(b);
  }
  if (a == b)
    return true;
  if (a->kind != b->kind || a->args.size() != b->args.size())
    return false;
  switch (a->kind) {
  case Expr::Leaf:
    if (a->value != b->value || a->view.size() != b->view.size())
      return false;
    for (auto [x, y] : llvm::zip(a->view, b->view))
      if (x != y)
        return false;
    return true;
  case Expr::Opaque:
    return false;
  case Expr::Const:
    return a->cst == b->cst || (std::isnan(a->cst) && std::isnan(b->cst));
  case Expr::Index:
    if (a->label != b->label)
      return false;
    break;
  case Expr::Cast:
    if (a->type != b->type)
      return false;
    break;
  case Expr::CmpI:
  case Expr::CmpF:
    if (a->pred != b->pred)
      return false;
    break;
  case Expr::Reduce:
  case Expr::Softmax:
  case Expr::All:
  case Expr::Any:
    if (a->label != b->label || a->isMax != b->isMax)
      return false;
    break;
  default:
    break;
  }
  for (auto [x, y] : llvm::zip(a->args, b->args))
    if (!equalExprs(x, y, ignoreCasts))
      return false;
  return true;
}

bool raise::containsExpOrSoftmax(const Expr *e) {
  if (e->kind == Expr::Exp || e->kind == Expr::Softmax)
    return true;
  return llvm::any_of(e->args, containsExpOrSoftmax);
}

const Expr *raise::findOpaque(const Expr *e) {
  if (e->kind == Expr::Opaque)
    return e;
  for (const Expr *a : e->args)
    if (const Expr *o = findOpaque(a))
      return o;
  return nullptr;
}

const Expr *raise::stripCasts(const Expr *e) {
  while (e->kind == Expr::Cast)
    e = e->args[0];
  return e;
}

bool raise::isNegInfLike(double c, Type t) {
  if (std::isinf(c) && c < 0)
    return true;
  auto ft = dyn_cast_or_null<FloatType>(t);
  if (!ft)
    return c <= -std::numeric_limits<float>::max();
  double lowest =
      llvm::APFloat::getLargest(ft.getFloatSemantics(), /*Negative=*/true)
          .convertToDouble();
  return c <= lowest;
}

bool raise::isExactFloatCast(Type from, Type to) {
  auto f = dyn_cast_or_null<FloatType>(from);
  auto t = dyn_cast_or_null<FloatType>(to);
  return f && t &&
         (f == t || llvm::APFloatBase::isRepresentableBy(
                        f.getFloatSemantics(), t.getFloatSemantics()));
}

const Expr *raise::firstInexactCast(const Expr *e) {
  for (; e->kind == Expr::Cast; e = e->args[0])
    if (!isExactFloatCast(e->args[0]->type, e->type))
      return e;
  return nullptr;
}

std::string raise::maskRoundedReason(const Expr *c) {
  return "the additive mask is rounded on its way to the scores (a cast "
         "from " +
         typeString(c->args[0]->type) + " to " + typeString(c->type) + ")";
}

std::string raise::typeString(Type t) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (t)
    t.print(os);
  else
    os << "an unknown type";
  return text;
}

/// A short description of `e` for remarks.
static std::string describe(const Expr *e) {
  switch (e->kind) {
  case Expr::Leaf:
    if (Operation *op = e->value.getDefiningOp())
      return "the result of '" + op->getName().getStringRef().str() + "'";
    return "a block argument";
  case Expr::Opaque:
    return e->reason;
  case Expr::Const:
    return "a constant";
  case Expr::Index:
    return "a linalg.index";
  case Expr::Acc:
    return "an accumulator";
  case Expr::Add:
    return "an addition";
  case Expr::Sub:
    return "a subtraction";
  case Expr::Mul:
    return "a multiplication";
  case Expr::Div:
    return "a division";
  case Expr::Max:
    return "a maximum";
  case Expr::Exp:
    return "an exp";
  case Expr::Neg:
    return "a negation";
  case Expr::Cast:
    return "a float cast";
  case Expr::Select:
    return "a select";
  case Expr::CmpI:
    return "an integer comparison";
  case Expr::Not:
    return "a logical not";
  case Expr::CmpF:
    return "a float comparison";
  case Expr::And:
    return "a logical and";
  case Expr::Or:
    return "a logical or";
  case Expr::All:
    return "an and reduction";
  case Expr::Any:
    return "an or reduction";
  case Expr::AddI:
  case Expr::SubI:
    return "index arithmetic";
  case Expr::Reduce:
    return e->isMax ? "a max reduction" : "a sum reduction";
  case Expr::Softmax:
    return "a linalg.softmax";
  }
  return "an expression";
}

//===----------------------------------------------------------------------===//
// ChainEvaluator
//===----------------------------------------------------------------------===//

static std::vector<int64_t> viewKey(const View &view) {
  std::vector<int64_t> key;
  key.reserve(view.size());
  for (const Label &l : view)
    key.push_back(l.key());
  return key;
}

const Expr *ChainEvaluator::make(Expr e) {
  storage.push_back(std::move(e));
  return &storage.back();
}

const Expr *ChainEvaluator::leaf(Value v, const View &view) {
  Expr e;
  e.kind = Expr::Leaf;
  e.value = v;
  e.view = view;
  e.type = getElementTypeOrSelf(v.getType());
  return make(std::move(e));
}

const Expr *ChainEvaluator::opaque(Value v, const View &view,
                                   std::string reason,
                                   ArrayRef<const Expr *> reads) {
  Expr e;
  e.kind = Expr::Opaque;
  e.args.assign(reads.begin(), reads.end());
  e.value = v;
  e.view = view;
  e.reason = std::move(reason);
  return make(std::move(e));
}

/// A constant expression of `attr` (a float or integer scalar, or a splat),
/// or null.
static std::optional<std::pair<double, Type>> constantValue(Attribute attr) {
  if (auto splat = dyn_cast<SplatElementsAttr>(attr))
    attr = splat.getSplatValue<Attribute>();
  else if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    if (!dense.isSplat())
      return std::nullopt;
    attr = dense.getSplatValue<Attribute>();
  }
  if (auto f = dyn_cast<FloatAttr>(attr))
    return std::make_pair(f.getValueAsDouble(), f.getType());
  if (auto i = dyn_cast<IntegerAttr>(attr)) {
    // Wider integers (i128) are not read: their value need not fit int64.
    if (i.getValue().getBitWidth() > 64)
      return std::nullopt;
    return std::make_pair(static_cast<double>(i.getValue().getSExtValue()),
                          i.getType());
  }
  return std::nullopt;
}

const Expr *ChainEvaluator::evalScalar(Value v,
                                       DenseMap<Value, const Expr *> &env) {
  auto it = env.find(v);
  if (it != env.end())
    return it->second;
  Attribute attr;
  if (matchPattern(v, m_Constant(&attr)))
    if (auto c = constantValue(attr)) {
      Expr e;
      e.kind = Expr::Const;
      e.cst = c->first;
      e.type = c->second;
      return make(std::move(e));
    }
  return opaque(v, {}, "a scalar that is not a constant");
}

/// True when `a` is a constant i1 true (read as -1, the sign-extended bit).
static bool isTrueConst(const Expr *a) {
  return a->kind == Expr::Const && a->cst != 0.0;
}

/// The operand of a logical and with true or an or with false that is not
/// that constant (the op's value), or null.
static const Expr *logicalIdentityOperand(bool isAnd,
                                          ArrayRef<const Expr *> args) {
  for (int i = 0; i < 2; ++i)
    if (args[i]->kind == Expr::Const && (args[i]->cst != 0.0) == isAnd)
      return args[1 - i];
  return nullptr;
}

/// `x` rounded to float type `t` (as a constant of that type holds it).
static double roundToType(double x, Type t) {
  auto ft = dyn_cast_or_null<FloatType>(t);
  if (!ft)
    return x;
  APFloat f(x);
  bool lost;
  f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
  return f.convertToDouble();
}

const Expr *ChainEvaluator::evalScalarOp(Operation *op,
                                         ArrayRef<const Expr *> args) {
  Expr e;
  e.type =
      op->getNumResults() ? getElementTypeOrSelf(op->getResult(0)) : Type();
  e.args.assign(args.begin(), args.end());
  auto isConst = [](const Expr *x) { return x->kind == Expr::Const; };
  auto constant = [&](double value) {
    Expr c;
    c.kind = Expr::Const;
    c.cst = roundToType(value, e.type);
    c.type = e.type;
    return make(std::move(c));
  };
  // Constant folding of what frontends leave unfolded: an integer constant
  // converted to float (torch's alpha of 1 as sitofp), a float constant
  // cast (an f64 1.0 truncated), divisions of constants (a reciprocal of
  // the scale), each rounded to the result type; a product with 1.
  if (isa<arith::SIToFPOp, arith::UIToFPOp>(op) && isConst(args[0]) &&
      isa<FloatType>(e.type) && args[0]->type && args[0]->type.isInteger() &&
      args[0]->type.getIntOrFloatBitWidth() <= 64) {
    double x = args[0]->cst;
    if (isa<arith::UIToFPOp>(op) && x < 0) // the constant as unsigned
      x += std::ldexp(1.0, args[0]->type.getIntOrFloatBitWidth());
    return constant(x);
  }
  // A truncation with a rounding mode other than the default is not read:
  // the pass's arithmetic rounds to nearest.
  if (auto truncf = dyn_cast<arith::TruncFOp>(op);
      truncf && truncf.getRoundingmodeAttr())
    return opaque(op->getResult(0), {}, "an arith.truncf with a rounding mode");
  if (isa<arith::ExtFOp, arith::TruncFOp>(op) && isConst(args[0]))
    return constant(args[0]->cst);
  if (isa<arith::DivFOp>(op) && isConst(args[0]) && isConst(args[1]) &&
      args[1]->cst != 0.0)
    return constant(args[0]->cst / args[1]->cst);
  if (isa<arith::MulFOp>(op))
    for (int i = 0; i < 2; ++i)
      if (isConst(args[i]) && args[i]->cst == 1.0)
        return args[1 - i];
  // Selects on i1: select(c, x, false) is c and x, select(c, true, x) is c
  // or x (torch's tril of ones: select(j <= i, 1, 0)).
  if (isa<arith::SelectOp>(op) && e.type.isInteger(1)) {
    const Expr *c = args[0], *a = args[1], *f = args[2];
    auto is = [&](const Expr *x, bool v) {
      return isConst(x) && (x->cst != 0.0) == v;
    };
    if (is(f, false) || is(a, true)) {
      bool isAnd = is(f, false);
      const Expr *pair[] = {c, isAnd ? a : f};
      if (const Expr *other = logicalIdentityOperand(isAnd, pair))
        return other;
      e.kind = isAnd ? Expr::And : Expr::Or;
      e.args.assign({c, isAnd ? a : f});
      return make(std::move(e));
    }
  }
  if (auto c = dyn_cast<arith::ConstantOp>(op)) {
    if (auto cv = constantValue(c.getValue())) {
      e.kind = Expr::Const;
      e.cst = cv->first;
      e.type = cv->second;
      e.args.clear();
      return make(std::move(e));
    }
    if (e.type.isIntOrIndex() && !e.type.isIndex() &&
        e.type.getIntOrFloatBitWidth() > 64)
      return opaque(op->getResult(0), {},
                    "an integer constant of more than 64 bits");
  }
  if (isa<arith::AddFOp>(op))
    e.kind = Expr::Add;
  else if (isa<arith::SubFOp>(op))
    e.kind = Expr::Sub;
  else if (isa<arith::MulFOp>(op))
    e.kind = Expr::Mul;
  else if (isa<arith::DivFOp>(op))
    e.kind = Expr::Div;
  else if (isa<arith::MaximumFOp, arith::MaxNumFOp>(op))
    e.kind = Expr::Max;
  else if (isa<arith::NegFOp>(op))
    e.kind = Expr::Neg;
  else if (isa<math::ExpOp>(op))
    e.kind = Expr::Exp;
  else if (isa<arith::ExtFOp, arith::TruncFOp>(op))
    e.kind = Expr::Cast;
  else if (isa<arith::SelectOp>(op))
    e.kind = Expr::Select;
  else if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    e.kind = Expr::CmpI;
    e.pred = static_cast<int64_t>(cmp.getPredicate());
  } else if (auto cmp = dyn_cast<arith::CmpFOp>(op)) {
    e.kind = Expr::CmpF;
    e.pred = static_cast<int64_t>(cmp.getPredicate());
  } else if (isa<arith::AndIOp, arith::OrIOp>(op) && e.type.isInteger(1)) {
    bool isAnd = isa<arith::AndIOp>(op);
    if (const Expr *other = logicalIdentityOperand(isAnd, args))
      return other;
    e.kind = isAnd ? Expr::And : Expr::Or;
  } else if (isa<arith::XOrIOp>(op) && e.type.isInteger(1) &&
             llvm::any_of(args, [](const Expr *a) {
               return a->kind == Expr::Const && a->cst == 0.0;
             })) {
    // xori with false: the other operand.
    return args[0]->kind == Expr::Const && args[0]->cst == 0.0 ? args[1]
                                                               : args[0];
  } else if (isa<arith::XOrIOp>(op) && e.type.isInteger(1) &&
             llvm::any_of(args, isTrueConst)) {
    // xori with true: a logical not of the other operand.
    e.kind = Expr::Not;
    e.args.assign({isTrueConst(args[0]) ? args[1] : args[0]});
  } else if (isa<arith::AddIOp>(op))
    e.kind = Expr::AddI;
  else if (isa<arith::SubIOp>(op))
    e.kind = Expr::SubI;
  else if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
               arith::ExtUIOp>(op)) {
    // An identity on the loop indices only where no index can wrap: to
    // index or a 64-bit integer. A narrower integer (i32, i8, i1) wraps
    // past its range, and a comparison there is not the causal mask it
    // reads as.
    if (!isa<IndexType>(e.type) && e.type.getIntOrFloatBitWidth() < 64)
      return opaque(op->getResult(0), {},
                    "an integer cast to i" +
                        std::to_string(e.type.getIntOrFloatBitWidth()) +
                        " (loop indices may wrap; expected index or i64)");
    return args[0];
  } else
    return opaque(op->getNumResults() ? op->getResult(0) : Value(), {},
                  "an unsupported op '" + op->getName().getStringRef().str() +
                      "'");
  return make(std::move(e));
}

const Expr *ChainEvaluator::eval(Value v, const View &view) {
  auto key = std::make_pair(v.getAsOpaquePointer(), viewKey(view));
  auto it = memo.find(key);
  if (it != memo.end())
    return it->second;
  const Expr *e = evalUncached(v, view);
  memo[key] = e;
  // The innermost tensor computing a computed expression (the evaluator
  // owns its expressions; the first, innermost, value that yields one
  // keeps it).
  if (!e->origin && e->kind != Expr::Leaf && e->kind != Expr::Const &&
      e->kind != Expr::Opaque && isa<FloatType>(getElementTypeOrSelf(v)))
    const_cast<Expr *>(e)->origin = leaf(v, view);
  return e;
}

/// True when `view` holds label kind `k`.
static bool hasKind(const View &view, Label::Kind k) {
  return llvm::any_of(view, [&](const Label &l) { return l.kind == k; });
}

/// The axis a row reduction whose result dims hold `resultView` reduces:
/// the key axis when only the query axis is left, and vice versa.
static std::optional<Label> reducedLabel(const View &resultView) {
  bool q = hasKind(resultView, Label::Query);
  bool k = hasKind(resultView, Label::Key);
  if (hasKind(resultView, Label::Head) || hasKind(resultView, Label::ValueHead))
    return std::nullopt;
  if (q && !k)
    return Label::of(Label::Key);
  if (k && !q)
    return Label::of(Label::Query);
  return std::nullopt;
}

const Expr *ChainEvaluator::evalUncached(Value v, const View &view) {
  auto ty = dyn_cast<RankedTensorType>(v.getType());
  if (!ty || ty.getRank() != static_cast<int64_t>(view.size()))
    return opaque(v, view, "a value that is not a ranked tensor");
  Operation *op = v.getDefiningOp();
  if (!op)
    return leaf(v, view);

  // Constants: splats are scalars, anything else is a tensor leaf.
  Attribute attr;
  if (matchPattern(v, m_Constant(&attr))) {
    if (auto c = constantValue(attr)) {
      Expr e;
      e.kind = Expr::Const;
      e.cst = c->first;
      e.type = c->second;
      return make(std::move(e));
    }
    return leaf(v, view);
  }

  if (auto softmax = dyn_cast<linalg::SoftmaxOp>(op)) {
    Expr e;
    e.kind = Expr::Softmax;
    e.label = view[softmax.getDimension()];
    e.type = ty.getElementType();
    e.args.push_back(eval(softmax.getInput(), view));
    visited.insert(op);
    return make(std::move(e));
  }

  // Products are leaves: the matchers decide what they are.
  // A product that fails only on its init (or zero points) says so, rather
  // than being read as some other reduction.
  std::string productWhy;
  if (matchContraction(op, productWhy))
    return leaf(v, view);
  if (!productWhy.empty())
    return opaque(v, view, productWhy);

  // tensor.cast changes only what the type says of the shape.
  if (auto castOp = dyn_cast<tensor::CastOp>(op)) {
    if (auto srcTy = dyn_cast<RankedTensorType>(castOp.getSource().getType());
        srcTy && srcTy.getRank() == ty.getRank()) {
      visited.insert(op);
      return eval(castOp.getSource(), view);
    }
  }
  if (isa<linalg::LinalgOp>(op))
    return evalLinalg(op, cast<OpResult>(v).getResultNumber(), view);
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tosa::ReshapeOp>(op))
    return evalReshape(op, view);
  if (isa<tosa::TosaDialect>(op->getDialect()))
    return evalTosa(op, view);

  // arith/math ops on whole tensors of one shape.
  if (OpTrait::hasElementwiseMappableTraits(op) && op->getNumResults() == 1 &&
      llvm::all_of(op->getOperandTypes(), [&](Type t) {
        auto st = dyn_cast<RankedTensorType>(t);
        return st && st.getShape() == ty.getShape();
      })) {
    SmallVector<const Expr *> args;
    for (Value operand : op->getOperands())
      args.push_back(eval(operand, view));
    const Expr *e = evalScalarOp(op, args);
    if (e->kind != Expr::Opaque)
      visited.insert(op);
    return e;
  }
  return leaf(v, view);
}

const Expr *ChainEvaluator::evalLinalg(Operation *op, unsigned resultIdx,
                                       const View &view) {
  auto linalgOp = cast<linalg::LinalgOp>(op);
  Value result = op->getResult(resultIdx);
  if (!linalgOp.hasPureTensorSemantics())
    return leaf(result, view);
  OpOperand *init = linalgOp.getDpsInitOperand(resultIdx);
  AffineMap outMap = linalgOp.getMatchingIndexingMap(init);
  // Constant-0 results are the size-1 dims a reduction with keepdim writes
  // (torch-mlir's amax/sum/all with keepdim=True).
  if (!outMap.isProjectedPermutation(/*allowZeroInResults=*/true))
    return opaque(result, view,
                  "'" + op->getName().getStringRef().str() +
                      "' with a non-permutation output map");
  unsigned numLoops = linalgOp.getNumLoops();
  SmallVector<std::optional<Label>> loopLabels(numLoops);
  for (unsigned r = 0; r < outMap.getNumResults(); ++r) {
    if (isa<AffineConstantExpr>(outMap.getResult(r))) {
      if (view[r].kind != Label::Unit)
        return opaque(result, view,
                      "'" + op->getName().getStringRef().str() +
                          "' with a constant output index on a dim read as " +
                          view[r].str());
      continue;
    }
    loopLabels[outMap.getDimPosition(r)] = view[r];
  }

  SmallVector<utils::IteratorType> iterators = linalgOp.getIteratorTypesArray();
  std::optional<Label> reduced;
  for (unsigned d = 0; d < numLoops; ++d) {
    if (loopLabels[d]) {
      if (iterators[d] != utils::IteratorType::parallel)
        return opaque(result, view,
                      "'" + op->getName().getStringRef().str() +
                          "' reducing a dim it also writes");
      continue;
    }
    if (reduced)
      return opaque(result, view,
                    "'" + op->getName().getStringRef().str() +
                        "' reducing more than one dim");
    reduced = reducedLabel(view);
    if (!reduced)
      return opaque(result, view,
                    "'" + op->getName().getStringRef().str() +
                        "' reducing a dim that is neither the query nor "
                        "the key axis");
    loopLabels[d] = *reduced;
  }

  DenseMap<Value, const Expr *> env;
  SmallVector<const Expr *> reads;
  Block *body = linalgOp.getBlock();
  for (OpOperand *input : linalgOp.getDpsInputOperands()) {
    BlockArgument arg = linalgOp.getMatchingBlockArgument(input);
    if (!isa<ShapedType>(input->get().getType())) {
      env[arg] = evalScalar(input->get(), env);
      continue;
    }
    AffineMap map = linalgOp.getMatchingIndexingMap(input);
    View inView;
    for (AffineExpr expr : map.getResults()) {
      if (auto d = dyn_cast<AffineDimExpr>(expr)) {
        inView.push_back(*loopLabels[d.getPosition()]);
        continue;
      }
      auto c = dyn_cast<AffineConstantExpr>(expr);
      if (!c || c.getValue() != 0)
        return opaque(result, view,
                      "'" + op->getName().getStringRef().str() +
                          "' with an input map that is not a projection");
      inView.push_back(Label::unit());
    }
    env[arg] = eval(input->get(), inView);
    reads.push_back(env[arg]);
  }
  for (OpOperand &out : linalgOp.getDpsInitsMutable()) {
    BlockArgument arg = linalgOp.getMatchingBlockArgument(&out);
    if (reduced && &out == init) {
      Expr acc;
      acc.kind = Expr::Acc;
      env[arg] = make(std::move(acc));
    } else {
      env[arg] = opaque(result, view,
                        "'" + op->getName().getStringRef().str() +
                            "' reading its output operand");
    }
  }

  for (Operation &bodyOp : body->without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(bodyOp)) {
      Expr e;
      e.kind = Expr::Index;
      e.label = *loopLabels[index.getDim()];
      e.type = index.getType();
      env[index.getResult()] = make(std::move(e));
      continue;
    }
    if (bodyOp.getNumResults() != 1)
      return opaque(result, view,
                    "an unsupported op '" +
                        bodyOp.getName().getStringRef().str() + "' in '" +
                        op->getName().getStringRef().str() + "'",
                    reads);
    SmallVector<const Expr *> args;
    for (Value operand : bodyOp.getOperands())
      args.push_back(evalScalar(operand, env));
    const Expr *e = evalScalarOp(&bodyOp, args);
    if (e->kind == Expr::Opaque)
      return opaque(result, view,
                    e->reason + " in '" + op->getName().getStringRef().str() +
                        "'",
                    reads);
    env[bodyOp.getResult(0)] = e;
  }
  Value yielded = body->getTerminator()->getOperand(resultIdx);
  const Expr *y = evalScalar(yielded, env);

  std::function<bool(const Expr *)> readsAcc = [&](const Expr *e) {
    return e->kind == Expr::Acc || llvm::any_of(e->args, readsAcc);
  };
  if (!reduced) {
    if (readsAcc(y))
      return opaque(result, view, "a reduction body that is not understood");
    if (y->kind != Expr::Const)
      visited.insert(op);
    return y;
  }

  // A reduction: yield combine(acc, g) with g free of acc.
  if (!llvm::is_contained({Expr::Add, Expr::Max, Expr::And, Expr::Or},
                          y->kind) ||
      y->args.size() != 2)
    return opaque(result, view,
                  "'" + op->getName().getStringRef().str() +
                      "' reducing with something other than an addf, a "
                      "maximumf/maxnumf or an andi/ori on i1");
  const Expr *g = nullptr;
  if (y->args[0]->kind == Expr::Acc)
    g = y->args[1];
  else if (y->args[1]->kind == Expr::Acc)
    g = y->args[0];
  if (!g || readsAcc(g))
    return opaque(result, view,
                  "'" + op->getName().getStringRef().str() +
                      "' with a reduction body that is not acc + f(x), "
                      "max(acc, f(x)), acc and f(x) or acc or f(x)");
  Expr e;
  e.kind = y->kind == Expr::And  ? Expr::All
           : y->kind == Expr::Or ? Expr::Any
                                 : Expr::Reduce;
  e.isMax = y->kind == Expr::Max;
  e.label = *reduced;
  e.type = getElementTypeOrSelf(result.getType());
  e.args.push_back(g);
  e.args.push_back(eval(init->get(), view));
  visited.insert(op);
  return make(std::move(e));
}

/// The view of a TOSA operand broadcast (size-1 dims) to `resultTy`.
static std::optional<View>
broadcastView(Value operand, RankedTensorType resultTy, const View &view) {
  auto ty = dyn_cast<RankedTensorType>(operand.getType());
  if (!ty || ty.getRank() != resultTy.getRank())
    return std::nullopt;
  View out;
  for (int64_t d = 0; d < ty.getRank(); ++d)
    out.push_back(ty.getDimSize(d) == 1 && resultTy.getDimSize(d) != 1
                      ? Label::unit()
                      : view[d]);
  return out;
}

/// True when `v` is a constant whose elements are all zero.
static bool isZeroConstant(Value v) {
  Attribute attr;
  if (!matchPattern(v, m_Constant(&attr)))
    return false;
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense)
    return false;
  if (auto c = constantValue(dense))
    return c->first == 0.0;
  return false;
}

const Expr *ChainEvaluator::evalTosa(Operation *op, const View &view) {
  Value result = op->getResult(0);
  auto resultTy = cast<RankedTensorType>(result.getType());
  Type elt = resultTy.getElementType();
  auto operand = [&](Value v) -> const Expr * {
    std::optional<View> inView = broadcastView(v, resultTy, view);
    if (!inView)
      return opaque(result, view, "a TOSA operand of another rank");
    // A dynamic dim may be 1 at run time and broadcast, unless every other
    // operand has a static 1 there (then it is the result's dim).
    auto ty = cast<RankedTensorType>(v.getType());
    for (int64_t d = 0; d < ty.getRank(); ++d) {
      if (!ty.isDynamicDim(d))
        continue;
      for (Value other : op->getOperands()) {
        auto otherTy = dyn_cast<RankedTensorType>(other.getType());
        if (other == v || !otherTy || otherTy.getRank() != ty.getRank())
          continue;
        if (otherTy.getDimSize(d) != 1)
          return opaque(result, view,
                        "a TOSA operand with a dynamic dim that may "
                        "broadcast at run time");
      }
    }
    return eval(v, *inView);
  };
  auto node = [&](Expr::Kind kind, ArrayRef<const Expr *> args,
                  int64_t pred = 0) {
    Expr e;
    e.kind = kind;
    e.pred = pred;
    e.type = elt;
    e.args.assign(args.begin(), args.end());
    visited.insert(op);
    return make(std::move(e));
  };

  if (auto add = dyn_cast<tosa::AddOp>(op))
    return node(Expr::Add,
                {operand(add.getInput1()), operand(add.getInput2())});
  if (auto sub = dyn_cast<tosa::SubOp>(op))
    return node(Expr::Sub,
                {operand(sub.getInput1()), operand(sub.getInput2())});
  if (auto mul = dyn_cast<tosa::MulOp>(op)) {
    if (mul.getShift() && !isZeroConstant(mul.getShift()))
      return opaque(result, view, "a tosa.mul with a non-zero shift");
    return node(Expr::Mul,
                {operand(mul.getInput1()), operand(mul.getInput2())});
  }
  if (auto max = dyn_cast<tosa::MaximumOp>(op))
    return node(Expr::Max,
                {operand(max.getInput1()), operand(max.getInput2())});
  if (auto exp = dyn_cast<tosa::ExpOp>(op))
    return node(Expr::Exp, {operand(exp.getInput1())});
  if (auto recip = dyn_cast<tosa::ReciprocalOp>(op)) {
    const Expr *x = operand(recip.getInput1());
    Expr one;
    one.kind = Expr::Const;
    one.cst = 1.0;
    one.type = elt;
    // The reciprocal of a constant (TorchToTosa's division by the scale),
    // rounded to the element type.
    if (x->kind == Expr::Const && x->cst != 0.0) {
      one.cst = roundToType(1.0 / x->cst, elt);
      visited.insert(op);
      return make(std::move(one));
    }
    return node(Expr::Div, {make(std::move(one)), x});
  }
  if (auto cast = dyn_cast<tosa::CastOp>(op)) {
    if (!isa<FloatType>(getElementTypeOrSelf(cast.getInput().getType())) ||
        !isa<FloatType>(elt))
      return leaf(result, view);
    return node(Expr::Cast, {operand(cast.getInput())});
  }
  if (auto select = dyn_cast<tosa::SelectOp>(op))
    return node(Expr::Select,
                {operand(select.getInput1()), operand(select.getInput2()),
                 operand(select.getInput3())});
  if (isa<tosa::ReduceMaxOp, tosa::ReduceSumOp, tosa::ReduceAllOp,
          tosa::ReduceAnyOp>(op)) {
    int64_t axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
    View rest = view;
    rest[axis] = Label::unit();
    std::optional<Label> reduced = reducedLabel(rest);
    if (!reduced)
      return opaque(result, view,
                    "a TOSA reduction over a dim that is neither the query "
                    "nor the key axis");
    View inView = rest;
    inView[axis] = *reduced;
    Expr init;
    init.kind = Expr::Const;
    init.type = elt;
    bool isMax = isa<tosa::ReduceMaxOp>(op);
    // reduce_all starts from true (-1 as an i1 constant), reduce_any from
    // false.
    init.cst = isMax ? -std::numeric_limits<double>::infinity()
               : isa<tosa::ReduceAllOp>(op) ? -1.0
                                            : 0.0;
    Expr e;
    e.kind = isa<tosa::ReduceAllOp>(op)   ? Expr::All
             : isa<tosa::ReduceAnyOp>(op) ? Expr::Any
                                          : Expr::Reduce;
    e.isMax = isMax;
    e.label = *reduced;
    e.type = elt;
    e.args.push_back(eval(op->getOperand(0), inView));
    e.args.push_back(make(std::move(init)));
    visited.insert(op);
    return make(std::move(e));
  }
  if (auto logicalNot = dyn_cast<tosa::LogicalNotOp>(op))
    return node(Expr::Not, {operand(logicalNot.getInput1())});
  if (isa<tosa::LogicalAndOp, tosa::LogicalOrOp>(op)) {
    bool isAnd = isa<tosa::LogicalAndOp>(op);
    const Expr *args[] = {operand(op->getOperand(0)),
                          operand(op->getOperand(1))};
    if (const Expr *other = logicalIdentityOperand(isAnd, args)) {
      visited.insert(op);
      return other;
    }
    return node(isAnd ? Expr::And : Expr::Or, args);
  }
  if (auto equal = dyn_cast<tosa::EqualOp>(op);
      equal && isa<FloatType>(getElementTypeOrSelf(equal.getInput1()))) {
    return node(Expr::CmpF,
                {operand(equal.getInput1()), operand(equal.getInput2())},
                static_cast<int64_t>(arith::CmpFPredicate::OEQ));
  }
  if (auto identity = dyn_cast<tosa::IdentityOp>(op)) {
    visited.insert(op);
    return eval(identity.getInput1(), view);
  }
  if (auto transpose = dyn_cast<tosa::TransposeOp>(op)) {
    ArrayRef<int32_t> perms = transpose.getPerms();
    View inView(view.size());
    for (auto [r, p] : llvm::enumerate(perms))
      inView[p] = view[r];
    visited.insert(op);
    return eval(transpose.getInput1(), inView);
  }
  return leaf(result, view);
}

std::optional<View>
ChainEvaluator::reshapeSourceView(Value src, Value res,
                                  ArrayRef<SmallVector<int64_t, 2>> groups,
                                  const View &view) {
  auto srcTy = cast<RankedTensorType>(src.getType());
  auto resTy = cast<RankedTensorType>(res.getType());
  View srcView(srcTy.getRank(), Label::unit());
  if (srcTy.getRank() >= resTy.getRank()) {
    // Collapse: groups[r] lists the source dims of result dim r.
    for (auto [r, group] : llvm::enumerate(groups)) {
      Label l = view[r];
      SmallVector<int64_t> nonUnit;
      for (int64_t s : group)
        if (srcTy.getDimSize(s) != 1)
          nonUnit.push_back(s);
      if (nonUnit.size() <= 1) {
        srcView[nonUnit.empty() ? group.front() : nonUnit.front()] = l;
        continue;
      }
      if (!l.isWholeBatch())
        return std::nullopt;
      int64_t n = nonUnit.size();
      auto it = splits.find(l.batch);
      // Two splits of one batch dim agree when they have as many parts, no
      // two static sizes of a part differ (q 2x3 and k 3x2, both collapsed
      // to 6, pair different rows), and at most one part is dynamic on
      // either side: the collapsed sizes are equal (the original's
      // products need them so), so the one dynamic part is the quotient of
      // equal sizes by equal static parts. With two dynamic parts (q ?x4 and
      // k 4x? at run time 3x4 and 4x3) nothing ties them: not raised.
      auto partSize = [](Value v, int64_t d) {
        return cast<RankedTensorType>(v.getType()).getDimSize(d);
      };
      auto differs = [&](const BatchSplit &split) {
        if (static_cast<int64_t>(split.parts.size()) != n)
          return true;
        int64_t dynamicParts = 0;
        for (auto [p, part] : llvm::enumerate(split.parts)) {
          int64_t a = partSize(part.first, part.second),
                  b = srcTy.getDimSize(nonUnit[p]);
          if (ShapedType::isDynamic(a) || ShapedType::isDynamic(b))
            ++dynamicParts;
          else if (a != b)
            return true;
        }
        return dynamicParts > 1;
      };
      if (it != splits.end() && differs(it->second)) {
        splitError = "a reshape splits batch dim " + std::to_string(l.batch) +
                     " in two different ways (or in two ways with more than "
                     "one dynamic part, which need not agree)";
        return std::nullopt;
      }
      if (it == splits.end()) {
        // The rewrite expands the other operands' merged batch dim to these
        // parts; with two dynamic parts in one group that expand_shape does
        // not lower (fa-to-cpu crashed in upstream's lowering), and nothing
        // ties the sizes of another split to them either.
        if (llvm::count_if(nonUnit, [&](int64_t s) {
              return srcTy.isDynamicDim(s);
            }) > 1) {
          splitError = "a reshape splits batch dim " + std::to_string(l.batch) +
                       " into more than one dynamic part";
          return std::nullopt;
        }
        BatchSplit split;
        for (int64_t s : nonUnit)
          split.parts.push_back({src, s});
        splits[l.batch] = split;
      }
      for (int64_t p = 0; p < n; ++p)
        srcView[nonUnit[p]] = Label::batchDim(l.batch, p, n);
    }
    return srcView;
  }
  // Expand: groups[s] lists the result dims of source dim s.
  for (auto [s, group] : llvm::enumerate(groups)) {
    // The labels of the group's dims that the view uses (not size-1
    // broadcasts), in order.
    SmallVector<Label> labels;
    for (int64_t r : group)
      if (view[r].kind != Label::Unit)
        labels.push_back(view[r]);
    if (labels.empty())
      continue;
    if (labels.size() == 1) {
      srcView[s] = labels.front();
      continue;
    }
    Label first = labels.front();
    if (!first.isBatch() ||
        first.numParts != static_cast<int64_t>(labels.size()))
      return std::nullopt;
    for (auto [p, l] : llvm::enumerate(labels))
      if (l != Label::batchDim(first.batch, p, first.numParts))
        return std::nullopt;
    srcView[s] = Label::batchDim(first.batch);
  }
  return srcView;
}

const Expr *ChainEvaluator::evalReshape(Operation *op, const View &view) {
  Value src = op->getOperand(0), res = op->getResult(0);
  auto srcTy = cast<RankedTensorType>(src.getType());
  auto resTy = cast<RankedTensorType>(res.getType());
  SmallVector<SmallVector<int64_t, 2>> groups;
  auto take = [&](ArrayRef<ReassociationIndices> r) {
    for (const ReassociationIndices &g : r)
      groups.push_back(SmallVector<int64_t, 2>(g.begin(), g.end()));
  };
  if (auto c = dyn_cast<tensor::CollapseShapeOp>(op)) {
    take(c.getReassociationIndices());
  } else if (auto e = dyn_cast<tensor::ExpandShapeOp>(op)) {
    take(e.getReassociationIndices());
  } else {
    if (!srcTy.hasStaticShape() || !resTy.hasStaticShape())
      return opaque(res, view, "a tosa.reshape with dynamic shapes");
    std::optional<SmallVector<ReassociationIndices>> r;
    if (srcTy.getRank() > resTy.getRank())
      r = getReassociationIndicesForCollapse(srcTy.getShape(),
                                             resTy.getShape());
    else if (srcTy.getRank() < resTy.getRank())
      r = getReassociationIndicesForCollapse(resTy.getShape(),
                                             srcTy.getShape());
    else if (srcTy.getShape() == resTy.getShape()) {
      visited.insert(op);
      return eval(src, view);
    }
    if (!r)
      return opaque(res, view,
                    "a tosa.reshape that is not a collapse or an expansion");
    take(*r);
  }
  // Expand: a dim read at index 0 (a broadcast) in a group with a labeled
  // dim must have size 1, or the source index is not the label's (a mask
  // [B, 2T, Tk] expanded to [B, T, 2, Tk] and read at (b, i, 0, j) is row 2i
  // of the source).
  if (srcTy.getRank() < resTy.getRank())
    for (ArrayRef<int64_t> group : groups) {
      bool labeled = llvm::any_of(
          group, [&](int64_t r) { return view[r].kind != Label::Unit; });
      for (int64_t r : group)
        if (labeled && view[r].kind == Label::Unit && resTy.getDimSize(r) != 1)
          return opaque(res, view,
                        "a reshape whose result is read at index 0 along a "
                        "dim of size other than 1 next to a used dim");
    }
  std::optional<View> srcView = reshapeSourceView(src, res, groups, view);
  // Expand: a source dim split into dims that are not the parts of one
  // batch dim (a flat [B * H, Tq, Tk] mask expanded to [B, H, Tq, Tk], or
  // [B, Tq * Tk] to [B, Tq, Tk]) has no label of its own; where the view
  // holds no batch-dim parts (whose split other operands must match), the
  // expanded tensor is taken as it is read.
  if (!srcView && srcTy.getRank() < resTy.getRank() &&
      llvm::none_of(view, [](Label l) {
        return l.kind == Label::Batch && !l.isWholeBatch();
      }))
    return leaf(res, view);
  if (!srcView)
    return opaque(res, view,
                  "a reshape that merges or splits the query or key axis "
                  "(or merges a batch dim with parts of another)");
  visited.insert(op);
  return eval(src, *srcView);
}

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

/// True when `v` is a block argument of `block`, possibly under an extf.
static std::optional<unsigned> blockArgThroughExt(Value v, Block *block) {
  while (auto ext = v.getDefiningOp<arith::ExtFOp>())
    v = ext.getIn();
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != block)
    return std::nullopt;
  return arg.getArgNumber();
}

/// True when the body of `op` is `yield acc + ext?(in0) * ext?(in1)`.
static bool isMulAddBody(linalg::LinalgOp op) {
  Block *block = op.getBlock();
  Value y = block->getTerminator()->getOperand(0);
  auto add = y.getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value acc = block->getArgument(2);
  Value other;
  if (add.getLhs() == acc)
    other = add.getRhs();
  else if (add.getRhs() == acc)
    other = add.getLhs();
  else
    return false;
  auto mul = other.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return false;
  auto a = blockArgThroughExt(mul.getLhs(), block);
  auto b = blockArgThroughExt(mul.getRhs(), block);
  return a && b && ((*a == 0 && *b == 1) || (*a == 1 && *b == 0));
}

/// True when `v` is a zero-filled tensor.
static bool isZeroFilled(Value v) {
  if (auto fill = v.getDefiningOp<linalg::FillOp>()) {
    Attribute attr;
    if (!matchPattern(fill.getInputs()[0], m_Constant(&attr)))
      return false;
    auto c = constantValue(attr);
    return c && c->first == 0.0;
  }
  return isZeroConstant(v);
}

/// True when every loop of `c` has one static extent across the operands
/// and the result that index it (dynamic extents agree with anything), and
/// each of them is a ranked tensor of its map's rank.
static bool extentsAgree(const Contraction &c) {
  SmallVector<int64_t> extent(c.numLoops, ShapedType::kDynamic);
  for (auto [value, map] : {std::pair(c.lhs, c.lhsMap),
                            std::pair(c.rhs, c.rhsMap),
                            std::pair(c.result, c.outMap)}) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || type.getRank() != map.getNumResults())
      return false;
    for (auto [i, expr] : llvm::enumerate(map.getResults())) {
      unsigned loop = cast<AffineDimExpr>(expr).getPosition();
      int64_t size = type.getDimSize(i);
      if (ShapedType::isDynamic(size))
        continue;
      if (ShapedType::isDynamic(extent[loop]))
        extent[loop] = size;
      else if (extent[loop] != size)
        return false;
    }
  }
  return true;
}

std::optional<Contraction> raise::matchContraction(Operation *op,
                                                   std::string &why) {
  MLIRContext *ctx = op->getContext();
  if (auto mm = dyn_cast<tosa::MatMulOp>(op)) {
    if (!isZeroConstant(mm.getAZp()) || !isZeroConstant(mm.getBZp())) {
      why = "'tosa.matmul' with non-zero zero points";
      return std::nullopt;
    }
    Contraction c;
    c.op = op;
    c.lhs = mm.getA();
    c.rhs = mm.getB();
    c.result = mm.getResult();
    c.numLoops = 4;
    c.kDim = 3;
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    c.lhsMap = AffineMap::get(4, 0, {d(0), d(1), d(3)}, ctx);
    c.rhsMap = AffineMap::get(4, 0, {d(0), d(3), d(2)}, ctx);
    c.outMap = AffineMap::get(4, 0, {d(0), d(1), d(2)}, ctx);
    // The TOSA verifier does not compare the static extents of a product
    // ([N, H, C] x [N, C, W] -> [N, H, W]); raising one whose extents
    // disagree would build ill-typed ops.
    if (!extentsAgree(c)) {
      why = "'tosa.matmul' whose operand and result shapes disagree (a "
            "[N, H, C] x [N, C, W] -> [N, H, W] product)";
      return std::nullopt;
    }
    return c;
  }
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !linalgOp.hasPureTensorSemantics() ||
      linalgOp.getNumDpsInputs() != 2 || linalgOp.getNumDpsInits() != 1)
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = linalgOp.getIteratorTypesArray();
  if (llvm::count(iterators, utils::IteratorType::reduction) != 1)
    return std::nullopt;
  if (!isMulAddBody(linalgOp))
    return std::nullopt;
  OpOperand *lhs = linalgOp.getDpsInputOperand(0);
  OpOperand *rhs = linalgOp.getDpsInputOperand(1);
  OpOperand *out = linalgOp.getDpsInitOperand(0);
  Contraction c;
  c.op = op;
  c.lhs = lhs->get();
  c.rhs = rhs->get();
  c.result = op->getResult(0);
  c.lhsMap = linalgOp.getMatchingIndexingMap(lhs);
  c.rhsMap = linalgOp.getMatchingIndexingMap(rhs);
  c.outMap = linalgOp.getMatchingIndexingMap(out);
  c.numLoops = linalgOp.getNumLoops();
  c.kDim = std::distance(iterators.begin(),
                         llvm::find(iterators, utils::IteratorType::reduction));
  for (AffineMap m : {c.lhsMap, c.rhsMap, c.outMap})
    if (!m.isProjectedPermutation(/*allowZeroInResults=*/false))
      return std::nullopt;
  if (!c.lhsMap.isFunctionOfDim(c.kDim) || !c.rhsMap.isFunctionOfDim(c.kDim))
    return std::nullopt;
  if (!isZeroFilled(out->get())) {
    why = "'" + op->getName().getStringRef().str() +
          "' accumulating into a tensor that is not zero-filled";
    // The chain may hold two products of one name: say which.
    if (auto fileLoc = dyn_cast<FileLineColLoc>(op->getLoc()))
      why += " (the product at " + fileLoc.getFilename().str() + ":" +
             std::to_string(fileLoc.getLine()) + ":" +
             std::to_string(fileLoc.getColumn()) + ")";
    return std::nullopt;
  }
  return c;
}

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

/// The softmax without torch's `_safe_softmax` select (matchProbabilities).
static std::optional<ProbMatch> matchSoftmax(const Expr *p, std::string &why) {
  p = stripCasts(p);
  if (p->kind == Expr::Softmax) {
    if (p->label.kind != Label::Key) {
      why = p->label.kind == Label::Query
                ? "the softmax normalizes over the query axis, expected the "
                  "key axis"
                : "the softmax normalizes over dim " + p->label.str() +
                      ", expected the key axis";
      return std::nullopt;
    }
    ProbMatch m;
    m.scores = p->args[0];
    m.named = true;
    return m;
  }
  if (const Expr *o = findOpaque(p)) {
    why = "the probabilities are computed with " + o->reason;
    return std::nullopt;
  }
  const Expr *num = nullptr, *den = nullptr;
  auto reciprocal = [](const Expr *e) -> const Expr * {
    e = stripCasts(e);
    if (e->kind == Expr::Div && stripCasts(e->args[0])->kind == Expr::Const &&
        stripCasts(e->args[0])->cst == 1.0)
      return e->args[1];
    return nullptr;
  };
  if (p->kind == Expr::Div) {
    num = p->args[0];
    den = p->args[1];
  } else if (p->kind == Expr::Mul) {
    if ((den = reciprocal(p->args[1])))
      num = p->args[0];
    else if ((den = reciprocal(p->args[0])))
      num = p->args[1];
  }
  if (!num) {
    why = "expected the probabilities to be a softmax (linalg.softmax, or "
          "exponentials divided by their sum), got " +
          describe(p);
    return std::nullopt;
  }
  den = stripCasts(den);
  if (den->kind != Expr::Reduce || den->isMax) {
    why = "expected the softmax denominator to be a sum reduction, got " +
          describe(den);
    return std::nullopt;
  }
  if (den->label.kind != Label::Key) {
    why = den->label.kind == Label::Query
              ? "the softmax sums over the query axis, expected the key axis"
              : "the softmax sums over an unexpected dim";
    return std::nullopt;
  }
  const Expr *init = stripCasts(den->args[1]);
  if (init->kind != Expr::Const || init->cst != 0.0) {
    why = "the softmax sum does not start from 0";
    return std::nullopt;
  }
  if (!equalExprs(den->args[0], num, /*ignoreCasts=*/true)) {
    why = "the softmax numerator is not the value its denominator sums";
    return std::nullopt;
  }
  const Expr *e = stripCasts(num);
  if (e->kind != Expr::Exp) {
    why = "expected the softmax numerator to be an exp, got " + describe(e);
    return std::nullopt;
  }
  const Expr *arg = e->args[0];
  ProbMatch m;
  m.maxSubtracted = false;
  m.scores = arg;
  const Expr *sArg = stripCasts(arg);
  if (sArg->kind == Expr::Sub) {
    const Expr *mx = stripCasts(sArg->args[1]);
    if (mx->kind == Expr::Reduce) {
      if (!mx->isMax) {
        why = "the softmax subtracts a sum, expected a max";
        return std::nullopt;
      }
      if (mx->label.kind != Label::Key) {
        why = "the softmax subtracts a max over the query axis, expected "
              "the key axis";
        return std::nullopt;
      }
      // The init is compared with the lowest value of the type the max is
      // taken in (an f16 lowest extended to f32 is not the f32 lowest:
      // scores below it would give a max of it and exps of 0).
      const Expr *mInit = stripCasts(mx->args[1]);
      if (mInit->kind != Expr::Const || !isNegInfLike(mInit->cst, mx->type)) {
        why = "the softmax max does not start from -inf or the lowest "
              "finite value of its type (" +
              typeString(mx->type) + ")";
        return std::nullopt;
      }
      if (!equalExprs(mx->args[0], sArg->args[0], /*ignoreCasts=*/true)) {
        why = "the softmax subtracts the max of another value";
        return std::nullopt;
      }
      m.scores = sArg->args[0];
      m.maxSubtracted = true;
    }
  }
  return m;
}

/// `e` without its outer logical nots; `flip` is toggled once per not.
static const Expr *stripNots(const Expr *e, bool &flip) {
  while (e->kind == Expr::Not) {
    flip = !flip;
    e = e->args[0];
  }
  return e;
}

/// `e` without its outer float casts that are exact (widenings): x == -inf
/// holds before such a cast exactly when it holds after it.
static const Expr *stripExactCasts(const Expr *e) {
  while (e->kind == Expr::Cast && e->args[0]->type &&
         isExactFloatCast(e->args[0]->type, e->type))
    e = e->args[0];
  return e;
}

namespace {
/// A per-key or per-row test of scores against -inf: `x` the compared value,
/// `hidden` true when the test holds exactly where x is -inf (per key), or
/// where all of the row's x are -inf (per row); false when it holds exactly
/// where they are not.
struct NegInfTest {
  const Expr *x = nullptr;
  bool hidden = true;
};
} // namespace

/// `b` as a per-key test x == -inf or x != -inf, under logical nots. With x
/// on the left, `oeq` and `ole` (nothing lies below -inf) test x == -inf,
/// `une` and `ugt` x != -inf (true on NaN, as the negation of `oeq` is);
/// with x on the right the mirrored predicates. Others (`ueq`, `one`, ...)
/// differ from these on NaN and are not read.
static std::optional<NegInfTest> keyNegInfTest(const Expr *b) {
  bool flip = false;
  b = stripNots(b, flip);
  if (b->kind != Expr::CmpF)
    return std::nullopt;
  auto isNegInf = [](const Expr *e) {
    e = stripCasts(e);
    return e->kind == Expr::Const && std::isinf(e->cst) && e->cst < 0;
  };
  bool xLeft = isNegInf(b->args[1]);
  if (!xLeft && !isNegInf(b->args[0]))
    return std::nullopt;
  using P = arith::CmpFPredicate;
  auto pred = static_cast<P>(b->pred);
  bool hidden;
  if (pred == P::OEQ || pred == (xLeft ? P::OLE : P::OGE))
    hidden = true;
  else if (pred == P::UNE || pred == (xLeft ? P::UGT : P::ULT))
    hidden = false;
  else
    return std::nullopt;
  return NegInfTest{b->args[xLeft ? 0 : 1], hidden != flip};
}

/// `c` as a per-row test "all keys' x are -inf" (hidden) or "some key's x
/// is not -inf" (not hidden): an and reduction over the key axis (from
/// true) of x == -inf, an or reduction (from false) of x != -inf, under
/// logical nots.
static std::optional<NegInfTest> rowNegInfTest(const Expr *c) {
  bool flip = false;
  c = stripNots(c, flip);
  if ((c->kind != Expr::All && c->kind != Expr::Any) ||
      c->label.kind != Label::Key)
    return std::nullopt;
  bool isAll = c->kind == Expr::All;
  const Expr *init = c->args[1];
  if (init->kind != Expr::Const || (init->cst != 0.0) != isAll)
    return std::nullopt;
  std::optional<NegInfTest> key = keyNegInfTest(c->args[0]);
  // all(x == -inf) or any(x != -inf); all(x != -inf) and any(x == -inf) are
  // other tests.
  if (!key || key->hidden != isAll)
    return std::nullopt;
  return NegInfTest{key->x, isAll != flip};
}

std::optional<ProbMatch> raise::matchProbabilities(const Expr *p,
                                                   std::string &why) {
  p = stripCasts(p);
  // torch's _safe_softmax: select(all_j(x_j == -inf), 0, softmax(x)).
  const Expr *rowTest = nullptr;
  if (p->kind == Expr::Select) {
    auto isZero = [](const Expr *e) {
      e = stripCasts(e);
      return e->kind == Expr::Const && e->cst == 0.0;
    };
    bool zeroWhenTrue = isZero(p->args[1]);
    if (zeroWhenTrue || isZero(p->args[2])) {
      std::optional<NegInfTest> test = rowNegInfTest(p->args[0]);
      if (!test || test->hidden != zeroWhenTrue) {
        why = "the probabilities are a select of 0 on a condition that is "
              "not 'all of the row's scores are -inf'";
        return std::nullopt;
      }
      rowTest = test->x;
      p = p->args[zeroWhenTrue ? 2 : 1];
    }
  }
  std::optional<ProbMatch> m = matchSoftmax(p, why);
  if (!m || !rowTest)
    return m;
  if (!equalExprs(stripExactCasts(rowTest), stripExactCasts(m->scores),
                  /*ignoreCasts=*/false)) {
    why = "the probabilities are zeroed where another value than the "
          "softmax's input is -inf";
    return std::nullopt;
  }
  m->zeroesHiddenRows = true;
  return m;
}

//===----------------------------------------------------------------------===//
// Scores
//===----------------------------------------------------------------------===//

namespace {
/// The largest magnitude of an integer constant in a causal comparison.
constexpr double kMaxIndexConstant = 4294967296.0; // 2^32
/// a_i * i + a_j * j + c.
struct IndexForm {
  int64_t ai = 0, aj = 0, c = 0;
  bool nonNegative() const { return ai >= 0 && aj >= 0 && c >= 0; }
};
} // namespace

static std::optional<IndexForm> indexForm(const Expr *e) {
  switch (e->kind) {
  case Expr::Index:
    if (e->label.kind == Label::Query)
      return IndexForm{1, 0, 0};
    if (e->label.kind == Label::Key)
      return IndexForm{0, 1, 0};
    return std::nullopt;
  case Expr::Const:
    // Offsets beyond 2^32 are not read: the double holding them is exact
    // and index/i64 sums of loop indices and them cannot wrap.
    if (!(std::abs(e->cst) <= kMaxIndexConstant))
      return std::nullopt;
    return IndexForm{0, 0, static_cast<int64_t>(e->cst)};
  case Expr::AddI:
  case Expr::SubI: {
    auto a = indexForm(e->args[0]), b = indexForm(e->args[1]);
    if (!a || !b)
      return std::nullopt;
    int64_t s = e->kind == Expr::AddI ? 1 : -1;
    return IndexForm{a->ai + s * b->ai, a->aj + s * b->aj, a->c + s * b->c};
  }
  default:
    return std::nullopt;
  }
}

/// The offset c of a comparison that keeps exactly the keys j <= i + c
/// (when `keepWhenTrue`) or hides exactly them (otherwise).
static std::optional<int64_t> causalOffset(const Expr *cmp, bool keepWhenTrue) {
  if (cmp->kind != Expr::CmpI)
    return std::nullopt;
  auto lhs = indexForm(cmp->args[0]), rhs = indexForm(cmp->args[1]);
  if (!lhs || !rhs)
    return std::nullopt;
  using P = arith::CmpIPredicate;
  auto pred = static_cast<P>(cmp->pred);
  bool isUnsigned =
      pred == P::ult || pred == P::ule || pred == P::ugt || pred == P::uge;
  if (isUnsigned && (!lhs->nonNegative() || !rhs->nonNegative()))
    return std::nullopt;
  // L = lhs - rhs; keep iff L' <= 0.
  IndexForm l{lhs->ai - rhs->ai, lhs->aj - rhs->aj, lhs->c - rhs->c};
  auto negate = [](IndexForm f) { return IndexForm{-f.ai, -f.aj, -f.c}; };
  IndexForm lp;
  switch (pred) {
  case P::slt:
  case P::ult:
    lp = l;
    lp.c += 1;
    break;
  case P::sle:
  case P::ule:
    lp = l;
    break;
  case P::sgt:
  case P::ugt:
    lp = negate(l);
    lp.c += 1;
    break;
  case P::sge:
  case P::uge:
    lp = negate(l);
    break;
  default:
    return std::nullopt;
  }
  if (!keepWhenTrue) {
    lp = negate(lp);
    lp.c += 1;
  }
  // keep iff j - i + c' <= 0, i.e. j <= i - c'.
  if (lp.aj != 1 || lp.ai != -1)
    return std::nullopt;
  return -lp.c;
}

/// True when `e` is a constant (under float casts) at or below the lowest
/// finite value of `usedAs`, the type the select that takes it computes in.
static bool isNegInfConst(const Expr *e, Type usedAs) {
  e = stripCasts(e);
  return e->kind == Expr::Const && isNegInfLike(e->cst, usedAs);
}

static bool isProductLeaf(const Expr *e) {
  if (e->kind != Expr::Leaf)
    return false;
  Operation *op = e->value.getDefiningOp();
  std::string ignored;
  return op && matchContraction(op, ignored).has_value();
}

static bool containsProduct(const Expr *e) {
  return isProductLeaf(e) || llvm::any_of(e->args, containsProduct);
}

static std::optional<ScoreMatch> parseScores(const Expr *e, std::string &why);

/// The scores `x` with keys hidden by `fill` (-inf or the lowest finite
/// value) where the i1 `condition` is false (`keepWhenTrue`) or true: a
/// causal index comparison or an i1 mask, under any number of logical nots.
static std::optional<ScoreMatch>
parseMaskedScores(const Expr *condition, bool keepWhenTrue, const Expr *fill,
                  const Expr *x, std::string &why) {
  const Expr *cond = stripCasts(condition);
  // select(not c, a, b) == select(c, b, a).
  while (cond->kind == Expr::Not) {
    keepWhenTrue = !keepWhenTrue;
    cond = stripCasts(cond->args[0]);
  }
  auto m = parseScores(x, why);
  if (!m)
    return std::nullopt;
  m->fill = std::max(m->fill, stripCasts(fill)->cst);
  if (cond->kind == Expr::CmpI) {
    std::optional<int64_t> off = causalOffset(cond, keepWhenTrue);
    if (!off) {
      why = "the select condition is not a causal comparison of the key "
            "index with the query index plus a constant (of magnitude at "
            "most 2^32)";
      return std::nullopt;
    }
    if (m->causalOffset) {
      why = "the scores are causally masked twice";
      return std::nullopt;
    }
    m->causalOffset = off;
    return m;
  }
  if (cond->kind == Expr::Leaf &&
      getElementTypeOrSelf(cond->value.getType()).isInteger(1) &&
      !m->boolMask) {
    m->boolMask = cond;
    m->boolMaskHides = !keepWhenTrue;
    return m;
  }
  why = "the select condition is neither a causal index comparison nor "
        "an i1 mask";
  return std::nullopt;
}

static std::optional<ScoreMatch> parseScores(const Expr *e, std::string &why) {
  switch (e->kind) {
  case Expr::Cast:
    return parseScores(e->args[0], why);
  case Expr::Leaf:
    if (isProductLeaf(e)) {
      ScoreMatch m;
      m.product = e;
      return m;
    }
    why =
        "expected the scores to come from a q k^T product, got " + describe(e);
    return std::nullopt;
  case Expr::Mul:
  case Expr::Div: {
    const Expr *c = stripCasts(e->args[1]);
    const Expr *x = e->args[0];
    if (e->kind == Expr::Mul && c->kind != Expr::Const &&
        stripCasts(e->args[0])->kind == Expr::Const) {
      c = stripCasts(e->args[0]);
      x = e->args[1];
    }
    if (c->kind != Expr::Const) {
      // (Constants the evaluator does not read as one value are leaves:
      // dense ones of several values, resources, other element types.)
      Attribute attr;
      auto dense = dyn_cast_or_null<DenseElementsAttr>(
          c->kind == Expr::Leaf && matchPattern(c->value, m_Constant(&attr))
              ? attr
              : Attribute());
      if (dense && !dense.isSplat())
        why = "the scores are scaled by a constant tensor of more than one "
              "value (expected one scale for every score)";
      else if (attr)
        why = "the scores are scaled by a constant that is not read as one "
              "value (expected a splat float constant)";
      else
        why = "the scores are scaled by a value that is not a constant";
      return std::nullopt;
    }
    if (!(c->cst > 0) || !std::isfinite(c->cst)) {
      why = "the scores are scaled by " + std::to_string(c->cst) +
            ", expected a finite positive constant";
      return std::nullopt;
    }
    auto m = parseScores(x, why);
    if (!m)
      return std::nullopt;
    double f = e->kind == Expr::Mul ? c->cst : 1.0 / c->cst;
    m->alpha *= f;
    m->beta *= f;
    m->fill *= f;
    return m;
  }
  case Expr::Add: {
    const Expr *x = e->args[0], *mask = e->args[1];
    if (!containsProduct(x) && containsProduct(mask))
      std::swap(x, mask);
    // A bias select(c, fill, 0) added to the scores (SDPA's boolean
    // attn_mask as torch decomposes it, masked_fill of a zero bias) is the
    // select(c, fill, x) of the scores: x + 0 = x, x + fill = fill (-inf,
    // or the lowest value absorbing any score of normal size; the fill rule
    // applies as for a select on the scores).
    if (const Expr *bias = stripCasts(mask); bias->kind == Expr::Select) {
      auto isZero = [](const Expr *a) {
        a = stripCasts(a);
        return a->kind == Expr::Const && a->cst == 0.0;
      };
      if (isNegInfConst(bias->args[1], bias->type) && isZero(bias->args[2]))
        return parseMaskedScores(bias->args[0], /*keepWhenTrue=*/false,
                                 bias->args[1], x, why);
      if (isZero(bias->args[1]) && isNegInfConst(bias->args[2], bias->type))
        return parseMaskedScores(bias->args[0], /*keepWhenTrue=*/true,
                                 bias->args[2], x, why);
    }
    auto m = parseScores(x, why);
    if (!m)
      return std::nullopt;
    if (m->mask) {
      why = "the scores add two masks";
      return std::nullopt;
    }
    const Expr *leafMask = stripCasts(mask);
    // A mask computed from other tensors (BERT's (1 - m) * -10000, T5's
    // bias + padding mask) in an op of its own: the tensor that op writes,
    // whose value at the point is exactly the added one, is the mask.
    if (leafMask->kind != Expr::Leaf && leafMask->origin &&
        !containsProduct(leafMask) && !findOpaque(leafMask)) {
      if (const Expr *c = firstInexactCast(mask)) {
        why = maskRoundedReason(c);
        return std::nullopt;
      }
      mask = leafMask = leafMask->origin;
    }
    if (leafMask->kind == Expr::Opaque) {
      why = "the additive mask is read through " + leafMask->reason;
      return std::nullopt;
    }
    if (leafMask->kind != Expr::Leaf ||
        !isa<FloatType>(getElementTypeOrSelf(leafMask->value.getType()))) {
      why = "the scores add " + describe(leafMask) +
            ", expected a float mask tensor";
      return std::nullopt;
    }
    if (!hasKind(leafMask->view, Label::Key)) {
      why = "the additive mask does not vary along the key axis";
      return std::nullopt;
    }
    m->mask = mask;
    m->beta = 1.0;
    return m;
  }
  case Expr::Select: {
    const Expr *x;
    bool keepWhenTrue;
    const Expr *fill;
    if (isNegInfConst(e->args[2], e->type)) {
      x = e->args[1];
      fill = e->args[2];
      keepWhenTrue = true;
    } else if (isNegInfConst(e->args[1], e->type)) {
      x = e->args[2];
      fill = e->args[1];
      keepWhenTrue = false;
    } else {
      why = "the scores go through a select whose other branch is not -inf "
            "or the lowest finite value of its type (" +
            typeString(e->type) + ")";
      return std::nullopt;
    }
    return parseMaskedScores(e->args[0], keepWhenTrue, fill, x, why);
  }
  case Expr::Opaque:
    why = "the scores are computed with " + e->reason;
    return std::nullopt;
  default:
    why = "the scores go through " + describe(e) +
          ", expected a scale, a mask or a causal select";
    return std::nullopt;
  }
}

std::optional<ScoreMatch> raise::matchScores(const Expr *x, std::string &why) {
  return parseScores(x, why);
}

std::optional<int64_t> raise::matchCausalConstant(const Expr *maskLeaf,
                                                  Type usedAs,
                                                  double &hiddenMax) {
  Attribute attr;
  if (maskLeaf->kind != Expr::Leaf ||
      !matchPattern(maskLeaf->value, m_Constant(&attr)))
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  auto ty = dyn_cast<RankedTensorType>(maskLeaf->value.getType());
  if (!dense || !ty || !isa<FloatType>(ty.getElementType()))
    return std::nullopt;
  int64_t qDim = -1, kDim = -1;
  for (auto [d, l] : llvm::enumerate(maskLeaf->view)) {
    if (l.kind == Label::Query)
      qDim = d;
    else if (l.kind == Label::Key)
      kDim = d;
    else if (ty.getDimSize(d) != 1)
      return std::nullopt;
  }
  if (qDim < 0 || kDim < 0)
    return std::nullopt;
  int64_t tq = ty.getDimSize(qDim), tk = ty.getDimSize(kDim);
  SmallVector<double> values;
  for (APFloat v : dense.getValues<APFloat>())
    values.push_back(v.convertToDouble());
  SmallVector<int64_t> strides(ty.getRank(), 1);
  for (int64_t d = ty.getRank() - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * ty.getDimSize(d + 1);
  auto at = [&](int64_t i, int64_t j) {
    return values[i * strides[qDim] + j * strides[kDim]];
  };
  // The offset from row 0: the last visible key is j = c.
  hiddenMax = -std::numeric_limits<double>::infinity();
  int64_t c = -1;
  while (c + 1 < tk && at(0, c + 1) == 0.0)
    ++c;
  if (c == tk - 1 && tq > 0)
    return std::nullopt; // nothing hidden in row 0: not a causal mask
  for (int64_t i = 0; i < tq; ++i)
    for (int64_t j = 0; j < tk; ++j) {
      double v = at(i, j);
      bool visible = j <= i + c;
      if (visible ? v != 0.0 : !isNegInfLike(v, usedAs))
        return std::nullopt;
      if (!visible)
        hiddenMax = std::max(hiddenMax, v);
    }
  return c;
}
