// Small device helpers shared by the GPU kernel families (matmul_nbits, rotary,
// group_query_attention, normalization): int64 min/max, lane exchange, 8-element row loads,
// pointer alignment.
#ifndef HIPDNN_EP_KERNELS_GPU_DEVICE_MATH_H_
#define HIPDNN_EP_KERNELS_GPU_DEVICE_MATH_H_

#include <cstdint>

#include "kernels/gpu/gpu_common.h"

namespace hipdnn_ep::kernels::gpu {

__device__ __forceinline__ int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
__device__ __forceinline__ int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

__device__ __forceinline__ float lane_xor(float v, int mask) {
#if defined(HIPDNN_EP_PLATFORM_CUDA)
  return __shfl_xor_sync(0xffffffffu, v, mask, 32);
#else
  return __shfl_xor(v, mask, 32);
#endif
}

// Lane `src`'s v (src < 32, the same for every lane of the warp).
__device__ __forceinline__ float lane_broadcast(float v, int src) {
#if defined(HIPDNN_EP_PLATFORM_CUDA)
  return __shfl_sync(0xffffffffu, v, src, 32);
#else
  return __shfl(v, src, 32);
#endif
}

// 8 elements of row a starting at k0 (< K), as float; zeros past K.
template <typename T>
__device__ __forceinline__ void load8(const T* a, int64_t k0, int64_t k, bool vector_ok, float (&out)[8]) {
  if (vector_ok && k0 + 8 <= k) {
    if constexpr (sizeof(T) == 2) {
      const uint4 raw = *reinterpret_cast<const uint4*>(a + k0);
      const auto* h = reinterpret_cast<const __half*>(&raw);
#pragma unroll
      for (int i = 0; i < 8; ++i) out[i] = __half2float(h[i]);
    } else {
      const float4 lo = *reinterpret_cast<const float4*>(a + k0);
      const float4 hi = *reinterpret_cast<const float4*>(a + k0 + 4);
      out[0] = lo.x; out[1] = lo.y; out[2] = lo.z; out[3] = lo.w;
      out[4] = hi.x; out[5] = hi.y; out[6] = hi.z; out[7] = hi.w;
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) out[i] = k0 + i < k ? static_cast<float>(load(a, k0 + i)) : 0.0f;
}

inline bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace hipdnn_ep::kernels::gpu

#endif  // HIPDNN_EP_KERNELS_GPU_DEVICE_MATH_H_
