//===- BackwardKernels.cpp - fa.attention_backward to GPU kernels -------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// The backward half of `convert-fa-to-gpu`: every fa.attention_backward
// becomes one gpu.module holding three kernels, launched in this order
// (FlashAttention-2's backward, Dao 2023, arXiv:2307.08691, Algorithm 2,
// with the recompute-from-lse tiling of fa-tile-attention-backward):
//
// 1. `<name>_delta`, one thread per query row (grid ceil(Tq / 128) x batch):
//      delta[b, i] = sum_e do[b, i, e] * o[b, i, e]          (f32 scratch)
//    and, unless deterministic, dq_accum[b, i, :] = 0      (f32 scratch).
//
// 2. `<name>_dkdv`, one GPU block per key block of block_n rows and batch
//    index (grid ceil(Tk / block_n) x batch), one thread per key row
//    j = j0 + thread_id.x. The block's K tile stays in workgroup memory; the
//    thread keeps its v row and its dk, dv accumulators (f32) in private
//    memory. For every query block i0 (block_m rows) from the first row
//    that sees key j0 (causal: clamp(j0 - offset, 0, Tq); earlier blocks
//    are skipped by the loop bound) to Tq:
//      barrier; Q, dO tiles and lse, delta -> workgroup memory; barrier
//      per row r:  s = scale q[r] . k[j]
//                  p = exp(s - lse[r])  (0 if lse[r] = -inf, or, on blocks
//                                         straddling the diagonal only, if
//                                         j > i0 + r + offset)
//                  dv[j] += p do[r];  dp = do[r] . v[j]
//                  ds = p (dp - delta[r]);  dk[j] += ds q[r]
//                  dsTile[r, j - j0] = ds               (atomic mode)
//      atomic mode: barrier; the threads stride over the rows x D elements
//      of the query tile: dq_accum[i0 + r, d] +=
//      scale sum_c dsTile[r, c] k[j0 + c, d] with one f32 memref.atomic_rmw
//      per element and key block.
//    Finally dk[j] = scale dk[j], dv[j] in the result types.
//
// 3. atomic mode: `<name>_dq_convert` (one thread per query row):
//    dq = dq_accum in dq's element type (the wgmma kernels:
//    buildTensorCoreConvertBody, which with the producer warpgroup's
//    DqAccumLayout also scales and reorders the columns).
//    deterministic: `<name>_dq`, one GPU block per query block (grid
//    ceil(Tq / block_m) x batch), one thread per query row, K/V tiles in
//    workgroup memory (the forward's structure): recomputes p and ds for its
//    row over the visible key blocks (causal: up to the block's diagonal)
//    and sums dq in a fixed order, so dq is bitwise reproducible.
//
// Nothing of size Tq x Tk exists; the scratch is O(batch Tq D).
//
//===----------------------------------------------------------------------===//

#include "fa/Conversion/FAToGPU/FAToGPU.h"
#include "fa/Dialect/FA/IR/FA.h"

#include "KernelUtils.h"
#include "TensorCoreKernels.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/Support/MathExtras.h"

#include <limits>
#include <optional>
#include <string>

using namespace mlir;
using namespace mlir::fa;
using namespace mlir::fa::gpukernel;

/// Threads per block of the row-parallel kernels (delta, dq conversion).
static constexpr int64_t kRowThreads = 128;

namespace {

/// The static facts of one fa.attention_backward that shape its kernels.
struct BackwardShape {
  Type elt, oElt, doElt, dqElt, dkElt, dvElt;
  SmallVector<int64_t> batchShape;
  int64_t batch, tq, tk, d, dv;
  CausalKind causal;
  float scale;
  bool deterministic;
  /// dk/dv kernel: query rows per tile, key rows per block (= threads).
  int64_t blockM, blockN;
  /// dq kernel (deterministic): query rows per block (= threads), key rows
  /// per tile.
  int64_t dqBlockM, dqBlockN;
  /// The tensor-core kernels (TensorCoreBackward.cpp) for _dkdv and _dq.
  bool tensorCore = false;
  gpukernel::TensorCoreBackwardShape tcDkDv, tcDq;
  /// The sm_90a wgmma kernels (WgmmaBackward.cpp; tensorCore is set too).
  bool wgmma = false;
  gpukernel::WgmmaBackwardShape wgDkDv, wgDq;
  /// Bits of the kernels' `index` type (all kernels of the module): 32 only
  /// for the TMA wgmma kernels (backwardIndexBitwidth).
  int64_t indexBitwidth = 64;
};

} // namespace

static int64_t byteWidth(Type t) { return t.getIntOrFloatBitWidth() / 8; }

/// Workgroup memory of the dk/dv kernel for block sizes (bm, bn).
static int64_t dkdvSharedBytes(const BackwardShape &bs, int64_t bm,
                               int64_t bn) {
  int64_t bytes = (bn + bm) * bs.d * byteWidth(bs.elt) +
                  bm * bs.dv * byteWidth(bs.doElt) + 2 * bm * 4;
  if (!bs.deterministic)
    bytes += bm * bn * 4; // dsTile
  return bytes;
}

static std::string dimString(int64_t d) {
  return ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d);
}

/// Completes `bs` for the tensor-core backward kernels: `_dkdv` with
/// blocks of block-n keys (default 16 per warp) over query tiles of block-m
/// rows (default 48 up to head dim 64, else 32: the most that stay clear of
/// spills), `_dq` with blocks of 16 * num-warps queries over key tiles of
/// block-n rows (default 64 up to head dim 64, else 32). Always the deterministic kernel list (no
/// atomics).
static FailureOr<BackwardShape>
getTensorCoreBackwardShape(AttentionBackwardOp op,
                           const AttentionKernelOptions &options,
                           BackwardShape bs) {
  int64_t warps = options.numWarps ? options.numWarps : 4;
  int64_t maxD = std::max(bs.d, bs.dv);
  int64_t keys = options.blockN ? options.blockN : 16 * warps;
  int64_t queryTile = options.blockM ? options.blockM : (maxD <= 64 ? 48 : 32);
  int64_t keyTile = options.blockN ? options.blockN : (maxD <= 64 ? 64 : 32);
  if (keys % (16 * warps) != 0 || keys / (16 * warps) > 2)
    return op.emitOpError("the tensor-core backward expects block-n (keys "
                          "per dk/dv block) to be 16 or 32 keys per warp "
                          "(num-warps = ")
           << warps << "), got block-n = " << keys;
  if (queryTile % 16 != 0)
    return op.emitOpError("the tensor-core backward expects block-m (queries "
                          "per dk/dv tile) to be a multiple of 16, got ")
           << queryTile;
  auto shape = [&](int64_t tiles) {
    return gpukernel::TensorCoreBackwardShape{
        bs.elt,     bs.d,      bs.dv,     bs.causal, bs.scale, warps, tiles,
        queryTile, keyTile,
        /*operandsInShared=*/tiles * (bs.d + bs.dv) / 4 > 32};
  };
  bs.tensorCore = true;
  bs.deterministic = true;
  bs.tcDkDv = shape(keys / (16 * warps));
  bs.tcDq = shape(1);
  bs.blockN = keys;
  bs.blockM = queryTile;
  bs.dqBlockM = 16 * warps;
  bs.dqBlockN = keyTile;
  for (bool dkdv : {true, false}) {
    int64_t bytes = gpukernel::tensorCoreBackwardLayout(
                        dkdv ? bs.tcDkDv : bs.tcDq, dkdv)
                        .bytes;
    if (bytes > options.maxSharedBytes)
      return op.emitOpError("the tensor-core backward's ")
             << (dkdv ? "dk/dv" : "dq") << " tiles take " << bytes
             << overSharedLimit(options.maxSharedBytes);
  }
  return bs;
}

