//===- FAToGPU.cpp - fa.attention to a FlashAttention GPU kernel --------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// Implements `convert-fa-to-gpu`: every fa.attention becomes one gpu.module
// with one kernel that computes the whole attention in one launch, following
// the ABI of docs/ARTIFACTS.md. The kernel is deliberately simple (one thread
// per query row, scalar f32 math, K/V tiles in shared memory); tensor cores
// come later.
//
// Kernel structure (block = `block_m` threads, grid = (ceil(Tq / block_m),
// batch)):
//
//   b   = block_id.y                 flattened batch index
//   i0  = block_id.x * block_m       first query row of the block
//   i   = i0 + thread_id.x           this thread's query row (valid if < Tq)
//   qRow[:] = f32(q[b, i, :])        private memory
//   acc[:] = 0; m = -inf; l = 0      f32, per row
//   for j0 in [0, kvEnd) step block_n:         block-uniform trip count
//     barrier; kTile, vTile = k, v[b, j0 : j0 + cols, :]; barrier
//     if i < Tq: online-softmax update of (m, l, acc) with this tile
//   if i < Tq: o[b, i, :] = acc / l (0 when l = 0); lse = m + log(l) (-inf)
//
//===----------------------------------------------------------------------===//

#include "fa/Conversion/FAToGPU/FAToGPU.h"
#include "fa/Dialect/FA/IR/FA.h"

#include "KernelUtils.h"
#include "TensorCoreKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

namespace mlir {
namespace fa {
#define GEN_PASS_DEF_CONVERTFATOGPU
#include "fa/Conversion/Passes.h.inc"
} // namespace fa
} // namespace mlir

using namespace mlir;
using namespace mlir::fa;
using namespace mlir::fa::gpukernel;

namespace {

/// The static facts of one fa.attention that shape its kernel. Dims are
/// ShapedType::kDynamic when unknown at compile time.
struct KernelShape {
  Type elt;  // q/k/v element type
  Type oElt; // o element type
  SmallVector<int64_t> batchShape;
  int64_t batch; // product of batchShape
  int64_t tq, tk, d, dv;
  bool hasLse;
  CausalKind causal;
  float scale;
  int64_t blockM, blockN;
  /// The mma.sync kernel of TensorCoreForward.cpp (else the scalar one);
  /// then blockM = numWarps * 16 * mTilesPerWarp.
  bool tensorCore = false;
  /// The sm_90a wgmma kernel of WgmmaForward.cpp (tensorCore is set too).
  bool wgmma = false;
  int64_t wgmmaStages = 2;
  /// wgmma kernel: Q/K/V tiles by TMA from three tensor-map arguments.
  bool tma = false;
  /// TMA wgmma kernel: a producer warpgroup and stage-release mbarriers; with
  /// pingpong the consumer warpgroups take turns at the tensor cores.
  bool producerWarp = false, pingpong = false;
  /// TMA wgmma forward with the producer: query tiles per GPU block (1, 2).
  int64_t tilesPerBlock = 1;
  /// TMA wgmma forward: AttentionKernelOptions::persistent taken.
  bool persistent = false;
  int64_t numWarps = 0, mTilesPerWarp = 0;
  /// Threads per block (the producer warpgroup included).
  int64_t threads() const {
    return tensorCore ? 32 * (numWarps + (producerWarp ? 4 : 0)) : blockM;
  }
};

} // namespace

/// The tensor-core kernel's shape: Q stays in registers when its fragments
/// take at most 32 registers per thread (m16 tiles per warp x D <= 128),
/// else it is read from workgroup memory at each use.
static gpukernel::TensorCoreForwardShape
getTensorCoreForwardShape(const KernelShape &ks) {
  gpukernel::TensorCoreForwardShape shape{ks.elt,
                                          ks.oElt,
                                          ks.d,
                                          ks.dv,
                                          ks.hasLse,
                                          ks.causal,
                                          ks.scale,
                                          ks.numWarps,
                                          ks.mTilesPerWarp,
                                          ks.blockN,
                                          /*qInShared=*/ks.wgmma ||
                                              ks.mTilesPerWarp * ks.d > 128,
                                          /*wgmma=*/ks.wgmma,
                                          /*wgmmaStages=*/ks.wgmmaStages,
                                          /*tma=*/ks.tma,
                                          /*producerWarp=*/ks.producerWarp,
                                          /*pingpong=*/ks.pingpong};
  shape.tilesPerBlock = ks.tilesPerBlock;
  shape.persistent = ks.persistent;
  return shape;
}

