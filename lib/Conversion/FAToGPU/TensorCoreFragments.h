//===- TensorCoreFragments.h - mma.sync fragment builders ------*- C++ -*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// Builders shared by the tensor-core kernels of convert-fa-to-gpu (forward:
// TensorCoreForward.cpp, backward: TensorCoreBackward.cpp): warp-fragment
// arithmetic for mma.sync m16n8k16 (PTX ISA, "Matrix Fragments for
// mma.m16n8k16"), ldmatrix addressing, and 16-byte cp.async tile copies.
//
// Fragment layout, lane L = 4 g + t: a C/D fragment (vector<2x2xf32>) holds
// rows g and g + 8, columns 2t and 2t + 1 of a 16 x 8 tile; an A fragment
// (vector<4x2xelt>) holds (row g, k 2t..), (g + 8, 2t..), (g, 8 + 2t..),
// (g + 8, 8 + 2t..) of a 16 x 16 tile; a B fragment (vector<2x2xelt>)
// holds (k 2t.., column g) and (k 8 + 2t.., column g) of a 16 x 8 tile.
// The C fragments of two adjacent n8 tiles are therefore the A fragment of
// one k16 step (FlashAttention-2, Section 3.3: P never leaves registers).
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_CONVERSION_FATOGPU_TENSORCOREFRAGMENTS_H
#define FA_LIB_CONVERSION_FATOGPU_TENSORCOREFRAGMENTS_H

#include "KernelUtils.h"
#include "TensorCoreKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>
#include <map>

namespace mlir {
namespace fa {
namespace gpukernel {
inline constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// Builders for the fragment-level code of one kernel.
struct FragmentBuilder : KernelBuilder {
  Type elt;
  FragmentBuilder(OpBuilder &b, Location loc, Type elt)
      : KernelBuilder(b, loc), elt(elt) {}

