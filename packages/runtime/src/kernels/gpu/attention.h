// What the GPU kernels of hipdnn_ep_kernel_attention share (attention.hip: the op and its scalar kernel;
// on CUDA, attention_flash.hip: the float16 tensor-core kernel).
#ifndef HIPDNN_EP_KERNELS_GPU_ATTENTION_H_
#define HIPDNN_EP_KERNELS_GPU_ATTENTION_H_

#include <cmath>
#include <cstdint>

#include "gpu/gpu_device.h"
#include "kernels/attention_layout.h"
#include "kernels/gpu/gpu_common.h"

namespace hipdnn_ep::kernels::gpu {

// The mask's bias at an element: 0 or -inf from a BOOL mask, the value of a float one.
__device__ __forceinline__ float mask_bias(const void* mask, int32_t dtype, int64_t at) {
  if (dtype == HIPDNN_EP_DTYPE_BOOL) return static_cast<const uint8_t*>(mask)[at] != 0 ? 0.0f : -INFINITY;
  if (dtype == HIPDNN_EP_DTYPE_FLOAT16) return __half2float(static_cast<const __half*>(mask)[at]);
  return static_cast<const float*>(mask)[at];
}

#if defined(HIPDNN_EP_PLATFORM_CUDA)
// The call on tensor cores where it applies (float16, query/key and value head size both 64 or 128,
// Q, K and V rows 16-byte aligned, a GPU of sm_80 or later); false: the caller runs the scalar kernel.
bool launch_attention_flash(hipdnn_ep_state_t* state, const AttentionLayout& l, const __half* query,
                            const __half* key, const __half* value, const void* mask, __half* out,
                            hipStream_t stream);
#endif

}  // namespace hipdnn_ep::kernels::gpu

#endif  // HIPDNN_EP_KERNELS_GPU_ATTENTION_H_
