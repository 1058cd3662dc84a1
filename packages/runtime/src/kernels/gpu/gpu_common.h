// Shared pieces of the GPU kernels (HIP C++, built for CUDA through
// gpu/hip_portability.h): device element types, strided layouts of up to
// kMaxRank dims, launch helpers and the data checks that report
// data-dependent failures (an integer division by zero, a gather index out
// of range, a length or position of the LLM kernels) back to the host.
#ifndef HIPDNN_EP_KERNELS_GPU_GPU_COMMON_H_
#define HIPDNN_EP_KERNELS_GPU_GPU_COMMON_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include "gpu/gpu_device.h"
#include "gpu/hip_portability.h"
#include "hipdnn_ep/runtime_abi.h"
#include "kernels/tensor_util.h"

namespace hipdnn_ep::kernels::gpu {

constexpr int kMaxRank = 8;
constexpr int kBlock = 256;

// BOOL elements: one byte, any nonzero byte is true, true is written as 1.
struct gbool {
  uint8_t value;
};

// Storage type -> the type arithmetic is done in.
template <typename T>
struct Compute {
  using type = T;
};
template <>
struct Compute<__half> {
  using type = float;
};
template <>
struct Compute<gbool> {
  using type = bool;
};

template <typename T>
__device__ __forceinline__ typename Compute<T>::type load(const T* p, int64_t i) {
  return p[i];
}
__device__ __forceinline__ float load(const __half* p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ bool load(const gbool* p, int64_t i) { return p[i].value != 0; }

template <typename T>
__device__ __forceinline__ void store(T* p, int64_t i, typename Compute<T>::type v) {
  p[i] = v;
}
__device__ __forceinline__ void store(__half* p, int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void store(gbool* p, int64_t i, bool v) { p[i].value = v ? 1 : 0; }

// Up to kMaxRank dims with N operands' element strides, outermost first.
template <int N>
struct Layout {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[N][kMaxRank] = {};
};

// Element offsets of the N operands at linear index i of the layout's shape.
template <int N>
__device__ __forceinline__ void offsets_at(const Layout<N>& l, int64_t i, int64_t (&off)[N]) {
  for (int k = 0; k < N; ++k) off[k] = 0;
  for (int d = l.rank - 1; d >= 0; --d) {
    const int64_t c = i % l.dims[d];
    i /= l.dims[d];
    for (int k = 0; k < N; ++k) off[k] += c * l.strides[k][d];
  }
}

// Host side: the shape with dims of size 1 dropped and neighbours that are
// contiguous for every operand merged (as for_each_row does). Fails with
// UNSUPPORTED when more than kMaxRank dims remain.
template <int N>
Layout<N> make_layout(const Dims& dims, const std::array<Dims, N>& strides) {
  Layout<N> l;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    bool merge = l.rank > 0;
    for (int k = 0; merge && k < N; ++k) merge = l.strides[k][l.rank - 1] == strides[k][d] * dims[d];
    if (merge) {
      l.dims[l.rank - 1] *= dims[d];
      for (int k = 0; k < N; ++k) l.strides[k][l.rank - 1] = strides[k][d];
      continue;
    }
    if (l.rank == kMaxRank) {
      fail(HIPDNN_EP_STATUS_UNSUPPORTED, "the GPU kernels handle at most " + std::to_string(kMaxRank) +
                                             " dims that cannot be merged; got shape " + format_dims(dims));
    }
    l.dims[l.rank] = dims[d];
    for (int k = 0; k < N; ++k) l.strides[k][l.rank] = strides[k][d];
    ++l.rank;
  }
  return l;
}

// Grid size for a grid-stride loop over n elements.
inline unsigned grid_for(int64_t n) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  return static_cast<unsigned>(blocks < 65535 * 8 ? (blocks < 1 ? 1 : blocks) : 65535 * 8);
}

#define HIPDNN_EP_GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); i += int64_t{blockDim.x} * gridDim.x)

// Data checks. A kernel that finds bad data never reads or writes out of bounds: it skips the
// access (gather and rotary_embedding write zeros there, integer division writes 0,
// group_query_attention leaves a batch row with bad lengths as it was) and records the failure in
// the device's error record (gpu_device.h). No kernel waits for the device to look at it: the host
// reads the record at the run's one wait (hipdnn_ep_synchronize) or at a DEVICE_TO_HOST copy,
// whichever comes first, and fails with the message the CPU backend gives (data_error_message),
// so every program can be captured into a graph. The codes, and the record's values for each:
enum : unsigned long long {
  kErrorNone = 0,
  kErrorIntDivByZero = 1,       // -
  kErrorGatherIndex = 2,        // index, position, axis, axis size
  kErrorRotaryPosition = 3,     // position, cache positions (rotary_embedding)
  kErrorGqaRotaryPosition = 4,  // position, cache positions (group_query_attention)
  kErrorGqaTotalLength = 5,     // total_sequence_length, sequence length, present length
  kErrorGqaSeqlens = 6,         // batch row, seqlens_k, present length
  kErrorGqaPastLength = 7,      // batch row, seqlens_k, sequence length, past length
  kErrorGatherElementsIndex = 8,  // index, position, axis, axis size (gather_elements)
  kErrorScatterNdIndex = 9,       // index, index tuple, axis, axis size (scatter_nd)
  kErrorGatherNdIndex = 10,       // index, index tuple, axis, axis size (gather_nd)
  kErrorScatterElementsIndex = 11,  // index, position, axis, axis size (scatter_elements)
};

// Records a failure unless one is recorded already (the first one wins).
__device__ __forceinline__ void report_error(DataErrorRecord* record, unsigned long long code, int64_t v0 = 0,
                                             int64_t v1 = 0, int64_t v2 = 0, int64_t v3 = 0) {
  if (atomicCAS(&record->code, 0ull, code) == 0ull) {
    record->values[0] = v0;
    record->values[1] = v1;
    record->values[2] = v2;
    record->values[3] = v3;
  }
}

// The CPU backend's message for a recorded failure, with the kernel's entry point name first.
std::string data_error_message(const DataErrorRecord& record);

// Tree reduction over one block (blockDim.x a power of two, at most kBlock);
// every thread gets the result.
template <typename T, typename Op>
__device__ __forceinline__ T block_reduce(T v, Op op, T* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) shared[threadIdx.x] = op(shared[threadIdx.x], shared[threadIdx.x + s]);
    __syncthreads();
  }
  const T result = shared[0];
  __syncthreads();
  return result;
}