  VectorType vec(ArrayRef<int64_t> shape, Type t) {
    return VectorType::get(shape, t);
  }
  Value extract(Value v, ArrayRef<int64_t> pos) {
    return vector::ExtractOp::create(b, loc, v, pos);
  }
  Value insert(Value x, Value v, ArrayRef<int64_t> pos) {
    return vector::InsertOp::create(b, loc, x, v, pos);
  }
  Value zeroAcc() {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vec({2, 2}, f32), 0.0f));
  }
  /// A vector<Nx2xelt> from N vector<2xelt> rows.
  Value stack(ArrayRef<Value> rows) {
    Value r = arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(vec({(int64_t)rows.size(), 2}, elt),
                               b.getFloatAttr(elt, 0.0)));
    for (auto [i, row] : llvm::enumerate(rows))
      r = insert(row, r, {(int64_t)i});
    return r;
  }
  Value mma(Value a, Value bFrag, Value c) {
    return nvgpu::MmaSyncOp::create(b, loc, a, bFrag, c,
                                    ArrayRef<int64_t>{16, 8, 16});
  }
  Value ldmatrix(Value tile, Value row, Value col, bool transpose) {
    return nvgpu::LdMatrixOp::create(b, loc, vec({4, 2}, elt), tile,
                                     ValueRange{row, col}, transpose, 4);
  }
  Value maxF(Value x, Value y) {
    return arith::MaximumFOp::create(b, loc, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  /// 2^x on the special-function unit, denormal results flushed to zero
  /// (`ex2.approx.ftz.f32`, max relative error 2^-22 per the PTX ISA):
  /// one instruction, where math.exp2 on f32 becomes a range check, a
  /// rescaling and ex2 to honour denormals that softmax does not need.
  Value exp2(Value x) {
    return LLVM::CallIntrinsicOp::create(
               b, loc, f32, b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f"),
               ValueRange{x})
        .getResult(0);
  }
  Value fma(Value x, Value y, Value z) {
    return math::FmaOp::create(b, loc, x, y, z);
  }
  /// `x` reduced over the four lanes that share a fragment row.
  Value rowReduce(Value x, bool isMax) {
    for (int32_t offset : {1, 2}) {
      Value other =
          gpu::ShuffleOp::create(b, loc, x, offset, 32, gpu::ShuffleMode::XOR)
              .getShuffleResult();
      x = isMax ? maxF(x, other) : addF(x, other);
    }
    return x;
  }
};

/// How the threads of a block split a [blockN, width] tile into 16-byte
/// chunks: thread `tid` copies chunk tid + r * threads in round r. When
/// `threads` is a multiple of the chunks per row, a thread's column and
/// first row are fixed (computed once, before the key loop) and round r
/// adds r * rowsPerRound rows.
struct TileCopyPlan {
  int64_t blockN, width, threads;
  Value row0, col; // per thread, when threads % (width / 8) == 0
};

inline TileCopyPlan planTileCopy(FragmentBuilder &fb, Value tid,
                                 int64_t blockN, int64_t width,
                                 int64_t threads) {
  TileCopyPlan plan{blockN, width, threads, Value(), Value()};
  int64_t chunksPerRow = width / 8;
  if (threads % chunksPerRow == 0) {
    Value cpr = fb.cstIndex(chunksPerRow);
    plan.row0 = arith::DivUIOp::create(fb.b, fb.loc, tid, cpr);
    plan.col = fb.mul(arith::RemUIOp::create(fb.b, fb.loc, tid, cpr),
                      fb.cstIndex(8));
  }
  return plan;
}

/// Emits the copies of rows [r0, r0 + rows) twice, under an scf.if on
/// whether the tile ends at or before `limit`: emit(x, false) for full
/// tiles (no bounds arithmetic), emit(x, true) for the ragged last one.
inline void emitFullOrBounded(
    FragmentBuilder &fb, Value r0, int64_t rows, Value limit,
    llvm::function_ref<void(FragmentBuilder &, bool)> emit) {
  Value full = fb.cmpI(arith::CmpIPredicate::sle,
                       fb.add(r0, fb.cstIndex(rows)), limit);
  scf::IfOp::create(
      fb.b, fb.loc, full,
      [&](OpBuilder &ib, Location il) {
        FragmentBuilder x(ib, il, fb.elt);
        emit(x, /*bounded=*/false);
        scf::YieldOp::create(ib, il);
      },
      [&](OpBuilder &ib, Location il) {
        FragmentBuilder x(ib, il, fb.elt);
        emit(x, /*bounded=*/true);
        scf::YieldOp::create(ib, il);
      });
}

/// Copies key rows [j0, j0 + blockN) of `src[batch]` into `tile` (into
/// `tile[buffer]` when `buffer` is given: a multi-buffered tile) with
/// 16-byte cp.async copies (`nvgpu.device_async_copy`) and commits them as
/// one group. A tile that ends at or before `tk` (all but the last) copies
/// without bounds arithmetic; the last one clamps the source row and
/// zero-fills rows at or past `tk` (src-size 0).
inline void buildAsyncTileCopy(FragmentBuilder &fb, const TileCopyPlan &plan,
                               Value src, Value tile, Value batch, Value j0,
                               Value tk, Value tid, Value buffer = Value()) {
  const int64_t blockN = plan.blockN, threads = plan.threads;
  const int64_t chunksPerRow = plan.width / 8;
  const int64_t chunks = blockN * chunksPerRow;
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(fb.b.getContext());

  auto emitAll = [&](FragmentBuilder &x, bool bounded) {
    SmallVector<Value> tokens;
    Value c0 = x.cstIndex(0), c8 = x.cstIndex(8);
    Value lastKey = bounded ? x.sub(tk, x.cstIndex(1)) : Value();
    for (int64_t it = 0; it * threads < chunks; ++it) {
      auto emit = [&](FragmentBuilder &y) {
        Value row, col;
        if (plan.row0) {
          row = y.add(plan.row0, y.cstIndex(it * (threads / chunksPerRow)));
          col = plan.col;
        } else {
          Value chunk = y.add(tid, y.cstIndex(it * threads));
          Value cpr = y.cstIndex(chunksPerRow);
          row = arith::DivUIOp::create(y.b, y.loc, chunk, cpr);
          col = y.mul(arith::RemUIOp::create(y.b, y.loc, chunk, cpr), c8);
        }
        Value key = y.add(j0, row);
        Value srcElements;
        if (bounded) {
          Value valid = y.cmpI(arith::CmpIPredicate::slt, key, tk);
          srcElements = y.select(valid, c8, c0);
          key = y.maxS(y.minS(key, lastKey), c0);
        }
        SmallVector<Value, 3> dst = {row, col};
        if (buffer)
          dst.insert(dst.begin(), buffer);
        return nvgpu::DeviceAsyncCopyOp::create(
            y.b, y.loc, tokenType, tile, dst, src,
            ValueRange{batch, key, col}, y.b.getIndexAttr(8), srcElements,
            y.b.getUnitAttr());
      };
      if ((it + 1) * threads <= chunks) {
        tokens.push_back(emit(x));
        continue;
      }
      // The ragged last round: only the first chunks % threads threads copy
      // (the group commits their copies too).
      Value active = x.cmpI(arith::CmpIPredicate::ult, tid,
                            x.cstIndex(chunks - it * threads));
      scf::IfOp::create(x.b, x.loc, active, [&](OpBuilder &ib, Location il) {
        FragmentBuilder y(ib, il, x.elt);
        emit(y);
        scf::YieldOp::create(ib, il);
      });
    }
    nvgpu::DeviceAsyncCreateGroupOp::create(x.b, x.loc, tokenType, tokens);
  };

  emitFullOrBounded(fb, j0, blockN, tk, emitAll);
}

/// The warp-level products of the tensor-core kernels. `lane8`, `half8`,
/// `quad8` (L % 8, ((L / 8) % 2) * 8, (L / 16) * 8) address the four 8 x 8
/// matrices of an ldmatrix.x4 over a 16 x 16 block: lane L gives the row
/// address of matrix L / 8, row L % 8.
struct WarpMma {
  Value lane8, half8, quad8;

  static WarpMma create(FragmentBuilder &fb, Value lane) {
    OpBuilder &b = fb.b;
    Location loc = fb.loc;
    WarpMma w;
    w.lane8 = arith::RemUIOp::create(b, loc, lane, fb.cstIndex(8));
    w.half8 = fb.mul(
        arith::RemUIOp::create(
            b, loc, arith::DivUIOp::create(b, loc, lane, fb.cstIndex(8)),
            fb.cstIndex(2)),
        fb.cstIndex(8));
    w.quad8 = fb.mul(arith::DivUIOp::create(b, loc, lane, fb.cstIndex(16)),
                     fb.cstIndex(8));
    return w;
  }

  static SmallVector<Value, 3> at(ValueRange prefix, Value row, Value col) {
    SmallVector<Value, 3> idx(prefix.begin(), prefix.end());
    idx.push_back(row);
    idx.push_back(col);
    return idx;
  }

  /// The A fragment of rows [row0, row0 + 16) x columns [kc * 16, + 16) of
  /// a row-major tile in workgroup memory.
  Value loadA(FragmentBuilder &x, Value tile, ValueRange prefix, Value row0,
              int64_t kc) const {
    Value row = x.add(x.add(lane8, half8), row0);
    Value col = x.add(quad8, x.cstIndex(kc * 16));
    return nvgpu::LdMatrixOp::create(x.b, x.loc, x.vec({4, 2}, x.elt), tile,
                                     at(prefix, row, col), false, 4);
  }

  /// The B fragments of two adjacent n8 tiles from one ldmatrix.x4 at this
  /// lane's (row, col) address: matrices 0, 1 are the first tile's k
  /// halves, 2, 3 the second's.
  static std::pair<Value, Value> loadBPair(FragmentBuilder &x, Value tile,
                                           ValueRange prefix, Value row,
                                           Value col, bool transpose) {
    Value frag = nvgpu::LdMatrixOp::create(x.b, x.loc, x.vec({4, 2}, x.elt),
                                           tile, at(prefix, row, col),
                                           transpose, 4);
    return {x.stack({x.extract(frag, {0}), x.extract(frag, {1})}),
            x.stack({x.extract(frag, {2}), x.extract(frag, {3})})};
  }

  /// C[r][n] = sum_kc a(r, kc) * tile[n rows, kc columns]^T for n8 tiles n
  /// over tile rows [0, 8 * nTiles): `tile` rows are the N dimension
  /// (ldmatrix without transpose gives B fragments of two n8 tiles per
  /// k16 step). R m16 tiles share each B fragment.
  SmallVector<SmallVector<Value>>
  productABt(FragmentBuilder &x, int64_t R, int64_t kSteps, int64_t nTiles,
             Value tile, ValueRange prefix,
             llvm::function_ref<Value(int64_t, int64_t)> a) const {
    SmallVector<SmallVector<Value>> c(R, SmallVector<Value>(nTiles));
    for (auto &row : c)
      for (Value &v : row)
        v = x.zeroAcc();
    accumulate(x, R, kSteps, nTiles, tile, prefix, a, c, /*kRows=*/false);
    return c;
  }

  /// acc[r][n] += sum_kk a(r, kk) * tile[kk rows, n columns] for n8 tiles n
  /// over tile columns [0, 8 * nTiles): `tile` rows are the K dimension
  /// (ldmatrix with transpose).
  void accumulateAB(FragmentBuilder &x, int64_t R, int64_t kSteps,
                    int64_t nTiles, Value tile, ValueRange prefix,
                    llvm::function_ref<Value(int64_t, int64_t)> a,
                    SmallVectorImpl<SmallVector<Value>> &acc) const {
    accumulate(x, R, kSteps, nTiles, tile, prefix, a, acc, /*kRows=*/true);
  }

private:
  /// acc[r][n] += sum_k a(r, k) * B_k,n with B read from `tile`: with
  /// `kRows`, tile rows are the K dimension (ldmatrix.trans at row
  /// k * 16 + lane8 + half8, column n * 16 + quad8); otherwise tile rows are
  /// the N dimension (ldmatrix at row n * 16 + lane8 + quad8, column
  /// k * 16 + half8). One ldmatrix.x4 gives the B fragments of two n8 tiles
  /// for one k16 step, shared by the R m16 tiles.
  void accumulate(FragmentBuilder &x, int64_t R, int64_t kSteps,
                  int64_t nTiles, Value tile, ValueRange prefix,
                  llvm::function_ref<Value(int64_t, int64_t)> a,
                  SmallVectorImpl<SmallVector<Value>> &acc, bool kRows) const {
    Value rowLane = x.add(lane8, kRows ? half8 : quad8);
    Value colLane = kRows ? quad8 : half8;
    for (int64_t k = 0; k < kSteps; ++k) {
      SmallVector<Value> aFrag(R);
      for (int64_t r = 0; r < R; ++r)
        aFrag[r] = a(r, k);
      for (int64_t np = 0; np < nTiles / 2; ++np) {
        int64_t rowStep = kRows ? k : np, colStep = kRows ? np : k;
        auto [b0, b1] = loadBPair(x, tile, prefix,
                                  x.add(rowLane, x.cstIndex(rowStep * 16)),
                                  x.add(colLane, x.cstIndex(colStep * 16)),
                                  /*transpose=*/kRows);
        for (int64_t r = 0; r < R; ++r) {
          acc[r][2 * np] = x.mma(aFrag[r], b0, acc[r][2 * np]);
          acc[r][2 * np + 1] = x.mma(aFrag[r], b1, acc[r][2 * np + 1]);
        }
      }
    }
  }
};

/// The A fragments (in `x.elt`) of the k16 steps of C fragments: C tiles
/// 2kk and 2kk + 1 of each m16 tile become A step kk.
inline SmallVector<SmallVector<Value>>
toAFragments(FragmentBuilder &x, ArrayRef<SmallVector<Value>> c) {
  SmallVector<SmallVector<Value>> a(c.size());
  for (auto [r, row] : llvm::enumerate(c)) {
    SmallVector<Value> narrow;
    for (Value tile : row)
      narrow.push_back(arith::TruncFOp::create(x.b, x.loc,
                                               x.vec({2, 2}, x.elt), tile));
    for (size_t kk = 0; kk + 1 < narrow.size(); kk += 2)
      a[r].push_back(x.stack({x.extract(narrow[kk], {0}),
                              x.extract(narrow[kk], {1}),
                              x.extract(narrow[kk + 1], {0}),
                              x.extract(narrow[kk + 1], {1})}));
  }
  return a;
}

/// The A fragment of rows (row0, row1) = (g, g + 8) of an m16 tile and
/// columns kc * 16 + {2t, 8 + 2t} (+0, +1), read from global memory
/// `src[batch]` (rank 3, unit innermost stride) with pair loads.
inline Value loadAFromGlobal(FragmentBuilder &x, Value src, Value batch,
                             Value row0, Value row1, Value t2, int64_t kc) {
  auto pairType = x.vec({2}, x.elt);
  Value col0 = x.add(t2, x.cstIndex(kc * 16));
  Value col1 = x.add(col0, x.cstIndex(8));
  SmallVector<Value> parts;
  for (auto [row, col] : {std::pair{row0, col0}, std::pair{row1, col0},
                          std::pair{row0, col1}, std::pair{row1, col1}})
    parts.push_back(vector::LoadOp::create(x.b, x.loc, pairType, src,
                                           ValueRange{batch, row, col}));
  return x.stack(parts);
}

/// Stores C fragments `acc[n]` (rows g / g + 8 as `half` 0 / 1) times
/// `factor` into row `row` of `dst[batch]` at columns n * 8 + 2t, in
/// dst's element type. Each pair is one store aligned to its size: the
/// tensor-core kernels' manifests say `row_align 16` (every row of dst
/// starts 16-byte aligned) and the column 8n + 2t is even. Without the
/// alignment LLVM splits a bf16 pair into two 2-byte stores, which doubles
/// the epilogue's store instructions (ncu: the forward's O stores throttled
/// the load/store queue).
inline void storeFragmentRow(FragmentBuilder &x, ArrayRef<Value> acc,
                             int64_t half, Value factor, Value dst,
                             Value batch, Value row, Value t2) {
  Type eltOut = cast<MemRefType>(dst.getType()).getElementType();
  Value splat = vector::BroadcastOp::create(x.b, x.loc, x.vec({2}, x.f32),
                                            factor);
  const uint64_t pairBytes = 2 * eltOut.getIntOrFloatBitWidth() / 8;
  for (auto [n, tile] : llvm::enumerate(acc)) {
    Value pair = x.mulF(x.extract(tile, {half}), splat);
    if (eltOut != x.f32)
      pair = arith::TruncFOp::create(x.b, x.loc, x.vec({2}, eltOut), pair);
    vector::StoreOp::create(
        x.b, x.loc, pair, dst,
        ValueRange{batch, row, x.add(t2, x.cstIndex((int64_t)n * 8))},
        /*nontemporal=*/false, llvm::MaybeAlign(pairBytes));
  }
}

/// Per-thread indices shared by both kernels.
struct LaneIds {
  Value tid, lane, warp, g, t, t2;

  static LaneIds create(FragmentBuilder &fb) {
    OpBuilder &b = fb.b;
    Location loc = fb.loc;
    LaneIds ids;
    ids.tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value c32 = fb.cstIndex(32), c4 = fb.cstIndex(4);
    ids.lane = arith::RemUIOp::create(b, loc, ids.tid, c32);
    ids.warp = arith::DivUIOp::create(b, loc, ids.tid, c32);
    ids.g = arith::DivUIOp::create(b, loc, ids.lane, c4);
    ids.t = arith::RemUIOp::create(b, loc, ids.lane, c4);
    ids.t2 = fb.mul(ids.t, fb.cstIndex(2));
    return ids;
  }
};

/// A tile view of the dynamic workgroup memory at `offset` bytes:
/// [buffers x] rows x (width + pad) of `elt`.
inline Value sharedTile(FragmentBuilder &fb, Value dynShared, int64_t offset,
                 int64_t buffers, int64_t rows, int64_t width) {
  auto workgroup = gpu::AddressSpaceAttr::get(fb.b.getContext(),
                                              gpu::AddressSpace::Workgroup);
  SmallVector<int64_t> shape;
  if (buffers)
    shape.push_back(buffers);
  shape.push_back(rows);
  shape.push_back(width + kTensorCoreRowPad);
  auto type = MemRefType::get(shape, fb.elt, MemRefLayoutAttrInterface(),
                              workgroup);
  return memref::ViewOp::create(fb.b, fb.loc, type, dynShared,
                                fb.cstIndex(offset), ValueRange{});
}

inline Value dynamicShared(FragmentBuilder &fb) {
  auto workgroup = gpu::AddressSpaceAttr::get(fb.b.getContext(),
                                              gpu::AddressSpace::Workgroup);
  return gpu::DynamicSharedMemoryOp::create(
      fb.b, fb.loc,
      MemRefType::get({ShapedType::kDynamic}, fb.b.getI8Type(),
                      MemRefLayoutAttrInterface(), workgroup));
}

/// Element (h, e) of C fragment `tile` replaced by f(value).
template <typename Fn>
inline Value mapFragment(FragmentBuilder &x, Value tile, Fn fn) {
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t e = 0; e < 2; ++e)
      tile = x.insert(fn(x.extract(tile, {h, e}), h, e), tile, {h, e});
  return tile;
}

/// `tiles` (R x n C fragments) with elements where hidden(r, n, h, e)
/// holds set to -inf, under an scf.if on `needMask` (else unchanged).
inline void maskFragments(
    FragmentBuilder &x, Value needMask, SmallVectorImpl<SmallVector<Value>> &tiles,
    llvm::function_ref<Value(FragmentBuilder &, int64_t, int64_t, int64_t,
                             int64_t)>
        hidden) {
  SmallVector<Value> flat;
  for (auto &row : tiles)
    llvm::append_range(flat, row);
  SmallVector<Type> types(flat.size(), x.vec({2, 2}, x.f32));
  auto ifOp = scf::IfOp::create(x.b, x.loc, types, needMask,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(x.b);
    x.b.setInsertionPointToStart(ifOp.thenBlock());
    FragmentBuilder y(x.b, x.loc, x.elt);
    Value ninf = y.cstF32(kNegInf);
    SmallVector<Value> masked;
    for (auto [r, row] : llvm::enumerate(tiles))
      for (auto [n, tile] : llvm::enumerate(row))
        masked.push_back(mapFragment(y, tile, [&](Value v, int64_t h,
                                                  int64_t e) {
          return y.select(hidden(y, r, n, h, e), ninf, v);
        }));
    scf::YieldOp::create(x.b, x.loc, masked);
    x.b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(x.b, x.loc, flat);
  }
  int64_t i = 0;
  for (auto &row : tiles)
    for (Value &tile : row)
      tile = ifOp.getResult(i++);
}

inline SmallVector<Value> flatten(ArrayRef<SmallVector<Value>> tiles) {
  SmallVector<Value> flat;
  for (auto &row : tiles)
    llvm::append_range(flat, row);
  return flat;
}

inline SmallVector<SmallVector<Value>> unflatten(ValueRange flat, int64_t rows,
                                          int64_t cols) {
  SmallVector<SmallVector<Value>> tiles(rows);
  for (int64_t r = 0; r < rows; ++r)
    tiles[r].assign(flat.begin() + r * cols, flat.begin() + (r + 1) * cols);
  return tiles;
}

inline SmallVector<SmallVector<Value>> zeroTiles(FragmentBuilder &x, int64_t rows,
                                          int64_t cols) {
  SmallVector<SmallVector<Value>> tiles(rows);
  for (auto &row : tiles)
    for (int64_t n = 0; n < cols; ++n)
      row.push_back(x.zeroAcc());
  return tiles;
}

/// The factor c of p = exp2(s * c - offset) for the score fragments `s`
/// of a kernel with softmax scale `scale`: scale * log2(e) when the scale
/// is positive (then the max of the raw scores is the max of the scaled
/// ones, and masking with -inf before scaling is safe); otherwise `s` is
/// scaled here, before any masking, and c = 1.
inline Value scoreFactor(FragmentBuilder &x,
                         SmallVectorImpl<SmallVector<Value>> &s, float scale) {
  const double log2e = 1.4426950408889634;
  const double c = static_cast<double>(scale) * log2e;
  if (scale > 0.0f)
    return x.cstF32(c);
  Value splat = arith::ConstantOp::create(
      x.b, x.loc,
      DenseElementsAttr::get(x.vec({2, 2}, x.f32), static_cast<float>(c)));
  for (auto &row : s)
    for (Value &tile : row)
      tile = x.mulF(tile, splat);
  return x.cstF32(1.0);
}

/// The query block of this GPU block for the kernels whose blocks own query
/// rows (forward, _dq): block_id.x, except under causal, where the last
/// query blocks see the most keys and go first (block x takes query block
/// gridDim.x - 1 - x), so that short blocks fill the tail of the launch.
inline Value queryBlockIndex(FragmentBuilder &fb, CausalKind causal) {
  Value block = gpu::BlockIdOp::create(fb.b, fb.loc, gpu::Dimension::x);
  if (causal == CausalKind::none)
    return block;
  Value last = fb.sub(gpu::GridDimOp::create(fb.b, fb.loc, gpu::Dimension::x),
                      fb.cstIndex(1));
  return fb.sub(last, block);
}

/// The keys the query rows [i0, i0 + blockM) may see: query i sees key j
/// when j <= i + offset (offset 0 for top_left, Tk - Tq for bottom_right,
/// no bound without causal); kvEnd is one past the last key any row of the
/// block sees, clamped to [0, Tk].
struct VisibleKeys {
  Value causalOffset, kvEnd;
};

inline VisibleKeys visibleKeys(FragmentBuilder &fb, CausalKind causal,
                               Value i0, int64_t blockM, Value tq, Value tk) {
  Value c0 = fb.cstIndex(0);
  VisibleKeys keys{c0, tk};
  if (causal == CausalKind::bottom_right)
    keys.causalOffset = fb.sub(tk, tq);
  if (causal != CausalKind::none) {
    Value rows = fb.minS(fb.cstIndex(blockM), fb.sub(tq, i0));
    Value end = fb.add(fb.add(i0, rows), keys.causalOffset);
    keys.kvEnd = fb.minS(fb.maxS(end, c0), tk);
  }
  return keys;
}

/// Masks the score fragments `s` (R m16 tiles x n8 tiles of key block j0)
/// of the forward kernels: keys past Tk and, under causal, past the
/// diagonal, only on blocks that reach them (j0 + blockN > Tk, or the
/// block's last key is past the diagonal of the warp's first row
/// `warpRow0`). Key j0 + n * 8 + 2t + e is hidden from row rowOf(r, h)
/// when it is past limit(r, h) = min(row + offset, Tk - 1) (Tk - 1 without
/// causal): one compare per element, the limits built once per row inside
/// the masked branch. `inBranch` (if given) passes the limits' loop-
/// invariant inputs through where the branch uses them, so that LLVM
/// cannot hoist the limits out of an enclosing loop (registers held
/// across it).
inline void maskScoreBlock(
    FragmentBuilder &x, SmallVectorImpl<SmallVector<Value>> &s,
    CausalKind causal, Value j0, int64_t blockN, Value tk, Value warpRow0,
    Value causalOffset, Value t2,
    llvm::function_ref<Value(FragmentBuilder &, int64_t, int64_t)> rowOf,
    llvm::function_ref<Value(FragmentBuilder &, Value)> inBranch = nullptr) {
  Value needMask = x.cmpI(arith::CmpIPredicate::sgt,
                          x.add(j0, x.cstIndex(blockN)), tk);
  if (causal != CausalKind::none) {
    Value lastKey = x.add(j0, x.cstIndex(blockN - 1));
    Value straddles = x.cmpI(arith::CmpIPredicate::sgt, lastKey,
                             x.add(warpRow0, causalOffset));
    needMask = arith::OrIOp::create(x.b, x.loc, needMask, straddles);
  }
  std::map<std::pair<int64_t, int64_t>, Value> limits;
  maskFragments(
      x, needMask, s,
      [&](FragmentBuilder &y, int64_t r, int64_t n, int64_t h, int64_t e) {
        Value &limit = limits[{r, h}];
        if (!limit) {
          Value lastKey = y.sub(tk, y.cstIndex(1));
          Value offset = inBranch && causal != CausalKind::none
                             ? inBranch(y, causalOffset)
                             : causalOffset;
          limit = causal == CausalKind::none
                      ? lastKey
                      : y.minS(y.add(rowOf(y, r, h), offset), lastKey);
        }
        Value key = y.add(y.add(j0, t2), y.cstIndex(n * 8 + e));
        return y.cmpI(arith::CmpIPredicate::sgt, key, limit);
      });
}

/// One online-softmax step of the forward kernels (FlashAttention-2,
/// Algorithm 1, lines 9-10) in log2 units, on the score fragments `s`
/// (R m16 tiles) with running maxima `m` and this lane's partial row sums
/// `l` of rows (r, h) at index 2r + h; `scaleC` is scoreFactor's factor.
struct OnlineSoftmaxStep {
  SmallVector<Value> m, l, alphas; // new max, new partial sum, exp2(m - m')
  Value anyMaxChanged;             // some row max of this thread moved
  SmallVector<SmallVector<Value>> p; // exp2(s * c - m') C fragments
};

inline OnlineSoftmaxStep onlineSoftmaxStep(FragmentBuilder &x,
                                           ArrayRef<SmallVector<Value>> s,
                                           ArrayRef<Value> m, ArrayRef<Value> l,
                                           Value scaleC) {
  const int64_t R = s.size();
  OnlineSoftmaxStep step;
  step.m.resize(2 * R);
  step.l.resize(2 * R);
  step.alphas.resize(2 * R);
  step.p.resize(R);
  Value zero = x.cstF32(0.0), ninf = x.cstF32(kNegInf);
  for (int64_t r = 0; r < R; ++r) {
    Value mUse[2];
    for (int64_t h = 0; h < 2; ++h) {
      int64_t i = 2 * r + h;
      Value mx = ninf;
      for (Value tile : s[r])
        for (int64_t e = 0; e < 2; ++e)
          mx = x.maxF(mx, x.extract(tile, {h, e}));
      mx = x.rowReduce(mx, /*isMax=*/true);
      Value mNew = x.maxF(m[i], x.mulF(mx, scaleC));
      step.m[i] = mNew;
      // While no key of the row is visible m' = -inf: subtract 0 so that
      // exp2(-inf - 0) = 0 instead of exp2(-inf + inf) = NaN.
      mUse[h] = x.select(x.isNegInf(mNew), zero, mNew);
      step.alphas[i] = x.exp2(x.subF(m[i], mUse[h]));
      step.l[i] = x.mulF(l[i], step.alphas[i]);
      Value changed = arith::CmpFOp::create(
          x.b, x.loc, arith::CmpFPredicate::ONE, m[i], mNew);
      step.anyMaxChanged =
          step.anyMaxChanged
              ? arith::OrIOp::create(x.b, x.loc, step.anyMaxChanged, changed)
              : changed;
    }
    // p = exp2(s * c - m') in place, and the lane's partial row sums.
    Value negM[2] = {arith::NegFOp::create(x.b, x.loc, mUse[0]),
                     arith::NegFOp::create(x.b, x.loc, mUse[1])};
    for (Value tile : s[r])
      step.p[r].push_back(
          mapFragment(x, tile, [&](Value v, int64_t h, int64_t) {
            Value e = x.exp2(x.fma(v, scaleC, negM[h]));
            step.l[2 * r + h] = x.addF(step.l[2 * r + h], e);
            return e;
          }));
  }
  return step;
}

/// O *= alpha for the accumulator tiles `acc` (R x oTiles, row-major; tile
/// (r, n) scaled by alphas[2r + h]), only in a thread where some row's max
/// moved (`cond`): where it did not, alpha = exp2(0) = 1 exactly (once every
/// row has seen its largest scores, most blocks skip the rescale). A -inf
/// max that stays -inf leaves O = 0 either way.
inline void rescaleIfMaxMoved(FragmentBuilder &x, Value cond,
                              SmallVectorImpl<Value> &acc, int64_t oTiles,
                              ArrayRef<Value> alphas) {
  SmallVector<Type> accTypes(acc.size(), x.vec({2, 2}, x.f32));
  auto rescale = scf::IfOp::create(x.b, x.loc, accTypes, cond,
                                   /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(x.b);
  x.b.setInsertionPointToStart(rescale.thenBlock());
  SmallVector<Value> scaled;
  for (auto [i, tile] : llvm::enumerate(acc)) {
    int64_t r = i / oTiles;
    scaled.push_back(mapFragment(x, tile, [&](Value v, int64_t h, int64_t) {
      return x.mulF(v, alphas[2 * r + h]);
    }));
  }
  scf::YieldOp::create(x.b, x.loc, scaled);
  x.b.setInsertionPointToStart(rescale.elseBlock());
  scf::YieldOp::create(x.b, x.loc, ValueRange(acc));
  x.b.setInsertionPointAfter(rescale);
  for (auto [i, result] : llvm::enumerate(rescale.getResults()))
    acc[i] = result;
}

/// The forward epilogue for fragment half `h` (row g or g + 8) of one m16
/// tile: l = the lane's partial sum `lPartial` summed over the 4 lanes of
/// the row; o = O / l (0 for a row that saw no key, l = 0) stored from the
/// C fragments `accRow` when the row (`rowOf()`) is below Tq; with `lse`,
/// lse = m ln 2 + ln l (-inf for an empty row) from the lane with t = 0.
/// With `stageO`, o is not stored here: stageO(fb, 1 / l) gets the factor
/// (every row, in range or not) and writes o where a bulk store takes it.
inline void storeForwardRow(
    FragmentBuilder &fb, ArrayRef<Value> accRow, Value m, Value lPartial,
    int64_t h, llvm::function_ref<Value()> rowOf, Value tq, Value o, Value lse,
    Value batch, Value t, Value t2,
    llvm::function_ref<void(FragmentBuilder &, Value)> stageO = nullptr) {
  const double ln2 = 0.6931471805599453;
  OpBuilder &b = fb.b;
  Location loc = fb.loc;
  Value zero = fb.cstF32(0.0);
  Value l = fb.rowReduce(lPartial, /*isMax=*/false);
  Value empty =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, zero);
  Value inv = fb.select(empty, zero,
                        arith::DivFOp::create(b, loc, fb.cstF32(1.0), l));
  if (stageO) {
    stageO(fb, inv);
    if (!lse)
      return;
  }
  Value row = rowOf();
  Value valid = fb.cmpI(arith::CmpIPredicate::slt, row, tq);
  scf::IfOp::create(b, loc, valid, [&](OpBuilder &ib, Location il) {
    FragmentBuilder y(ib, il, fb.elt);
    if (!stageO)
      storeFragmentRow(y, accRow, h, inv, o, batch, row, t2);
    if (lse) {
      Value isFirst = y.cmpI(arith::CmpIPredicate::eq, t, y.cstIndex(0));
      scf::IfOp::create(ib, il, isFirst, [&](OpBuilder &sb, Location sl) {
        FragmentBuilder z(sb, sl, fb.elt);
        Value value =
            z.addF(z.mulF(m, z.cstF32(ln2)), math::LogOp::create(sb, sl, l));
        z.store(z.select(empty, z.cstF32(kNegInf), value), lse, {batch, row});
        scf::YieldOp::create(sb, sl);
      });
    }
    scf::YieldOp::create(ib, il);
  });
}

// Backward pass (FlashAttention-2, Algorithm 2): P from the saved lse.

/// lse (natural log) as the exp2 offset of P = exp2(s c - lse log2 e): +inf
/// for a row that sees no key (lse = -inf), so that its P is exactly 0.
inline Value lseLog2(FragmentBuilder &x, Value lse) {
  const double log2e = 1.4426950408889634;
  return x.select(x.isNegInf(lse),
                  x.cstF32(std::numeric_limits<double>::infinity()),
                  x.mulF(lse, x.cstF32(log2e)));
}

/// Applies the scale before the max-free exp2 of the backward: P =
/// exp2(s * c - lse2) as one fma per element; P = exp2(s * c) where
/// `negLse2` gives a null Value (the offset is already in s).
inline SmallVector<SmallVector<Value>>
probabilities(FragmentBuilder &x, ArrayRef<SmallVector<Value>> s, Value c,
              llvm::function_ref<Value(int64_t, int64_t, int64_t, int64_t)>
                  negLse2) {
  SmallVector<SmallVector<Value>> p(s.size());
  for (auto [r, row] : llvm::enumerate(s))
    for (auto [n, tile] : llvm::enumerate(row))
      p[r].push_back(mapFragment(x, tile, [&](Value v, int64_t h, int64_t e) {
        Value offset = negLse2(r, n, h, e);
        return x.exp2(offset ? x.fma(v, c, offset) : x.mulF(v, c));
      }));
  return p;
}

/// dS = P (dP - delta); dS = P dP where `delta` gives a null Value (delta
/// is already in dP).
inline SmallVector<SmallVector<Value>>
scoreGradients(FragmentBuilder &x, ArrayRef<SmallVector<Value>> p,
               ArrayRef<SmallVector<Value>> dp,
               llvm::function_ref<Value(int64_t, int64_t, int64_t, int64_t)>
                   delta) {
  SmallVector<SmallVector<Value>> ds(p.size());
  for (size_t r = 0; r < p.size(); ++r)
    for (size_t n = 0; n < p[r].size(); ++n) {
      Value tile = p[r][n];
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t e = 0; e < 2; ++e) {
          Value d = delta(r, n, h, e);
          Value dpv = x.extract(dp[r][n], {h, e});
          Value grad =
              x.mulF(x.extract(p[r][n], {h, e}), d ? x.subF(dpv, d) : dpv);
          tile = x.insert(grad, tile, {h, e});
        }
      ds[r].push_back(tile);
    }
  return ds;
}


/// Waits until every cp.async group of this thread has completed.
inline void buildWaitAllCopies(FragmentBuilder &fb) {
  NVVM::CpAsyncWaitGroupOp::create(fb.b, fb.loc, 0);
}


} // namespace gpukernel
} // namespace fa
} // namespace mlir

#endif // FA_LIB_CONVERSION_FATOGPU_TENSORCOREFRAGMENTS_H
