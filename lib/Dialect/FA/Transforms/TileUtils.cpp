//===- TileUtils.cpp - helpers shared by the fa tilings -----------------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#include "TileUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::fa::tiling;

using utils::IteratorType;

Value TileBuilder::cstF32(double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}

Value TileBuilder::cstIndex(int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value TileBuilder::toF32(Value v) {
  if (v.getType() == f32)
    return v;
  return arith::ExtFOp::create(b, loc, f32, v);
}

Value TileBuilder::filled(ArrayRef<OpFoldResult> sizes, double value) {
  Value empty = tensor::EmptyOp::create(b, loc, sizes, f32);
  return linalg::FillOp::create(b, loc, cstF32(value), empty).getResult(0);
}

Value TileBuilder::slice2d(Value src, ValueRange batch, Value r0, Value rows) {
  auto srcTy = cast<RankedTensorType>(src.getType());
  int64_t rank = srcTy.getRank();
  SmallVector<OpFoldResult> offsets, sizes, strides(rank, b.getIndexAttr(1));
  for (Value i : batch) {
    offsets.push_back(i);
    sizes.push_back(b.getIndexAttr(1));
  }
  offsets.push_back(r0);
  offsets.push_back(b.getIndexAttr(0));
  sizes.push_back(rows);
  sizes.push_back(tensor::getMixedSize(b, loc, src, rank - 1));
  auto resTy = RankedTensorType::get(
      {ShapedType::kDynamic, srcTy.getShape().back()}, srcTy.getElementType());
  return tensor::ExtractSliceOp::create(b, loc, resTy, src, offsets, sizes,
                                        strides);
}

Value TileBuilder::slice1d(Value src, ValueRange batch, Value r0, Value rows) {
  auto srcTy = cast<RankedTensorType>(src.getType());
  int64_t rank = srcTy.getRank();
  SmallVector<OpFoldResult> offsets, sizes, strides(rank, b.getIndexAttr(1));
  for (Value i : batch) {
    offsets.push_back(i);
    sizes.push_back(b.getIndexAttr(1));
  }
  offsets.push_back(r0);
  sizes.push_back(rows);
  auto resTy =
      RankedTensorType::get({ShapedType::kDynamic}, srcTy.getElementType());
  return tensor::ExtractSliceOp::create(b, loc, resTy, src, offsets, sizes,
                                        strides);
}

Value TileBuilder::insert(Value tile, Value dest, ValueRange batch, Value r0,
                          Value rows, bool withCols) {
  auto destTy = cast<RankedTensorType>(dest.getType());
  int64_t rank = destTy.getRank();
  SmallVector<OpFoldResult> offsets, sizes, strides(rank, b.getIndexAttr(1));
  for (Value i : batch) {
    offsets.push_back(i);
    sizes.push_back(b.getIndexAttr(1));
  }
  offsets.push_back(r0);
  sizes.push_back(rows);
  if (withCols) {
    offsets.push_back(b.getIndexAttr(0));
    sizes.push_back(tensor::getMixedSize(b, loc, dest, rank - 1));
  }
  return tensor::InsertSliceOp::create(b, loc, tile, dest, offsets, sizes,
                                       strides);
}

AffineMap TileBuilder::map(unsigned numDims, ArrayRef<unsigned> results) {
  SmallVector<AffineExpr> exprs;
  for (unsigned r : results)
    exprs.push_back(b.getAffineDimExpr(r));
  return AffineMap::get(numDims, 0, exprs, b.getContext());
}

Value TileBuilder::contract(Value a, Value bv, Value acc, AffineMap aMap,
                            AffineMap bMap, AffineMap accMap) {
  return linalg::GenericOp::create(
             b, loc, acc.getType(), ValueRange{a, bv}, ValueRange{acc},
             ArrayRef<AffineMap>{aMap, bMap, accMap},
             ArrayRef<IteratorType>{IteratorType::parallel,
                                    IteratorType::parallel,
                                    IteratorType::reduction},
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

Value mlir::fa::tiling::castTo(TileBuilder &tb, Value v, Type type) {
  if (v.getType() == type)
    return v;
  return tensor::CastOp::create(tb.b, tb.loc, type, v);
}

Value mlir::fa::tiling::buildScale(TileBuilder &tb,
                                   std::optional<double> staticScale, Value q) {
  if (staticScale)
    return tb.cstF32(*staticScale);
  auto qTy = cast<RankedTensorType>(q.getType());
  Value d = tensor::DimOp::create(tb.b, tb.loc, q, qTy.getRank() - 1);
  Value di = arith::IndexCastOp::create(tb.b, tb.loc, tb.b.getI64Type(), d);
  Value df = arith::SIToFPOp::create(tb.b, tb.loc, tb.f32, di);
  return math::RsqrtOp::create(tb.b, tb.loc, df);
}
