#include "gpu/gpu_device.h"

#include <cstring>
#include <string>

#include "gpu/gpu_blas.h"
#include "kernels/gpu/gpu_common.h"
#include "state.h"

namespace hipdnn_ep {
namespace {

// The device's own allocation granularity already covers this alignment.
constexpr uint64_t kNativeAlignment = 256;

std::string mib(uint64_t bytes) {
  return std::to_string(bytes / (1024 * 1024)) + " MiB";
}

}  // namespace

std::string gpu_error_text(const std::string& what, hipError_t error) {
  return what + ": " + hipGetErrorName(error) + ": " + hipGetErrorString(error);
}

GpuDevice::GpuDevice(int32_t backend, int32_t ordinal, hipStream_t stream, DataErrorRecord* errors_host,
                     DataErrorRecord* errors_device)
    : backend_(backend), ordinal_(ordinal), stream_(stream), errors_host_(errors_host), errors_device_(errors_device) {
  int sms = 0;
  if (hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, ordinal) == hipSuccess && sms > 0) {
    multiprocessors_ = sms;
  } else {
    (void)hipGetLastError();
  }
}

GpuDevice::~GpuDevice() {
  make_current();
  (void)hipStreamSynchronize(stream_);
  delete blas_;
  (void)hipStreamDestroy(stream_);
  (void)hipHostFree(errors_host_);
}

const char* GpuDevice::name() const { return backend_ == HIPDNN_EP_BACKEND_HIP ? "hip" : "cuda"; }

void GpuDevice::make_current() const { (void)hipSetDevice(ordinal_); }

int32_t GpuDevice::allocate(uint64_t size, uint64_t alignment, void** out) {
  make_current();
  const bool over = alignment > kNativeAlignment;
  const uint64_t total = over ? size + alignment : size;
  void* raw = nullptr;
  const hipError_t error = total < size ? hipErrorMemoryAllocation : hipMalloc(&raw, total);
  if (error != hipSuccess) {
    (void)hipGetLastError();  // clear the sticky-free error state of the runtime
    size_t free_bytes = 0, total_bytes = 0;
    (void)hipMemGetInfo(&free_bytes, &total_bytes);
    return set_error(HIPDNN_EP_STATUS_OUT_OF_MEMORY,
                     std::string(name()) + " device " + std::to_string(ordinal_) + ": out of device memory allocating " +
                         std::to_string(size) + " bytes (" + mib(size) + "); the device has " + mib(free_bytes) +
                         " free of " + mib(total_bytes) + " (" + hipGetErrorName(error) + ")");
  }
  if (!over) {
    *out = raw;
    return HIPDNN_EP_STATUS_OK;
  }
  const uintptr_t aligned = (reinterpret_cast<uintptr_t>(raw) + alignment - 1) & ~(uintptr_t{alignment} - 1);
  std::lock_guard<std::mutex> lock(aligned_mutex_);
  aligned_[reinterpret_cast<void*>(aligned)] = raw;
  *out = reinterpret_cast<void*>(aligned);
  return HIPDNN_EP_STATUS_OK;
}

void GpuDevice::release(void* ptr) {
  make_current();
  {
    std::lock_guard<std::mutex> lock(aligned_mutex_);
    auto it = aligned_.find(ptr);
    if (it != aligned_.end()) {
      ptr = it->second;
      aligned_.erase(it);
    }
  }
  (void)hipFree(ptr);
}

