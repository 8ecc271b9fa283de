//===- FAOps.td - fa dialect operations --------------------*- tablegen -*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// The `fa` dialect: exact attention, softmax(scale * Q K^T + mask) V, as one
// aggregate op whose lowerings never materialize the Tq x Tk score matrix
// (FlashAttention: Dao et al., 2022, arXiv:2205.14135, Algorithm 1;
// FlashAttention-2: Dao, 2023, arXiv:2307.08691, Algorithm 1), and its
// recompute-based backward (same paper, Algorithm 2).
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FA_IR_FAOPS_TD
#define FA_DIALECT_FA_IR_FAOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Dialect
//===----------------------------------------------------------------------===//

def FA_Dialect : Dialect {
  let name = "fa";
  let cppNamespace = "::mlir::fa";
  let summary = "Exact attention (FlashAttention) as first-class ops";
  let description = [{
    The `fa` dialect carries scaled dot-product attention as one op,
    `fa.attention`, so that passes can tile it with an online softmax and
    lower it to GPU kernels without ever building the Tq x Tk score matrix.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

class FA_Op<string mnemonic, list<Trait> traits = []>
    : Op<FA_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def FA_CausalNone : I32EnumAttrCase<"none", 0>;
def FA_CausalTopLeft : I32EnumAttrCase<"top_left", 1>;
def FA_CausalBottomRight : I32EnumAttrCase<"bottom_right", 2>;

def FA_CausalAttr : I32EnumAttr<"CausalKind",
    "causal mask alignment",
    [FA_CausalNone, FA_CausalTopLeft, FA_CausalBottomRight]> {
  let cppNamespace = "::mlir::fa";
  let description = [{
    `none`: every query sees every key. `top_left`: query i sees keys j <= i
    (PyTorch's `is_causal=True`). `bottom_right`: query i sees keys
    j <= i + Tk - Tq (decoding with a KV cache).
  }];
}

//===----------------------------------------------------------------------===//
// fa.attention
//===----------------------------------------------------------------------===//

def FA_AttentionOp : FA_Op<"attention", [Pure]> {
  let summary = "scaled dot-product attention, softmax(scale * q k^T + mask) v";
  let description = [{
    Computes, for every batch index `b...` (the leading dims, typically
    `[B, H]`) and query row `i`:

    ```
    s[j]   = scale * sum_d q[b..., i, d] * k[b..., j, d] + mask[b..., i, j]
    p[j]   = exp(s[j] - max_j s) / sum_j exp(s[j] - max_j s)
    o[b..., i, :] = sum_j p[j] * v[b..., j, :]
    lse[b..., i]  = log(sum_j exp(s[j]))          (natural log, f32)
    ```

    Operands (ranked tensors, rank >= 2, all of one rank):
    - `q`: `[batch..., Tq, D]`, `k`: `[batch..., Tk, D]`,
      `v`: `[batch..., Tk, Dv]`; element type f16, bf16 or f32, the same for
      all three.
    - `mask` (optional): `[batch'..., Tq, Tk]` where each batch dim equals
      the one of `q` or is 1 (broadcast). A float mask (same element type as
      `q`, or f32) is added to the scaled scores; an `i1` mask keeps the
      scores where it is true (PyTorch convention) and drops the others.

    Results:
    - `o`: `[batch..., Tq, Dv]`, element type that of `q` or f32.
    - `lse` (optional): `[batch..., Tq]`, f32, the natural-log logsumexp of
      the scaled, masked scores of each row; the backward pass recomputes
      the probabilities from it.

    Attributes:
    - `scale` (optional, f64): multiplies q k^T; defaults to `1/sqrt(D)`.
      Must be finite and positive.
    - `causal` (default `none`): `top_left` hides keys j > i,
      `bottom_right` hides keys j > i + Tk - Tq. The alignment is explicit,
      never guessed from the shapes.

    Accumulation is in f32. A query row with no visible key (fully masked,
    or Tk = 0) yields `o = 0` and `lse = -inf`, never NaN.

    Dims may be static or dynamic; the verifier checks every pair of dims
    that are both static. Dims that the contract ties together (batch dims,
    q's and k's head_dim, k's and v's seqlen) but that are dynamic are not
    checked at run time by the lowerings: a mismatch there is undefined
    behaviour, as for a mismatched `linalg.matmul`. Static head
    dims (head_dim of q/k, head_dim_v of v) must be positive, `scale`
    must be representable in f32, and no operand or result may carry a
    tensor encoding (the op takes and gives dense tensors). A dynamic mask
    batch dim broadcasts when it is 1 at run time and otherwise must equal
    q's (the tiled code reads batch index 0 or q's; `fa-to-ptx` takes no
    mask yet).

    Example:

    ```mlir
    %o, %lse = fa.attention %q, %k, %v scale(0.125) causal(top_left)
        : tensor<2x8x1024x64xbf16>, tensor<2x8x1024x64xbf16>,
          tensor<2x8x1024x64xbf16> -> tensor<2x8x1024x64xbf16>, tensor<2x8x1024xf32>
    ```
  }];

  let arguments = (ins
    AnyRankedTensor:$q,
    AnyRankedTensor:$k,
    AnyRankedTensor:$v,
    Optional<AnyRankedTensor>:$mask,
    OptionalAttr<F64Attr>:$scale,
    DefaultValuedAttr<FA_CausalAttr, "::mlir::fa::CausalKind::none">:$causal
  );
  let results = (outs
    AnyRankedTensor:$o,
    Optional<AnyRankedTensor>:$lse
  );

  let assemblyFormat = [{
    $q `,` $k `,` $v (`mask` `(` $mask^ `:` type($mask) `)`)?
    (`scale` `(` $scale^ `)`)? (`causal` `(` $causal^ `)`)? attr-dict
    `:` type($q) `,` type($k) `,` type($v) `->` type(results)
  }];

  let hasVerifier = 1;

  let extraClassDeclaration = [{
    /// Number of leading batch dims (rank - 2).
    int64_t getNumBatchDims() {
      return getQ().getType().getRank() - 2;
    }
    /// The scale applied to q k^T when it is statically known: the `scale`
    /// attribute, or 1/sqrt(D) when D is static. std::nullopt when the
    /// attribute is absent and D is dynamic.
    std::optional<double> getStaticScale();
    bool isCausal() { return getCausal() != ::mlir::fa::CausalKind::none; }
  }];
}

//===----------------------------------------------------------------------===//
// fa.attention_backward
//===----------------------------------------------------------------------===//

def FA_AttentionBackwardOp : FA_Op<"attention_backward", [Pure]> {
  let summary = "gradients of fa.attention, recomputed from the saved logsumexp";
  let description = [{
    Computes the gradients `dq`, `dk`, `dv` of `o = fa.attention(q, k, v)`
    (same `scale` and `causal`, no mask) for the output gradient `do`, from
    the forward's output `o` and its logsumexp `lse`. For every batch index
    `b...` (the leading dims, typically `[B, H]`), with the batch indices
    left out:

    ```
    s[i, j]  = scale * sum_d q[i, d] * k[j, d]      (-inf where causal hides j)
    p[i, j]  = exp(s[i, j] - lse[i])                  (0 where s = -inf or lse = -inf)
    delta[i] = sum_e do[i, e] * o[i, e]
    dv[j, e] = sum_i p[i, j] * do[i, e]
    dp[i, j] = sum_e do[i, e] * v[j, e]
    ds[i, j] = p[i, j] * (dp[i, j] - delta[i])
    dq[i, d] = scale * sum_j ds[i, j] * k[j, d]
    dk[j, d] = scale * sum_i ds[i, j] * q[i, d]
    ```

    This is the recompute-based backward of FlashAttention-2 (Dao, 2023,
    arXiv:2307.08691, Algorithm 2): nothing of size Tq x Tk is saved by the
    forward; lowerings recompute `s` and `p` tile by tile from `lse`.

    Operands (ranked tensors, rank >= 2, all of one rank):
    - `q`: `[batch..., Tq, D]`, `k`: `[batch..., Tk, D]`,
      `v`: `[batch..., Tk, Dv]`; element type f16, bf16 or f32, the same for
      all three (the rules of `fa.attention`).
    - `o`, `do` (the operand `dout` in C++): `[batch..., Tq, Dv]`, element
      type that of `q` or f32: the forward's output and the gradient of the
      loss with respect to it.
    - `lse`: `[batch..., Tq]`, f32: the forward's natural-log logsumexp of
      the scaled, masked scores of each row.

    Results: `dq`, `dk`, `dv` with the shapes of `q`, `k`, `v`; each has the
    element type of `q` or f32.

    Attributes, as on `fa.attention` (they must be those of the forward):
    - `scale` (optional, f64): defaults to `1/sqrt(D)`; finite and positive.
    - `causal` (default `none`): `top_left` hides keys j > i,
      `bottom_right` hides keys j > i + Tk - Tq.

    Accumulation is in f32. A query row with no visible key (fully masked,
    or Tk = 0; its `lse` is -inf) contributes nothing and gets `dq = 0`;
    a key no query sees gets `dk = dv = 0`; never NaN.

    How to obtain the operands: an `fa.attention` without a mask that also
    produces its `lse` result supplies everything but `do`:
    `%o, %lse = fa.attention %q, %k, %v ...` then
    `fa.attention_backward %q, %k, %v, %o, %do, %lse ...` with the same
    `scale` and `causal` (`mlir::fa::createAttentionBackward` in
    `fa/Dialect/FA/Transforms/Transforms.h` builds it, adding the `lse`
    result to the forward when it is missing).

    Dims may be static or dynamic; the verifier checks every pair of dims
    that are both static. Dims that the contract ties together (batch dims,
    q's and k's head_dim, k's and v's seqlen) but that are dynamic are not
    checked at run time by the lowerings: a mismatch there is undefined
    behaviour, as for a mismatched `linalg.matmul`. Static head
    dims (head_dim of q/k, head_dim_v of v) must be positive, `scale`
    must be representable in f32, and no operand or result may carry a
    tensor encoding (the op takes and gives dense tensors).

    Example:

    ```mlir
    %dq, %dk, %dv = fa.attention_backward %q, %k, %v, %o, %do, %lse
        scale(0.125) causal(top_left)
        : tensor<2x8x1024x64xbf16>, tensor<2x8x1024x64xbf16>,
          tensor<2x8x1024x64xbf16>, tensor<2x8x1024x64xbf16>,
          tensor<2x8x1024x64xbf16>, tensor<2x8x1024xf32>
       -> tensor<2x8x1024x64xf32>, tensor<2x8x1024x64xf32>,
          tensor<2x8x1024x64xf32>
    ```
  }];

  let arguments = (ins
    AnyRankedTensor:$q,
    AnyRankedTensor:$k,
    AnyRankedTensor:$v,
    AnyRankedTensor:$o,
    AnyRankedTensor:$dout,
    AnyRankedTensor:$lse,
    OptionalAttr<F64Attr>:$scale,
    DefaultValuedAttr<FA_CausalAttr, "::mlir::fa::CausalKind::none">:$causal
  );
  let results = (outs
    AnyRankedTensor:$dq,
    AnyRankedTensor:$dk,
    AnyRankedTensor:$dv
  );

  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $o `,` $dout `,` $lse
    (`scale` `(` $scale^ `)`)? (`causal` `(` $causal^ `)`)? attr-dict
    `:` type($q) `,` type($k) `,` type($v) `,` type($o) `,` type($dout) `,`
    type($lse) `->` type($dq) `,` type($dk) `,` type($dv)
  }];

  let hasVerifier = 1;

  let extraClassDeclaration = [{
    /// Number of leading batch dims (rank - 2).
    int64_t getNumBatchDims() {
      return getQ().getType().getRank() - 2;
    }
    /// The scale applied to q k^T when it is statically known (see
    /// AttentionOp::getStaticScale).
    std::optional<double> getStaticScale();
    bool isCausal() { return getCausal() != ::mlir::fa::CausalKind::none; }
  }];
}

#endif // FA_DIALECT_FA_IR_FAOPS_TD
