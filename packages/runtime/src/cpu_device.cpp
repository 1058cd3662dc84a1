#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "device.h"

namespace hipdnn_ep {
namespace {

int32_t aligned_host_allocate(uint64_t size, uint64_t alignment, void** out) {
  // aligned_alloc needs a size that is a multiple of the alignment.
  const uint64_t rounded = (size + alignment - 1) / alignment * alignment;
  void* ptr = rounded < size ? nullptr : std::aligned_alloc(alignment, rounded);
  if (ptr == nullptr) {
    return set_error(HIPDNN_EP_STATUS_OUT_OF_MEMORY,
                     "cpu device: out of host memory allocating " + std::to_string(size) + " bytes");
  }
  *out = ptr;
  return HIPDNN_EP_STATUS_OK;
}

class CpuDevice final : public Device {
 public:
  int32_t backend() const override { return HIPDNN_EP_BACKEND_CPU; }
  int32_t allocate(uint64_t size, uint64_t alignment, void** out) override {
    return aligned_host_allocate(size, alignment, out);
  }
  void release(void* ptr) override { std::free(ptr); }
  int32_t allocate_host(uint64_t size, uint64_t alignment, void** out) override {
    return aligned_host_allocate(size, alignment, out);
  }
  void release_host(void* ptr) override { std::free(ptr); }
  int32_t copy(void* dst, const void* src, uint64_t size, int32_t, uint64_t) override {
    std::memmove(dst, src, size);  // every kind is host to host here
    return HIPDNN_EP_STATUS_OK;
  }
  int32_t synchronize() override { return HIPDNN_EP_STATUS_OK; }  // execution is synchronous
  // Streams and events are logical: work is complete when its call returns, so waits return at once.
  int32_t create_stream(uint64_t* out) override {
    *out = next_logical_id();
    return HIPDNN_EP_STATUS_OK;
  }
  int32_t destroy_stream(uint64_t) override { return HIPDNN_EP_STATUS_OK; }
  int32_t synchronize_stream(uint64_t) override { return HIPDNN_EP_STATUS_OK; }
  int32_t create_event(uint64_t* out) override {
    *out = next_logical_id();
    return HIPDNN_EP_STATUS_OK;
  }
  int32_t destroy_event(uint64_t) override { return HIPDNN_EP_STATUS_OK; }
  int32_t record_event(uint64_t, uint64_t) override { return HIPDNN_EP_STATUS_OK; }
  int32_t stream_wait_event(uint64_t, uint64_t) override { return HIPDNN_EP_STATUS_OK; }
  int32_t synchronize_event(uint64_t) override { return HIPDNN_EP_STATUS_OK; }

 private:
  // Distinct across the process and far from the small ids callers pick for logical streams.
  static uint64_t next_logical_id() {
    static std::atomic<uint64_t> next{uint64_t{1} << 48};
    return next.fetch_add(1);
  }
};

}  // namespace

int32_t make_cpu_device(int32_t device_ordinal, std::unique_ptr<Device>* out) {
  if (device_ordinal != 0) {
    return set_error(HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                     "cpu backend has one device (ordinal 0), got ordinal " + std::to_string(device_ordinal));
  }
  *out = std::make_unique<CpuDevice>();
  return HIPDNN_EP_STATUS_OK;
}

}  // namespace hipdnn_ep
