// GPU implementations of the kernels (cuda and hip backends), one function
// per kernel, written once in HIP C++. The families live in
// elementwise.hip, matmul.hip, matmul_nbits.hip, normalization.hip,
// reduce.hip, data_movement.hip, rotary.hip and group_query_attention.hip;
// table.hip fills the KernelTable. Arguments are already
// validated (see backend_table.h); data tensors are device memory, parameter
// tensors (reduce axes, transpose perm, slice starts/steps) host memory.
// Work is enqueued on the state's current stream.
#ifndef HIPDNN_EP_KERNELS_GPU_GPU_KERNELS_H_
#define HIPDNN_EP_KERNELS_GPU_GPU_KERNELS_H_

#include "hipdnn_ep/runtime_abi.h"
#include "kernel_list.h"  // generated from the manifest's [[kernels]]

namespace hipdnn_ep::kernels::gpu {

// One function per kernel of the manifest (kernel_list.h); every backend defines all of them.
#define HIPDNN_EP_DECLARE_KERNEL(op) void op(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args);
HIPDNN_EP_KERNELS(HIPDNN_EP_DECLARE_KERNEL)
#undef HIPDNN_EP_DECLARE_KERNEL

}  // namespace hipdnn_ep::kernels::gpu

#endif  // HIPDNN_EP_KERNELS_GPU_GPU_KERNELS_H_
