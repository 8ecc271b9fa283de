//===- RaiseAttentionMatchers.h - matchers of fa-raise-attention -*- C++
//-*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// The matchers behind `fa-raise-attention`. Frontend IR spells attention in
// many ways (linalg named ops, generics with fused bodies, TOSA, reshapes
// around the products); the matchers normalize them in two steps:
//
// 1. `ChainEvaluator` reads a tensor value at a symbolic point of the
//    attention iteration space and returns a scalar expression (`Expr`):
//    elementwise ops (linalg generics and named ops, TOSA, arith/math on
//    tensors), transposes and reshapes are looked through; reductions become
//    `Reduce` nodes, `linalg.softmax` a `Softmax` node, and everything else
//    (products, function arguments, constants that are not splats) a `Leaf`
//    carrying the tensor and which logical dim each of its dims holds.
// 2. Small structural matchers on those expressions recognize the softmax
//    (`matchProbabilities`) and the scores (`matchScores`), and
//    `matchContraction` recognizes the two products.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_DIALECT_FA_TRANSFORMS_RAISEATTENTIONMATCHERS_H
#define FA_LIB_DIALECT_FA_TRANSFORMS_RAISEATTENTIONMATCHERS_H

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
namespace fa {
namespace raise {

//===----------------------------------------------------------------------===//
// Logical dims
//===----------------------------------------------------------------------===//

/// A logical dim of the attention iteration space: a batch dim (or one part
/// of a batch dim that a reshape split), the query axis i, the key axis j,
/// the head dim D of q/k, the head dim Dv of v/o, or a broadcast (size-1)
/// dim.
struct Label {
  enum Kind : int64_t { Unit, Query, Key, Head, ValueHead, Batch };
  Kind kind = Unit;
  /// Batch dims: index in o's batch dims, and which part of `numParts` this
  /// dim is when a reshape split the batch dim (numParts == 1: whole).
  int64_t batch = 0, part = 0, numParts = 1;

  static Label unit() { return {}; }
  static Label of(Kind k) { return {k, 0, 0, 1}; }
  static Label batchDim(int64_t b, int64_t part = 0, int64_t numParts = 1) {
    return {Batch, b, part, numParts};
  }
  bool isBatch() const { return kind == Batch; }
  bool isWholeBatch() const { return kind == Batch && numParts == 1; }
  int64_t key() const {
    return kind | (batch << 4) | (part << 20) | (numParts << 36);
  }
  bool operator==(const Label &o) const { return key() == o.key(); }
  bool operator!=(const Label &o) const { return key() != o.key(); }
  std::string str() const;
};

/// Which logical dim each dim of a tensor holds.
using View = SmallVector<Label, 4>;

//===----------------------------------------------------------------------===//
// Scalar expressions
//===----------------------------------------------------------------------===//

/// A scalar expression: the value of a tensor at a symbolic point.
struct Expr {
  enum Kind {
    /// A tensor read at the point (`value`, `view`).
    Leaf,
    /// Something the evaluator does not understand (`reason` says what);
    /// `args` are what it reads, where known.
    Opaque,
    /// A scalar constant (`cst`, of type `type`).
    Const,
    /// `linalg.index` of the loop dim holding `label`.
    Index,
    /// The accumulator of the enclosing reduction body.
    Acc,
    // Float arithmetic (args[0], args[1]).
    Add,
    Sub,
    Mul,
    Div,
    Max,
    Exp,
    Neg,
    /// A float-to-float conversion to `type` (extf, truncf, tosa.cast).
    Cast,
    /// select(args[0], args[1], args[2]).
    Select,
    /// Integer comparison with predicate `pred` (an arith::CmpIPredicate).
    CmpI,
    /// The logical negation of an i1 args[0] (arith.xori with true,
    /// tosa.logical_not).
    Not,
    /// Float comparison with predicate `pred` (an arith::CmpFPredicate;
    /// tosa.equal is `oeq`).
    CmpF,
    /// Logical and / or of i1 args[0], args[1] (arith.andi/ori on i1,
    /// tosa.logical_and/or).
    And,
    Or,
    // Index arithmetic.
    AddI,
    SubI,
    /// A reduction over the dim `label`: `args[0]` is the reduced value,
    /// `args[1]` the initial value; `isMax` max (maximumf/maxnumf), else sum.
    Reduce,
    /// linalg.softmax of args[0] over the dim `label`.
    Softmax,
    /// A logical and / or reduction of i1 args[0] over the dim `label`
    /// (`args[1]` the initial value): linalg reductions with an andi/ori
    /// body, tosa.reduce_all / reduce_any.
    All,
    Any,
  };
  Kind kind;
  SmallVector<const Expr *, 3> args;
  Value value;
  View view;
  double cst = 0;
  Type type;
  Label label;
  int64_t pred = 0;
  bool isMax = false;
  std::string reason;
  /// A Leaf of the innermost tensor whose value at the point this
  /// expression is (set by the evaluator on computed expressions), or null:
  /// a mask computed from other tensors is passed as that tensor.
  const Expr *origin = nullptr;
};

/// Structural equality; float casts are ignored when `ignoreCasts`.
bool equalExprs(const Expr *a, const Expr *b, bool ignoreCasts);
/// True when `e` contains an Exp or Softmax node.
bool containsExpOrSoftmax(const Expr *e);
/// The first Opaque node of `e`, or null.
const Expr *findOpaque(const Expr *e);
/// `e` without its outer float casts.
const Expr *stripCasts(const Expr *e);

//===----------------------------------------------------------------------===//
// Evaluator
//===----------------------------------------------------------------------===//

/// How a batch dim of o is split into parts by a reshape somewhere in the
/// chain: for each part, a tensor and a dim of it that has the part's size.
struct BatchSplit {
  SmallVector<std::pair<Value, int64_t>> parts;
};

/// Evaluates tensors of the attention chain to scalar expressions.
class ChainEvaluator {
public:
  /// The expression of `v` read at the point where its dims hold `view`.
  const Expr *eval(Value v, const View &view);

