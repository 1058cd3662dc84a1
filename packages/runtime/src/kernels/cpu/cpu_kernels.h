// CPU implementations of the kernels, one function per kernel; the families
// live in elementwise.cpp, matmul.cpp, matmul_nbits.cpp, normalization.cpp,
// reduce.cpp, data_movement.cpp, rotary.cpp and group_query_attention.cpp. Arguments are already validated (see backend_table.h).
#ifndef HIPDNN_EP_KERNELS_CPU_CPU_KERNELS_H_
#define HIPDNN_EP_KERNELS_CPU_CPU_KERNELS_H_

#include "hipdnn_ep/runtime_abi.h"
#include "kernel_list.h"  // generated from the manifest's [[kernels]]

namespace hipdnn_ep::kernels::cpu {

// One function per kernel of the manifest (kernel_list.h); every backend defines all of them.
#define HIPDNN_EP_DECLARE_KERNEL(op) void op(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args);
HIPDNN_EP_KERNELS(HIPDNN_EP_DECLARE_KERNEL)
#undef HIPDNN_EP_DECLARE_KERNEL

}  // namespace hipdnn_ep::kernels::cpu

#endif  // HIPDNN_EP_KERNELS_CPU_CPU_KERNELS_H_