/// Completes `ks` for the sm_90a wgmma kernel: whole warpgroups of 64
/// query rows (block_m = 16 x num-warps, default 8 warps, at most 16; with
/// the producer warpgroup 12 for head dims up to 64) and block_n keys
/// (default 128 for D 128 or with the producer warpgroup, else 64; 64 also
/// when 128 does not fit the copies, the registers or max-shared-bytes),
/// three K/V stages when they fit, else two; fails with an op error on a
/// shape it cannot take.
static FailureOr<KernelShape>
getWgmmaShape(AttentionOp op, const AttentionKernelOptions &options,
              KernelShape ks) {
  // The producer warpgroup's default shapes (measured on the H200, bf16,
  // T 2k and 4k; docs/PERFORMANCE.md), when no shape option is given: head
  // dims up to 64 take three consumer warpgroups and 128-key tiles (with
  // two the block is alone on its multiprocessor and slower than the
  // kernel without a producer), with or without a causal mask.
  const bool defaultShape =
      !options.numWarps && !options.blockM && !options.blockN;
  const bool smallHead = std::max(ks.d, ks.dv) <= 64;
  const bool producerWarp = options.producerWarp;
  int64_t warps = options.numWarps ? options.numWarps
                  : producerWarp && smallHead && defaultShape ? 12
                                                              : 8;
  if (options.blockM && !options.numWarps)
    warps = options.blockM / 16;
  int64_t blockM = options.blockM ? options.blockM : 16 * warps;
  if (warps % 4 != 0 || warps > 16 || blockM != 16 * warps) {
    InFlightDiagnostic diag =
        op.emitOpError("the wgmma kernel expects one to four warpgroups of "
                       "64 query rows: num-warps 4, 8, 12 or 16 and block-m "
                       "= 16 x num-warps, got ");
    if (options.numWarps)
      diag << "num-warps = " << warps << " and block-m = " << blockM;
    else
      diag << "block-m = " << blockM << " (num-warps not given: block-m / "
           << "16 = " << warps << ")";
    return diag;
  }
  // Per-thread registers of one block (65536 per multiprocessor, at most
  // 255 per thread), of which the S and O accumulators (block_n / 2 and
  // Dv / 2) and the P operands (block_n / 4) must leave some 16 for
  // addresses and the softmax state, or ptxas cannot assemble the kernel.
  // With the producer warpgroup, the consumers get what setmaxnreg gives.
  // (producer-warp and pingpong without tma: rejected by the pass.)
  if (options.pingpong && !options.producerWarp)
    return op.emitOpError("pingpong scheduling needs the producer "
                          "warpgroup (producer-warp = true): the consumer "
                          "warpgroups must not share a block barrier");
  if (options.tilesPerBlock < 0 || options.tilesPerBlock > 2)
    return op.emitOpError("the wgmma kernel takes 1 or 2 query tiles per "
                          "block, or 0 for its choice (tiles-per-block), "
                          "got ")
           << options.tilesPerBlock;
  if (options.tilesPerBlock == 2 && (!producerWarp || options.pingpong))
    return op.emitOpError("two query tiles per block (tiles-per-block = 2) "
                          "need the producer warpgroup (producer-warp = "
                          "true) without pingpong scheduling");
  if (options.pingpong && warps < 8)
    return op.emitOpError("pingpong scheduling needs two or more consumer "
                          "warpgroups (num-warps 8, 12 or 16), got num-warps "
                          "= ")
           << warps;
  const int64_t regBudget =
      (producerWarp
           ? gpukernel::consumerRegisters(warps)
           : std::min<int64_t>(255, 65536 / (32 * warps))) -
      16;
  auto accumulatorRegs = [&](int64_t blockN) {
    return blockN / 2 + ks.dv / 2 + blockN / 4;
  };
  // Each warp copies whole 8-row x 32-column groups of the K/V tiles (with
  // TMA one thread copies them all).
  auto splitsEvenly = [&](int64_t blockN) {
    return options.tma || ((blockN / 8) * (ks.d / 32) % warps == 0 &&
                           (blockN / 8) * (ks.dv / 32) % warps == 0);
  };
  SmallVector<int64_t, 3> blockNs;
  const bool autoTiles = options.tilesPerBlock == 0;
  constexpr int64_t kWideBlockN = 160;
  const bool wideKeyTiles = defaultShape && autoTiles && producerWarp &&
                            !options.pingpong && warps == 8 && ks.d == 128 &&
                            ks.dv == 128 && ks.causal == CausalKind::none &&
                            accumulatorRegs(kWideBlockN) <= regBudget;
  if (options.blockN) {
    int64_t blockN = options.blockN;
    if (blockN % 16 != 0 || blockN > 256)
      return op.emitOpError("the wgmma kernel expects block-n to be a "
                            "multiple of 16 of at most 256, got ")
             << blockN;
    if (!splitsEvenly(blockN))
      return op.emitOpError("the wgmma kernel expects the 8-row x 32-column "
                            "groups of a K/V tile (block-n = ")
             << blockN << ", head dims " << ks.d << " and " << ks.dv
             << ") to split evenly over num-warps = " << warps;
    if (accumulatorRegs(blockN) > regBudget)
      return op.emitOpError("the wgmma kernel's accumulators (block-n = ")
             << blockN << ", Dv = " << ks.dv << ": "
             << accumulatorRegs(blockN)
             << " registers per thread) do not fit the " << regBudget
             << " a thread of a "
             << 32 * (warps + (producerWarp ? 4 : 0))
             << "-thread block can give them; use a smaller block-n or "
                "fewer warps";
    blockNs.push_back(blockN);
  } else {
    // 160-key tiles first for the default two-tile kernel at D = Dv = 128
    // without a mask (H200: +0.5-3% at T 8k-16k, even at T 2k-4k;
    // docs/PERFORMANCE.md, twenty-first run); taken only where both Q
    // buffers still fit (below), else 128 as before. Under causal they
    // measured 1-5% slower at T 2k-8k.
    if (wideKeyTiles)
      blockNs.push_back(kWideBlockN);
    for (int64_t blockN :
         {ks.d == 128 || producerWarp ? int64_t(128) : int64_t(64),
          int64_t(64), int64_t(32)})
      if (splitsEvenly(blockN) && accumulatorRegs(blockN) <= regBudget &&
          !llvm::is_contained(blockNs, blockN))
        blockNs.push_back(blockN);
    if (blockNs.empty())
      return op.emitOpError("the wgmma kernel has no default block-n (128, "
                            "64 or 32) whose K/V tile splits evenly over "
                            "num-warps = ")
             << warps << " (head dims " << ks.d << " and " << ks.dv
             << "); give block-n (a multiple of 16 such that "
                "block-n / 8 x head dim / 32 divides by num-warps)";
  }
  ks.tensorCore = true;
  ks.wgmma = true;
  ks.tma = options.tma;
  ks.producerWarp = producerWarp;
  // The checks above: pingpong has the producer and two or more
  // warpgroups.
  ks.pingpong = options.pingpong;
  // tiles-per-block 0: two tiles where they measured faster (H200, bf16,
  // docs/PERFORMANCE.md nineteenth run): the producer kernel with two
  // consumer warpgroups at head dims above 64, when both Q buffers fit and
  // Tk is dynamic or over five key blocks (with a static Tk of two key
  // blocks the two-tile kernel spilled 230-264 bytes, with four or five
  // 4 bytes).
  const int64_t preferredTiles =
      autoTiles ? (producerWarp && !options.pingpong && warps == 8 &&
                           std::max(ks.d, ks.dv) > 64
                       ? 2
                       : 1)
                : options.tilesPerBlock;
  ks.numWarps = warps;
  ks.mTilesPerWarp = 1;
  ks.blockM = blockM;
  // persistent: only where o leaves by TMA (its Q buffer stages o) and
  // tiles-per-block is not 2 (the pass rejects both given). `auto`: the
  // kernels with two consumer warpgroups at head dims above 64 (those
  // that take two tiles per block otherwise), with the automatic
  // tiles-per-block: H100, paired against SDPA cuDNN, D 128 without a mask
  // 0.946 -> 0.997 at T 2k, 0.986 -> 0.997 at T 4k, even at T 8k-16k;
  // causal +1-4% at T 2k-4k (docs/PERFORMANCE.md, thirty-eighth session).
  // D 64 (three consumer warpgroups, no peel) measured 2-10% slower.
  const bool persistentWanted =
      options.persistent == FeatureChoice::On ||
      (options.persistent == FeatureChoice::Auto && autoTiles && producerWarp &&
       warps == 8 && std::max(ks.d, ks.dv) > 64);
  const bool persistentKernel = persistentWanted && !options.pingpong &&
                                options.tilesPerBlock != 2 &&
                                getTensorCoreForwardShape(ks).tmaStoreO();
  int64_t sharedBytes = 0;
  for (int64_t blockN : blockNs) {
    ks.blockN = blockN;
    // Three stages when they fit, else two; with TMA, two for block_n 128
    // (measured 2-3% faster than three at D 128, T 2k and 4k).
    SmallVector<int64_t, 2> stageCounts = {3, 2};
    if (options.stages)
      stageCounts = {options.stages};
    else if (options.tma && blockN == 128)
      stageCounts = {2};
    const bool fewKeyBlocks =
        !ShapedType::isDynamic(ks.tk) && llvm::divideCeil(ks.tk, blockN) <= 5;
    // The wide tiles only with two query tiles per block (with one, they
    // measured 2-4% slower at T 2k-4k than 128 keys with two).
    const bool wide = wideKeyTiles && blockN == kWideBlockN;
    // (The persistent kernel with the wide tiles measured 0.5-1% slower
    // than with 128 keys at T 2k-8k.) `auto` leaves out a static Tk of at
    // most five key blocks, as the two tiles do: with Tq 100 and Tk 300
    // static (no mask) ptxas spilled 136-184 bytes (none since the o-store
    // wait moved past the next prologue, forty-second session; not timed).
    const bool persistentHere =
        persistentKernel &&
        !(options.persistent == FeatureChoice::Auto && fewKeyBlocks);
    if (wide && (fewKeyBlocks || persistentHere))
      continue;
    // Whether the tiles of `ks` as set fit max-shared-bytes (sharedBytes
    // keeps their size for the error below).
    auto fits = [&] {
      sharedBytes =
          gpukernel::tensorCoreSharedLayout(getTensorCoreForwardShape(ks))
              .bytes;
      return sharedBytes <= options.maxSharedBytes;
    };
    for (int64_t stages : stageCounts) {
      ks.wgmmaStages = stages;
      // persistent (one tile per turn, two Q buffers) first where the
      // kernel takes it, then the automatic two tiles, which fall back to
      // one when the second Q buffer does not fit.
      if (persistentHere) {
        ks.tilesPerBlock = 1;
        ks.persistent = true;
        if (fits())
          return ks;
        ks.persistent = false;
      }
      for (int64_t tiles = autoTiles && fewKeyBlocks ? 1 : preferredTiles;
           tiles >= 1; tiles = autoTiles ? tiles - 1 : 0) {
        if (wide && tiles != 2)
          break;
        ks.tilesPerBlock = tiles;
        if (fits())
          return ks;
      }
    }
  }
  return op.emitOpError("the wgmma kernel's tiles (block-m = ")
         << blockM << ", block-n = " << ks.blockN << ", " << ks.wgmmaStages
         << " K/V stages"
         << (ks.tilesPerBlock == 2 ? ", two Q buffers for tiles-per-block = 2"
                                   : "")
         << ") take " << sharedBytes << overSharedLimit(options.maxSharedBytes);
}