/// Completes `bs` for the sm_90a wgmma backward kernels with blocks of
/// `warps` warps (16 x warps own rows: keys per `_dkdv` block, queries per
/// `_dq` block) over loop tiles of block-m queries (`_dkdv`; default 64, or
/// 32 where 64 does not fit the registers or the copy split; with dq
/// atomics 128 first) and block-n keys (`_dq`; default 128, 64 or 32, the
/// first that fits); three loop stages when they fit max-shared-bytes,
/// else two (always two for the dq-atomics 128-query tiles). Returns
/// std::nullopt with the reason in `why` on a shape the kernels cannot
/// take.
static std::optional<BackwardShape>
resolveWgmmaBackward(BackwardShape bs, const AttentionKernelOptions &options,
                     int64_t warps, std::string &why) {
  llvm::raw_string_ostream os(why);
  // Registers per thread (at most 255; 65536 per multiprocessor) that the
  // tile values may take, leaving some 16 for addresses: _dkdv holds dK,
  // dV, S^T, dP^T, the packed P^T and dS^T and the lse and delta of its
  // query columns (2 x tile / 4), and the addresses of the column loads
  // (measured: 5 x tile / 2 in all); _dq dQ, S, dP, the packed dS and
  // that of the previous tile (3 x tile / 2), and the descriptors of the
  // Dv / 16 k-steps of dP = dO V^T (measured: Dv / 8; D = 64, Dv = 128
  // with 128-key tiles spilled without this term). With dq atomics, _dkdv
  // carries no dS^T: dK, dV, S^T and dP^T (tile), and a warpgroup's share
  // of the tile's dQ (tile x D / warpgroups values over 128 threads;
  // measured with TMA: 64-query tiles at D 128 take 250-255 registers
  // without spills with two warpgroups and spill with one, and cp.async's
  // copy addresses spilled there: 24 more). The split _dkdv with TMA keeps
  // no copy addresses and takes its column values from workgroup memory
  // per use: measured with ptxas, 64-query tiles fit at every D, Dv in
  // {32, 64, 128} (248-255 registers at D = Dv = 128) and 128-query tiles
  // spill unless D = Dv = 32, which D / 2 + Dv / 2 + 3 x tile / 2 + 8
  // separates.
  // D = Dv only: with D != Dv the causal _dkdv spilled (e.g. 20 bytes at D
  // 128, Dv 64), and the GPU check covers D = Dv.
  const bool dqAtomic = options.dqAtomics && !options.deterministic &&
                        (bs.d == 64 || bs.d == 128) && bs.dv == bs.d;
  // The producer warpgroup of the dq-atomics _dkdv with TMA: its 128
  // threads copy the 2 x tile lse/delta values of a tile, 2 x tile / 128
  // each (2 x tile a multiple of 128). `auto`: D = Dv = 128 without a mask
  // or with a top-left causal one, where it was measured faster (top-left:
  // +2.6-3.9% at T 2k-8k on the H200; no mask: 1.2-1.7% slower before the
  // fragment-order dQ staging, +2-4% at T 2k-16k with it on the H100,
  // thirty-fourth session); 0.8-2% slower at D 64, where ptxas spills 4
  // bytes. With bottom_right, ptxas spilled one 8-byte value of the
  // prologue at D 128 (not measured since). Only the tiles it was checked with:
  // 64 queries at D 128, 128 at D 64 (at D 64 with 64-query tiles the consumers
  // spilled 50-120 bytes).
  auto producerFor = [&](bool dkdv, int64_t tile) {
    if (!dkdv || !dqAtomic || !options.tma || tile * bs.d != 8192)
      return false;
    switch (options.backwardProducerWarp) {
    case BackwardProducerWarp::Off:
      return false;
    case BackwardProducerWarp::Auto:
      return bs.causal != CausalKind::bottom_right && bs.d == 128;
    case BackwardProducerWarp::On:
      return true;
    }
    return false;
  };
  // With the producer warpgroup the consumers get what setmaxnreg gives.
  auto regBudget = [&](bool dkdv, int64_t tile) {
    return (producerFor(dkdv, tile)
                ? gpukernel::consumerRegisters(warps)
                : std::min<int64_t>(255, 65536 / (32 * warps))) -
           16;
  };
  auto regs = [&](bool dkdv, int64_t tile) {
    if (dkdv && dqAtomic)
      return bs.d / 2 + bs.dv / 2 + tile + tile * bs.d / (128 * (warps / 4)) +
             (options.tma ? 0 : 24);
    if (dkdv)
      return bs.d / 2 + bs.dv / 2 +
             (options.tma ? 3 * tile / 2 + 8 : 5 * tile / 2);
    return bs.d / 2 + bs.dv / 8 + 3 * tile / 2;
  };
  // cp.async: the 8-row x 32-column copy groups of a tile split over the
  // warps (TMA: one thread issues the copies).
  auto splitsEvenly = [&](int64_t tile) {
    return options.tma || ((tile / 8) * (bs.d / 32) % warps == 0 &&
                           (tile / 8) * (bs.dv / 32) % warps == 0);
  };
  // dq atomics (dq-atomics, deterministic off, head dim 64 or 128): _dkdv
  // also adds its key block's share of dq into dq_accum, and there is no
  // _dq kernel.
  auto shapeOf = [&](bool dkdv, int64_t tile, int64_t stages) {
    gpukernel::WgmmaBackwardShape shape{
        bs.elt, bs.d,   bs.dv, bs.causal, bs.scale,
        warps,  tile,   stages, dkdv,     /*tma=*/options.tma};
    shape.dqAtomic = dkdv && dqAtomic;
    shape.producerWarp = producerFor(dkdv, tile);
    shape.pairKeyBlocks = options.pairKeyBlocks;
    return shape;
  };
  SmallVector<bool, 2> kernels = {true};
  if (!dqAtomic)
    kernels.push_back(false);
  // block-n shapes only the _dq kernel, which dq atomics leave out: still
  // checked, so that a value the split kernels reject is an error either
  // way.
  if (dqAtomic && options.blockN &&
      (options.blockN % 16 != 0 || options.blockN > 256)) {
    os << "the wgmma backward expects block-n (keys per dq tile) to be a "
          "multiple of 16 of at most 256, got "
       << options.blockN;
    return std::nullopt;
  }
  for (bool dkdv : kernels) {
    int64_t given = dkdv ? options.blockM : options.blockN;
    StringRef what = dkdv ? "block-m (queries per dk/dv tile)"
                          : "block-n (keys per dq tile)";
    SmallVector<int64_t, 2> tiles;
    if (given) {
      if (given % 16 != 0 || given > 256) {
        os << "the wgmma backward expects " << what
           << " to be a multiple of 16 of at most 256, got " << given;
        return std::nullopt;
      }
      if (!splitsEvenly(given)) {
        os << "the wgmma backward expects the 8-row x 32-column groups of a "
           << (dkdv ? "Q/dO" : "K/V") << " tile (" << what << " = " << given
           << ", head dims " << bs.d << " and " << bs.dv
           << ") to split evenly over num-warps = " << warps;
        return std::nullopt;
      }
      if (regs(dkdv, given) > regBudget(dkdv, given)) {
        os << "the wgmma backward's " << (dkdv ? "dk/dv" : "dq")
           << " accumulators (" << what << " = " << given << ": "
           << regs(dkdv, given) << " registers per thread) do not fit the "
           << regBudget(dkdv, given) << " a thread of a "
           << 32 * warps + (producerFor(dkdv, given) ? 128 : 0)
           << "-thread block can give them"
           << (producerFor(dkdv, given) ? " (with the producer warpgroup)" : "")
           << "; use a smaller tile";
        return std::nullopt;
      }
      tiles.push_back(given);
    } else {
      // 128-query _dkdv tiles only with dq atomics (where they fit: D 64
      // with TMA and two warpgroups; +8-12% over 64 there, tenth run in
      // PERFORMANCE.md); the split _dkdv was not measured with them.
      for (int64_t tile : {128, 64, 32})
        if ((tile < 128 || !dkdv || dqAtomic) && splitsEvenly(tile) &&
            regs(dkdv, tile) <= regBudget(dkdv, tile))
          tiles.push_back(tile);
      if (tiles.empty()) {
        os << "the wgmma backward has no default " << what << " ("
           << (dkdv ? "64 or 32" : "128, 64 or 32")
           << ") whose tiles split evenly over num-warps = " << warps
           << " and fit the registers (head dims " << bs.d << " and "
           << bs.dv << "); give one";
        return std::nullopt;
      }
    }
    bool found = false;
    int64_t bytes = 0, lastTile = 0, lastStages = 0;
    for (int64_t tile : tiles) {
      lastTile = tile;
      // The dq-atomics _dkdv with 128-query tiles spills with three stages
      // (4 bytes at D 64): two unless `stages` is given.
      SmallVector<int64_t, 2> stageCounts = {3, 2};
      if (options.stages)
        stageCounts = {options.stages};
      else if (dkdv && dqAtomic && tile == 128)
        stageCounts = {2};
      for (int64_t stages : stageCounts) {
        lastStages = stages;
        gpukernel::WgmmaBackwardShape shape = shapeOf(dkdv, tile, stages);
        bytes = gpukernel::wgmmaBackwardLayout(shape).bytes;
        if (bytes <= options.maxSharedBytes) {
          (dkdv ? bs.wgDkDv : bs.wgDq) = shape;
          found = true;
          break;
        }
      }
      if (found)
        break;
    }
    if (!found) {
      os << "the wgmma backward's " << (dkdv ? "dk/dv" : "dq") << " tiles ("
         << 16 * warps << " own rows, " << lastStages << " stages of "
         << lastTile
         << "-row tiles) take " << bytes
         << overSharedLimit(options.maxSharedBytes);
      return std::nullopt;
    }
  }
  bs.tensorCore = true;
  bs.wgmma = true;
  bs.deterministic = !dqAtomic;
  bs.blockN = 16 * warps;
  bs.blockM = bs.wgDkDv.tile;
  bs.dqBlockM = 16 * warps;
  bs.dqBlockN = dqAtomic ? 0 : bs.wgDq.tile;
  return bs;
}

