//===- Transforms.h - fa dialect rewrites -----------------------*- C++ -*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FA_TRANSFORMS_TRANSFORMS_H
#define FA_DIALECT_FA_TRANSFORMS_TRANSFORMS_H

#include "mlir/Support/LLVM.h"

#include <cstdint>

namespace mlir {
class RewritePatternSet;
class RewriterBase;
namespace fa {
class AttentionOp;

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

} // namespace fa
} // namespace mlir

#endif // FA_DIALECT_FA_TRANSFORMS_TRANSFORMS_H
