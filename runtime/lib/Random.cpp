//===- Random.cpp - random inputs for the device checks -------------------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#include "fa/Runtime/Random.h"
#include "Parallel.h"
#include "fa/Runtime/Float16.h"

#include <algorithm>
#include <random>

std::vector<float> fa::rt::randomNormal(size_t count, uint64_t seed,
                                        uint32_t stream, faRtDtype dtype,
                                        unsigned numThreads) {
  std::vector<float> values(count);
  const size_t chunks = (count + kRandomChunk - 1) / kRandomChunk;
  detail::parallelFor(static_cast<int64_t>(chunks), numThreads, [&](int64_t c) {
    std::seed_seq seq{
        static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), stream,
        static_cast<uint32_t>(c), static_cast<uint32_t>(uint64_t(c) >> 32)};
    std::mt19937_64 engine(seq);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const size_t end = std::min(count, size_t(c + 1) * kRandomChunk);
    for (size_t i = size_t(c) * kRandomChunk; i < end; ++i)
      values[i] = roundToDtype(normal(engine), dtype);
  });
  return values;
}
