// The caching allocator (src/caching_allocator.cpp) alone, over plain host memory, for
// tests/test_allocator_hold.py: the hold of a graph capture cannot be reached through the C ABI on
// the CPU backend, which never captures. Built by the test with the system C++ compiler.
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "caching_allocator.h"

namespace hipdnn_ep {

namespace {
thread_local std::string last_error;
}

int32_t set_error(int32_t status, std::string message) {
  last_error = std::move(message);
  return status;
}

namespace {

// Host memory as the "device"; streams and events are not used by the allocator.
class HostDevice final : public Device {
 public:
  int32_t backend() const override { return HIPDNN_EP_BACKEND_CPU; }
  int32_t allocate(uint64_t size, uint64_t alignment, void** out) override {
    *out = std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
    return *out != nullptr ? HIPDNN_EP_STATUS_OK : set_error(HIPDNN_EP_STATUS_OUT_OF_MEMORY, "host memory");
  }
  void release(void* ptr) override { std::free(ptr); }
  int32_t allocate_host(uint64_t size, uint64_t alignment, void** out) override { return allocate(size, alignment, out); }
  void release_host(void* ptr) override { std::free(ptr); }
  int32_t copy(void*, const void*, uint64_t, int32_t, uint64_t) override { return HIPDNN_EP_STATUS_OK; }
  int32_t synchronize() override { return HIPDNN_EP_STATUS_OK; }
  int32_t create_stream(uint64_t* out) override { *out = 1; return HIPDNN_EP_STATUS_OK; }
  int32_t destroy_stream(uint64_t) override { return HIPDNN_EP_STATUS_OK; }
  int32_t synchronize_stream(uint64_t) override { return HIPDNN_EP_STATUS_OK; }
  int32_t create_event(uint64_t* out) override { *out = 1; return HIPDNN_EP_STATUS_OK; }
  int32_t destroy_event(uint64_t) override { return HIPDNN_EP_STATUS_OK; }
  int32_t record_event(uint64_t, uint64_t) override { return HIPDNN_EP_STATUS_OK; }
  int32_t stream_wait_event(uint64_t, uint64_t) override { return HIPDNN_EP_STATUS_OK; }
  int32_t synchronize_event(uint64_t) override { return HIPDNN_EP_STATUS_OK; }
};

struct Driver {
  HostDevice device;
  CachingAllocator allocator{&device, 256, 0};
  std::vector<void*> held;  // what a captured graph would own
};

}  // namespace
}  // namespace hipdnn_ep

using hipdnn_ep::Driver;

extern "C" {
const char* hipdnn_ep_last_error(void) { return hipdnn_ep::last_error.c_str(); }

void* driver_new(void) { return new Driver; }
void driver_delete(void* d) { delete static_cast<Driver*>(d); }
int32_t driver_allocate(void* d, uint64_t size, uint64_t stream, void** out) {
  return static_cast<Driver*>(d)->allocator.allocate(size, stream, out);
}
int32_t driver_free(void* d, void* ptr, uint64_t stream) { return static_cast<Driver*>(d)->allocator.free(ptr, stream); }
void driver_hold(void* d, int32_t on) {
  auto* drv = static_cast<Driver*>(d);
  drv->allocator.set_hold(on ? &drv->held : nullptr);
}
// The blocks the graph owns: their count, and (when out is not null) the pointers.
uint64_t driver_held(void* d, void** out) {
  auto* drv = static_cast<Driver*>(d);
  for (size_t i = 0; out != nullptr && i < drv->held.size(); ++i) out[i] = drv->held[i];
  return drv->held.size();
}
// bytes_in_use, bytes_reserved, peak_bytes_in_use, allocation_count, live_allocations
void driver_stats(void* d, uint64_t* out) {
  const hipdnn_ep::AllocatorStats& s = static_cast<Driver*>(d)->allocator.stats();
  out[0] = s.bytes_in_use;
  out[1] = s.bytes_reserved;
  out[2] = s.peak_bytes_in_use;
  out[3] = s.allocation_count;
  out[4] = s.live_allocations;
}
}