/// Completes `ks` for the tensor-core kernel: the block shape from the
/// options, else the default of the head dim; fails with an op error on a
/// block shape the kernel cannot take.
static FailureOr<KernelShape>
getTensorCoreShape(AttentionOp op, const AttentionKernelOptions &options,
                   KernelShape ks) {
  int64_t maxD = std::max(ks.d, ks.dv);
  // Defaults per head dim: 16 query rows per warp; more keys per tile for
  // small head dims (the S fragments cost registers per key, the O
  // fragments per head-dim column).
  int64_t warps = 4, blockN = maxD <= 64 ? 64 : 32;
  if (options.numWarps)
    warps = options.numWarps;
  // Two m16 tiles per warp halve the K/V fragment loads per mma; one for
  // head dims over 128 (the O fragments alone take 128 registers at 256).
  int64_t rowsPerWarp = maxD <= 128 ? 32 : 16;
  int64_t blockM = options.blockM ? options.blockM : rowsPerWarp * warps;
  // A block-m without num-warps: the default rows per warp when they
  // divide it, else the fewest warps (of one to four m16 tiles each) that
  // do.
  if (options.blockM && !options.numWarps && blockM % 16 == 0) {
    int64_t tiles = blockM / 16;
    warps = 0;
    if (blockM % rowsPerWarp == 0 && blockM / rowsPerWarp <= 16)
      warps = blockM / rowsPerWarp;
    for (int64_t w = (tiles + 3) / 4; !warps && w <= 16; ++w)
      if (tiles % w == 0)
        warps = w;
    if (!warps)
      warps = 4; // reported below
  }
  if (options.blockN)
    blockN = options.blockN;
  if (blockM % (16 * warps) != 0 || blockM / (16 * warps) > 4)
    return op.emitOpError("the tensor-core kernel expects block-m to be a "
                          "multiple of 16 x num-warps = ")
           << 16 * warps << " of at most 64 x num-warps = " << 64 * warps
           << " (16 to 64 query rows per warp), got block-m = " << blockM;
  if (blockN % 16 != 0)
    return op.emitOpError("the tensor-core kernel expects block-n to be a "
                          "multiple of 16, got ")
           << blockN;
  ks.tensorCore = true;
  ks.numWarps = warps;
  ks.mTilesPerWarp = blockM / (16 * warps);
  ks.blockM = blockM;
  ks.blockN = blockN;
  int64_t sharedBytes = gpukernel::tensorCoreSharedLayout(
                            getTensorCoreForwardShape(ks))
                            .bytes;
  if (sharedBytes > options.maxSharedBytes)
    return op.emitOpError("the tensor-core kernel's tiles (block-m = ")
           << blockM << ", block-n = " << blockN << ") take " << sharedBytes
           << overSharedLimit(options.maxSharedBytes);
  return ks;
}