int32_t GpuDevice::allocate_host(uint64_t size, uint64_t alignment, void** out) {
  make_current();
  // Pinned allocations are page aligned; larger alignments are over-allocated.
  const bool over = alignment > 4096;
  const uint64_t total = over ? size + alignment : size;
  void* raw = nullptr;
  const hipError_t error =
      total < size ? hipErrorMemoryAllocation : hipHostMalloc(&raw, total, hipHostMallocMapped | hipHostMallocPortable);
  if (error != hipSuccess) {
    (void)hipGetLastError();
    return set_error(HIPDNN_EP_STATUS_OUT_OF_MEMORY,
                     std::string(name()) + " device " + std::to_string(ordinal_) +
                         ": out of pinned host memory allocating " + std::to_string(size) + " bytes (" +
                         hipGetErrorName(error) + ")");
  }
  if (!over) {
    *out = raw;
    return HIPDNN_EP_STATUS_OK;
  }
  const uintptr_t aligned = (reinterpret_cast<uintptr_t>(raw) + alignment - 1) & ~(uintptr_t{alignment} - 1);
  std::lock_guard<std::mutex> lock(aligned_mutex_);
  aligned_[reinterpret_cast<void*>(aligned)] = raw;
  *out = reinterpret_cast<void*>(aligned);
  return HIPDNN_EP_STATUS_OK;
}

void GpuDevice::release_host(void* ptr) {
  {
    std::lock_guard<std::mutex> lock(aligned_mutex_);
    auto it = aligned_.find(ptr);
    if (it != aligned_.end()) {
      ptr = it->second;
      aligned_.erase(it);
    }
  }
  (void)hipHostFree(ptr);
}

int32_t GpuDevice::copy(void* dst, const void* src, uint64_t size, int32_t kind, uint64_t stream_id) {
  make_current();
  hipMemcpyKind direction = hipMemcpyDefault;
  switch (kind) {
    case HIPDNN_EP_MEMCPY_KIND_HOST_TO_HOST: direction = hipMemcpyHostToHost; break;
    case HIPDNN_EP_MEMCPY_KIND_HOST_TO_DEVICE: direction = hipMemcpyHostToDevice; break;
    case HIPDNN_EP_MEMCPY_KIND_DEVICE_TO_HOST: direction = hipMemcpyDeviceToHost; break;
    default: direction = hipMemcpyDeviceToDevice; break;
  }
  const hipStream_t s = stream(stream_id);
  if (kind == HIPDNN_EP_MEMCPY_KIND_HOST_TO_HOST) {
    // Ordered after the stream's work (the host memory may be pinned scratch a kernel reads).
    if (hipError_t e = hipStreamSynchronize(s); e != hipSuccess) {
      return set_error(HIPDNN_EP_STATUS_INTERNAL, gpu_error_text("hipdnn_ep_memcpy: waiting for the stream", e));
    }
    std::memmove(dst, src, size);
    return HIPDNN_EP_STATUS_OK;
  }
  hipError_t error = hipMemcpyAsync(dst, src, size, direction, s);
  if (error == hipSuccess && kind != HIPDNN_EP_MEMCPY_KIND_DEVICE_TO_DEVICE) error = hipStreamSynchronize(s);
  if (error != hipSuccess) {
    (void)hipGetLastError();
    static const char* kKinds[] = {"HOST_TO_HOST", "HOST_TO_DEVICE", "DEVICE_TO_HOST", "DEVICE_TO_DEVICE"};
    return set_error(HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                     gpu_error_text("hipdnn_ep_memcpy: " + std::string(kKinds[kind]) + " copy of " +
                                        std::to_string(size) + " bytes failed (is each pointer on the side the kind "
                                        "says?)",
                                    error));
  }
  return HIPDNN_EP_STATUS_OK;
}

int32_t GpuDevice::synchronize() {
  make_current();
  // Every stream of the device: the caller may have ordered work on its own streams.
  if (hipError_t e = hipDeviceSynchronize(); e != hipSuccess) {
    return set_error(HIPDNN_EP_STATUS_INTERNAL, gpu_error_text(std::string(name()) + " device synchronize failed", e));
  }
  return HIPDNN_EP_STATUS_OK;
}

int32_t GpuDevice::take_data_error() {
  // Only kernels that found bad data write the record (the first one wins), and the work is done:
  // taking the code clears it for the next run.
  const unsigned long long code = __atomic_exchange_n(&errors_host_->code, 0ull, __ATOMIC_ACQ_REL);
  if (code == 0) return HIPDNN_EP_STATUS_OK;
  DataErrorRecord record = *errors_host_;
  record.code = code;
  return set_error(HIPDNN_EP_STATUS_INVALID_ARGUMENT, kernels::gpu::data_error_message(record));
}

