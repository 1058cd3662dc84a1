// The backend device interface: raw memory, copies and synchronization.
// The caching allocator and the host scratch sit on top of it; a GPU backend
// plugs in by implementing it (cpu_device.cpp is the always-built one).
#pragma once

#include <cstdint>
#include <memory>

#include "runtime_internal.h"

namespace hipdnn_ep {

class Device {
 public:
  virtual ~Device() = default;
  virtual int32_t backend() const = 0;
  // Device memory aligned to alignment (a power of two). On failure returns
  // OUT_OF_MEMORY with the error already set.
  virtual int32_t allocate(uint64_t size, uint64_t alignment, void** out) = 0;
  virtual void release(void* ptr) = 0;
  // Host memory the device can read (pinned and device-mapped on GPUs).
  virtual int32_t allocate_host(uint64_t size, uint64_t alignment, void** out) = 0;
  virtual void release_host(void* ptr) = 0;
  // Copies ordered on stream; kind is a validated hipdnn_ep_memcpy_kind.
  virtual int32_t copy(void* dst, const void* src, uint64_t size, int32_t kind, uint64_t stream) = 0;
  // Waits for all work on every stream of this device.
  virtual int32_t synchronize() = 0;
  // After a wait: INVALID_ARGUMENT (the message set) when a kernel of the work found bad data that
  // it could only report later (GPU backends: gpu/gpu_device.h), clearing the report; else OK. The
  // CPU backend's kernels fail at once, so it has nothing to report.
  virtual int32_t take_data_error() { return HIPDNN_EP_STATUS_OK; }

  // Streams and events the caller owns (hipdnn_ep_stream_* / hipdnn_ep_event_*). Ids are handles
  // on the GPU backends, logical on the CPU one; stream 0 is the device's own stream. Each
  // returns a status with the error already set.
  virtual int32_t create_stream(uint64_t* out) = 0;
  virtual int32_t destroy_stream(uint64_t stream) = 0;
  // Waits for the work ordered on one stream.
  virtual int32_t synchronize_stream(uint64_t stream) = 0;
  virtual int32_t create_event(uint64_t* out) = 0;
  virtual int32_t destroy_event(uint64_t event) = 0;
  virtual int32_t record_event(uint64_t event, uint64_t stream) = 0;
  virtual int32_t stream_wait_event(uint64_t stream, uint64_t event) = 0;
  virtual int32_t synchronize_event(uint64_t event) = 0;
};

// The CPU backend: aligned host memory, synchronous execution, logical streams.
int32_t make_cpu_device(int32_t device_ordinal, std::unique_ptr<Device>* out);

// A GPU backend (HIPDNN_EP_BACKEND_CUDA or _HIP; gpu/gpu_device.hip). Defined
// only in builds with a GPU backend; BACKEND_UNAVAILABLE without a usable GPU.
int32_t make_gpu_device(int32_t backend, int32_t device_ordinal, std::unique_ptr<Device>* out);

}  // namespace hipdnn_ep