// Device memory for a kernel's temporaries, from the state's caching
// allocator (counted against its limit), freed in stream order.
class TempBuffer {
 public:
  TempBuffer(hipdnn_ep_state_t* state, uint64_t bytes);
  ~TempBuffer();
  TempBuffer(const TempBuffer&) = delete;
  TempBuffer& operator=(const TempBuffer&) = delete;
  void* data() const { return data_; }

 private:
  hipdnn_ep_state_t* state_;
  void* data_ = nullptr;
};

// Throws a KernelError for the last launch error, naming the kernel.
void check_launch(const char* what);

// Programmatic dependent launch (CUDA, sm_90 and later). A kernel launched by launch_overlapped may start
// while the kernel before it in the stream still runs, once every block of that one has called
// allow_dependents(); until its own wait_for_predecessor() returns it may read nothing the predecessor
// could write (it does index arithmetic only). wait_for_predecessor() returns when the predecessor has
// finished and its writes are visible. Elsewhere, and in kernels launched the usual way, both are no-ops.
// Starts chain: a kernel may run beside kernels before its predecessor too, where that predecessor calls
// allow_dependents() before its own wait (the GQA decode kernel does), so "the predecessor could write"
// means any kernel of the run. The one read before the wait is of the running program's weights
// (holds_run_weights: no kernel of a run writes them, and they were written before it began).
// The decode step's int4 GEMVs are launched so: the launch and the blocks' start overlap the norm, the
// attention merge or the elementwise product before them (on an H100, a 32-layer Llama-3.1-8B-shaped
// decode step 3.33 -> 3.28 ms). Prefetching the weights into L2 before the wait was slower (3.46 -> 3.81).
// The norms and the GQA decode and merge kernels are launched so too, each waiting before its first read
// (H100, the same model after a 2048-token prompt: 3.237 -> 3.101 ms a step).
__device__ __forceinline__ void allow_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void wait_for_predecessor() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Device dispatch: the host's dispatch (tensor_util.h) with the device storage
// types of float16 and bool.
template <typename Fn>
decltype(auto) dispatch_float_gpu(int32_t dtype, const char* what, Fn&& fn) {
  return dispatch_float<__half>(dtype, what, std::forward<Fn>(fn));
}