  /// Batch dims of o that a reshape split into parts, by batch index.
  const std::map<int64_t, BatchSplit> &getSplits() const { return splits; }
  /// The ops read through (not leaves), in the order first visited.
  const llvm::SetVector<Operation *> &getVisited() const { return visited; }
  /// Set when a reshape split a batch dim inconsistently.
  std::optional<std::string> splitError;

private:
  const Expr *make(Expr e);
  const Expr *leaf(Value v, const View &view);
  /// An Opaque node; `reads` are the expressions the op reads (kept so that
  /// a product consuming an exp through an unsupported op is still a near
  /// miss worth a remark).
  const Expr *opaque(Value v, const View &view, std::string reason,
                     ArrayRef<const Expr *> reads = {});
  const Expr *evalScalar(Value v, DenseMap<Value, const Expr *> &env);
  const Expr *evalScalarOp(Operation *op, ArrayRef<const Expr *> args);
  const Expr *evalLinalg(Operation *op, unsigned resultIdx, const View &view);
  const Expr *evalTosa(Operation *op, const View &view);
  const Expr *evalReshape(Operation *op, const View &view);
  std::optional<View>
  reshapeSourceView(Value src, Value res,
                    ArrayRef<SmallVector<int64_t, 2>> groups, const View &view);
  const Expr *evalUncached(Value v, const View &view);

