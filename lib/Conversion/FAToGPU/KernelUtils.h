//===- KernelUtils.h - helpers shared by the fa GPU kernels -----*- C++ -*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// Small builders shared by the forward (FAToGPU.cpp) and backward
// (BackwardKernels.cpp) kernels of convert-fa-to-gpu: index and f32
// arithmetic, loads/stores, static-dim helpers and the cooperative copy of a
// row tile from global into workgroup memory.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_CONVERSION_FATOGPU_KERNELUTILS_H
#define FA_LIB_CONVERSION_FATOGPU_KERNELUTILS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>

namespace mlir {
namespace fa {
namespace gpukernel {

/// Static shared memory a kernel may use without opting in at launch.
inline constexpr int64_t kMaxStaticSharedBytes = 48 * 1024;

/// The end of an error on tiles over the workgroup-memory limit, after
/// their byte count: " bytes of workgroup memory, over the <limit> bytes a
/// block may use (max-shared-bytes; ...)".
inline std::string overSharedLimit(int64_t limit) {
  return " bytes of workgroup memory, over the " + std::to_string(limit) +
         " bytes a block may use (max-shared-bytes; fa-to-ptx sets it from "
         "the chip)";
}

/// Builder state and small helpers for a kernel body.
struct KernelBuilder {
  OpBuilder &b;
  Location loc;
  Type f32;

  KernelBuilder(OpBuilder &b, Location loc)
      : b(b), loc(loc), f32(b.getF32Type()) {}

  Value cstF32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value cstIndex(int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  }
  Value toF32(Value v) {
    if (v.getType() == f32)
      return v;
    return arith::ExtFOp::create(b, loc, f32, v);
  }
  /// `v` (f32) converted to `elt`; `v` itself when `elt` is f32.
  Value fromF32(Value v, Type elt) {
    if (elt == f32)
      return v;
    return arith::TruncFOp::create(b, loc, elt, v);
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value minS(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value maxS(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  Value addF(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value subF(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mulF(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value cmpI(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value isNegInf(Value x) {
    return arith::CmpFOp::create(
        b, loc, arith::CmpFPredicate::OEQ, x,
        cstF32(-std::numeric_limits<double>::infinity()));
  }
  Value load(Value memref, ValueRange idx) {
    return memref::LoadOp::create(b, loc, memref, idx);
  }
  void store(Value value, Value memref, ValueRange idx) {
    memref::StoreOp::create(b, loc, value, memref, idx);
  }
};

/// Whether the tensor-core kernels can fold `scale` * log2(e) into one f32
/// factor (|scale| at most about 2.36e38); beyond, it would become inf.
inline bool scaleFoldsInF32(float scale) {
  return std::abs(static_cast<double>(scale) * 1.4426950408889634) <=
         static_cast<double>(std::numeric_limits<float>::max());
}

/// The first static size among `dims`, or kDynamic.
inline int64_t staticDim(std::initializer_list<int64_t> dims) {
  for (int64_t d : dims)
    if (!ShapedType::isDynamic(d))
      return d;
  return ShapedType::kDynamic;
}

/// The manifest spelling of an element type: f16, bf16 or f32.
inline StringRef typeName(Type t) {
  if (t.isF16())
    return "f16";
  if (t.isBF16())
    return "bf16";
  return "f32";
}

/// Whether a tensor operand or result of `op` has static dims (dynamic
/// ones count as 1) that multiply to 2^31 elements or more.
bool hasOversizedTensor(Operation *op);

/// With 32-bit indices, every element offset a kernel computes must fit in
/// an i32: an op error at `op` when a tensor operand or result has static
/// dims whose product is 2^31 or more (dynamic dims are the runtime's
/// check); success for 64.
LogicalResult checkIndexBitwidth(Operation *op, int64_t indexBitwidth);

/// Gives the kernels of `kernels` `index` values of `indexBitwidth` bits
/// (a DLTI data layout on the gpu.module, which upstream's conversions to
/// LLVM follow) and records 32 in `manifest` (`index_bits`; the runtimes
/// read a missing key as 64). Nothing for 64.
void setIndexBitwidth(gpu::GPUModuleOp kernels, DictionaryAttr &manifest,
                      int64_t indexBitwidth);

/// A kernel argument type: `shape` of `elt` with a dynamic offset and dynamic
/// strides, so the strides the launcher passes are the ones used.
inline MemRefType globalMemRefType(MLIRContext *ctx, ArrayRef<int64_t> shape,
                                   Type elt) {
  SmallVector<int64_t> strides(shape.size(), ShapedType::kDynamic);
  return MemRefType::get(
      shape, elt, StridedLayoutAttr::get(ctx, ShapedType::kDynamic, strides));
}

/// Copies rows [r0, r0 + rows) of `src[batch]` (a [batch, T, width] global
/// memref) into rows [0, rows) of the workgroup `tile` ([>= rows, width]).
/// The `numThreads` threads stride over the rows * width elements, so
/// consecutive threads touch consecutive elements of a row (coalesced).
inline void buildTileCopy(KernelBuilder &kb, Value src, Value tile, Value batch,
                          Value r0, Value rows, int64_t width, Value tid,
                          Value numThreads) {
  Value widthC = kb.cstIndex(width);
  Value count = kb.mul(rows, widthC);
  scf::ForOp::create(kb.b, kb.loc, tid, count, numThreads, ValueRange{},
                     [&](OpBuilder &b, Location loc, Value idx, ValueRange) {
                       KernelBuilder t(b, loc);
                       // idx = r * width + c, r < rows, c < width.
                       Value r = arith::DivUIOp::create(b, loc, idx, widthC);
                       Value c = arith::RemUIOp::create(b, loc, idx, widthC);
                       Value x = t.load(src, {batch, t.add(r0, r), c});
                       t.store(x, tile, {r, c});
                       scf::YieldOp::create(b, loc);
                     });
}

} // namespace gpukernel
} // namespace fa
} // namespace mlir

#endif // FA_LIB_CONVERSION_FATOGPU_KERNELUTILS_H
