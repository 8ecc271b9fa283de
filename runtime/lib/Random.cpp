//===- Random.cpp - random inputs for the device checks -------------------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#include "fa/Runtime/Random.h"
#include "fa/Runtime/Float16.h"

#include <algorithm>
#include <random>
#include <thread>

std::vector<float> fa::rt::randomNormal(size_t count, uint64_t seed,
                                        uint32_t stream, faRtDtype dtype,
                                        unsigned numThreads) {
  std::vector<float> values(count);
  const size_t chunks = (count + kRandomChunk - 1) / kRandomChunk;
  auto fillChunk = [&](size_t c) {
    std::seed_seq seq{
        static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), stream,
        static_cast<uint32_t>(c), static_cast<uint32_t>(uint64_t(c) >> 32)};
    std::mt19937_64 engine(seq);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const size_t end = std::min(count, (c + 1) * kRandomChunk);
    for (size_t i = c * kRandomChunk; i < end; ++i)
      values[i] = roundToDtype(normal(engine), dtype);
  };
  if (numThreads == 0)
    numThreads = std::max(1u, std::thread::hardware_concurrency());
  const size_t workers = std::min<size_t>(numThreads, chunks);
  if (workers <= 1) {
    for (size_t c = 0; c < chunks; ++c)
      fillChunk(c);
    return values;
  }
  // Worker w fills chunks w, w + workers, ...
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w)
    threads.emplace_back([&, w] {
      for (size_t c = w; c < chunks; c += workers)
        fillChunk(c);
    });
  for (std::thread &thread : threads)
    thread.join();
  return values;
}