namespace {
hipEvent_t as_event(uint64_t event) { return reinterpret_cast<hipEvent_t>(event); }
}  // namespace

int32_t GpuDevice::create_stream(uint64_t* out) {
  make_current();
  hipStream_t s = nullptr;
  // Like the device's own stream: no implicit wait for the legacy default stream, and capturable.
  if (hipError_t e = hipStreamCreateWithFlags(&s, hipStreamNonBlocking); e != hipSuccess) {
    (void)hipGetLastError();
    return set_error(HIPDNN_EP_STATUS_INTERNAL,
                     gpu_error_text(std::string("hipdnn_ep_stream_create: ") + name() + " device " +
                                        std::to_string(ordinal_) + ": creating a stream failed",
                                    e));
  }
  *out = reinterpret_cast<uint64_t>(s);
  return HIPDNN_EP_STATUS_OK;
}

int32_t GpuDevice::destroy_stream(uint64_t id) {
  make_current();
  const hipStream_t s = stream(id);
  hipError_t e = hipStreamSynchronize(s);
  const hipError_t d = hipStreamDestroy(s);
  if (e == hipSuccess) e = d;
  if (e != hipSuccess) {
    (void)hipGetLastError();
    return set_error(HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                     gpu_error_text("hipdnn_ep_stream_destroy: destroying stream " + std::to_string(id) +
                                        " failed (is it a stream of hipdnn_ep_stream_create, destroyed once?)",
                                    e));
  }
  return HIPDNN_EP_STATUS_OK;
}

int32_t GpuDevice::synchronize_stream(uint64_t id) {
  make_current();
  if (hipError_t e = hipStreamSynchronize(stream(id)); e != hipSuccess) {
    (void)hipGetLastError();
    return set_error(HIPDNN_EP_STATUS_INTERNAL,
                     gpu_error_text("hipdnn_ep_stream_synchronize: waiting for stream " + std::to_string(id) +
                                        " failed",
                                    e));
  }
  return HIPDNN_EP_STATUS_OK;
}

int32_t GpuDevice::create_event(uint64_t* out) {
  make_current();
  hipEvent_t ev = nullptr;
  if (hipError_t e = hipEventCreateWithFlags(&ev, hipEventDisableTiming); e != hipSuccess) {
    (void)hipGetLastError();
    return set_error(HIPDNN_EP_STATUS_INTERNAL,
                     gpu_error_text(std::string("hipdnn_ep_event_create: ") + name() + " device " +
                                        std::to_string(ordinal_) + ": creating an event failed",
                                    e));
  }
  *out = reinterpret_cast<uint64_t>(ev);
  return HIPDNN_EP_STATUS_OK;
}

int32_t GpuDevice::destroy_event(uint64_t event) {
  make_current();
  if (hipError_t e = hipEventDestroy(as_event(event)); e != hipSuccess) {
    (void)hipGetLastError();
    return set_error(HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                     gpu_error_text("hipdnn_ep_event_destroy: destroying event " + std::to_string(event) + " failed",
                                    e));
  }
  return HIPDNN_EP_STATUS_OK;
}

int32_t GpuDevice::record_event(uint64_t event, uint64_t id) {
  make_current();
  if (hipError_t e = hipEventRecord(as_event(event), stream(id)); e != hipSuccess) {
    (void)hipGetLastError();
    return set_error(HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                     gpu_error_text("hipdnn_ep_event_record: recording event " + std::to_string(event) +
                                        " on stream " + std::to_string(id) + " failed",
                                    e));
  }
  return HIPDNN_EP_STATUS_OK;
}