/// The bits of the wgmma backward kernels' `index` type (all kernels of the
/// module). Only the TMA kernels take 32 (the cp.async ones were not
/// checked with it): `option` (32 or 64) when given, else 32 unless a
/// static shape has 2^31 elements or more (on the H200, bf16, the three
/// kernels 0.5-1.4% faster at head dim 64 and 128 without a mask, 1-4% at
/// head dim 128 causal, 4-5% at head dim 64 causal: docs/PERFORMANCE.md,
/// twenty-third run); else 64.
static int64_t backwardIndexBitwidth(AttentionBackwardOp op,
                                     const BackwardShape &bs, int64_t option) {
  if (!bs.wgDkDv.tma)
    return 64;
  if (option)
    return option;
  return gpukernel::hasOversizedTensor(op) ? 64 : 32;
}

/// The sm_90a wgmma backward (default 8 warps) for `bs`. Where none of its
/// defaults fit (e.g. D = 32 with Dv = 128) and no tile or warp option was
/// given, falls back to the mma.sync kernels (which ignore `stages`); with
/// options the kernels cannot take, fails with an op error that says why.
static FailureOr<BackwardShape>
getWgmmaBackwardShape(AttentionBackwardOp op,
                      const AttentionKernelOptions &options,
                      BackwardShape bs) {
  int64_t warps = options.numWarps ? options.numWarps : 8;
  // 12 or 16 warps leave at most 154 or 112 registers per thread: no tile
  // that splits over them fits (checked for D, Dv in {32, 64, 128}).
  if (warps != 4 && warps != 8)
    return op.emitOpError("the wgmma backward expects one or two "
                          "warpgroups: num-warps 4 or 8, got ")
           << warps << " (wgmma=false selects the mma.sync kernels)";
  std::string why;
  if (std::optional<BackwardShape> shape =
          resolveWgmmaBackward(bs, options, warps, why)) {
    const gpukernel::WgmmaBackwardShape &dkdv = shape->wgDkDv;
    if (options.backwardProducerWarp == BackwardProducerWarp::On &&
        !dkdv.producerWarp) {
      if (!dkdv.tma || !dkdv.dqAtomic)
        return op.emitOpError("backward-producer-warp = true needs the "
                              "wgmma backward's TMA loads and dq atomics "
                              "(tma = true, dq-atomics = true, "
                              "deterministic = false, head dim 64 or 128 "
                              "equal to Dv), got ")
               << (!dkdv.tma ? "tma = false"
                             : "the split _dkdv and _dq kernels (no dq "
                               "atomics)");
      return op.emitOpError("backward-producer-warp = true needs the dk/dv "
                            "query tile (block-m) it was built for: 64 at "
                            "head dim 128, 128 at head dim 64, got ")
             << dkdv.tile << " at head dim " << bs.d
             << (options.blockM ? ""
                                : " (the largest default tile that fits the "
                                  "registers and workgroup memory here)");
    }
    int64_t bits = backwardIndexBitwidth(op, *shape, options.indexBitwidth);
    if (failed(gpukernel::checkIndexBitwidth(op, bits)))
      return failure();
    shape->indexBitwidth = bits;
    shape->wgDkDv.indexBitwidth = bits;
    shape->wgDq.indexBitwidth = bits;
    return *shape;
  }
  if (!options.numWarps && !options.blockM && !options.blockN)
    return getTensorCoreBackwardShape(op, options, bs);
  return op.emitOpError(why) << " (wgmma=false selects the mma.sync kernels)";
}