  std::deque<Expr> storage;
  std::map<std::pair<const void *, std::vector<int64_t>>, const Expr *> memo;
  std::map<int64_t, BatchSplit> splits;
  llvm::SetVector<Operation *> visited;
};

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

/// A product `out[...] = sum_k lhs[...] * rhs[...]` with one contracted loop
/// dim, as indexing maps over the loop dims.
struct Contraction {
  Operation *op = nullptr;
  Value lhs, rhs, result;
  AffineMap lhsMap, rhsMap, outMap;
  unsigned numLoops = 0;
  unsigned kDim = 0;
};

/// Recognizes linalg.matmul / batch_matmul / contraction generics (any
/// projected-permutation maps, one reduction dim, body
/// `acc + ext?(a) * ext?(b)`, zero-filled init) and tosa.matmul (zero
/// zero-points). Sets `why` on failure.
std::optional<Contraction> matchContraction(Operation *op, std::string &why);

//===----------------------------------------------------------------------===//
// Softmax and scores
//===----------------------------------------------------------------------===//

/// The probabilities: softmax over the key axis of `scores`.
struct ProbMatch {
  const Expr *scores = nullptr;
  bool maxSubtracted = true;
  bool named = false;
  /// Set when the softmax is torch's `_safe_softmax`: rows whose scores are
  /// all -inf are replaced by 0 (fa.attention's contract for rows with no
  /// visible key) rather than left NaN.
  bool zeroesHiddenRows = false;
};

/// Recognizes `p` as a softmax over the key axis (linalg.softmax, or
/// exp(x - max) / sum, exp(x) / sum, times a reciprocal; float casts around
/// the steps are allowed), possibly under torch's `_safe_softmax` select:
/// `select(all_j(x_j == -inf), 0, softmax(x))` (or the negated condition,
/// `any_j(x_j != -inf)`, with the arms swapped), where the compared `x` is
/// the softmax's own input up to exact float casts. The rewrite checks the
/// rest (the mask's hidden values are -inf; no rounding to -inf).
std::optional<ProbMatch> matchProbabilities(const Expr *p, std::string &why);

/// The scores: `alpha * (q k^T) + beta * mask`, with an optional causal
/// select or i1 mask (keeping or hiding keys where it is true).
struct ScoreMatch {
  /// The q k^T product (a Leaf on the product's result).
  const Expr *product = nullptr;
  double alpha = 1.0;
  /// An additive float mask (a Leaf, possibly under float casts).
  const Expr *mask = nullptr;
  double beta = 1.0;
  /// An i1 mask (a Leaf): keys are kept where it is true, or hidden where
  /// it is true when `boolMaskHides` (masked_fill(mask, -inf)).
  const Expr *boolMask = nullptr;
  bool boolMaskHides = false;
  /// The causal alignment when a select on index comparisons or a constant
  /// triangular mask hides keys j > i + offset.
  std::optional<int64_t> causalOffset;
  /// The largest value the selects put in place of hidden scores, times the
  /// factors applied after them (-inf: none, or all -inf). A finite fill
  /// stands for -inf only where it is at most -kMinFillMagnitude.
  double fill = -std::numeric_limits<double>::infinity();
};

/// How far below 0 a finite mask value (the lowest finite value of its
/// type, times the scale applied after it) must lie to be read as -inf:
/// exp(-1000) is 0 in f64 and every narrower float type, so a hidden key
/// gets no weight unless all of its row's visible scores lie below -255.
constexpr double kMinFillMagnitude = 1000.0;

/// Recognizes the scores. Sets `why` on failure.
std::optional<ScoreMatch> matchScores(const Expr *x, std::string &why);

/// Reads a constant mask leaf as a causal mask: returns the offset c such
/// that the mask is 0 where j <= i + c and -inf (or the lowest finite
/// value of `usedAs`, the type the scores add it in) elsewhere, or
/// std::nullopt. `hiddenMax` gets the largest hidden value.
std::optional<int64_t> matchCausalConstant(const Expr *maskLeaf, Type usedAs,
                                           double &hiddenMax);

/// True when `c` is -inf or the lowest finite value of `t` (or below it).
bool isNegInfLike(double c, Type t);

/// True when every value of float type `from` is a value of float type `to`
/// (a cast from `from` to `to` is exact: f16 or bf16 to f32, not f32 to
/// bf16 nor f16 to bf16).
bool isExactFloatCast(Type from, Type to);

/// `t` as MLIR prints it ("f32"), for remarks.
std::string typeString(Type t);

/// The first float cast at the top of `e` (its outer casts) that is not
/// exact, or null.
const Expr *firstInexactCast(const Expr *e);

/// The remark for an additive mask rounded by the cast `c` on its way to
/// the scores.
std::string maskRoundedReason(const Expr *c);

} // namespace raise
} // namespace fa
} // namespace mlir

#endif // FA_LIB_DIALECT_FA_TRANSFORMS_RAISEATTENTIONMATCHERS_H
