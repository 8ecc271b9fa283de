//===- FAToGPU.h - fa.attention to a GPU kernel -----------------*- C++ -*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// Lowers fa.attention to one gpu.func kernel per op (convert-fa-to-gpu) and
// writes the PTX + manifest artifacts of docs/ARTIFACTS.md
// (fa-export-kernels).
//
//===----------------------------------------------------------------------===//

#ifndef FA_CONVERSION_FATOGPU_FATOGPU_H
#define FA_CONVERSION_FATOGPU_FATOGPU_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <cstdint>
#include <optional>

namespace mlir {
namespace fa {
class AttentionOp;
class AttentionBackwardOp;

#define GEN_PASS_DECL_CONVERTFATOGPU
#define GEN_PASS_DECL_FAEXPORTKERNELS
#define GEN_PASS_DECL_FACONVERTBF16MMASYNCTONVVM
#define GEN_PASS_DECL_FALOWERTENSORMAPPARAMS
#include "fa/Conversion/Passes.h.inc"

/// The top-level module attribute that maps each kernel name to its manifest
/// dictionary (docs/ARTIFACTS.md keys, less `version`, `ptx` and `chip`).
inline constexpr llvm::StringLiteral kManifestsAttrName = "fa.manifests";

/// A kernel feature chosen by a `false|auto|true` option
/// (`backward-producer-warp`, `persistent`).
enum class FeatureChoice {
  /// Never.
  Off,
  /// Where it was measured faster (each option says where).
  Auto,
  /// Wherever the kernel can take it.
  On,
};

/// Whether the sm_90a wgmma backward's `_dkdv` kernel gets a producer
/// warpgroup (the `backward-producer-warp` option; `Auto`: head dims D =
/// Dv = 128 without a mask or with a top-left causal one,
/// docs/PERFORMANCE.md).
using BackwardProducerWarp = FeatureChoice;

/// Parses a `false|auto|true` option value (also `0`/`1` and the
/// capitalized spellings of a boolean option); nullopt for anything else.
std::optional<FeatureChoice> parseFeatureChoice(StringRef value);

/// Block sizes of the GPU kernel.
struct AttentionKernelOptions {
  /// Query rows per GPU block, in [1, 1024]; 0: the default (64 for the
  /// scalar kernel, where it is also the threads per block; 128 for the
  /// tensor-core kernel up to head dim 128, else 64).
  int64_t blockM = 0;
  /// Key/value rows per shared-memory tile; 0: the default (64 for the
  /// scalar kernel, lowered when needed so that the tiles fit in 48 KiB of
  /// static shared memory; for the tensor-core kernel 64 up to head dim 64,
  /// else 32).
  int64_t blockN = 0;
  /// Forward: use the mma.sync tensor-core kernel (sm_80 and later) for
  /// f16/bf16 operands with head dims that are multiples of 16 up to 256.
  bool tensorCores = false;
  /// With tensorCores: use the sm_90a warpgroup-MMA kernels
  /// (WgmmaForward.cpp, WgmmaBackward.cpp) for head dims 32, 64 or 128.
  bool wgmma = false;
  /// Tensor-core kernel: warps per block, in [1, 16]; 0: 4, or derived from
  /// blockM when only that is given.
  int64_t numWarps = 0;
  /// Workgroup memory one block of the tensor-core kernels may use, in
  /// bytes (the target chip's per-block opt-in limit; sm_80: 166912).
  int64_t maxSharedBytes = 166912;
  /// wgmma kernels: stages of loop tiles (K/V in the forward, Q/dO or K/V
  /// in the backward) in workgroup memory, 2 or 3; 0: 3 when they fit in
  /// maxSharedBytes, else 2.
  int64_t stages = 0;
  /// Whether `value` is a `stages` value above (0, 2 or 3); the
  /// convert-fa-to-gpu pass and the fa-to-ptx pipeline check it.
  static bool isValidStages(int64_t value) {
    return value == 0 || value == 2 || value == 3;
  }
  /// wgmma forward: Q/K/V tiles by TMA (cp.async.bulk.tensor from tensor
  /// maps passed by value after the memref arguments) instead of cp.async.
  bool tma = false;
  /// TMA wgmma forward: a producer warpgroup issues the loads and gives
  /// its registers to the consumer warpgroups (setmaxnreg), which release
  /// K/V stages on mbarriers (no block barrier in the loop); the block has
  /// 128 more threads.
  bool producerWarp = false;
  /// With producerWarp and two or more warpgroups: the consumer warpgroups
  /// take turns issuing their products (pingpong scheduling).
  bool pingpong = false;
  /// TMA wgmma forward with producerWarp, without pingpong: query tiles
  /// (block_m rows each) per GPU block, 1 or 2. With 2, block x computes
  /// two tiles one after the other (without a mask 2x and 2x + 1; with a
  /// causal mask the pair n - 1 - x and x of the n query tiles, so that
  /// every block sees about n + 1 key blocks), Q double-buffered: the
  /// producer loads the second tile's Q and first K/V stages while the
  /// consumers finish the first tile (its last P V and o stores), so that
  /// half the blocks' launches and prologue loads are hidden. The grid
  /// is ceil(Tq / (2 block_m)) x batch. 0: 2 for the producer kernel with
  /// two consumer warpgroups at head dims above 64 (measured faster on the
  /// H200) when both Q buffers fit maxSharedBytes and Tk is dynamic or
  /// over five key blocks (two tiles spilled with fewer), else 1.
  int64_t tilesPerBlock = 1;
  /// TMA wgmma forward with producerWarp, without pingpong, for ops whose
  /// o is stored by TMA (o in q's element type, head_dim_v == head_dim, a
  /// multiple of 64) and whose two Q buffers fit maxSharedBytes (else the
  /// kernel it would be without): a persistent kernel. The grid is
  /// min(query tiles x batch, resident blocks) (manifest grid
  /// `min(mul(ceil_div(seqlen_q,
  /// block_m),batch),resident_blocks)`); block x takes tiles x, x +
  /// nctaid.x, ... of the query tiles x batch entries (causal: pairs of
  /// tiles n - 1 - x and x, two turns each, when the query tile count n is
  /// even and the pairs fill the grid, else the longest-first order of
  /// longestFirstBlock), Q double-buffered, and
  /// with one or two consumer warpgroups every tile boundary is peeled as
  /// tiles-per-block = 2 peels its one (with three each tile ends alone)
  /// (FlashAttention-3's persistent kernel, Shah et al. 2024, Section
  /// 3.1), with 128-key tiles. `On` overrides tilesPerBlock for those ops;
  /// `Auto` takes it where it was measured faster: the kernels with two
  /// consumer warpgroups (head dims above 64, num-warps 8) and the
  /// automatic tilesPerBlock (0). Others ignore it.
  FeatureChoice persistent = FeatureChoice::Off;
  /// Backward only: compute dq in its own kernel over query blocks (no
  /// atomics, bitwise reproducible) instead of f32 atomics from the dk/dv
  /// kernel.
  bool deterministic = false;
  /// Backward, sm_90a wgmma kernels only: `_dkdv` also computes dq (dQ +=
  /// scale dS K, the fifth product) and adds it to an f32 accumulator with
  /// atomics, and `_dq_convert` replaces `_dq`. Needs deterministic off
  /// and head dim 64 or 128.
  bool dqAtomics = false;
  /// Backward with TMA and dq atomics: `_dkdv` with one more warpgroup (the
  /// last, 128 threads) that issues the Q/dO loads and copies the lse/delta
  /// columns, the consumers releasing each stage on an "empty" mbarrier
  /// (FlashAttention-3, Section 3.1); needs a query tile (block-m) that is
  /// a multiple of 64.
  BackwardProducerWarp backwardProducerWarp = BackwardProducerWarp::Off;
  /// Backward with the producer warpgroup under a causal mask: `_dkdv` block
  /// x takes key blocks x and n - 1 - x one after the other (see the pass
  /// option `pair-key-blocks`).
  bool pairKeyBlocks = false;
  /// Bits of the kernels' `index` type, 32 or 64 (see the pass option).
  int64_t indexBitwidth = 64;
};

/// Builds, at the insertion point of `builder` (a block of a module), a
/// `gpu.module @kernelName` holding the kernel `gpu.func @kernelName` that
/// computes `op` (see the convert-fa-to-gpu description), and returns it with
/// its launch manifest in `manifest`. Leaves `op` in place. Fails, emitting an
/// error on `op` and building nothing, when the op is outside what the GPU
/// lowering supports (mask operand, dynamic head dims).
FailureOr<gpu::GPUModuleOp>
buildAttentionKernel(OpBuilder &builder, AttentionOp op, StringRef kernelName,
                     const AttentionKernelOptions &options,
                     DictionaryAttr &manifest);

/// Checks that `op` is within what the backward GPU lowering supports
/// (emitting an error on it otherwise), without building anything.
LogicalResult checkAttentionBackwardKernels(AttentionBackwardOp op,
                                            const AttentionKernelOptions &options);

/// Builds, at the insertion point of `builder`, a `gpu.module @name` holding
/// the kernels of `op` in launch order (see the convert-fa-to-gpu
/// description and docs/ARTIFACTS.md, "Backward"): `@<name>_delta`,
/// `@<name>_dkdv` and either `@<name>_dq_convert` (default, dq through f32
/// atomics) or `@<name>_dq` (`options.deterministic`). Returns the module
/// and its manifest dictionary in `manifest`. Leaves `op` in place.
FailureOr<gpu::GPUModuleOp>
buildAttentionBackwardKernels(OpBuilder &builder, AttentionBackwardOp op,
                              StringRef name,
                              const AttentionKernelOptions &options,
                              DictionaryAttr &manifest);

/// Renders a manifest dictionary (as recorded by convert-fa-to-gpu) in the
/// line format of docs/ARTIFACTS.md, with `version`, `ptx` (`<kernel>.ptx`)
/// and `chip` added.
std::string renderManifest(DictionaryAttr manifest, StringRef kernelName,
                           StringRef chip);

} // namespace fa
} // namespace mlir

#endif // FA_CONVERSION_FATOGPU_FATOGPU_H