static FailureOr<BackwardShape>
getBackwardShape(AttentionBackwardOp op,
                 const AttentionKernelOptions &givenOptions) {
  if (givenOptions.numWarps < 0 || givenOptions.numWarps > 16)
    return op.emitOpError("expected num-warps in [1, 16], or 0 for the "
                          "default of the head dim, got ")
           << givenOptions.numWarps;
  // 0 selects the default block size, 64.
  AttentionKernelOptions options = givenOptions;
  if (options.blockM == 0)
    options.blockM = 64;
  if (options.blockN == 0)
    options.blockN = 64;
  if (options.blockM < 1 || options.blockM > 1024)
    return op.emitOpError("expected block-m in [1, 1024], or 0 for the "
                          "default, got ")
           << options.blockM;
  if (options.blockN < 1 || options.blockN > 1024)
    return op.emitOpError("expected block-n in [1, 1024], or 0 for the "
                          "default, got ")
           << options.blockN;

  BackwardShape bs;
  auto qTy = op.getQ().getType(), kTy = op.getK().getType(),
       vTy = op.getV().getType(), oTy = op.getO().getType(),
       doTy = op.getDout().getType();
  auto dqTy = op.getDq().getType(), dkTy = op.getDk().getType(),
       dvTy = op.getDv().getType();
  int64_t nb = op.getNumBatchDims();
  bs.elt = qTy.getElementType();
  bs.oElt = oTy.getElementType();
  bs.doElt = doTy.getElementType();
  bs.dqElt = dqTy.getElementType();
  bs.dkElt = dkTy.getElementType();
  bs.dvElt = dvTy.getElementType();
  bs.batch = 1;
  for (int64_t i = 0; i < nb; ++i) {
    int64_t dim = staticDim({qTy.getDimSize(i), kTy.getDimSize(i),
                             vTy.getDimSize(i), oTy.getDimSize(i),
                             doTy.getDimSize(i), dqTy.getDimSize(i)});
    bs.batchShape.push_back(dim);
    if (ShapedType::isDynamic(dim) || ShapedType::isDynamic(bs.batch))
      bs.batch = ShapedType::kDynamic;
    else if (llvm::MulOverflow(bs.batch, dim, bs.batch))
      return op.emitOpError("expected the product of the batch dims to fit "
                            "in 64 bits (at most 2^63 - 1)");
  }
  bs.tq = staticDim({qTy.getDimSize(nb), oTy.getDimSize(nb),
                     doTy.getDimSize(nb), dqTy.getDimSize(nb)});
  bs.tk = staticDim({kTy.getDimSize(nb), vTy.getDimSize(nb),
                     dkTy.getDimSize(nb), dvTy.getDimSize(nb)});
  bs.d = staticDim({qTy.getDimSize(nb + 1), kTy.getDimSize(nb + 1),
                    dqTy.getDimSize(nb + 1), dkTy.getDimSize(nb + 1)});
  bs.dv = staticDim({vTy.getDimSize(nb + 1), oTy.getDimSize(nb + 1),
                     doTy.getDimSize(nb + 1), dvTy.getDimSize(nb + 1)});
  if (ShapedType::isDynamic(bs.d) || ShapedType::isDynamic(bs.dv))
    return op.emitOpError("fa-to-ptx expects static head dims, got D = ")
           << dimString(bs.d) << " and Dv = " << dimString(bs.dv);
  if (bs.d < 1 || bs.dv < 1)
    return op.emitOpError("expected positive head dims, got D = ")
           << bs.d << " and Dv = " << bs.dv;
  bs.causal = op.getCausal();
  bs.scale = static_cast<float>(*op.getStaticScale());
  bs.deterministic = options.deterministic;
  if (givenOptions.tensorCores && (bs.elt.isF16() || bs.elt.isBF16()) &&
      bs.doElt == bs.elt && bs.d % 16 == 0 && bs.dv % 16 == 0 &&
      bs.d <= 128 && bs.dv <= 128) {
    if (!scaleFoldsInF32(bs.scale))
      return op.emitOpError("the tensor-core kernels fold scale * log2(e) "
                            "into one f32, expected |scale| <= 2.35e38, got ")
             << bs.scale;
    // The sm_90a wgmma kernels: head dims 32, 64 and 128.
    auto wgmmaDim = [](int64_t d) { return d == 32 || d == 64 || d == 128; };
    if (givenOptions.wgmma && wgmmaDim(bs.d) && wgmmaDim(bs.dv))
      return getWgmmaBackwardShape(op, givenOptions, bs);
    return getTensorCoreBackwardShape(op, givenOptions, bs);
  }

  // dk/dv kernel: halve the larger block size until the tiles fit in static
  // shared memory.
  int64_t bm = options.blockM, bn = options.blockN;
  while (dkdvSharedBytes(bs, bm, bn) > kMaxStaticSharedBytes) {
    if (bm == 1 && bn == 1)
      return op.emitOpError("expected the backward tiles of one query and "
                            "one key row (")
             << dkdvSharedBytes(bs, 1, 1) << " bytes) to fit in "
             << kMaxStaticSharedBytes << " bytes of shared memory, got D = "
             << bs.d << " and Dv = " << bs.dv;
    if (bm >= bn)
      bm = (bm + 1) / 2;
    else
      bn = (bn + 1) / 2;
  }
  bs.blockM = bm;
  bs.blockN = bn;

  // dq kernel: K and V tiles of dqBlockN rows, as in the forward.
  int64_t rowBytes = (bs.d + bs.dv) * byteWidth(bs.elt);
  bs.dqBlockM = options.blockM;
  bs.dqBlockN = std::min(options.blockN, kMaxStaticSharedBytes / rowBytes);
  if (bs.deterministic && bs.dqBlockN < 1)
    return op.emitOpError("expected one key and one value row (")
           << rowBytes << " bytes) to fit in " << kMaxStaticSharedBytes
           << " bytes of shared memory, got D = " << bs.d
           << " and Dv = " << bs.dv;
  return bs;
}

LogicalResult
mlir::fa::checkAttentionBackwardKernels(AttentionBackwardOp op,
                                        const AttentionKernelOptions &options) {
  return getBackwardShape(op, options);
}

//===----------------------------------------------------------------------===//
// Loop and branch helpers
//===----------------------------------------------------------------------===//

/// for (iv = lb; iv < ub; iv += step) body(iv).
static void buildFor(KernelBuilder &kb, Value lb, Value ub, Value step,
                     function_ref<void(KernelBuilder &, Value)> body) {
  scf::ForOp::create(kb.b, kb.loc, lb, ub, step, ValueRange{},
                     [&](OpBuilder &b, Location l, Value iv, ValueRange) {
                       KernelBuilder t(b, l);
                       body(t, iv);
                       scf::YieldOp::create(b, l);
                     });
}

/// init + sum of term(iv) for iv in [lb, ub), in f32, in index order.
static Value buildSum(KernelBuilder &kb, Value lb, Value ub, Value init,
                      function_ref<Value(KernelBuilder &, Value)> term) {
  auto loop = scf::ForOp::create(
      kb.b, kb.loc, lb, ub, kb.cstIndex(1), ValueRange{init},
      [&](OpBuilder &b, Location l, Value iv, ValueRange acc) {
        KernelBuilder t(b, l);
        scf::YieldOp::create(b, l, ValueRange{t.addF(acc[0], term(t, iv))});
      });
  return loop.getResult(0);
}

/// if (cond) then().
static void buildIf(KernelBuilder &kb, Value cond,
                    function_ref<void(KernelBuilder &)> then) {
  scf::IfOp::create(kb.b, kb.loc, cond, [&](OpBuilder &b, Location l) {
    KernelBuilder t(b, l);
    then(t);
    scf::YieldOp::create(b, l);
  });
}

/// Runs body(mask) under causal masking: with the element-wise mask only
/// when the (query block, key block) pair straddles the diagonal, i.e. its
/// last key is past the diagonal of its first query row:
/// lastKey > firstRow + offset. Without causal, body(false).
static void buildMaskedOrNot(KernelBuilder &kb, CausalKind causal,
                             Value lastKey, Value firstRow, Value offset,
                             function_ref<void(KernelBuilder &, bool)> body) {
  if (causal == CausalKind::none) {
    body(kb, /*causalMask=*/false);
    return;
  }
  Value straddles = kb.cmpI(arith::CmpIPredicate::sgt, lastKey,
                            kb.add(firstRow, offset));
  scf::IfOp::create(
      kb.b, kb.loc, straddles,
      [&](OpBuilder &b, Location l) {
        KernelBuilder t(b, l);
        body(t, /*causalMask=*/true);
        scf::YieldOp::create(b, l);
      },
      [&](OpBuilder &b, Location l) {
        KernelBuilder t(b, l);
        body(t, /*causalMask=*/false);
        scf::YieldOp::create(b, l);
      });
}

/// p = exp(s - lse); 0 when lse = -inf (the row sees no key) or `hidden`
/// (when given) is true. Never computes with a NaN-producing operand.
static Value buildProbability(KernelBuilder &t, Value s, Value lse,
                              Value hidden) {
  Value e = math::ExpOp::create(t.b, t.loc, t.subF(s, lse));
  Value off = t.isNegInf(lse);
  if (hidden)
    off = arith::OrIOp::create(t.b, t.loc, off, hidden);
  return arith::SelectOp::create(t.b, t.loc, off, t.cstF32(0.0), e);
}

