//===- Parallel.h - host work spread over std::threads ----------*- C++ -*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// Internal to the runtime library: the float64 reference and the input
// sampler run independent work items on all host threads.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_LIB_PARALLEL_H
#define FA_RUNTIME_LIB_PARALLEL_H

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace fa::rt::detail {

/// Calls fn(item) once for every item in [0, items) on up to `numThreads`
/// std::threads (0: the hardware's count; never more than items), the
/// calling thread one of them. Items are handed out in order from a shared
/// counter, so the split over threads varies from run to run: fn must
/// write only what its item owns.
template <typename Fn>
void parallelFor(int64_t items, unsigned numThreads, Fn fn) {
  if (items <= 0)
    return;
  if (numThreads == 0)
    numThreads = std::max(1u, std::thread::hardware_concurrency());
  numThreads =
      static_cast<unsigned>(std::min<int64_t>(int64_t(numThreads), items));
  std::atomic<int64_t> next{0};
  auto worker = [&]() {
    for (int64_t item = next++; item < items; item = next++)
      fn(item);
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < numThreads; ++t)
    threads.emplace_back(worker);
  worker();
  for (std::thread &thread : threads)
    thread.join();
}

} // namespace fa::rt::detail

#endif // FA_RUNTIME_LIB_PARALLEL_H
