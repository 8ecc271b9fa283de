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
#include "fa/Dialect/FA/Transforms/Passes.h"
#include "fa/Dialect/FA/Transforms/Transforms.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir {
namespace fa {
#define GEN_PASS_DEF_FAGENERATEBACKWARD
#include "fa/Dialect/FA/Transforms/Passes.h.inc"
} // namespace fa
} // namespace mlir

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

namespace {

/// Marks the functions fa-generate-backward made.
constexpr StringLiteral kGeneratedAttrName = "fa.generated_backward";

struct FAGenerateBackwardPass
    : fa::impl::FAGenerateBackwardBase<FAGenerateBackwardPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Each gradient function goes into its forward function's module (the
    // top-level one or a nested `builtin.module`).
    SymbolTableCollection symbolTables;
    IRRewriter rewriter(&getContext());
    bool failed = false;

    // Collect first: the pass adds functions to the modules it walks.
    SmallVector<std::pair<func::FuncOp, SmallVector<AttentionOp>>> work;
    SmallVector<func::FuncOp> funcs;
    module.walk([&](func::FuncOp func) {
      if (isa<ModuleOp>(func->getParentOp()))
        funcs.push_back(func);
    });
    for (auto func : funcs) {
      // A gradient function this pass made holds a forward fa.attention
      // too; it has no gradient of its own.
      if (func->hasAttr(kGeneratedAttrName))
        continue;
      SmallVector<AttentionOp> ops;
      func.walk([&](AttentionOp op) { ops.push_back(op); });
      if (!ops.empty())
        work.emplace_back(func, std::move(ops));
    }

    for (auto &[func, ops] : work) {
      SymbolTable &symbols = symbolTables.getSymbolTable(func->getParentOp());
      for (auto [n, forward] : llvm::enumerate(ops)) {
        if (forward.getMask()) {
          forward.emitWarning()
              << "fa-generate-backward: skipped: fa.attention_backward takes "
                 "no mask operand";
          continue;
        }
        std::string name = (func.getSymName() + "_attention_" +
                            std::to_string(n) + "_grad")
                               .str();
        Type q = forward.getQ().getType(), k = forward.getK().getType(),
             v = forward.getV().getType(), o = forward.getO().getType();
        Type gradElt = gradF32 ? Type(rewriter.getF32Type())
                               : forward.getQ().getType().getElementType();
        auto grad = [&](Type t) {
          return Type(cast<RankedTensorType>(t).clone(gradElt));
        };
        FunctionType type = rewriter.getFunctionType(
            {q, k, v, o}, {grad(q), grad(k), grad(v)});

        // A body-less declaration of the expected name and type (a caller's
        // forward declaration) is defined in place; any other symbol of
        // that name is a clash.
        func::FuncOp gradFunc;
        if (Operation *existing = symbols.lookup(name)) {
          auto decl = dyn_cast<func::FuncOp>(existing);
          // Generated before (the pass ran already): nothing to do.
          if (decl && !decl.isDeclaration() &&
              decl->hasAttr(kGeneratedAttrName))
            continue;
          if (!decl || !decl.isDeclaration() || decl.getFunctionType() != type) {
            forward.emitError()
                << "fa-generate-backward: cannot add @" << name
                << ": the module already has a symbol of that name that is "
                   "not a declaration of type "
                << type;
            failed = true;
            continue;
          }
          gradFunc = decl;
        } else {
          rewriter.setInsertionPointAfter(func);
          gradFunc = func::FuncOp::create(rewriter, forward.getLoc(), name, type);
          symbols.insert(gradFunc);
        }
        gradFunc->setAttr(kGeneratedAttrName, rewriter.getUnitAttr());
        Block *body = gradFunc.addEntryBlock();
        rewriter.setInsertionPointToStart(body);
        // The forward again, on the new function's arguments.
        IRMapping map;
        map.map(forward.getQ(), body->getArgument(0));
        map.map(forward.getK(), body->getArgument(1));
        map.map(forward.getV(), body->getArgument(2));
        auto clone = cast<AttentionOp>(rewriter.clone(*forward, map));
        auto ret = func::ReturnOp::create(rewriter, forward.getLoc(),
                                          ValueRange{});
        FailureOr<AttentionBackwardOp> backward = createAttentionBackward(
            rewriter, clone, body->getArgument(3), gradElt);
        if (mlir::failed(backward)) {
          forward.emitError() << "fa-generate-backward: could not build the "
                                 "backward of this fa.attention";
          failed = true;
          continue;
        }
        rewriter.modifyOpInPlace(
            ret, [&] { ret->setOperands(backward->getResults()); });
      }
    }
    if (failed)
      signalPassFailure();
  }
};

} // namespace
