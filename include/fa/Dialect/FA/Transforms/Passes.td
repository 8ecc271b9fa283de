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

def FAGenerateBackward : Pass<"fa-generate-backward", "::mlir::ModuleOp"> {
  let summary = "Emit, for each fa.attention, a function computing its q/k/v gradients";
  let description = [{
    For the n-th `fa.attention` (no mask) of function `@f`, adds to the
    module holding `@f` (the top-level one or a nested `builtin.module`)

    ```mlir
    func.func @f_attention_<n>_grad(%q, %k, %v, %do) -> (dq, dk, dv) {
      %o, %lse = fa.attention %q, %k, %v <same scale/causal>
      %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse
      return %dq, %dk, %dv
    }
    ```

    with `q`, `k`, `v` of the forward's operand types, `do` of its `o`
    type, and gradients in q's element type (or f32 with
    `grad-f32=true`). The forward is recomputed inside the function: it
    produces the logsumexp the recompute-based backward needs
    (FlashAttention-2, Dao 2023, arXiv:2307.08691, section 3.1), so the
    function is the vector-Jacobian product of attention with nothing
    quadratic saved. A training compiler calls it, or inlines it and lets
    CSE share the forward with its own. The original function is not
    changed. A body-less declaration of the same name and type (a caller's
    forward declaration) is defined in place. Generated functions carry the
    unit attribute `fa.generated_backward`: the pass skips them and their
    names, so running it twice changes nothing. Any other symbol of the
    name is an error. An fa.attention with a mask operand is skipped with a
    warning (fa.attention_backward takes no mask).
  }];
  let options = [
    Option<"gradF32", "grad-f32", "bool", /*default=*/"false",
           "Return f32 gradients instead of q's element type">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def FARaiseAttention : Pass<"fa-raise-attention"> {
  let summary = "Raise softmax(scale * Q K^T + mask) V chains to fa.attention";
  let description = [{
    Finds attention written out op by op, as frontends emit it
    (torch-to-linalg, TOSA, hand-written linalg), and replaces it by one
    `fa.attention` that computes the same function of the same inputs.

    The match is anchored on the P V product and walks back:

    - products: `linalg.matmul`, `linalg.batch_matmul` (with or without
      transposing `indexing_maps`), any `linalg.generic` (or other linalg
      op) whose body is `acc + ext?(a) * ext?(b)` over one reduction dim
      with projected-permutation maps and a zero-filled init, and
      `tosa.matmul` with zero zero-points;
    - the softmax over the key axis: `linalg.softmax`, or max / sub / exp /
      sum / div (or reciprocal and mul) as linalg generics (one step each or
      several fused into one body), `linalg.reduce`, or TOSA ops
      (`tosa.reduce_max`, `tosa.sub`, `tosa.exp`, `tosa.reduce_sum`,
      `tosa.reciprocal`, `tosa.mul`); `maximumf` or `maxnumf`; max init
      -inf or the lowest finite value of the type the max is taken in; with
      or without the max subtraction; float casts (upcast before,
      truncation after) on the scores and probabilities, exact upcasts only
      on q, k, v and the mask; `tosa.identity` anywhere; torch's
      `_safe_softmax` around it, `select(all_j(x_j == -inf), 0,
      softmax(x))` (`cmpf oeq` under an and reduction from true, or `une`
      under an or reduction from false with the arms swapped; linalg
      reductions with `andi`/`ori` bodies, `tosa.equal`,
      `tosa.reduce_all`/`reduce_any`) where x is the softmax's input up to
      exact casts, every hidden score -inf (no finite fill) and, with an
      additive mask, no rounding of the masked scores to f16/bf16 nor f16
      arithmetic on them: it then zeroes exactly the rows fa.attention
      gives 0;
    - the scores: `alpha * (q k^T) + beta * mask` where scalings are
      multiplications or divisions by positive constants (on the scores, or
      on q or k when exact: a power of two or computed in f32), an additive
      float mask tensor (broadcast over batch dims; it becomes the op's
      mask, scaled by beta when beta != 1, where beta comes from a scaling
      of the masked scores, `(q k^T + mask) * c`: a mask term scaled inside
      the same elementwise op, `q k^T + mask * c`, is refused; a mask
      computed from other
      tensors in an op of its own is taken as the tensor that op writes), an i1 mask through a select
      (keeping keys where it is true, or hiding them there as
      `masked_fill(mask, -inf)` does: the op gets its negation; under
      `arith.xori` with true or `tosa.logical_not`; also as a bias
      `select(m, -inf, 0)` added to the scores), and a
      causal mask: a select between the scores and -inf (or the lowest
      finite value of the select's type, when times the scale after it it
      is at most -1000) on a `linalg.index` comparison (index or i64,
      constants up to 2^32) that keeps j <= i + c, or a constant 0 / -inf
      lower-triangular tensor added to the scores; c = 0 gives
      `causal(top_left)`, c = Tk - Tq (static) `causal(bottom_right)`;
    - layouts: transposes (`linalg.transpose`, `tosa.transpose`, or the
      products' indexing maps) and reshapes of batch dims
      (`tensor.collapse_shape` / `expand_shape`, `tosa.reshape`) anywhere
      in the chain. q, k, v are brought to `[batch..., T, D]` with
      transpose / expand_shape; a batch dim that a reshape splits is split
      in the fa.attention too (as the first split met: in the scores, then
      q, k, v), and merged back for the product's users. An operand that
      splits it otherwise (2x3 vs 3x2, two dynamic parts) or that looking
      through leaves without a batch dim (k and v broadcast over query
      heads: GQA/MQA repeats) is passed as the product reads it (flat, the
      broadcast materialized) and expanded to that split. An operand that
      the product reads without a batch dim (k and v broadcast over the
      query heads by the products' indexing maps, as elementwise fusion
      leaves MQA/GQA) is broadcast by the rewrite, its size taken from an
      operand that holds the dim (none: not raised); of the dims that P
      holds and v does not, the query axis is the one right before the key
      axis in P's layout, else the next (last first) with which the chain
      matches. A mask expanded
      from a dim that is not one batch dim's parts (a flat `[B * H, Tq,
      Tk]` or `[B, Tq * Tk]` mask) is the expanded tensor, as it is read.

    The replacement has exactly the product's result type (converted,
    transposed and reshaped as needed); the chain ops that die are erased.

    Preconditions and what stays untouched: the chain must be on tensors;
    no intermediate (scores, exponentials, sums, probabilities, the Q K^T
    product) may have a user outside the chain, since fa.attention does not
    produce it (shape queries, `tensor.dim`, excepted: they are rewritten
    in terms of the operands' sizes); the softmax must normalize over the key axis and the second
    product contract it (a softmax over the query axis, or probabilities
    transposed before the second product, are left alone); scales must be
    finite positive constants and masks of the forms above. Rows that the
    original masks completely (NaN there, from 0/0) give 0 in fa.attention.

    With `explain=true`, every product of the forms above (a zero-filled
    init included) that consumes an exp (`math.exp`, `tosa.exp`) or
    softmax result but is not raised gets a remark naming the condition
    that failed, as does one whose operand an op the chain reader does not
    know (say, `tosa.floor`) computes from a softmax; a product of another
    form (say, an init of 1.0) or over `math.exp2` gets none.
  }];
  let options = [
    Option<"explain", "explain", "bool", /*default=*/"false",
           "Emit a remark on every near-miss chain saying why it was not "
           "raised">,
  ];
  let dependentDialects = [
    "::mlir::fa::FADialect",
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

#endif // FA_DIALECT_FA_TRANSFORMS_PASSES_TD
