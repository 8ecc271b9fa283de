//===- Transforms.h - fa dialect rewrites -----------------------*- C++ -*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FA_TRANSFORMS_TRANSFORMS_H
#define FA_DIALECT_FA_TRANSFORMS_TRANSFORMS_H

#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <string>

namespace mlir {
class Operation;
class RewritePatternSet;
class RewriterBase;
namespace fa {
class AttentionOp;
class AttentionBackwardOp;

/// Block sizes of the online-softmax tiling.
struct AttentionTilingOptions {
  /// Query rows per block (block_m), > 0.
  int64_t blockM = 64;
  /// Key/value rows per block (block_n), > 0.
  int64_t blockN = 64;
};

/// Replaces `op` by its online-softmax tiling (FlashAttention-2, Dao 2023,
/// Algorithm 1) on tensors. Fails, without changing the IR, when the op cannot
/// be tiled with these options.
LogicalResult tileAttention(RewriterBase &rewriter, AttentionOp op,
                            const AttentionTilingOptions &options);

/// Adds the pattern that applies `tileAttention` to every fa.attention.
void populateTileAttentionPatterns(RewritePatternSet &patterns,
                                   const AttentionTilingOptions &options);

/// Replaces `op` by FlashAttention-2's recompute-based backward (Dao 2023,
/// Algorithm 2) tiled on tensors: key/value blocks of `options.blockN` rows
/// outer, query blocks of `options.blockM` rows inner. Fails, without
/// changing the IR, when the op cannot be tiled with these options.
LogicalResult tileAttentionBackward(RewriterBase &rewriter,
                                    AttentionBackwardOp op,
                                    const AttentionTilingOptions &options);

/// Adds the pattern that applies `tileAttentionBackward` to every
/// fa.attention_backward.
void populateTileAttentionBackwardPatterns(
    RewritePatternSet &patterns, const AttentionTilingOptions &options);

/// Builds, after `forward`, the fa.attention_backward that computes the
/// gradients of `forward`'s q, k and v for the output gradient `dO` (shape
/// and element type of `forward`'s o, or f32 elements), with `forward`'s
/// scale and causal attributes; the gradients get `gradElementType` (q's
/// element type or f32). When `forward` has no lse result it is first
/// replaced, through `rewriter`, by the same fa.attention that also produces
/// lse. Fails, without changing the IR, when `forward` has a mask (the
/// backward op takes none).
FailureOr<AttentionBackwardOp>
createAttentionBackward(RewriterBase &rewriter, AttentionOp forward, Value dO,
                        Type gradElementType);

/// Raises the attention chain softmax(scale * Q K^T + mask) V that ends at
/// the product `pvProduct` (a linalg contraction or tosa.matmul) to one
/// fa.attention, replacing the product by a value of the same type and
/// erasing the chain ops that die. Fails without changing the IR when the
/// chain does not match; `why`, when given, then says which condition
/// failed. See the description of `fa-raise-attention`.
FailureOr<AttentionOp> raiseAttention(RewriterBase &rewriter,
                                      Operation *pvProduct,
                                      std::string *why = nullptr);

} // namespace fa
} // namespace mlir

#endif // FA_DIALECT_FA_TRANSFORMS_TRANSFORMS_H
