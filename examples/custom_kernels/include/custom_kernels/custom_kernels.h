/* custom_kernels: an example kernel library on top of the hipdnn-ep runtime's C ABI. */
#ifndef CUSTOM_KERNELS_H_
#define CUSTOM_KERNELS_H_

#include "hipdnn_ep/runtime_abi.h"

#define CUSTOM_KERNELS_API __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

/* HIPDNN_EP_STATUS_OK when the runtime loaded in this process has the ABI major this library was
 * built for and at least its minor; otherwise HIPDNN_EP_STATUS_ABI_MISMATCH, with the versions and
 * the fix in custom_kernels_last_error(). Call it once before the kernels. */
CUSTOM_KERNELS_API int32_t custom_kernels_check_runtime(void);

/* The message of the last failure of this library on the calling thread ("" when none); the
 * runtime's own failures are in hipdnn_ep_last_error(). */
CUSTOM_KERNELS_API const char* custom_kernels_last_error(void);

/* RMS normalization over the last axis, with the runtime's kernel calling convention:
 * inputs X [..., D] and scale [D] (float32), output Y shaped like X (allocated by the caller in the
 * state's memory), float_attrs[0] = epsilon. Works on every backend: it stages through
 * hipdnn_ep_memcpy and computes on the host. */
CUSTOM_KERNELS_API int32_t custom_kernels_rms_norm(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t* args);

/* The same for a [rows, cols] float32 matrix, with the output allocated from the state's memory
 * manager (hipdnn_ep_malloc) into *out_y; free it with hipdnn_ep_free. */
CUSTOM_KERNELS_API int32_t custom_kernels_rms_norm_f32(hipdnn_ep_state_t* state, const void* x, const void* scale,
                                                       int64_t rows, int64_t cols, double epsilon, void** out_y);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* CUSTOM_KERNELS_H_ */
