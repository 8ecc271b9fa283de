//===- Reference.cpp - float64 reference attention -----------------------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#include "fa/Runtime/Reference.h"
#include "Parallel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

int64_t fa::rt::visibleKeys(faRtCausal causal, int64_t row, int64_t seqlenQ,
                            int64_t seqlenK) {
  int64_t last; // The last visible key index.
  switch (causal) {
  case FA_RT_CAUSAL_NONE:
    return seqlenK;
  case FA_RT_CAUSAL_TOP_LEFT:
    last = row;
    break;
  case FA_RT_CAUSAL_BOTTOM_RIGHT:
    last = row + seqlenK - seqlenQ;
    break;
  default:
    return seqlenK;
  }
  return std::clamp<int64_t>(last + 1, 0, seqlenK);
}

double fa::rt::attentionFlops(const AttentionShape &shape) {
  double pairs = 0;
  for (int64_t i = 0; i < shape.seqlenQ; ++i)
    pairs += static_cast<double>(
        visibleKeys(shape.causal, i, shape.seqlenQ, shape.seqlenK));
  return 2.0 * static_cast<double>(shape.headDim + shape.headDimV) * pairs *
         static_cast<double>(shape.batch);
}

/// One query row: two passes over the visible keys (max, then exp-sum and
/// the weighted sum of v), all in double.
static void referenceRow(const fa::rt::AttentionShape &shape, const float *q,
                         const float *k, const float *v, int64_t row, double *o,
                         double *lse, std::vector<double> &scores) {
  const int64_t d = shape.headDim, dv = shape.headDimV;
  const int64_t visible =
      fa::rt::visibleKeys(shape.causal, row, shape.seqlenQ, shape.seqlenK);
  std::fill(o, o + dv, 0.0);
  if (visible == 0) {
    if (lse)
      *lse = -std::numeric_limits<double>::infinity();
    return;
  }
  scores.resize(visible);
  double maxScore = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < visible; ++j) {
    const float *kRow = k + j * d;
    double dot = 0;
    for (int64_t c = 0; c < d; ++c)
      dot += static_cast<double>(q[c]) * static_cast<double>(kRow[c]);
    scores[j] = shape.scale * dot;
    maxScore = std::max(maxScore, scores[j]);
  }
  double sum = 0;
  for (int64_t j = 0; j < visible; ++j) {
    double p = std::exp(scores[j] - maxScore);
    sum += p;
    const float *vRow = v + j * dv;
    for (int64_t c = 0; c < dv; ++c)
      o[c] += p * static_cast<double>(vRow[c]);
  }
  for (int64_t c = 0; c < dv; ++c)
    o[c] /= sum;
  if (lse)
    *lse = maxScore + std::log(sum);
}

void fa::rt::referenceAttention(const AttentionShape &shape, const float *q,
                                const float *k, const float *v, double *o,
                                double *lse, unsigned numThreads) {
  const int64_t tq = shape.seqlenQ, tk = shape.seqlenK;
  const int64_t d = shape.headDim, dv = shape.headDimV;
  // Work items: (batch, block of query rows), so one batch entry (decode,
  // B = 1) still spreads over the threads.
  const int64_t rowsPerItem = 16;
  const int64_t blocksPerBatch = (tq + rowsPerItem - 1) / rowsPerItem;
  const int64_t items = shape.batch * blocksPerBatch;
  detail::parallelFor(items, numThreads, [&](int64_t item) {
    // Scratch for one row's scores, reused by the items of a thread.
    thread_local std::vector<double> scores;
    const int64_t b = item / blocksPerBatch;
    const int64_t rowBegin = (item % blocksPerBatch) * rowsPerItem;
    const int64_t rowEnd = std::min(tq, rowBegin + rowsPerItem);
    for (int64_t i = rowBegin; i < rowEnd; ++i)
      referenceRow(shape, q + (b * tq + i) * d, k + b * tk * d, v + b * tk * dv,
                   i, o + (b * tq + i) * dv, lse ? lse + b * tq + i : nullptr,
                   scores);
  });
}

/// The backward of one batch entry, row by row, in double.
static void referenceBackwardEntry(const fa::rt::AttentionShape &shape,
                                   const float *q, const float *k,
                                   const float *v, const float *dout,
                                   double *dq, double *dk, double *dv) {
  const int64_t tq = shape.seqlenQ, tk = shape.seqlenK;
  const int64_t d = shape.headDim, dvDim = shape.headDimV;
  std::fill(dq, dq + tq * d, 0.0);
  std::fill(dk, dk + tk * d, 0.0);
  std::fill(dv, dv + tk * dvDim, 0.0);
  std::vector<double> p, o(dvDim);
  for (int64_t i = 0; i < tq; ++i) {
    const int64_t visible = fa::rt::visibleKeys(shape.causal, i, tq, tk);
    if (visible == 0)
      continue;
    const float *qRow = q + i * d, *doRow = dout + i * dvDim;
    p.resize(visible);
    double maxScore = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < visible; ++j) {
      double dot = 0;
      for (int64_t c = 0; c < d; ++c)
        dot += static_cast<double>(qRow[c]) * static_cast<double>(k[j * d + c]);
      p[j] = shape.scale * dot;
      maxScore = std::max(maxScore, p[j]);
    }
    double sum = 0;
    for (int64_t j = 0; j < visible; ++j)
      sum += p[j] = std::exp(p[j] - maxScore);
    std::fill(o.begin(), o.end(), 0.0);
    for (int64_t j = 0; j < visible; ++j) {
      p[j] /= sum;
      for (int64_t e = 0; e < dvDim; ++e)
        o[e] += p[j] * static_cast<double>(v[j * dvDim + e]);
    }
    double delta = 0;
    for (int64_t e = 0; e < dvDim; ++e)
      delta += static_cast<double>(doRow[e]) * o[e];
    for (int64_t j = 0; j < visible; ++j) {
      double dp = 0;
      for (int64_t e = 0; e < dvDim; ++e) {
        dp += static_cast<double>(doRow[e]) *
              static_cast<double>(v[j * dvDim + e]);
        dv[j * dvDim + e] += p[j] * static_cast<double>(doRow[e]);
      }
      const double ds = shape.scale * p[j] * (dp - delta);
      for (int64_t c = 0; c < d; ++c) {
        dq[i * d + c] += ds * static_cast<double>(k[j * d + c]);
        dk[j * d + c] += ds * static_cast<double>(qRow[c]);
      }
    }
  }
}

void fa::rt::referenceAttentionBackward(const AttentionShape &shape,
                                        const float *q, const float *k,
                                        const float *v, const float *dout,
                                        double *dq, double *dk, double *dv,
                                        unsigned numThreads) {
  const int64_t tq = shape.seqlenQ, tk = shape.seqlenK;
  const int64_t d = shape.headDim, dvDim = shape.headDimV;
  detail::parallelFor(shape.batch, numThreads, [&](int64_t b) {
    referenceBackwardEntry(shape, q + b * tq * d, k + b * tk * d,
                           v + b * tk * dvDim, dout + b * tq * dvDim,
                           dq + b * tq * d, dk + b * tk * d,
                           dv + b * tk * dvDim);
  });
}