template <typename Fn>
decltype(auto) dispatch_numeric_gpu(int32_t dtype, const char* what, Fn&& fn) {
  return dispatch_numeric<__half>(dtype, what, std::forward<Fn>(fn));
}

template <typename Fn>
decltype(auto) dispatch_any_gpu(int32_t dtype, const char* what, Fn&& fn) {
  return dispatch_any<__half, gbool>(dtype, what, std::forward<Fn>(fn));
}

#if defined(HIPDNN_EP_PLATFORM_CUDA)
// The answer of `ask` (a driver question about the current device, true or false) kept per device in
// `known` (0: not asked yet, 1: yes, 2: no), so that launches ask once per device instead of every time.
constexpr int kMaxDevices = 64;
template <typename Ask>
bool answer_per_device(std::atomic<int> (&known)[kMaxDevices], Ask ask) {
  int device = 0;
  if (hipGetDevice(&device) != hipSuccess || device < 0 || device >= kMaxDevices) {
    (void)hipGetLastError();
    return false;
  }
  int v = known[device].load(std::memory_order_relaxed);
  if (v == 0) {
    v = ask() ? 1 : 2;
    (void)cudaGetLastError();
    known[device].store(v, std::memory_order_relaxed);
  }
  return v == 1;
}

// Whether the code of kernel kKernel that the current device runs was built for compute capability kVersion
// (80: sm_80) or later: cudaFuncGetAttributes, a driver call, once per kernel and device instead of once per
// launch.
template <auto kKernel, int kVersion>
bool runs_code_of() {
  static std::atomic<int> known[kMaxDevices] = {};
  return answer_per_device(known, [] {
    cudaFuncAttributes attributes{};
    return cudaFuncGetAttributes(&attributes, kKernel) == cudaSuccess && attributes.binaryVersion >= kVersion;
  });
}

// Raises kKernel's dynamic shared memory limit to kBytes (above the default 48 KiB), once per device;
// false where the device refuses.
template <auto kKernel, int kBytes>
bool allows_shared_bytes() {
  static std::atomic<int> known[kMaxDevices] = {};
  return answer_per_device(known, [] {
    return cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kBytes) == cudaSuccess;
  });
}

// The tensor-core kernels are empty below sm_80.
template <auto kKernel>
bool runs_sm80_code() {
  return runs_code_of<kKernel, 80>();
}

// griddepcontrol (allow_dependents, wait_for_predecessor) needs sm_90.
template <auto kKernel>
bool runs_sm90_code() {
  return runs_code_of<kKernel, 90>();
}

// Launches kKernel so that it may start before the stream's previous kernel ends (see allow_dependents);
// the usual launch where its code was built for less than sm_90 (it would not wait for its predecessor).
template <auto kKernel, typename... Args>
void launch_overlapped(dim3 grid, dim3 block, size_t shared_bytes, hipStream_t stream, Args... args) {
  if (!runs_sm90_code<kKernel>()) {
    kKernel<<<grid, block, shared_bytes, stream>>>(args...);
    return;
  }
  cudaLaunchAttribute overlap{};
  overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = &overlap;
  config.numAttrs = 1;
  (void)cudaLaunchKernelEx(&config, kKernel, args...);  // an error stays the last one, for check_launch
}
#else
// HIP: the usual launch (no programmatic dependent launch; the kernel's wait is a no-op).
template <auto kKernel, typename... Args>
void launch_overlapped(dim3 grid, dim3 block, size_t shared_bytes, hipStream_t stream, Args... args) {
  kKernel<<<grid, block, shared_bytes, stream>>>(args...);
}
#endif

// out (contiguous, dims `shape`)[idx] = in[offset + sum(idx[d] * in_strides[d])]
// by element width, on the state's current stream.
void strided_copy(hipdnn_ep_state_t* state, const void* in, int64_t offset, const Dims& in_strides, void* out,
                  const Dims& shape, size_t element_size);

}  // namespace hipdnn_ep::kernels::gpu

#endif  // HIPDNN_EP_KERNELS_GPU_GPU_COMMON_H_
