//===- Random.h - random inputs for the device checks -----------*- C++ -*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// Normal(0, 1) inputs rounded to the kernel's element type, drawn with the
// standard library's engines in parallel: fa-run fills q, k, v (and do) of
// benchmark-sized problems (about 10^8 elements, 3-4 s on one thread) on
// every call.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_RANDOM_H
#define FA_RUNTIME_RANDOM_H

#include "fa/Runtime/FaRuntime.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fa::rt {

/// Elements drawn from one engine: chunk c of a stream holds elements
/// [c * kRandomChunk, (c + 1) * kRandomChunk).
constexpr size_t kRandomChunk = size_t(1) << 20;

/// `count` samples of normal(0, 1) (std::normal_distribution<float>), each
/// rounded to `dtype` (roundToDtype). Chunk c of `stream` uses its own
/// std::mt19937_64 seeded by std::seed_seq{seed (two 32-bit halves),
/// stream, c}, so the values depend only on (seed, stream, count), not on
/// `numThreads` (0: the hardware's count) or on the other streams drawn.
std::vector<float> randomNormal(size_t count, uint64_t seed, uint32_t stream,
                                faRtDtype dtype, unsigned numThreads = 0);

} // namespace fa::rt

#endif // FA_RUNTIME_RANDOM_H
