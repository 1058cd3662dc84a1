// C entry points of the memory manager: device allocations, copies,
// statistics, the host scratch and the pool.
#include <string>

#include "error.h"
#include "state.h"

using hipdnn_ep::set_error;

namespace {
using Lock = std::lock_guard<std::mutex>;
}  // namespace

extern "C" int32_t hipdnn_ep_malloc(hipdnn_ep_state_t* state, uint64_t size, void** out_ptr) {
  HIPDNN_EP_REQUIRE(state != nullptr && out_ptr != nullptr, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_malloc: state and out_ptr must not be NULL");
  *out_ptr = nullptr;
  Lock lock(state->memory_mutex);
  state->stream_used.store(true, std::memory_order_relaxed);
  return state->allocator->allocate(size, state->stream.load(), out_ptr);
}

extern "C" int32_t hipdnn_ep_free(hipdnn_ep_state_t* state, void* ptr) {
  HIPDNN_EP_REQUIRE(state != nullptr, HIPDNN_EP_STATUS_INVALID_ARGUMENT, "hipdnn_ep_free: state is NULL");
  Lock lock(state->memory_mutex);
  for (void* p : state->host_outputs) {
    if (p == ptr) return HIPDNN_EP_STATUS_OK;  // the host's memory (a program cleaning up after a failure)
  }
  state->stream_used.store(true, std::memory_order_relaxed);  // the block's reuse is ordered on the stream
  return state->allocator->free(ptr, state->stream.load());
}

extern "C" int32_t hipdnn_ep_empty_cache(hipdnn_ep_state_t* state) {
  HIPDNN_EP_REQUIRE(state != nullptr, HIPDNN_EP_STATUS_INVALID_ARGUMENT, "hipdnn_ep_empty_cache: state is NULL");
  Lock lock(state->memory_mutex);
  // Cached blocks may still be used by queued work: wait for it first.
  if (int32_t status = state->device->synchronize(); status != HIPDNN_EP_STATUS_OK) return status;
  state->allocator->mark_streams_synchronized();
  state->allocator->release_cached();
  return HIPDNN_EP_STATUS_OK;
}

extern "C" int32_t hipdnn_ep_memory_stats(hipdnn_ep_state_t* state, hipdnn_ep_memory_stats_t* out_stats) {
  HIPDNN_EP_REQUIRE(state != nullptr, HIPDNN_EP_STATUS_INVALID_ARGUMENT, "hipdnn_ep_memory_stats: state is NULL");
  if (int32_t status = hipdnn_ep::check_stats_struct("hipdnn_ep_memory_stats", out_stats, "hipdnn_ep_memory_stats_t");
      status != HIPDNN_EP_STATUS_OK) {
    return status;
  }
  hipdnn_ep_memory_stats_t all{};
  {
    Lock lock(state->memory_mutex);
    const hipdnn_ep::AllocatorStats& s = state->allocator->stats();
    all.bytes_in_use = s.bytes_in_use;
    all.bytes_reserved = s.bytes_reserved;
    all.peak_bytes_in_use = s.peak_bytes_in_use;
    all.allocation_count = s.allocation_count;
    all.live_allocations = s.live_allocations;
    all.memory_limit_bytes = state->allocator->memory_limit();
    all.host_scratch_bytes = state->host_scratch->bytes_held();
    all.pool_bytes = state->pool->bytes_held();
  }
  hipdnn_ep::write_covered(out_stats, all);
  return HIPDNN_EP_STATUS_OK;
}

extern "C" int32_t hipdnn_ep_device_memory_stats(int32_t backend, int32_t device_ordinal,
                                                 hipdnn_ep_device_memory_stats_t* out_stats) {
  HIPDNN_EP_REQUIRE(backend == HIPDNN_EP_BACKEND_CPU || backend == HIPDNN_EP_BACKEND_CUDA ||
                        backend == HIPDNN_EP_BACKEND_HIP,
                    HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_device_memory_stats: backend " + std::to_string(backend) +
                        " is not a hipdnn_ep_backend value (CPU, CUDA or HIP)");
  HIPDNN_EP_REQUIRE(device_ordinal >= 0, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_device_memory_stats: device_ordinal is " + std::to_string(device_ordinal) +
                        "; it must be >= 0");
  if (int32_t status = hipdnn_ep::check_stats_struct("hipdnn_ep_device_memory_stats", out_stats,
                                                     "hipdnn_ep_device_memory_stats_t");
      status != HIPDNN_EP_STATUS_OK) {
    return status;
  }
  const hipdnn_ep::DeviceMemoryTotals& totals = hipdnn_ep::device_memory_totals(backend, device_ordinal);
  hipdnn_ep_device_memory_stats_t all{};
  all.bytes_in_use = totals.in_use();
  all.peak_bytes_in_use = totals.peak_in_use();
  all.bytes_reserved = totals.reserved();
  all.peak_bytes_reserved = totals.peak_reserved();
  all.states = totals.states();
  hipdnn_ep::write_covered(out_stats, all);
  return HIPDNN_EP_STATUS_OK;
}

extern "C" int32_t hipdnn_ep_memcpy(hipdnn_ep_state_t* state, void* dst, const void* src, uint64_t size,
                                    int32_t kind) {
  HIPDNN_EP_REQUIRE(state != nullptr, HIPDNN_EP_STATUS_INVALID_ARGUMENT, "hipdnn_ep_memcpy: state is NULL");
  HIPDNN_EP_REQUIRE(kind >= HIPDNN_EP_MEMCPY_KIND_HOST_TO_HOST && kind <= HIPDNN_EP_MEMCPY_KIND_DEVICE_TO_DEVICE,
                    HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_memcpy: unknown copy kind " + std::to_string(kind));
  if (size == 0) return HIPDNN_EP_STATUS_OK;
  HIPDNN_EP_REQUIRE(dst != nullptr && src != nullptr, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_memcpy: NULL pointer for a copy of " + std::to_string(size) + " bytes");
  state->stream_used.store(true, std::memory_order_relaxed);
#if defined(HIPDNN_EP_WITH_CUDA) || defined(HIPDNN_EP_WITH_HIP)
  if (state->capture != nullptr) return hipdnn_ep::graph_capture_copy(state, dst, src, size, kind);
#endif
  if (int32_t status = state->device->copy(dst, src, size, kind, state->stream.load()); status != HIPDNN_EP_STATUS_OK) {
    return status;
  }
  // A copy to the host waited for the work before it: data that work computed from bad input (a kernel
  // recorded the failure on the device) is refused here, before the host uses it.
  if (kind == HIPDNN_EP_MEMCPY_KIND_DEVICE_TO_HOST || kind == HIPDNN_EP_MEMCPY_KIND_HOST_TO_HOST) {
    return state->device->take_data_error();
  }
  return HIPDNN_EP_STATUS_OK;
}

extern "C" int32_t hipdnn_ep_get_host_scratch_base(hipdnn_ep_state_t* state, uint64_t size, void** out_base) {
  HIPDNN_EP_REQUIRE(state != nullptr && out_base != nullptr, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_get_host_scratch_base: state and out_base must not be NULL");
  Lock lock(state->memory_mutex);
  return state->host_scratch->get(size, out_base);
}

extern "C" int32_t hipdnn_ep_get_pool_base(hipdnn_ep_state_t* state, uint64_t needed_size, void** out_base) {
  HIPDNN_EP_REQUIRE(state != nullptr && out_base != nullptr, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_get_pool_base: state and out_base must not be NULL");
  Lock lock(state->memory_mutex);
  return state->pool->get(needed_size, out_base);
}
