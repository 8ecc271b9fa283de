//===- BF16MmaSyncToNVVM.cpp - bf16 nvgpu.mma.sync to nvvm.mma.sync ------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// Implements `fa-convert-bf16-mma-sync-to-nvvm`: upstream's NVGPU to NVVM
// conversion cannot type bf16 mma.sync operands, so the tensor-core kernels'
// bf16 products are rewritten here, before it runs.
//
//===----------------------------------------------------------------------===//

#include "fa/Conversion/FAToGPU/FAToGPU.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace fa {
#define GEN_PASS_DEF_FACONVERTBF16MMASYNCTONVVM
#include "fa/Conversion/Passes.h.inc"
} // namespace fa
} // namespace mlir

using namespace mlir;

namespace {

/// nvgpu.mma.sync m16n8k16 bf16 x bf16 + f32 -> nvvm.mma.sync.
struct BF16MmaSyncPattern : OpRewritePattern<nvgpu::MmaSyncOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nvgpu::MmaSyncOp op,
                                PatternRewriter &rewriter) const override {
    auto aTy = cast<VectorType>(op.getMatrixA().getType());
    auto bTy = cast<VectorType>(op.getMatrixB().getType());
    auto cTy = cast<VectorType>(op.getMatrixC().getType());
    SmallVector<int64_t> shape = llvm::to_vector(llvm::map_range(
        op.getMmaShape().getAsRange<IntegerAttr>(),
        [](IntegerAttr a) { return a.getInt(); }));
    if (!aTy.getElementType().isBF16() || !bTy.getElementType().isBF16() ||
        !cTy.getElementType().isF32() || shape != SmallVector<int64_t>{16, 8, 16} ||
        aTy.getShape() != ArrayRef<int64_t>{4, 2} ||
        bTy.getShape() != ArrayRef<int64_t>{2, 2} ||
        cTy.getShape() != ArrayRef<int64_t>{2, 2})
      return rewriter.notifyMatchFailure(op, "not a bf16 m16n8k16 mma.sync");

    Location loc = op.getLoc();
    Type i32 = rewriter.getI32Type();
    auto packed = VectorType::get({1}, i32);
    // Row i of a vector<Nx2xbf16> as one i32 register.
    auto pack = [&](Value v, int64_t rows) {
      SmallVector<Value> regs;
      for (int64_t i = 0; i < rows; ++i) {
        Value pair = vector::ExtractOp::create(rewriter, loc, v, i);
        Value cast = vector::BitCastOp::create(rewriter, loc, packed, pair);
        regs.push_back(vector::ExtractOp::create(rewriter, loc, cast, 0));
      }
      return regs;
    };
    SmallVector<Value> a = pack(op.getMatrixA(), 4);
    SmallVector<Value> b = pack(op.getMatrixB(), 2);
    SmallVector<Value> c;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 2; ++j)
        c.push_back(vector::ExtractOp::create(rewriter, loc, op.getMatrixC(),
                                              ArrayRef<int64_t>{i, j}));
    Type f32 = rewriter.getF32Type();
    auto resultType = LLVM::LLVMStructType::getLiteral(
        rewriter.getContext(), {f32, f32, f32, f32});
    Value mma = NVVM::MmaOp::create(
        rewriter, loc, resultType, a, b, c, shape, std::nullopt, std::nullopt,
        std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16,
                                      NVVM::MMATypes::bf16},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    SmallVector<Value> d;
    for (int64_t i = 0; i < 4; ++i)
      d.push_back(LLVM::ExtractValueOp::create(rewriter, loc, mma, i));
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, cTy, d);
    return success();
  }
};

struct ConvertBF16MmaSyncPass
    : fa::impl::FAConvertBF16MmaSyncToNVVMBase<ConvertBF16MmaSyncPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<BF16MmaSyncPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