/// Query i sees keys j <= i + offset: 0 (top_left, none) or Tk - Tq.
static Value causalOffset(KernelBuilder &kb, CausalKind causal, Value tq,
                          Value tk) {
  if (causal == CausalKind::bottom_right)
    return kb.sub(tk, tq);
  return kb.cstIndex(0);
}

//===----------------------------------------------------------------------===//
// Kernel bodies
//===----------------------------------------------------------------------===//

/// delta[b, i] = rowsum(do * o); dq_accum[b, i, :] = 0 (atomic mode).
static void buildDeltaBody(OpBuilder &b, Location loc, gpu::GPUFuncOp func,
                           const BackwardShape &bs) {
  b.setInsertionPointToStart(&func.front());
  KernelBuilder kb(b, loc);
  Value o = func.getArgument(0), dout = func.getArgument(1),
        delta = func.getArgument(2);
  Value dqAcc = bs.deterministic ? Value() : func.getArgument(3);
  Value c0 = kb.cstIndex(0), c1 = kb.cstIndex(1), zero = kb.cstF32(0.0);
  Value tq = memref::DimOp::create(b, loc, o, 1);
  Value batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value row = kb.add(
      kb.mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
             kb.cstIndex(kRowThreads)),
      gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));
  buildIf(kb, kb.cmpI(arith::CmpIPredicate::slt, row, tq), [&](auto &t) {
    Value sum = buildSum(t, c0, t.cstIndex(bs.dv), zero, [&](auto &u, Value e) {
      return u.mulF(u.toF32(u.load(dout, {batch, row, e})),
                    u.toF32(u.load(o, {batch, row, e})));
    });
    t.store(sum, delta, {batch, row});
    if (dqAcc)
      buildFor(t, c0, t.cstIndex(bs.d), c1, [&](auto &u, Value d) {
        u.store(zero, dqAcc, {batch, row, d});
      });
  });
  gpu::ReturnOp::create(b, loc);
}

/// dq = dq_accum in dq's element type (the scalar kernels' `_dq_convert`;
/// the wgmma ones: gpukernel::buildTensorCoreConvertBody).
static void buildConvertBody(OpBuilder &b, Location loc, gpu::GPUFuncOp func,
                             const BackwardShape &bs) {
  b.setInsertionPointToStart(&func.front());
  KernelBuilder kb(b, loc);
  Value dqAcc = func.getArgument(0), dq = func.getArgument(1);
  Value c0 = kb.cstIndex(0), c1 = kb.cstIndex(1);
  Value tq = memref::DimOp::create(b, loc, dq, 1);
  Value batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value row = kb.add(
      kb.mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
             kb.cstIndex(kRowThreads)),
      gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));
  buildIf(kb, kb.cmpI(arith::CmpIPredicate::slt, row, tq), [&](auto &t) {
    buildFor(t, c0, t.cstIndex(bs.d), c1, [&](auto &u, Value d) {
      u.store(u.fromF32(u.load(dqAcc, {batch, row, d}), bs.dqElt), dq,
              {batch, row, d});
    });
  });
  gpu::ReturnOp::create(b, loc);
}

/// The dk/dv kernel (and the dq atomics); see the file header.
static void buildDkDvBody(OpBuilder &b, Location loc, gpu::GPUFuncOp func,
                          const BackwardShape &bs) {
  b.setInsertionPointToStart(&func.front());
  KernelBuilder kb(b, loc);
  Value q = func.getArgument(0), k = func.getArgument(1),
        v = func.getArgument(2), dout = func.getArgument(3),
        lse = func.getArgument(4), delta = func.getArgument(5),
        dk = func.getArgument(6), dv = func.getArgument(7);
  Value dqAcc = bs.deterministic ? Value() : func.getArgument(8);
  auto wg = func.getWorkgroupAttributions();
  Value kTile = wg[0], qTile = wg[1], doTile = wg[2], lseTile = wg[3],
        deltaTile = wg[4];
  Value dsTile = bs.deterministic ? Value() : Value(wg[5]);
  Value vRow = func.getPrivateAttributions()[0];
  Value dkAcc = func.getPrivateAttributions()[1];
  Value dvAcc = func.getPrivateAttributions()[2];

  Value c0 = kb.cstIndex(0), c1 = kb.cstIndex(1), zero = kb.cstF32(0.0);
  Value bm = kb.cstIndex(bs.blockM), bn = kb.cstIndex(bs.blockN);
  Value dC = kb.cstIndex(bs.d), dvC = kb.cstIndex(bs.dv);
  Value scale = kb.cstF32(bs.scale);
  Value tq = memref::DimOp::create(b, loc, q, 1);
  Value tk = memref::DimOp::create(b, loc, k, 1);
  Value keyBlock = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);

  // This block's keys [j0, j0 + cols); this thread's key j (valid if < Tk;
  // the others only help with copies and barriers).
  Value j0 = kb.mul(keyBlock, bn);
  Value cols = kb.minS(bn, kb.sub(tk, j0));
  Value key = kb.add(j0, tid);
  Value keyValid = kb.cmpI(arith::CmpIPredicate::slt, tid, cols);
  Value offset = causalOffset(kb, bs.causal, tq, tk);

  // The K tile stays for the whole kernel; the v row and the accumulators
  // are the thread's.
  buildTileCopy(kb, k, kTile, batch, j0, cols, bs.d, tid, bn);
  buildIf(kb, keyValid, [&](auto &t) {
    buildFor(t, c0, dvC, c1, [&](auto &u, Value e) {
      u.store(u.toF32(u.load(v, {batch, key, e})), vRow, {e});
      u.store(zero, dvAcc, {e});
    });
    buildFor(t, c0, dC, c1,
             [&](auto &u, Value d) { u.store(zero, dkAcc, {d}); });
  });

  // Query blocks: under causal, from the first row that sees key j0,
  // qStart = clamp(j0 - offset, 0, Tq); rows before it see none of the
  // block's keys.
  Value qStart = c0;
  if (bs.causal != CausalKind::none)
    qStart = kb.minS(kb.maxS(kb.sub(j0, offset), c0), tq);

  buildFor(kb, qStart, tq, bm, [&](auto &t, Value i0) {
    Value rows = t.minS(bm, t.sub(tq, i0));
    // Everyone is done with the previous query tile (and dsTile).
    gpu::BarrierOp::create(t.b, t.loc);
    buildTileCopy(t, q, qTile, batch, i0, rows, bs.d, tid, bn);
    buildTileCopy(t, dout, doTile, batch, i0, rows, bs.dv, tid, bn);
    buildFor(t, tid, rows, bn, [&](auto &u, Value r) {
      Value i = u.add(i0, r);
      u.store(u.load(lse, {batch, i}), lseTile, {r});
      u.store(u.load(delta, {batch, i}), deltaTile, {r});
    });
    gpu::BarrierOp::create(t.b, t.loc);

    buildIf(t, keyValid, [&](auto &u) {
      Value lastKey = u.sub(u.add(j0, cols), c1);
      buildMaskedOrNot(u, bs.causal, lastKey, i0, offset, [&](auto &w,
                                                              bool mask) {
        buildFor(w, c0, rows, c1, [&](auto &x, Value r) {
          Value lseR = x.load(lseTile, {r});
          Value dot = buildSum(x, c0, dC, zero, [&](auto &y, Value d) {
            return y.mulF(y.toF32(y.load(qTile, {r, d})),
                          y.toF32(y.load(kTile, {tid, d})));
          });
          Value s = x.mulF(dot, scale);
          Value hidden;
          if (mask)
            hidden = x.cmpI(arith::CmpIPredicate::sgt, key,
                            x.add(x.add(i0, r), offset));
          Value p = buildProbability(x, s, lseR, hidden);
          // dv[j] += p do[r]; dp = do[r] . v[j].
          buildFor(x, c0, dvC, c1, [&](auto &y, Value e) {
            Value de = y.toF32(y.load(doTile, {r, e}));
            y.store(y.addF(y.load(dvAcc, {e}), y.mulF(p, de)), dvAcc, {e});
          });
          Value dp = buildSum(x, c0, dvC, zero, [&](auto &y, Value e) {
            return y.mulF(y.toF32(y.load(doTile, {r, e})),
                          y.load(vRow, {e}));
          });
          // ds = p (dp - delta); dk[j] += ds q[r] (scaled at the end).
          Value ds = x.mulF(p, x.subF(dp, x.load(deltaTile, {r})));
          buildFor(x, c0, dC, c1, [&](auto &y, Value d) {
            Value qd = y.toF32(y.load(qTile, {r, d}));
            y.store(y.addF(y.load(dkAcc, {d}), y.mulF(ds, qd)), dkAcc, {d});
          });
          if (dsTile)
            x.store(ds, dsTile, {r, tid});
        });
      });
    });

    if (dqAcc) {
      // dq[i0 + r, d] += scale sum_c ds[r, c] k[j0 + c, d]: the block's
      // threads stride over the rows x D elements, one f32 atomic each.
      gpu::BarrierOp::create(t.b, t.loc);
      buildFor(t, tid, t.mul(rows, dC), bn, [&](auto &u, Value idx) {
        Value r = arith::DivUIOp::create(u.b, u.loc, idx, dC);
        Value d = arith::RemUIOp::create(u.b, u.loc, idx, dC);
        Value sum = buildSum(u, c0, cols, zero, [&](auto &w, Value c) {
          return w.mulF(w.load(dsTile, {r, c}),
                        w.toF32(w.load(kTile, {c, d})));
        });
        memref::AtomicRMWOp::create(u.b, u.loc, arith::AtomicRMWKind::addf,
                                    u.mulF(sum, scale), dqAcc,
                                    ValueRange{batch, u.add(i0, r), d});
      });
    }
  });

  // dk = scale * dkAcc, dv = dvAcc, in the result types. Keys no query
  // sees keep their zeros.
  buildIf(kb, keyValid, [&](auto &t) {
    buildFor(t, c0, dC, c1, [&](auto &u, Value d) {
      u.store(u.fromF32(u.mulF(u.load(dkAcc, {d}), scale), bs.dkElt), dk,
              {batch, key, d});
    });
    buildFor(t, c0, dvC, c1, [&](auto &u, Value e) {
      u.store(u.fromF32(u.load(dvAcc, {e}), bs.dvElt), dv, {batch, key, e});
    });
  });
  gpu::ReturnOp::create(b, loc);
}