/// Collects the facts of `op`; fails with an op error on what the GPU
/// lowering does not support.
static FailureOr<KernelShape>
getKernelShape(AttentionOp op, const AttentionKernelOptions &options) {
  if (op.getMask())
    return op.emitOpError("fa-to-ptx does not support the mask operand yet");
  if (options.blockM < 0 || options.blockM > 1024)
    return op.emitOpError("expected block-m in [1, 1024], or 0 for the "
                          "default of the head dim, got ")
           << options.blockM;
  // Bounded like the backward's (and far above any kernel's workgroup
  // memory), so that no tile size computation overflows.
  if (options.blockN < 0 || options.blockN > 1024)
    return op.emitOpError("expected block-n in [1, 1024], or 0 for the "
                          "default of the head dim, got ")
           << options.blockN;
  if (options.numWarps < 0 || options.numWarps > 16)
    return op.emitOpError("expected num-warps in [1, 16], or 0 for the "
                          "default of the head dim, got ")
           << options.numWarps;

  KernelShape ks;
  auto qTy = op.getQ().getType(), kTy = op.getK().getType(),
       vTy = op.getV().getType();
  auto oTy = cast<RankedTensorType>(op.getO().getType());
  int64_t nb = op.getNumBatchDims();
  ks.elt = qTy.getElementType();
  ks.oElt = oTy.getElementType();
  ks.batch = 1;
  for (int64_t i = 0; i < nb; ++i) {
    int64_t dim = staticDim({qTy.getDimSize(i), kTy.getDimSize(i),
                             vTy.getDimSize(i), oTy.getDimSize(i)});
    ks.batchShape.push_back(dim);
    if (ShapedType::isDynamic(dim) || ShapedType::isDynamic(ks.batch))
      ks.batch = ShapedType::kDynamic;
    else if (llvm::MulOverflow(ks.batch, dim, ks.batch))
      return op.emitOpError("expected the product of the batch dims to fit "
                            "in 64 bits (at most 2^63 - 1)");
  }
  ks.tq = staticDim({qTy.getDimSize(nb), oTy.getDimSize(nb)});
  ks.tk = staticDim({kTy.getDimSize(nb), vTy.getDimSize(nb)});
  ks.d = staticDim({qTy.getDimSize(nb + 1), kTy.getDimSize(nb + 1)});
  ks.dv = staticDim({vTy.getDimSize(nb + 1), oTy.getDimSize(nb + 1)});
  if (ShapedType::isDynamic(ks.d) || ShapedType::isDynamic(ks.dv))
    return op.emitOpError("fa-to-ptx expects static head dims, got D = ")
           << (ShapedType::isDynamic(ks.d) ? std::string("?")
                                           : std::to_string(ks.d))
           << " and Dv = "
           << (ShapedType::isDynamic(ks.dv) ? std::string("?")
                                            : std::to_string(ks.dv));
  if (ks.d < 1 || ks.dv < 1)
    return op.emitOpError("expected positive head dims, got D = ")
           << ks.d << " and Dv = " << ks.dv;
  ks.hasLse = static_cast<bool>(op.getLse());
  ks.causal = op.getCausal();
  // D is static, so the scale is known (the attribute or 1/sqrt(D)).
  ks.scale = static_cast<float>(*op.getStaticScale());

  // The tensor-core kernel takes f16/bf16 operands and head dims that are
  // multiples of 16 up to 256; anything else keeps the scalar kernel.
  bool tensorCoreTypes = options.tensorCores &&
                         (ks.elt.isF16() || ks.elt.isBF16()) &&
                         ks.d % 16 == 0 && ks.dv % 16 == 0 && ks.d <= 256 &&
                         ks.dv <= 256;
  if (tensorCoreTypes && !scaleFoldsInF32(ks.scale))
    return op.emitOpError("the tensor-core kernels fold scale * log2(e) "
                          "into one f32, expected |scale| <= 2.35e38, got ")
           << ks.scale;
  // The sm_90a wgmma kernel: head dims 32, 64 and 128 (those checked on
  // the H200; 96 would take an untested tile-copy path).
  auto wgmmaDim = [](int64_t d) { return d == 32 || d == 64 || d == 128; };
  if (options.tensorCores && options.wgmma &&
      (ks.elt.isF16() || ks.elt.isBF16()) && wgmmaDim(ks.d) &&
      wgmmaDim(ks.dv))
    return getWgmmaShape(op, options, ks);
  if (options.tensorCores && (ks.elt.isF16() || ks.elt.isBF16()) &&
      ks.d % 16 == 0 && ks.dv % 16 == 0 && ks.d <= 256 && ks.dv <= 256)
    return getTensorCoreShape(op, options, ks);

  // K and V tiles of blockN rows each, in q's element type.
  int64_t rowBytes = (ks.d + ks.dv) * (ks.elt.getIntOrFloatBitWidth() / 8);
  int64_t maxBlockN = kMaxStaticSharedBytes / rowBytes;
  if (maxBlockN < 1)
    return op.emitOpError("expected one key and one value row (")
           << rowBytes << " bytes) to fit in " << kMaxStaticSharedBytes
           << " bytes of shared memory, got D = " << ks.d
           << " and Dv = " << ks.dv;
  ks.blockM = options.blockM ? options.blockM : 64;
  ks.blockN = std::min(options.blockN ? options.blockN : 64, maxBlockN);
  return ks;
}

/// The manifest facts of docs/ARTIFACTS.md that the kernel fixes.
static DictionaryAttr buildManifest(Builder &b, const KernelShape &ks,
                                    StringRef kernelName) {
  auto dim = [&](int64_t d) -> Attribute {
    if (ShapedType::isDynamic(d))
      return b.getStringAttr("?");
    return b.getI64IntegerAttr(d);
  };
  SmallVector<Attribute> batchShape;
  for (int64_t d : ks.batchShape)
    batchShape.push_back(dim(d));
  SmallVector<Attribute> params;
  for (StringRef p : {"q", "k", "v", "o"})
    params.push_back(b.getStringAttr(p));
  if (ks.hasLse)
    params.push_back(b.getStringAttr("lse"));

  SmallVector<NamedAttribute> entries = {
      b.getNamedAttr("kernel", b.getStringAttr(kernelName)),
      b.getNamedAttr("dtype", b.getStringAttr(typeName(ks.elt))),
      b.getNamedAttr("o_dtype", b.getStringAttr(typeName(ks.oElt))),
      b.getNamedAttr("causal", b.getStringAttr(stringifyCausalKind(ks.causal))),
      b.getNamedAttr("scale", b.getF32FloatAttr(ks.scale)),
      b.getNamedAttr("batch", dim(ks.batch)),
      b.getNamedAttr("batch_shape", b.getArrayAttr(batchShape)),
      b.getNamedAttr("seqlen_q", dim(ks.tq)),
      b.getNamedAttr("seqlen_k", dim(ks.tk)),
      b.getNamedAttr("head_dim", dim(ks.d)),
      b.getNamedAttr("head_dim_v", dim(ks.dv)),
      b.getNamedAttr("has_lse", b.getI64IntegerAttr(ks.hasLse ? 1 : 0)),
      b.getNamedAttr("block_m", b.getI64IntegerAttr(ks.blockM)),
      b.getNamedAttr("block_n", b.getI64IntegerAttr(ks.blockN)),
      b.getNamedAttr("threads", b.getI64IntegerAttr(ks.threads())),
      // The scalar kernel has only static shared memory (the K/V tiles);
      // the tensor-core kernel's tiles are dynamic.
      b.getNamedAttr(
          "shared_bytes",
          b.getI64IntegerAttr(ks.tensorCore ? gpukernel::tensorCoreSharedLayout(
                                                  getTensorCoreForwardShape(ks))
                                                  .bytes
                                            : 0)),
      b.getNamedAttr("params", b.getArrayAttr(params)),
      b.getNamedAttr(
          "grid",
          ks.persistent
              ? b.getStrArrayAttr({"min(mul(ceil_div(seqlen_q,block_m),batch),"
                                   "resident_blocks)",
                                   "1", "1"})
              : b.getStrArrayAttr(
                    {ks.tilesPerBlock == 1
                         ? std::string("ceil_div(seqlen_q,block_m)")
                         : "ceil_div(seqlen_q," +
                               std::to_string(ks.tilesPerBlock * ks.blockM) +
                               ")",
                     "batch", "1"})),
  };
  // The tensor-core kernel copies rows with 16-byte cp.async (or TMA, whose
  // global addresses and strides are 16-byte multiples too).
  if (ks.tensorCore)
    entries.push_back(b.getNamedAttr("row_align", b.getI64IntegerAttr(16)));
  // TMA: one tensor map per tiled operand, as `tensor_map OPERAND
  // BOX_COLS BOX_ROWS SWIZZLE` lines: boxes of one swizzle row (64
  // columns, 128-byte swizzle; 32 and 64-byte for head dim 32) by the
  // tile's rows.
  if (ks.tma) {
    SmallVector<Attribute> maps;
    for (auto [operand, rows, cols] :
         {std::tuple<StringRef, int64_t, int64_t>{"q", ks.blockM, ks.d},
          {"k", ks.blockN, ks.d},
          {"v", ks.blockN, ks.dv}}) {
      int64_t swizzle = gpukernel::tmaSwizzleBytes(cols);
      maps.push_back(b.getStringAttr((operand + " " + Twine(swizzle / 2) +
                                      " " + Twine(rows) + " " +
                                      Twine(swizzle))
                                         .str()));
    }
    // o by TMA stores: boxes of one warp's 16 rows.
    if (getTensorCoreForwardShape(ks).tmaStoreO())
      maps.push_back(
          b.getStringAttr(("o " + Twine(gpukernel::tmaSwizzleBytes(ks.dv) / 2) +
                           " 16 " + Twine(gpukernel::tmaSwizzleBytes(ks.dv)))
                              .str()));
    entries.push_back(b.getNamedAttr("tensor_map", b.getArrayAttr(maps)));
  }
  return b.getDictionaryAttr(entries);
}

