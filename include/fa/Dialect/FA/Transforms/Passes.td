//===- Passes.td - fa dialect transformation passes --------*- tablegen -*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FA_TRANSFORMS_PASSES_TD
#define FA_DIALECT_FA_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FATileAttention : Pass<"fa-tile-attention"> {
  let summary = "Tile fa.attention into query x key/value blocks with an online softmax";
  let description = [{
    Rewrites every `fa.attention` into loops on tensors: an outer loop over
    the batch dims and query blocks of `block-m` rows, an inner loop over
    key/value blocks of `block-n` rows that carries, per query row, the
    running max `m`, the running sum `l` and the unnormalized f32 output
    accumulator. Each key block computes `s = scale * q k^T (+ mask)`,
    `m_new = max(m, rowmax(s))`, `alpha = exp(m - m_new)` (forced to 0 while
    `m` is still -inf, so the first block never computes
    `exp(-inf - (-inf))`), `p = exp(s - m_new)`, `l = alpha * l + rowsum(p)`,
    `acc = alpha * acc + p v`. After the last block `o = acc / l` and
    `lse = m + log(l)`; rows with no visible key give `o = 0`,
    `lse = -inf`. This is Algorithm 1 of FlashAttention-2 (Dao, 2023,
    arXiv:2307.08691, section 3.1).

    Under `causal`, key blocks entirely in the future of a query block are
    not visited (the loop bound stops before them), and only blocks that
    straddle the diagonal are masked element-wise. Ragged last blocks on
    both axes are handled with dynamically sized tiles.

    No value of shape Tq x Tk (or any shape larger than
    block-m x block-n per batch index) exists in the output.

    Preconditions: the op verifies. Ops the pass cannot tile are left
    untouched with an error (the pass then fails).
  }];
  let options = [
    Option<"blockM", "block-m", "int64_t", /*default=*/"64",
           "Query rows per block (block_m), > 0">,
    Option<"blockN", "block-n", "int64_t", /*default=*/"64",
           "Key/value rows per block (block_n), > 0">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def FATileAttentionBackward : Pass<"fa-tile-attention-backward"> {
  let summary = "Tile fa.attention_backward into key/value x query blocks, recomputing p from lse";
  let description = [{
    Rewrites every `fa.attention_backward` into loops on tensors, following
    FlashAttention-2's backward (Dao, 2023, arXiv:2307.08691, Algorithm 2):

    - `delta = rowsum(do * o)` (f32, one value per query row), once;
    - an outer loop over the batch dims and key/value blocks of `block-n`
      rows carries the f32 accumulators `dk` `[cols, D]` and `dv`
      `[cols, Dv]` through an inner loop over query blocks of `block-m`
      rows;
    - per tile: `s = scale * q k^T`, `p = exp(s - lse)` (exactly 0 for
      causally hidden entries and for rows whose lse is -inf, by a select:
      `exp(-inf - (-inf))` is never computed), `dv += p^T do`,
      `dp = do v^T`, `ds = scale * p * (dp - delta)`, `dk += ds^T q`,
      `dq[rows] += ds k`.

    `dq` is one f32 tensor `[batch..., Tq, D]` carried by every loop and
    updated in place with extract_slice / insert_slice: its size is linear
    in Tq. After the loops it is converted to the element type of the `dq`
    result; `dk` and `dv` blocks are converted and inserted as each
    key/value block ends.

    Under `causal`, the query loop of a key block starts at the first query
    row that sees the block's first key (rows before it are skipped by the
    loop bound, not masked), and only tiles that straddle the diagonal are
    masked element-wise. Ragged last blocks on both axes use dynamically
    sized tiles.

    No value of shape Tq x Tk (or any shape larger than block-m x block-n
    per batch index) exists in the output.

    Preconditions: the op verifies.
  }];
  let options = [
    Option<"blockM", "block-m", "int64_t", /*default=*/"64",
           "Query rows per block (block_m), > 0">,
    Option<"blockN", "block-n", "int64_t", /*default=*/"64",
           "Key/value rows per block (block_n), > 0">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

#endif // FA_DIALECT_FA_TRANSFORMS_PASSES_TD