/// The deterministic dq kernel; see the file header.
static void buildDqBody(OpBuilder &b, Location loc, gpu::GPUFuncOp func,
                        const BackwardShape &bs) {
  b.setInsertionPointToStart(&func.front());
  KernelBuilder kb(b, loc);
  Value q = func.getArgument(0), k = func.getArgument(1),
        v = func.getArgument(2), dout = func.getArgument(3),
        lse = func.getArgument(4), delta = func.getArgument(5),
        dq = func.getArgument(6);
  Value kTile = func.getWorkgroupAttributions()[0];
  Value vTile = func.getWorkgroupAttributions()[1];
  Value qRow = func.getPrivateAttributions()[0];
  Value doRow = func.getPrivateAttributions()[1];
  Value dqRow = func.getPrivateAttributions()[2];

  Value c0 = kb.cstIndex(0), c1 = kb.cstIndex(1), zero = kb.cstF32(0.0);
  Value bm = kb.cstIndex(bs.dqBlockM), bn = kb.cstIndex(bs.dqBlockN);
  Value dC = kb.cstIndex(bs.d), dvC = kb.cstIndex(bs.dv);
  Value scale = kb.cstF32(bs.scale);
  Value tq = memref::DimOp::create(b, loc, q, 1);
  Value tk = memref::DimOp::create(b, loc, k, 1);
  Value queryBlock = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);

  Value i0 = kb.mul(queryBlock, bm);
  Value row = kb.add(i0, tid);
  Value rowValid = kb.cmpI(arith::CmpIPredicate::slt, row, tq);
  Value rows = kb.minS(bm, kb.sub(tq, i0));
  Value offset = causalOffset(kb, bs.causal, tq, tk);
  // lse and delta of the row (threads past Tq read the last row, unused).
  Value rowC = kb.minS(row, kb.sub(tq, c1));
  Value lseR = kb.load(lse, {batch, rowC});
  Value deltaR = kb.load(delta, {batch, rowC});

  buildIf(kb, rowValid, [&](auto &t) {
    buildFor(t, c0, dC, c1, [&](auto &u, Value d) {
      u.store(u.toF32(u.load(q, {batch, row, d})), qRow, {d});
      u.store(zero, dqRow, {d});
    });
    buildFor(t, c0, dvC, c1, [&](auto &u, Value e) {
      u.store(u.toF32(u.load(dout, {batch, row, e})), doRow, {e});
    });
  });

  // Key blocks up to the last key the block's last row sees.
  Value kvEnd = tk;
  if (bs.causal != CausalKind::none)
    kvEnd = kb.minS(kb.maxS(kb.add(kb.add(i0, rows), offset), c0), tk);

  buildFor(kb, c0, kvEnd, bn, [&](auto &t, Value j0) {
    Value cols = t.minS(bn, t.sub(kvEnd, j0));
    gpu::BarrierOp::create(t.b, t.loc);
    buildTileCopy(t, k, kTile, batch, j0, cols, bs.d, tid, bm);
    buildTileCopy(t, v, vTile, batch, j0, cols, bs.dv, tid, bm);
    gpu::BarrierOp::create(t.b, t.loc);
    buildIf(t, rowValid, [&](auto &u) {
      Value lastKey = u.sub(u.add(j0, cols), c1);
      buildMaskedOrNot(u, bs.causal, lastKey, i0, offset, [&](auto &w,
                                                              bool mask) {
        buildFor(w, c0, cols, c1, [&](auto &x, Value c) {
          Value dot = buildSum(x, c0, dC, zero, [&](auto &y, Value d) {
            return y.mulF(y.load(qRow, {d}), y.toF32(y.load(kTile, {c, d})));
          });
          Value s = x.mulF(dot, scale);
          Value hidden;
          if (mask)
            hidden = x.cmpI(arith::CmpIPredicate::sgt, x.add(j0, c),
                            x.add(row, offset));
          Value p = buildProbability(x, s, lseR, hidden);
          Value dp = buildSum(x, c0, dvC, zero, [&](auto &y, Value e) {
            return y.mulF(y.load(doRow, {e}), y.toF32(y.load(vTile, {c, e})));
          });
          Value ds = x.mulF(p, x.subF(dp, deltaR));
          buildFor(x, c0, dC, c1, [&](auto &y, Value d) {
            Value kd = y.toF32(y.load(kTile, {c, d}));
            y.store(y.addF(y.load(dqRow, {d}), y.mulF(ds, kd)), dqRow, {d});
          });
        });
      });
    });
  });

  buildIf(kb, rowValid, [&](auto &t) {
    buildFor(t, c0, dC, c1, [&](auto &u, Value d) {
      u.store(u.fromF32(u.mulF(u.load(dqRow, {d}), scale), bs.dqElt), dq,
              {batch, row, d});
    });
  });
  gpu::ReturnOp::create(b, loc);
}

//===----------------------------------------------------------------------===//
// Module and manifest
//===----------------------------------------------------------------------===//

