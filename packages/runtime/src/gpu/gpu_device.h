// The GPU backends' device (cuda and hip): one GPU, its default stream,
// raw device memory, pinned device-mapped host memory and copies. The caching
// allocator and the host scratch of the state sit on top of it (device.h).
//
// Streams: a state's stream id 0 is the stream this device creates; any other
// id is a hipStream_t / cudaStream_t handle owned by the caller (for example
// the stream ONNX Runtime runs on), cast to uint64_t.
//
// Copies: HOST_TO_DEVICE, DEVICE_TO_HOST and HOST_TO_HOST return once the
// host side may be reused or read (the compiled programs read the host
// scratch right after copying dims into it, and rewrite it on the next run);
// DEVICE_TO_DEVICE is asynchronous, ordered on the stream.
//
// Data errors: kernels that check their data (gather's indices, integer
// division, the LLM kernels' lengths and positions) never wait for the device.
// The first failure is written into the device's error record (pinned,
// device-mapped host memory) and the host reads it once the work is done:
// take_data_error, at hipdnn_ep_synchronize and after a DEVICE_TO_HOST copy.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "device.h"
#include "gpu/hip_portability.h"

namespace hipdnn_ep {

class GpuBlas;  // gpu_blas.hip

// What a kernel found wrong with its data: a code (kernels/gpu/gpu_common.h; 0 = none, the first
// failure wins through an atomic compare-and-swap) and the values its message needs (the bad index,
// the axis size, ...), so that the message is rebuilt from the record alone.
struct DataErrorRecord {
  unsigned long long code;
  int64_t values[4];
};

class GpuDevice final : public Device {
 public:
  GpuDevice(int32_t backend, int32_t ordinal, hipStream_t stream, DataErrorRecord* errors_host,
            DataErrorRecord* errors_device);
  ~GpuDevice() override;

  int32_t backend() const override { return backend_; }
  int32_t allocate(uint64_t size, uint64_t alignment, void** out) override;
  void release(void* ptr) override;
  int32_t allocate_host(uint64_t size, uint64_t alignment, void** out) override;
  void release_host(void* ptr) override;
  int32_t copy(void* dst, const void* src, uint64_t size, int32_t kind, uint64_t stream) override;
  int32_t synchronize() override;
  // Reports a recorded data error (INVALID_ARGUMENT with the kernel's message) and clears the
  // record; OK when there is none. Call once the work that may have written it is done.
  int32_t take_data_error() override;
  int32_t create_stream(uint64_t* out) override;
  int32_t destroy_stream(uint64_t stream) override;
  int32_t synchronize_stream(uint64_t stream) override;
  int32_t create_event(uint64_t* out) override;
  int32_t destroy_event(uint64_t event) override;
  int32_t record_event(uint64_t event, uint64_t stream) override;
  int32_t stream_wait_event(uint64_t stream, uint64_t event) override;
  int32_t synchronize_event(uint64_t event) override;

  int32_t ordinal() const { return ordinal_; }
  // The device's multiprocessor count (asked once, at creation; 1 if the query fails), by which kernels
  // size their grids.
  int multiprocessors() const { return multiprocessors_; }
  // Makes this device current on the calling thread (threads of ONNX Runtime
  // or Python may differ from the one that created the state).
  void make_current() const;
  hipStream_t stream(uint64_t id) const { return id == 0 ? stream_ : reinterpret_cast<hipStream_t>(id); }
  // The GEMM library handle and workspace, created on first use.
  GpuBlas& blas();
  // The error record as kernels address it (see the top of this file).
  DataErrorRecord* data_errors() const { return errors_device_; }
  // "cuda" or "hip", for messages.
  const char* name() const;

 private:
  int32_t backend_;
  int32_t ordinal_;
  int multiprocessors_ = 1;
  hipStream_t stream_;
  DataErrorRecord* errors_host_;
  DataErrorRecord* errors_device_;
  GpuBlas* blas_ = nullptr;
  std::mutex blas_mutex_;
  // Over-aligned blocks: aligned pointer -> what the allocation call returned.
  std::mutex aligned_mutex_;
  std::unordered_map<void*, void*> aligned_;
};

// The GPU device of a state whose backend is cuda or hip.
GpuDevice& gpu_device(hipdnn_ep_state_t* state);
// The stream the state's work is ordered on now.
hipStream_t current_stream(hipdnn_ep_state_t* state);
// "<what>: <HIP/CUDA error name>: <description>"
std::string gpu_error_text(const std::string& what, hipError_t error);

}  // namespace hipdnn_ep
