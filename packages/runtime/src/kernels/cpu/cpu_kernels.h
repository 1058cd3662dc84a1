// CPU implementations of the kernels, one function per kernel; the families
// live in elementwise.cpp, matmul.cpp, normalization.cpp, reduce.cpp and
// data_movement.cpp. Arguments are already validated (see backend_table.h).
#ifndef HIPDNN_EP_KERNELS_CPU_CPU_KERNELS_H_
#define HIPDNN_EP_KERNELS_CPU_CPU_KERNELS_H_

#include "hipdnn_ep/runtime_abi.h"

namespace hipdnn_ep::kernels::cpu {

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

}  // namespace hipdnn_ep::kernels::cpu

#endif  // HIPDNN_EP_KERNELS_CPU_CPU_KERNELS_H_