namespace {
/// One kernel of the module, as the manifest describes it.
struct KernelSpec {
  std::string name;
  int64_t threads;
  int64_t blockM = 0, blockN = 0; // 0: not used by the kernel's grid
  SmallVector<StringRef> params;
  std::vector<std::string> grid;
  int64_t sharedBytes = 0; // dynamic workgroup memory
  /// TMA: `tensor_map` lines (OPERAND BOX_COLS BOX_ROWS SWIZZLE) of q, k,
  /// v, do, whose maps close the argument list.
  SmallVector<std::string> tensorMaps;
};
} // namespace

static DictionaryAttr buildBackwardManifest(Builder &b,
                                            const BackwardShape &bs,
                                            StringRef name,
                                            ArrayRef<KernelSpec> kernels) {
  auto dim = [&](int64_t d) -> Attribute {
    if (ShapedType::isDynamic(d))
      return b.getStringAttr("?");
    return b.getI64IntegerAttr(d);
  };
  SmallVector<Attribute> batchShape;
  for (int64_t d : bs.batchShape)
    batchShape.push_back(dim(d));
  SmallVector<Attribute> scratch = {
      b.getStringAttr("delta f32 batch seqlen_q")};
  if (!bs.deterministic)
    scratch.push_back(b.getStringAttr("dq_accum f32 batch seqlen_q head_dim"));
  SmallVector<Attribute> kernelAttrs;
  for (const KernelSpec &spec : kernels) {
    SmallVector<NamedAttribute> entries = {
        b.getNamedAttr("kernel", b.getStringAttr(spec.name)),
        b.getNamedAttr("threads", b.getI64IntegerAttr(spec.threads))};
    if (spec.blockM)
      entries.push_back(
          b.getNamedAttr("block_m", b.getI64IntegerAttr(spec.blockM)));
    if (spec.blockN)
      entries.push_back(
          b.getNamedAttr("block_n", b.getI64IntegerAttr(spec.blockN)));
    entries.push_back(
        b.getNamedAttr("shared_bytes", b.getI64IntegerAttr(spec.sharedBytes)));
    entries.push_back(b.getNamedAttr(
        "params", b.getStrArrayAttr(SmallVector<StringRef>(spec.params))));
    if (!spec.tensorMaps.empty()) {
      SmallVector<Attribute> maps;
      for (const std::string &map : spec.tensorMaps)
        maps.push_back(b.getStringAttr(map));
      entries.push_back(b.getNamedAttr("tensor_map", b.getArrayAttr(maps)));
    }
    entries.push_back(b.getNamedAttr(
        "grid", b.getStrArrayAttr(llvm::to_vector_of<StringRef>(spec.grid))));
    kernelAttrs.push_back(b.getDictionaryAttr(entries));
  }
  SmallVector<NamedAttribute> entries = {
      b.getNamedAttr("op", b.getStringAttr("attention_backward")),
      b.getNamedAttr("dtype", b.getStringAttr(typeName(bs.elt))),
      b.getNamedAttr("o_dtype", b.getStringAttr(typeName(bs.oElt))),
      b.getNamedAttr("do_dtype", b.getStringAttr(typeName(bs.doElt))),
      b.getNamedAttr("dq_dtype", b.getStringAttr(typeName(bs.dqElt))),
      b.getNamedAttr("dk_dtype", b.getStringAttr(typeName(bs.dkElt))),
      b.getNamedAttr("dv_dtype", b.getStringAttr(typeName(bs.dvElt))),
      b.getNamedAttr("causal", b.getStringAttr(stringifyCausalKind(bs.causal))),
      b.getNamedAttr("scale", b.getF32FloatAttr(bs.scale)),
      b.getNamedAttr("batch", dim(bs.batch)),
      b.getNamedAttr("batch_shape", b.getArrayAttr(batchShape)),
      b.getNamedAttr("seqlen_q", dim(bs.tq)),
      b.getNamedAttr("seqlen_k", dim(bs.tk)),
      b.getNamedAttr("head_dim", dim(bs.d)),
      b.getNamedAttr("head_dim_v", dim(bs.dv)),
      b.getNamedAttr("deterministic",
                     b.getI64IntegerAttr(bs.deterministic ? 1 : 0)),
      b.getNamedAttr("scratch", b.getArrayAttr(scratch)),
      b.getNamedAttr("kernels", b.getArrayAttr(kernelAttrs)),
  };
  // The tensor-core kernels copy rows with 16-byte cp.async.
  if (bs.tensorCore)
    entries.push_back(b.getNamedAttr("row_align", b.getI64IntegerAttr(16)));
  return b.getDictionaryAttr(entries);
}