/// Fills the kernel body. See the file header for the structure.
static void buildKernelBody(OpBuilder &b, Location loc, gpu::GPUFuncOp func,
                            const KernelShape &ks) {
  KernelBuilder kb(b, loc);
  Type f32 = kb.f32;
  constexpr double negInf = -std::numeric_limits<double>::infinity();

  Value q = func.getArgument(0), k = func.getArgument(1),
        v = func.getArgument(2), o = func.getArgument(3);
  Value lse = ks.hasLse ? func.getArgument(4) : Value();
  Value kTile = func.getWorkgroupAttributions()[0]; // [blockN, D]
  Value vTile = func.getWorkgroupAttributions()[1]; // [blockN, Dv]
  Value qRow = func.getPrivateAttributions()[0];    // [D] f32
  Value acc = func.getPrivateAttributions()[1];     // [Dv] f32
  Value sRow = func.getPrivateAttributions()[2];    // [blockN] f32

  b.setInsertionPointToStart(&func.front());
  Value c0 = kb.cstIndex(0), c1 = kb.cstIndex(1);
  Value blockM = kb.cstIndex(ks.blockM), blockN = kb.cstIndex(ks.blockN);
  Value dC = kb.cstIndex(ks.d), dvC = kb.cstIndex(ks.dv);
  Value zero = kb.cstF32(0.0), ninf = kb.cstF32(negInf);
  Value scale = kb.cstF32(ks.scale);

  Value tq = memref::DimOp::create(b, loc, q, 1);
  Value tk = memref::DimOp::create(b, loc, k, 1);
  Value queryBlock = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);

  // i0: first query row of this block; row: this thread's query row. The
  // last block may be ragged: rows past Tq only help with copies and
  // barriers.
  Value i0 = kb.mul(queryBlock, blockM);
  Value row = kb.add(i0, tid);
  Value rowValid = kb.cmpI(arith::CmpIPredicate::slt, row, tq);
  Value rows = kb.minS(blockM, kb.sub(tq, i0));

  // Query i sees keys j <= i + causalOffset (top_left: 0; bottom_right:
  // Tk - Tq, may be negative).
  Value causalOffset = c0;
  if (ks.causal == CausalKind::bottom_right)
    causalOffset = kb.sub(tk, tq);
  // kvEnd: one past the last key any row of the block may see. Under causal
  // that is the diagonal of the last row, i0 + rows - 1 + offset, plus one,
  // clamped to [0, Tk]: key blocks entirely in the future are never visited.
  Value kvEnd = tk;
  if (ks.causal != CausalKind::none) {
    Value end = kb.add(kb.add(i0, rows), causalOffset);
    kvEnd = kb.minS(kb.maxS(end, c0), tk);
  }

  // Stage this thread's query row in private memory (f32) and clear acc.
  scf::IfOp::create(b, loc, rowValid, [&](OpBuilder &ib, Location il) {
    scf::ForOp::create(
        ib, il, c0, dC, c1, ValueRange{},
        [&](OpBuilder &fb, Location fl, Value d, ValueRange) {
          KernelBuilder t(fb, fl);
          t.store(t.toF32(t.load(q, {batch, row, d})), qRow, {d});
          scf::YieldOp::create(fb, fl);
        });
    scf::YieldOp::create(ib, il);
  });
  scf::ForOp::create(b, loc, c0, dvC, c1, ValueRange{},
                     [&](OpBuilder &fb, Location fl, Value e, ValueRange) {
                       KernelBuilder t(fb, fl);
                       t.store(zero, acc, {e});
                       scf::YieldOp::create(fb, fl);
                     });

  // The key/value loop carries this row's running max m and running sum l.
  // Its trip count depends only on the block, so every thread reaches the
  // barriers the same number of times.
  auto kvLoop = scf::ForOp::create(
      b, loc, c0, kvEnd, blockN, ValueRange{ninf, zero},
      [&](OpBuilder &lb, Location ll, Value j0, ValueRange carried) {
        KernelBuilder t(lb, ll);
        Value m = carried[0], l = carried[1];
        // cols: rows of this key block (the last one may be ragged).
        Value cols = t.minS(blockN, t.sub(kvEnd, j0));

        // Every thread is done with the previous tiles; copy the next ones
        // and wait until they are complete.
        gpu::BarrierOp::create(lb, ll);
        buildTileCopy(t, k, kTile, batch, j0, cols, ks.d, tid, blockM);
        buildTileCopy(t, v, vTile, batch, j0, cols, ks.dv, tid, blockM);
        gpu::BarrierOp::create(lb, ll);

        auto update = scf::IfOp::create(
            lb, ll, rowValid,
            [&](OpBuilder &ub, Location ul) {
              KernelBuilder u(ub, ul);

              // sRow[c] = scale * q . k[j0 + c] for c < cols, hiding keys
              // past the diagonal when `causalMask`; returns their max.
              auto buildScores = [&](OpBuilder &sb, Location sl,
                                     bool causalMask) -> Value {
                KernelBuilder s(sb, sl);
                auto loop = scf::ForOp::create(
                    sb, sl, c0, cols, c1, ValueRange{s.cstF32(negInf)},
                    [&](OpBuilder &cb, Location cl, Value c, ValueRange mx) {
                      KernelBuilder w(cb, cl);
                      auto dot = scf::ForOp::create(
                          cb, cl, c0, dC, c1, ValueRange{w.cstF32(0.0)},
                          [&](OpBuilder &db, Location dl, Value d,
                              ValueRange sum) {
                            KernelBuilder x(db, dl);
                            Value qd = x.load(qRow, {d});
                            Value kd = x.toF32(x.load(kTile, {c, d}));
                            Value next = arith::AddFOp::create(
                                db, dl, sum[0],
                                arith::MulFOp::create(db, dl, qd, kd));
                            scf::YieldOp::create(db, dl, next);
                          });
                      Value score = arith::MulFOp::create(
                          cb, cl, dot.getResult(0), scale);
                      if (causalMask) {
                        // Key j0 + c is hidden from row when
                        // j0 + c > row + causalOffset.
                        Value hidden =
                            w.cmpI(arith::CmpIPredicate::sgt, w.add(j0, c),
                                   w.add(row, causalOffset));
                        score = arith::SelectOp::create(
                            cb, cl, hidden, w.cstF32(negInf), score);
                      }
                      w.store(score, sRow, {c});
                      scf::YieldOp::create(cb, cl,
                                           ValueRange{arith::MaximumFOp::create(
                                               cb, cl, mx[0], score)});
                    });
                return loop.getResult(0);
              };

              Value blockMax;
              if (ks.causal == CausalKind::none) {
                blockMax = buildScores(ub, ul, /*causalMask=*/false);
              } else {
                // Only a block with a key past the diagonal of the block's
                // first row needs the element-wise mask:
                // j0 + cols - 1 > i0 + causalOffset.
                Value lastKey = u.sub(u.add(j0, cols), c1);
                Value straddles = u.cmpI(arith::CmpIPredicate::sgt, lastKey,
                                         u.add(i0, causalOffset));
                auto ifOp = scf::IfOp::create(
                    ub, ul, straddles,
                    [&](OpBuilder &tb, Location tl) {
                      scf::YieldOp::create(tb, tl, buildScores(tb, tl, true));
                    },
                    [&](OpBuilder &eb, Location el) {
                      scf::YieldOp::create(eb, el, buildScores(eb, el, false));
                    });
                blockMax = ifOp.getResult(0);
              }

              // m' = max(m, blockMax). alpha = exp(m - m') rescales the
              // previous l and acc; it is forced to 0 while m = -inf (no
              // visible key yet), never computing exp(-inf - (-inf)).
              Value mNew = arith::MaximumFOp::create(ub, ul, m, blockMax);
              Value alpha = arith::SelectOp::create(
                  ub, ul, u.isNegInf(m), zero,
                  math::ExpOp::create(ub, ul,
                                      arith::SubFOp::create(ub, ul, m, mNew)));

              // p = exp(s - m') in place of s (0 while m' = -inf: every key
              // so far hidden), and its row sum.
              Value mNewIsNegInf = u.isNegInf(mNew);
              auto pLoop = scf::ForOp::create(
                  ub, ul, c0, cols, c1, ValueRange{zero},
                  [&](OpBuilder &pb, Location pl, Value c, ValueRange sum) {
                    KernelBuilder w(pb, pl);
                    Value s = w.load(sRow, {c});
                    Value e = math::ExpOp::create(
                        pb, pl, arith::SubFOp::create(pb, pl, s, mNew));
                    Value p =
                        arith::SelectOp::create(pb, pl, mNewIsNegInf, zero, e);
                    w.store(p, sRow, {c});
                    scf::YieldOp::create(
                        pb, pl,
                        ValueRange{arith::AddFOp::create(pb, pl, sum[0], p)});
                  });
              // l' = alpha * l + rowsum(p).
              Value lNew = arith::AddFOp::create(
                  ub, ul, arith::MulFOp::create(ub, ul, alpha, l),
                  pLoop.getResult(0));

              // acc'[e] = alpha * acc[e] + sum_c p[c] * v[j0 + c, e].
              scf::ForOp::create(
                  ub, ul, c0, dvC, c1, ValueRange{},
                  [&](OpBuilder &eb, Location el, Value e, ValueRange) {
                    KernelBuilder w(eb, el);
                    Value init =
                        arith::MulFOp::create(eb, el, w.load(acc, {e}), alpha);
                    auto pv = scf::ForOp::create(
                        eb, el, c0, cols, c1, ValueRange{init},
                        [&](OpBuilder &cb, Location cl, Value c,
                            ValueRange sum) {
                          KernelBuilder x(cb, cl);
                          Value p = x.load(sRow, {c});
                          Value ve = x.toF32(x.load(vTile, {c, e}));
                          Value next = arith::AddFOp::create(
                              cb, cl, sum[0],
                              arith::MulFOp::create(cb, cl, p, ve));
                          scf::YieldOp::create(cb, cl, next);
                        });
                    w.store(pv.getResult(0), acc, {e});
                    scf::YieldOp::create(eb, el);
                  });
              scf::YieldOp::create(ub, ul, ValueRange{mNew, lNew});
            },
            [&](OpBuilder &eb, Location el) {
              scf::YieldOp::create(eb, el, ValueRange{m, l});
            });
        scf::YieldOp::create(lb, ll, update.getResults());
      });
  Value m = kvLoop.getResult(0), l = kvLoop.getResult(1);

  // Epilogue: l = 0 exactly when the row saw no key (otherwise the key with
  // the max score contributes exp(0) = 1), giving o = 0 and lse = -inf.
  scf::IfOp::create(b, loc, rowValid, [&](OpBuilder &ib, Location il) {
    KernelBuilder t(ib, il);
    Value empty =
        arith::CmpFOp::create(ib, il, arith::CmpFPredicate::OEQ, l, zero);
    scf::ForOp::create(ib, il, c0, dvC, c1, ValueRange{},
                       [&](OpBuilder &fb, Location fl, Value e, ValueRange) {
                         KernelBuilder w(fb, fl);
                         Value div =
                             arith::DivFOp::create(fb, fl, w.load(acc, {e}), l);
                         Value r =
                             arith::SelectOp::create(fb, fl, empty, zero, div);
                         if (ks.oElt != f32)
                           r = arith::TruncFOp::create(fb, fl, ks.oElt, r);
                         w.store(r, o, {batch, row, e});
                         scf::YieldOp::create(fb, fl);
                       });
    if (lse) {
      Value logSum =
          arith::AddFOp::create(ib, il, m, math::LogOp::create(ib, il, l));
      t.store(arith::SelectOp::create(ib, il, empty, ninf, logSum), lse,
              {batch, row});
    }
    scf::YieldOp::create(ib, il);
  });
  gpu::ReturnOp::create(b, loc);
}

