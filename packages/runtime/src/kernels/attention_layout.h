// The shape of one hipdnn_ep_kernel_attention call, read once from its arguments: head counts and
// sizes, and element strides that make the rank-3 ([batch, seq, heads * size]) and rank-4
// ([batch, heads, seq, size]) layouts one indexing scheme. Shared by validation and every backend.
#ifndef HIPDNN_EP_KERNELS_ATTENTION_LAYOUT_H_
#define HIPDNN_EP_KERNELS_ATTENTION_LAYOUT_H_

#include <cstdint>

#include "hipdnn_ep/runtime_abi.h"

namespace hipdnn_ep::kernels {

// Element strides of a [batch, heads, seq, size] view; the size dim is contiguous.
struct HeadStrides {
  int64_t batch, head, seq;
};

struct AttentionLayout {
  int64_t batch, q_heads, kv_heads, q_seq, kv_seq, head_size, v_head_size;
  HeadStrides q, k, v, y;
  bool has_mask, causal;
  int32_t mask_dtype;  // BOOL (true attends), FLOAT32 or FLOAT16 (added to the scores)
  int64_t mask[4];  // element strides of the mask over [batch, q_heads, q_seq, kv_seq] (0: broadcast)
  float scale;      // 1 / sqrt(head_size) when the attribute is 0
  float softcap;    // 0: none
};

// Checks the call's shapes and attributes (KernelError INVALID_ARGUMENT naming what is wrong) and
// returns its layout. dtypes are checked by validate_attention.
AttentionLayout attention_layout(const hipdnn_ep_kernel_args_t& args);

}  // namespace hipdnn_ep::kernels

#endif  // HIPDNN_EP_KERNELS_ATTENTION_LAYOUT_H_
