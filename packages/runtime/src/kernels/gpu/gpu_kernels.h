// GPU implementations of the kernels (cuda and hip backends), one function
// per kernel, written once in HIP C++. The families live in
// elementwise.hip, matmul.hip, normalization.hip, reduce.hip and
// data_movement.hip; table.hip fills the KernelTable. Arguments are already
// validated (see backend_table.h); data tensors are device memory, parameter
// tensors (reduce axes, transpose perm, slice starts/steps) host memory.
// Work is enqueued on the state's current stream.
#ifndef HIPDNN_EP_KERNELS_GPU_GPU_KERNELS_H_
#define HIPDNN_EP_KERNELS_GPU_GPU_KERNELS_H_

#include "hipdnn_ep/runtime_abi.h"

namespace hipdnn_ep::kernels::gpu {

void binary(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args);
void unary(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args);
void cast(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args);
void where(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args);
void matmul(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args);
void gemm(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args);
void softmax(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args);
void layer_norm(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args);
void reduce(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args);
void transpose(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args);
void concat(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args);
void slice(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args);
void gather(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args);
void expand(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args);

}  // namespace hipdnn_ep::kernels::gpu

#endif  // HIPDNN_EP_KERNELS_GPU_GPU_KERNELS_H_