std::optional<FeatureChoice> mlir::fa::parseFeatureChoice(StringRef value) {
  return llvm::StringSwitch<std::optional<FeatureChoice>>(value)
      .Cases({"false", "False", "FALSE", "0"}, FeatureChoice::Off)
      .Case("auto", FeatureChoice::Auto)
      .Cases({"true", "True", "TRUE", "1"}, FeatureChoice::On)
      .Default(std::nullopt);
}

FailureOr<gpu::GPUModuleOp> mlir::fa::buildAttentionKernel(
    OpBuilder &builder, AttentionOp op, StringRef kernelName,
    const AttentionKernelOptions &options, DictionaryAttr &manifest) {
  FailureOr<KernelShape> maybeShape = getKernelShape(op, options);
  if (failed(maybeShape))
    return failure();
  const KernelShape &ks = *maybeShape;
  MLIRContext *ctx = builder.getContext();
  Location loc = op.getLoc();
  Type f32 = builder.getF32Type();

  // Kernel arguments: rank-3 memrefs [batch, T, D] (lse [batch, Tq]) with a
  // dynamic offset and dynamic strides, so the strides the launcher passes
  // are the ones used.
  auto globalType = [&](ArrayRef<int64_t> shape, Type elt) {
    SmallVector<int64_t> strides(shape.size(), ShapedType::kDynamic);
    return MemRefType::get(
        shape, elt, StridedLayoutAttr::get(ctx, ShapedType::kDynamic, strides));
  };
  // The tensor-core kernel reads rows with vector loads and 16-byte
  // cp.async: its q/k/v/o rows are contiguous (innermost stride 1).
  auto rowType = [&](ArrayRef<int64_t> shape, Type elt) {
    if (!ks.tensorCore)
      return globalType(shape, elt);
    return MemRefType::get(
        shape, elt,
        StridedLayoutAttr::get(ctx, ShapedType::kDynamic,
                               {ShapedType::kDynamic, ShapedType::kDynamic, 1}));
  };
  SmallVector<Type> argTypes = {rowType({ks.batch, ks.tq, ks.d}, ks.elt),
                                rowType({ks.batch, ks.tk, ks.d}, ks.elt),
                                rowType({ks.batch, ks.tk, ks.dv}, ks.elt),
                                rowType({ks.batch, ks.tq, ks.dv}, ks.oElt)};
  if (ks.hasLse)
    argTypes.push_back(globalType({ks.batch, ks.tq}, f32));
  // TMA: the tensor maps of q, k and v (and o, tmaStoreO) close the list
  // (by-value CUtensorMap parameters once fa-lower-tensor-map-params has
  // run).
  const int64_t numTensorMaps =
      ks.tma ? getTensorCoreForwardShape(ks).numTensorMaps() : 0;
  argTypes.append(numTensorMaps, LLVM::LLVMPointerType::get(ctx));

  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto priv = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Private);
  // The tensor-core kernel's tiles are in dynamic workgroup memory.
  SmallVector<Type> workgroupTypes, privateTypes;
  if (!ks.tensorCore) {
    workgroupTypes = {MemRefType::get({ks.blockN, ks.d}, ks.elt,
                                      MemRefLayoutAttrInterface(), workgroup),
                      MemRefType::get({ks.blockN, ks.dv}, ks.elt,
                                      MemRefLayoutAttrInterface(), workgroup)};
    privateTypes = {
        MemRefType::get({ks.d}, f32, MemRefLayoutAttrInterface(), priv),
        MemRefType::get({ks.dv}, f32, MemRefLayoutAttrInterface(), priv),
        MemRefType::get({ks.blockN}, f32, MemRefLayoutAttrInterface(), priv)};
  }

  OpBuilder::InsertionGuard guard(builder);
  auto gpuModule = gpu::GPUModuleOp::create(builder, loc, kernelName);
  builder.setInsertionPointToStart(gpuModule.getBody());
  auto func = gpu::GPUFuncOp::create(builder, loc, kernelName,
                                     builder.getFunctionType(argTypes, {}),
                                     workgroupTypes, privateTypes);
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                builder.getUnitAttr());
  func.setKnownBlockSizeAttr(builder.getDenseI32ArrayAttr(
      {static_cast<int32_t>(ks.threads()), 1, 1}));
  if (ks.tma)
    func->setAttr(gpukernel::kTensorMapParamsAttrName,
                  builder.getI64IntegerAttr(numTensorMaps));
  if (ks.wgmma) {
    gpukernel::buildWgmmaForwardBody(builder, loc, func,
                                     getTensorCoreForwardShape(ks));
  } else if (ks.tensorCore) {
    gpukernel::buildTensorCoreForwardBody(builder, loc, func,
                                          getTensorCoreForwardShape(ks));
  } else {
    buildKernelBody(builder, loc, func, ks);
  }

  manifest = buildManifest(builder, ks, kernelName);
  return gpuModule;
}

