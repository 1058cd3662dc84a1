// Argument validation of every kernel, and the shape rules that validation
// and the implementations share.
//
// validate_<kernel>(args) checks everything a backend relies on: the args
// struct and its pointers, input/output/attribute counts, each tensor ref
// (rank, dims, dtype code, data pointer), the dtypes the kernel supports and
// the output shape the op's rules imply. It throws KernelError with
// INVALID_ARGUMENT, or UNSUPPORTED for a dtype the kernel does not handle.
//
// Parameter tensors (reduce axes, transpose perm, slice starts/steps) are
// small INT64 tensors that are read on the host by validation: the compiled
// program keeps them in constant data or the host scratch.
#ifndef HIPDNN_EP_KERNELS_VALIDATE_H_
#define HIPDNN_EP_KERNELS_VALIDATE_H_

#include <vector>

#include "hipdnn_ep/runtime_abi.h"
#include "kernel_list.h"  // generated from the manifest's [[kernels]]
#include "kernels/tensor_util.h"

namespace hipdnn_ep::kernels {

// validate_<kernel> for every kernel of the manifest (kernel_list.h).
#define HIPDNN_EP_DECLARE_VALIDATOR(op) void validate_##op(const hipdnn_ep_kernel_args_t* args);
HIPDNN_EP_KERNELS(HIPDNN_EP_DECLARE_VALIDATOR)
#undef HIPDNN_EP_DECLARE_VALIDATOR

// False for an absent optional tensor (data == NULL, rank == -1).
bool is_present(const hipdnn_ep_tensor_ref_t& tensor);

// Whether binary op `op` writes BOOL (the comparisons and the logic ops).
bool binary_op_writes_bool(int64_t op);

// ONNX MatMul shapes: rank-1 operands are promoted ([K] -> [1, K] for A,
// [K] -> [K, 1] for B) and the promoted dim is dropped from the result.
struct MatmulShape {
  Dims batch;    // broadcast batch dims of the result
  Dims a_batch;  // A's batch dims (possibly fewer or with 1s)
  Dims b_batch;
  int64_t m = 1;
  int64_t n = 1;
  int64_t k = 1;
  Dims out;  // the result's dims
};
MatmulShape matmul_shape(const Dims& a, const Dims& b);

// Which dims of a rank-`rank` input the reduce kernel reduces: the axes
// tensor's entries, or every dim when the axes tensor is empty (ONNX
// noop_with_empty_axes = 0).
std::vector<bool> reduced_dims(const hipdnn_ep_tensor_ref_t& axes, size_t rank);

// ---- quantization family (quantize_linear, dequantize_linear)
// Where each element of X finds its scale and zero point: X is [outer, len, inner] around its dim `axis`;
// per tensor every element uses entry 0, per axis entry (i / inner) % len, blocked the entry
// (o * blocks + l / block) * inner + r of a scale of X's shape with dim axis = blocks.
struct QuantLayout {
  enum Mode : int32_t { kPerTensor = 0, kPerAxis = 1, kBlocked = 2 };
  int32_t mode = kPerTensor;
  int64_t len = 1;
  int64_t inner = 1;
  int64_t blocks = 1;
  int64_t block = 1;
  int64_t scale_index(int64_t i) const {
    if (mode == kPerTensor) return 0;
    const int64_t l = (i / inner) % len;
    if (mode == kPerAxis) return l;
    return ((i / inner / len) * blocks + l / block) * inner + i % inner;
  }
};
// The layout of a scale of dims `scale` for an X of dims `x` (axis may be negative); INVALID_ARGUMENT
// when the scale fits none of the three layouts.
QuantLayout quant_layout(const Dims& x, const Dims& scale, int64_t axis, int64_t block_size);

}  // namespace hipdnn_ep::kernels

#endif  // HIPDNN_EP_KERNELS_VALIDATE_H_
