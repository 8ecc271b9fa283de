//===- TileUtils.h - helpers shared by the fa tilings -----------*- C++ -*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// Builders shared by fa-tile-attention and fa-tile-attention-backward: f32
// constants and fills, rank-reduced 2-D slices of [batch..., T, D] tensors,
// f32 contractions written as linalg.generic, and the attention scale.
// Internal to lib/Dialect/FA/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_DIALECT_FA_TRANSFORMS_TILEUTILS_H
#define LIB_DIALECT_FA_TRANSFORMS_TILEUTILS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <optional>

namespace mlir {
namespace fa {
namespace tiling {

/// Builder state shared by the pieces of one tiled attention.
struct TileBuilder {
  OpBuilder &b;
  Location loc;
  Type f32;

  TileBuilder(OpBuilder &b, Location loc)
      : b(b), loc(loc), f32(b.getF32Type()) {}

  Value cstF32(double v);
  Value cstIndex(int64_t v);
  /// `v` extended to f32 (unchanged when already f32).
  Value toF32(Value v);

  /// A tensor of f32 of the given sizes filled with `value`.
  Value filled(ArrayRef<OpFoldResult> sizes, double value);

  /// A rank-reduced 2-D slice `src[batch..., r0 : r0+rows, 0 : cols]`.
  /// `batch` holds one index per leading dim of `src`.
  Value slice2d(Value src, ValueRange batch, Value r0, Value rows);

  /// A rank-reduced 1-D slice `src[batch..., r0 : r0+rows]`.
  Value slice1d(Value src, ValueRange batch, Value r0, Value rows);

  /// Inserts the 2-D (or, without `withCols`, 1-D) `tile` into `dest` at
  /// `[batch..., r0, 0]`.
  Value insert(Value tile, Value dest, ValueRange batch, Value r0, Value rows,
               bool withCols);

  /// The projection (d0, ..., d{numDims-1}) -> (d{results[0]}, ...).
  AffineMap map(unsigned numDims, ArrayRef<unsigned> results);

  /// acc + sum over the third loop dim of a * b, in f32: a linalg.generic
  /// with loop dims (x, y, r), iterators (parallel, parallel, reduction) and
  /// the given indexing maps of `a`, `b` and `acc` (maps of 3 dims).
  Value contract(Value a, Value b, Value acc, AffineMap aMap, AffineMap bMap,
                 AffineMap accMap);
};

/// The scale applied to q k^T: `staticScale` as an f32 constant, or
/// 1/sqrt(D) computed at run time from the last dim of `q`.
Value buildScale(TileBuilder &tb, std::optional<double> staticScale, Value q);

/// `v` cast to `type` (tensor.cast) when their compatible shapes differ in
/// which dims are static: the tiled result of an op whose declared result
/// type is more or less static than its operands.
Value castTo(TileBuilder &tb, Value v, Type type);

} // namespace tiling
} // namespace fa
} // namespace mlir

#endif // LIB_DIALECT_FA_TRANSFORMS_TILEUTILS_H
