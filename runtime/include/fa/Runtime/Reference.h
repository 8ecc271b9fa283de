//===- Reference.h - float64 reference attention -----------------*- C++
//-*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// The dense float64 attention that fa-run checks kernels against, with the
// op semantics of DESIGN.md: softmax(scale * q k^T + causal mask) v, a row
// with no visible key gives o = 0 and lse = -inf.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_REFERENCE_H
#define FA_RUNTIME_REFERENCE_H

#include "fa/Runtime/FaRuntime.h"

#include <cstdint>

namespace fa::rt {

struct AttentionShape {
  int64_t batch = 0;
  int64_t seqlenQ = 0;
  int64_t seqlenK = 0;
  int64_t headDim = 0;
  int64_t headDimV = 0;
  double scale = 1.0;
  faRtCausal causal = FA_RT_CAUSAL_NONE;
};

/// How many keys query row `row` sees: keys 0 .. result-1 (causal masks are
/// prefixes). none: all Tk; top_left: j <= i; bottom_right: j <= i + Tk - Tq.
int64_t visibleKeys(faRtCausal causal, int64_t row, int64_t seqlenQ,
                    int64_t seqlenK);

/// Forward FLOPs: 2 * (D + Dv) per visible (query, key) pair, summed exactly
/// (about 4 * B * Tq * Tk * D without a mask, about half that causal).
double attentionFlops(const AttentionShape &shape);

/// o[b, i, :] and lse[b, i] in float64 from row-major float inputs
/// q [B, Tq, D], k [B, Tk, D], v [B, Tk, Dv]; `lse` may be null. Work is
/// spread over `numThreads` std::threads (0: the hardware's count).
void referenceAttention(const AttentionShape &shape, const float *q,
                        const float *k, const float *v, double *o, double *lse,
                        unsigned numThreads = 0);

/// The exact gradients of o = attention(q, k, v) for the output gradient
/// `dout` [B, Tq, Dv], in float64 (the closed form of fa.attention_backward
/// with p, o and delta = rowsum(dout * o) recomputed exactly from q, k, v):
/// dq [B, Tq, D], dk [B, Tk, D], dv [B, Tk, Dv]. Rows with no visible key
/// contribute nothing. Batch entries are spread over `numThreads` threads.
void referenceAttentionBackward(const AttentionShape &shape, const float *q,
                                const float *k, const float *v,
                                const float *dout, double *dq, double *dk,
                                double *dv, unsigned numThreads = 0);

} // namespace fa::rt

#endif // FA_RUNTIME_REFERENCE_H
