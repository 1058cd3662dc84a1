// Running a kernel's independent units on several threads (matmul_nbits splits the output
// columns, group_query_attention the (batch, KV head) pairs). Each unit is computed exactly as on
// one thread, so the results do not depend on the thread count.
#ifndef HIPDNN_EP_KERNELS_CPU_PARALLEL_H_
#define HIPDNN_EP_KERNELS_CPU_PARALLEL_H_

#include <algorithm>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace hipdnn_ep::kernels::cpu {

// Multiply-adds below which a call stays on the calling thread: starting a thread costs tens of
// microseconds, about what this much work takes.
constexpr int64_t kMinWorkPerThread = int64_t{1} << 18;

// Calls fn(begin, end) on contiguous ranges covering [0, items), on up to one thread per hardware
// thread, with at least kMinWorkPerThread units of work (items * work_per_item in all) per
// thread. The calling thread takes the first range. The first exception thrown is rethrown
// after every thread has finished.
template <typename Fn>
void parallel_ranges(int64_t items, int64_t work_per_item, Fn&& fn) {
  const int64_t hardware = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t by_work = std::max<int64_t>(1, items * std::max<int64_t>(work_per_item, 1) / kMinWorkPerThread);
  const int64_t threads = std::min({hardware, by_work, std::max<int64_t>(items, 1)});
  if (threads <= 1) {
    fn(int64_t{0}, items);
    return;
  }
  std::exception_ptr error;
  std::mutex error_mutex;
  auto guarded = [&](int64_t begin, int64_t end) {
    try {
      fn(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads - 1));
  for (int64_t t = 1; t < threads; ++t) pool.emplace_back(guarded, items * t / threads, items * (t + 1) / threads);
  guarded(0, items / threads);
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace hipdnn_ep::kernels::cpu

#endif  // HIPDNN_EP_KERNELS_CPU_PARALLEL_H_
