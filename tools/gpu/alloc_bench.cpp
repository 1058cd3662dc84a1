// Allocator throughput without any interpreter in the loop (tools/gpu/gpu_bench.py builds and calls it):
// one allocation pattern, a flat array of (op, slot, bytes) triples with op 0 = allocate into slot,
// 1 = free slot, 2 = move slot to slot `bytes`, replayed in C++ against
//   * hipdnn-ep's caching allocator through the runtime's C ABI (hipdnn_ep_malloc / hipdnn_ep_free),
//   * cudaMalloc / cudaFree,
//   * PyTorch's caching allocator (c10::cuda::CUDACachingAllocator::raw_alloc / raw_delete), when
//     built with -DWITH_TORCH inside a process that imported torch.
// Each returns microseconds per allocate/free pair, the device drained at the end of the timing.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <vector>

#ifdef WITH_TORCH
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace {

template <typename Alloc, typename Free>
int64_t replay(const int64_t* ops, int64_t n, Alloc alloc, Free release) {
  std::vector<void*> live(1024, nullptr);
  int64_t pairs = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t op = ops[3 * i], slot = ops[3 * i + 1], bytes = ops[3 * i + 2];
    if (op == 0) {
      live[slot] = alloc(static_cast<size_t>(bytes));
      ++pairs;
    } else if (op == 1) {
      release(live[slot]);
      live[slot] = nullptr;
    } else {
      live[bytes] = live[slot];
      live[slot] = nullptr;
    }
  }
  for (void*& p : live) {
    if (p != nullptr) release(p);
    p = nullptr;
  }
  return pairs;
}

template <typename Alloc, typename Free>
double time_us_per_pair(const int64_t* ops, int64_t n, int reps, Alloc alloc, Free release) {
  replay(ops, n, alloc, release);  // warm the cache
  cudaDeviceSynchronize();
  int64_t pairs = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) pairs += replay(ops, n, alloc, release);
  cudaDeviceSynchronize();
  const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
  return pairs > 0 ? took.count() / static_cast<double>(pairs) : 0.0;
}

}  // namespace

extern "C" {

using MallocFn = int32_t (*)(void* state, uint64_t size, void** out);
using FreeFn = int32_t (*)(void* state, void* ptr);

double bench_hipdnn(void* state, void* malloc_fn, void* free_fn, const int64_t* ops, int64_t n, int reps) {
  auto m = reinterpret_cast<MallocFn>(malloc_fn);
  auto f = reinterpret_cast<FreeFn>(free_fn);
  return time_us_per_pair(
      ops, n, reps,
      [&](size_t bytes) {
        void* p = nullptr;
        m(state, bytes, &p);
        return p;
      },
      [&](void* p) { f(state, p); });
}

double bench_cuda(const int64_t* ops, int64_t n, int reps) {
  return time_us_per_pair(
      ops, n, reps,
      [](size_t bytes) {
        void* p = nullptr;
        cudaMalloc(&p, bytes);
        return p;
      },
      [](void* p) { cudaFree(p); });
}

double bench_torch(const int64_t* ops, int64_t n, int reps) {
#ifdef WITH_TORCH
  return time_us_per_pair(
      ops, n, reps, [](size_t bytes) { return c10::cuda::CUDACachingAllocator::raw_alloc(bytes); },
      [](void* p) { c10::cuda::CUDACachingAllocator::raw_delete(p); });
#else
  (void)ops;
  (void)n;
  (void)reps;
  return -1.0;
#endif
}

}  // extern "C"
