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
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "device.h"
#include "gpu/hip_portability.h"

namespace hipdnn_ep {

class GpuBlas;  // gpu_blas.hip

class GpuDevice final : public Device {
 public:
  GpuDevice(int32_t backend, int32_t ordinal, hipStream_t stream, int64_t* flags_host, int64_t* flags_device);
  ~GpuDevice() override;

  int32_t backend() const override { return backend_; }
  int32_t allocate(uint64_t size, uint64_t alignment, void** out) override;
  void release(void* ptr) override;
  int32_t allocate_host(uint64_t size, uint64_t alignment, void** out) override;
  void release_host(void* ptr) override;
  int32_t copy(void* dst, const void* src, uint64_t size, int32_t kind, uint64_t stream) override;
  int32_t synchronize() override;

  int32_t ordinal() const { return ordinal_; }
  // Makes this device current on the calling thread (threads of ONNX Runtime
  // or Python may differ from the one that created the state).
  void make_current() const;
  hipStream_t stream(uint64_t id) const { return id == 0 ? stream_ : reinterpret_cast<hipStream_t>(id); }
  // The GEMM library handle and workspace, created on first use.
  GpuBlas& blas();
  // Two int64 words of pinned device-mapped memory through which kernels
  // report data-dependent errors (a code, then a position); see gpu_common.h.
  int64_t* error_flags_host() const { return flags_host_; }
  int64_t* error_flags_device() const { return flags_device_; }
  // "cuda" or "hip", for messages.
  const char* name() const;

 private:
  int32_t backend_;
  int32_t ordinal_;
  hipStream_t stream_;
  int64_t* flags_host_;
  int64_t* flags_device_;
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