/// True for the ops a host function may hold for the pass to erase it.
static bool isErasableHostOp(Operation *op) {
  return isa<AttentionOp, AttentionBackwardOp, func::ReturnOp>(op) ||
         op->hasTrait<OpTrait::ConstantLike>();
}

/// The prefix of a kernel's name: the host function's name with every
/// character that PTX identifiers and file names do not take replaced by
/// '_' (and a leading digit prefixed), so that any MLIR symbol name gives a
/// valid PTX entry and a plain file name.
static std::string kernelBaseName(StringRef funcName) {
  std::string name;
  for (char c : funcName)
    name.push_back(llvm::isAlnum(c) || c == '_' ? c : '_');
  if (name.empty() || llvm::isDigit(name.front()))
    name.insert(0, "k_");
  return name;
}

/// The bits of the forward kernel's `index` type. Only the TMA wgmma
/// kernels take 32 (convert-nvgpu-to-nvvm lowers the mma.sync kernels' nvgpu
/// ops with 64-bit indices, and the others were not checked with 32): `option`
/// (32 or 64) when given, else 32 with the producer warpgroup at head dims
/// D = Dv = 128, and at D = Dv = 64 with a causal mask (1-2.5% faster on the
/// H200; 1-4% slower at head dim 64 without a mask: docs/PERFORMANCE.md,
/// twenty-second run), unless a static shape has 2^31 elements or more;
/// else 64.
static int64_t forwardIndexBitwidth(AttentionOp op, const KernelShape &ks,
                                    int64_t option) {
  if (!ks.tma)
    return 64;
  if (option)
    return option;
  bool measuredFaster =
      ks.producerWarp &&
      ((ks.d == 128 && ks.dv == 128) ||
       (ks.d == 64 && ks.dv == 64 && ks.causal != CausalKind::none));
  return measuredFaster && !gpukernel::hasOversizedTensor(op) ? 32 : 64;
}

namespace {

struct ConvertFAToGPUPass : fa::impl::ConvertFAToGPUBase<ConvertFAToGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    AttentionKernelOptions options;
    options.blockM = blockM;
    options.blockN = blockN;
    options.deterministic = deterministic;
    options.dqAtomics = dqAtomics;
    options.tensorCores = tensorCores;
    options.wgmma = wgmma;
    options.numWarps = numWarps;
    options.maxSharedBytes = maxSharedBytes;
    options.stages = stages;
    options.tma = tma;
    options.producerWarp = producerWarp;
    options.pingpong = pingpong;
    options.tilesPerBlock = tilesPerBlock;
    // The false|auto|true options; an unknown value is an error at the
    // module's location.
    auto parseChoice = [&](StringRef name, StringRef value,
                           FeatureChoice &out) {
      std::optional<FeatureChoice> choice = parseFeatureChoice(value);
      if (!choice) {
        emitError(module.getLoc(), "convert-fa-to-gpu: expected ")
            << name << " false, auto or true, got '" << value << "'";
        return false;
      }
      out = *choice;
      return true;
    };
    if (!parseChoice("persistent", persistent, options.persistent) ||
        !parseChoice("backward-producer-warp", backwardProducerWarp,
                     options.backwardProducerWarp))
      return signalPassFailure();
    options.pairKeyBlocks = pairKeyBlocks;
    // Option errors at the module's location, not on the module: no dump
    // of the whole module after the message.
    if (!AttentionKernelOptions::isValidStages(options.stages)) {
      emitError(module.getLoc(), "convert-fa-to-gpu: expected stages 2 or "
                                 "3, or 0 for the default, got ")
          << options.stages;
      return signalPassFailure();
    }
    if (options.tilesPerBlock < 0 || options.tilesPerBlock > 2) {
      emitError(module.getLoc(), "convert-fa-to-gpu: expected "
                                 "tiles-per-block 1 or 2, or 0 for the "
                                 "kernel's choice, got ")
          << options.tilesPerBlock;
      return signalPassFailure();
    }
    if (indexBitwidth != 0 && indexBitwidth != 32 && indexBitwidth != 64) {
      emitError(module.getLoc(), "convert-fa-to-gpu: expected "
                                 "index-bitwidth 32 or 64, or 0 for the "
                                 "kernel's choice, got ")
          << static_cast<int64_t>(indexBitwidth);
      return signalPassFailure();
    }
    options.indexBitwidth = indexBitwidth;
    // Options of a kernel family that the chosen family does not take are
    // errors (as in fa-to-ptx), not silently ignored: wgmma kernels are
    // tensor-core kernels, and only they load by TMA, which the producer
    // warpgroup needs.
    auto needs = [&](bool given, StringRef option, bool needed,
                     StringRef need) {
      if (!given || needed)
        return false;
      emitError(module.getLoc(), "convert-fa-to-gpu: ")
          << option << " needs " << need;
      return true;
    };
    if (needs(options.wgmma, "wgmma=true", options.tensorCores,
              "tensor-cores=true (the wgmma kernels are tensor-core "
              "kernels)") ||
        needs(options.tma, "tma=true", options.wgmma,
              "the wgmma kernels (wgmma=true)") ||
        needs(options.producerWarp || options.pingpong ||
                  options.tilesPerBlock == 2 ||
                  options.persistent == FeatureChoice::On,
              "producer-warp, pingpong, tiles-per-block=2 or persistent",
              options.tma, "the TMA wgmma kernels (wgmma=true tma=true)") ||
        needs(options.persistent == FeatureChoice::On, "persistent=true",
              options.producerWarp && !options.pingpong &&
                  options.tilesPerBlock != 2,
              "producer-warp=true without pingpong or tiles-per-block=2"))
      return signalPassFailure();
    if (options.maxSharedBytes < 1) {
      emitError(module.getLoc(), "convert-fa-to-gpu: expected a positive "
                                 "max-shared-bytes (bytes of workgroup "
                                 "memory per block), got ")
          << options.maxSharedBytes;
      return signalPassFailure();
    }

