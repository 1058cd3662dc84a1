// The LLM kernels on the GPU backends: not written yet (the CPU backend has them, kernels/cpu/llm.cpp).
// Each reports UNSUPPORTED, so a program that needs one fails with a clear status instead of a crash.
// The CPU implementations are organised per output column (matmul_nbits) and per (batch, KV head)
// (group_query_attention), the units a port maps to thread blocks.
#include <string>

#include "kernels/gpu/gpu_kernels.h"
#include "kernels/tensor_util.h"

namespace hipdnn_ep::kernels::gpu {
namespace {

[[noreturn]] void not_yet(const char* kernel) {
  fail(HIPDNN_EP_STATUS_UNSUPPORTED, std::string(kernel) + " is not implemented for the GPU backends yet "
                                     "(use backend cpu for models with it)");
}

}  // namespace

void matmul_nbits(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t&) { not_yet("matmul_nbits"); }
void rms_norm(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t&) { not_yet("rms_norm"); }
void rotary_embedding(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t&) { not_yet("rotary_embedding"); }
void group_query_attention(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t&) { not_yet("group_query_attention"); }

}  // namespace hipdnn_ep::kernels::gpu