FailureOr<gpu::GPUModuleOp> mlir::fa::buildAttentionBackwardKernels(
    OpBuilder &builder, AttentionBackwardOp op, StringRef name,
    const AttentionKernelOptions &options, DictionaryAttr &manifest) {
  FailureOr<BackwardShape> maybeShape = getBackwardShape(op, options);
  if (failed(maybeShape))
    return failure();
  const BackwardShape &bs = *maybeShape;
  MLIRContext *ctx = builder.getContext();
  Location loc = op.getLoc();
  Type f32 = builder.getF32Type();
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto priv = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Private);
  auto global = [&](ArrayRef<int64_t> shape, Type elt) -> Type {
    return globalMemRefType(ctx, shape, elt);
  };
  auto local = [&](ArrayRef<int64_t> shape, Type elt, Attribute space) {
    return MemRefType::get(shape, elt, MemRefLayoutAttrInterface(), space);
  };
  // The kernel parameters by manifest name (docs/ARTIFACTS.md).
  llvm::StringMap<Type> paramTypes = {
      {"q", global({bs.batch, bs.tq, bs.d}, bs.elt)},
      {"k", global({bs.batch, bs.tk, bs.d}, bs.elt)},
      {"v", global({bs.batch, bs.tk, bs.dv}, bs.elt)},
      {"o", global({bs.batch, bs.tq, bs.dv}, bs.oElt)},
      {"do", global({bs.batch, bs.tq, bs.dv}, bs.doElt)},
      {"lse", global({bs.batch, bs.tq}, f32)},
      {"delta", global({bs.batch, bs.tq}, f32)},
      {"dq", global({bs.batch, bs.tq, bs.d}, bs.dqElt)},
      {"dk", global({bs.batch, bs.tk, bs.d}, bs.dkElt)},
      {"dv", global({bs.batch, bs.tk, bs.dv}, bs.dvElt)},
      {"dq_accum", global({bs.batch, bs.tq, bs.d}, f32)},
  };

  SmallVector<KernelSpec> specs;
  KernelSpec delta{(name + "_delta").str(), kRowThreads};
  delta.params = {"o", "do", "delta"};
  if (!bs.deterministic)
    delta.params.push_back("dq_accum");
  delta.grid = {"ceil_div(seqlen_q,threads)", "batch", "1"};
  if (bs.tensorCore) {
    // Dv / 8 lanes per row (buildTensorCoreDeltaBody).
    delta.blockM = kRowThreads / (bs.dv / 8);
    delta.grid = {"ceil_div(seqlen_q,block_m)", "batch", "1"};
  }
  KernelSpec dkdv{(name + "_dkdv").str(), bs.blockN, bs.blockM, bs.blockN};
  dkdv.params = {"q", "k", "v", "do", "lse", "delta", "dk", "dv"};
  if (!bs.deterministic)
    dkdv.params.push_back("dq_accum");
  dkdv.grid = {"ceil_div(seqlen_k,block_n)", "batch", "1"};
  if (bs.wgmma && bs.wgDkDv.pairsKeyBlocks())
    dkdv.grid[0] =
        "ceil_div(seqlen_k," + std::to_string(2 * bs.wgDkDv.ownRows()) + ")";
  if (bs.wgmma) {
    dkdv.threads = bs.wgDkDv.threads();
    dkdv.sharedBytes = gpukernel::wgmmaBackwardLayout(bs.wgDkDv).bytes;
  } else if (bs.tensorCore) {
    dkdv.threads = 32 * bs.tcDkDv.numWarps;
    dkdv.sharedBytes =
        gpukernel::tensorCoreBackwardLayout(bs.tcDkDv, true).bytes;
  }
  KernelSpec last;
  if (bs.deterministic) {
    last = KernelSpec{(name + "_dq").str(), bs.dqBlockM, bs.dqBlockM,
                      bs.dqBlockN};
    last.params = {"q", "k", "v", "do", "lse", "delta", "dq"};
    last.grid = {"ceil_div(seqlen_q,block_m)", "batch", "1"};
    if (bs.wgmma) {
      last.threads = 32 * bs.wgDq.numWarps;
      last.sharedBytes = gpukernel::wgmmaBackwardLayout(bs.wgDq).bytes;
    } else if (bs.tensorCore) {
      last.threads = 32 * bs.tcDq.numWarps;
      last.sharedBytes =
          gpukernel::tensorCoreBackwardLayout(bs.tcDq, false).bytes;
    }
  } else {
    last = KernelSpec{(name + "_dq_convert").str(), kRowThreads};
    last.params = {"dq_accum", "dq"};
    last.grid = {"ceil_div(seqlen_q,threads)", "batch", "1"};
    if (bs.wgmma) {
      // D / 8 lanes per row (buildTensorCoreConvertBody).
      last.blockM = kRowThreads / (bs.d / 8);
      last.grid = {"ceil_div(seqlen_q,block_m)", "batch", "1"};
    }
  }
  // TMA (wgmma kernels): boxes of one swizzle row by the tile's rows, own
  // rows for the block's operands (K, V of _dkdv; Q, dO of _dq), loop-tile
  // rows for the others.
  if (bs.wgmma && bs.wgDkDv.tma) {
    SmallVector<KernelSpec *, 2> mapped = {&dkdv};
    if (bs.deterministic)
      mapped.push_back(&last);
    for (KernelSpec *spec : mapped) {
      const gpukernel::WgmmaBackwardShape &shape =
          spec == &dkdv ? bs.wgDkDv : bs.wgDq;
      for (StringRef operand : shape.tensorMapOperands()) {
        // dq atomics by TMA reductions: boxes of 16 rows (one warp's) x
        // 32 f32 with the 128-byte swizzle, or with dqFragmentOrder x one
        // product's columns (dqColumns() f32) without a swizzle.
        if (operand == "dq_accum") {
          spec->tensorMaps.push_back(
              shape.dqFragmentOrder()
                  ? ("dq_accum " + Twine(shape.dqColumns()) + " 16 none").str()
                  : std::string("dq_accum 32 16 128"));
          continue;
        }
        bool ownOperand = (operand == "k" || operand == "v") == shape.dkdv;
        int64_t rows = ownOperand ? shape.ownRows() : shape.tile;
        int64_t cols = operand == "q" || operand == "k" ? bs.d : bs.dv;
        int64_t swizzle = gpukernel::tmaSwizzleBytes(cols);
        spec->tensorMaps.push_back(
            (operand + " " + Twine(swizzle / 2) + " " + Twine(rows) + " " +
             Twine(swizzle))
                .str());
      }
    }
  }
  specs = {delta, dkdv, last};

  OpBuilder::InsertionGuard guard(builder);
  auto gpuModule = gpu::GPUModuleOp::create(builder, loc, name);
  for (auto [index, spec] : llvm::enumerate(specs)) {
    SmallVector<Type> argTypes;
    for (StringRef p : spec.params) {
      Type type = paramTypes.lookup(p);
      // The tensor-core kernels read and write rows with vector accesses
      // and 16-byte cp.async: unit innermost stride.
      if (bs.tensorCore && p != "lse" && p != "delta") {
        auto memref = cast<MemRefType>(type);
        type = MemRefType::get(
            memref.getShape(), memref.getElementType(),
            StridedLayoutAttr::get(
                ctx, ShapedType::kDynamic,
                {ShapedType::kDynamic, ShapedType::kDynamic, 1}));
      }
      argTypes.push_back(type);
    }
    SmallVector<Type> workgroupTypes, privateTypes;
    if (bs.tensorCore && index > 0) {
      // Tiles in dynamic workgroup memory.
    } else if (index == 1) {
      workgroupTypes = {local({bs.blockN, bs.d}, bs.elt, workgroup),
                        local({bs.blockM, bs.d}, bs.elt, workgroup),
                        local({bs.blockM, bs.dv}, bs.doElt, workgroup),
                        local({bs.blockM}, f32, workgroup),
                        local({bs.blockM}, f32, workgroup)};
      if (!bs.deterministic)
        workgroupTypes.push_back(
            local({bs.blockM, bs.blockN}, f32, workgroup));
      privateTypes = {local({bs.dv}, f32, priv), local({bs.d}, f32, priv),
                      local({bs.dv}, f32, priv)};
    } else if (index == 2 && bs.deterministic) {
      workgroupTypes = {local({bs.dqBlockN, bs.d}, bs.elt, workgroup),
                        local({bs.dqBlockN, bs.dv}, bs.elt, workgroup)};
      privateTypes = {local({bs.d}, f32, priv), local({bs.dv}, f32, priv),
                      local({bs.d}, f32, priv)};
    }
    // TMA: the tensor maps of q, k, v, do [, dq_accum]
    // (fa-lower-tensor-map-params makes them by-value parameters).
    const int64_t numMaps = spec.tensorMaps.size();
    argTypes.append(numMaps, LLVM::LLVMPointerType::get(ctx));
    builder.setInsertionPointToEnd(gpuModule.getBody());
    auto func = gpu::GPUFuncOp::create(builder, loc, spec.name,
                                       builder.getFunctionType(argTypes, {}),
                                       workgroupTypes, privateTypes);
    func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                  builder.getUnitAttr());
    func.setKnownBlockSizeAttr(builder.getDenseI32ArrayAttr(
        {static_cast<int32_t>(spec.threads), 1, 1}));
    if (numMaps)
      func->setAttr(gpukernel::kTensorMapParamsAttrName,
                    builder.getI64IntegerAttr(numMaps));
    if (index == 0 && bs.tensorCore)
      gpukernel::buildTensorCoreDeltaBody(builder, loc, func, bs.dv,
                                          kRowThreads);
    else if (index == 0)
      buildDeltaBody(builder, loc, func, bs);
    else if (bs.wgmma && index == 2 && !bs.deterministic)
      gpukernel::buildTensorCoreConvertBody(
          builder, loc, func, bs.d, kRowThreads,
          bs.wgDkDv.dqFragmentOrder()
              ? gpukernel::DqAccumLayout{bs.wgDkDv.scale, true}
              : gpukernel::DqAccumLayout{});
    else if (bs.wgmma)
      gpukernel::buildWgmmaBackwardBody(builder, loc, func,
                                        index == 1 ? bs.wgDkDv : bs.wgDq);
    else if (bs.tensorCore && index == 1)
      gpukernel::buildTensorCoreDkDvBody(builder, loc, func, bs.tcDkDv);
    else if (bs.tensorCore)
      gpukernel::buildTensorCoreDqBody(builder, loc, func, bs.tcDq);
    else if (index == 1)
      buildDkDvBody(builder, loc, func, bs);
    else if (bs.deterministic)
      buildDqBody(builder, loc, func, bs);
    else
      buildConvertBody(builder, loc, func, bs);
  }

  manifest = buildBackwardManifest(builder, bs, name, specs);
  gpukernel::setIndexBitwidth(gpuModule, manifest, bs.indexBitwidth);
  return gpuModule;
}