    // The fa.attention and fa.attention_backward ops of each host function,
    // in order.
    llvm::MapVector<func::FuncOp, SmallVector<AttentionOp>> hosts;
    llvm::MapVector<func::FuncOp, SmallVector<AttentionBackwardOp>> bwdHosts;
    bool failedAny = false;
    module.walk([&](Operation *op) {
      if (!isa<AttentionOp, AttentionBackwardOp>(op))
        return;
      auto func = dyn_cast<func::FuncOp>(op->getParentOp());
      if (!func || func->getParentOp() != module.getOperation()) {
        op->emitOpError("expected to be directly in a func.func of the "
                        "top-level module for the GPU lowering");
        failedAny = true;
        return;
      }
      if (auto fwd = dyn_cast<AttentionOp>(op))
        hosts[func].push_back(fwd);
      else
        bwdHosts[func].push_back(cast<AttentionBackwardOp>(op));
    });
    // A function with only backward ops is a host too.
    for (auto &entry : bwdHosts)
      (void)hosts[entry.first];
    if (failedAny)
      return signalPassFailure();

    // Check every host before changing anything.
    SymbolTable symbols(module);
    // Kernel names already taken by an op, with its function: two function
    // names may sanitize to the same kernel name (`@"a.b"` and `@a_b`).
    llvm::StringMap<func::FuncOp> planned;
    auto claim = [&](Operation *op, func::FuncOp func,
                     const std::string &name) {
      auto [it, inserted] = planned.try_emplace(name, func);
      if (inserted)
        return true;
      op->emitOpError("expected a kernel name of its own, but the kernels of ")
          << FlatSymbolRefAttr::get(func.getSymNameAttr()) << " and "
          << FlatSymbolRefAttr::get(it->second.getSymNameAttr())
          << " are both named @" << name
          << " (characters other than letters, digits and '_' in a "
             "function name become '_')";
      return false;
    };
    for (auto &[func, ops] : hosts) {
      WalkResult walk = func.walk([&](Operation *inner) {
        if (inner == func.getOperation() || isErasableHostOp(inner))
          return WalkResult::advance();
        func.emitError() << "convert-fa-to-gpu erases the host function @"
                         << func.getSymName()
                         << ", expected it to hold only fa.attention, "
                            "fa.attention_backward, constants and "
                            "func.return, got '"
                         << inner->getName() << "'";
        return WalkResult::interrupt();
      });
      if (walk.wasInterrupted()) {
        failedAny = true;
        continue;
      }
      if (!SymbolTable::symbolKnownUseEmpty(func, module)) {
        func.emitError() << "convert-fa-to-gpu erases the host function @"
                         << func.getSymName() << ", expected no uses of it";
        failedAny = true;
      }
      for (size_t n = 0, e = ops.size(); n < e; ++n) {
        FailureOr<KernelShape> ks = getKernelShape(ops[n], options);
        if (failed(ks) || failed(gpukernel::checkIndexBitwidth(
                              ops[n], forwardIndexBitwidth(
                                          ops[n], *ks, options.indexBitwidth))))
          failedAny = true;
        std::string name = (kernelBaseName(func.getSymName()) + "_attention_" + Twine(n)).str();
        if (symbols.lookup(name)) {
          ops[n].emitOpError("expected no symbol named @")
              << name << " (the kernel name) in the module";
          failedAny = true;
        } else if (!claim(ops[n], func, name)) {
          failedAny = true;
        }
      }
      for (auto [n, op] : llvm::enumerate(bwdHosts.lookup(func))) {
        if (failed(checkAttentionBackwardKernels(op, options)))
          failedAny = true;
        std::string name =
            (kernelBaseName(func.getSymName()) + "_attention_backward_" + Twine(n)).str();
        if (symbols.lookup(name)) {
          op.emitOpError("expected no symbol named @")
              << name << " (the kernels' module name) in the module";
          failedAny = true;
        } else if (!claim(op, func, name)) {
          failedAny = true;
        }
      }
    }
    if (failedAny)
      return signalPassFailure();

    OpBuilder builder(&getContext());
    SmallVector<NamedAttribute> manifests;
    if (auto existing =
            module->getAttrOfType<DictionaryAttr>(kManifestsAttrName))
      llvm::append_range(manifests, existing.getValue());
    for (auto &[func, ops] : hosts) {
      builder.setInsertionPoint(func);
      for (auto [n, op] : llvm::enumerate(ops)) {
        std::string name = (kernelBaseName(func.getSymName()) + "_attention_" + Twine(n)).str();
        DictionaryAttr manifest;
        // Cannot fail: every op passed getKernelShape above.
        FailureOr<gpu::GPUModuleOp> kernels =
            buildAttentionKernel(builder, op, name, options, manifest);
        if (failed(kernels))
          return signalPassFailure();
        gpukernel::setIndexBitwidth(
            *kernels, manifest,
            forwardIndexBitwidth(op, *getKernelShape(op, options),
                                 options.indexBitwidth));
        manifests.push_back(builder.getNamedAttr(name, manifest));
      }
      for (auto [n, op] : llvm::enumerate(bwdHosts.lookup(func))) {
        std::string name =
            (kernelBaseName(func.getSymName()) + "_attention_backward_" + Twine(n)).str();
        DictionaryAttr manifest;
        // Cannot fail: every op passed checkAttentionBackwardKernels above.
        if (failed(buildAttentionBackwardKernels(builder, op, name, options,
                                                 manifest)))
          return signalPassFailure();
        manifests.push_back(builder.getNamedAttr(name, manifest));
      }
    }

    for (auto &entry : hosts)
      entry.first.erase();
    module->setAttr(kManifestsAttrName,
                    DictionaryAttr::get(&getContext(), manifests));
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(&getContext()));
  }
};

} // namespace