int32_t GpuDevice::stream_wait_event(uint64_t id, uint64_t event) {
  make_current();
  if (hipError_t e = hipStreamWaitEvent(stream(id), as_event(event), 0); e != hipSuccess) {
    (void)hipGetLastError();
    return set_error(HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                     gpu_error_text("hipdnn_ep_stream_wait_event: stream " + std::to_string(id) +
                                        " waiting for event " + std::to_string(event) + " failed",
                                    e));
  }
  return HIPDNN_EP_STATUS_OK;
}

int32_t GpuDevice::synchronize_event(uint64_t event) {
  make_current();
  if (hipError_t e = hipEventSynchronize(as_event(event)); e != hipSuccess) {
    (void)hipGetLastError();
    return set_error(HIPDNN_EP_STATUS_INTERNAL,
                     gpu_error_text("hipdnn_ep_event_synchronize: waiting for event " + std::to_string(event) +
                                        " failed",
                                    e));
  }
  return HIPDNN_EP_STATUS_OK;
}

GpuBlas& GpuDevice::blas() {
  std::lock_guard<std::mutex> lock(blas_mutex_);
  if (blas_ == nullptr) blas_ = new GpuBlas(this);
  return *blas_;
}

int32_t make_gpu_device(int32_t backend, int32_t ordinal, std::unique_ptr<Device>* out) {
  const char* name = backend == HIPDNN_EP_BACKEND_HIP ? "hip" : "cuda";
  int count = 0;
  if (hipError_t e = hipGetDeviceCount(&count); e != hipSuccess || count == 0) {
    (void)hipGetLastError();
    return set_error(HIPDNN_EP_STATUS_BACKEND_UNAVAILABLE,
                     std::string("hipdnn_ep_state_create: the ") + name + " backend found no usable GPU (" +
                         (e != hipSuccess ? std::string(hipGetErrorName(e)) + ": " + hipGetErrorString(e)
                                          : std::string("no devices")) +
                         "); check the driver, or use the cpu backend");
  }
  if (ordinal < 0 || ordinal >= count) {
    return set_error(HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                     std::string("hipdnn_ep_state_create: ") + name + " device ordinal " + std::to_string(ordinal) +
                         " is out of range (" + std::to_string(count) + " device(s) visible)");
  }
  auto fail = [&](const char* what, hipError_t e) {
    (void)hipGetLastError();
    return set_error(HIPDNN_EP_STATUS_BACKEND_UNAVAILABLE,
                     gpu_error_text(std::string("hipdnn_ep_state_create: ") + name + " device " +
                                        std::to_string(ordinal) + ": " + what,
                                    e));
  };
  if (hipError_t e = hipSetDevice(ordinal); e != hipSuccess) return fail("selecting the device", e);
  hipStream_t stream = nullptr;
  if (hipError_t e = hipStreamCreateWithFlags(&stream, hipStreamNonBlocking); e != hipSuccess) {
    return fail("creating a stream", e);
  }
  void* errors = nullptr;
  if (hipError_t e = hipHostMalloc(&errors, sizeof(DataErrorRecord), hipHostMallocMapped | hipHostMallocPortable);
      e != hipSuccess) {
    (void)hipStreamDestroy(stream);
    return fail("allocating the pinned error record", e);
  }
  std::memset(errors, 0, sizeof(DataErrorRecord));
  void* errors_device = nullptr;
  if (hipError_t e = hipHostGetDevicePointer(&errors_device, errors, 0); e != hipSuccess) {
    (void)hipHostFree(errors);
    (void)hipStreamDestroy(stream);
    return fail("mapping the pinned error record", e);
  }
  *out = std::make_unique<GpuDevice>(backend, ordinal, stream, static_cast<DataErrorRecord*>(errors),
                                     static_cast<DataErrorRecord*>(errors_device));
  return HIPDNN_EP_STATUS_OK;
}

GpuDevice& gpu_device(hipdnn_ep_state_t* state) { return static_cast<GpuDevice&>(*state->device); }

hipStream_t current_stream(hipdnn_ep_state_t* state) {
  state->stream_used.store(true, std::memory_order_relaxed);  // work is about to be ordered on it
  return gpu_device(state).stream(state->stream.load());
}

}  // namespace hipdnn_ep
