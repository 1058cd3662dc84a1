// The shape of one hipdnn_ep_kernel_matmul_nbits or matmul_nbits_silu_mul call, read from its arguments
// once validation has passed: both kernels list K, N, bits and block_size at the same indices. Shared by
// every backend.
#ifndef HIPDNN_EP_KERNELS_NBITS_DIMS_H_
#define HIPDNN_EP_KERNELS_NBITS_DIMS_H_

#include <cstdint>

#include "hipdnn_ep/runtime_abi.h"
#include "kernels/tensor_util.h"

namespace hipdnn_ep::kernels {

static_assert(HIPDNN_EP_KERNEL_MATMUL_NBITS_SILU_MUL_INT_ATTR_K == HIPDNN_EP_KERNEL_MATMUL_NBITS_INT_ATTR_K &&
                  HIPDNN_EP_KERNEL_MATMUL_NBITS_SILU_MUL_INT_ATTR_N == HIPDNN_EP_KERNEL_MATMUL_NBITS_INT_ATTR_N &&
                  HIPDNN_EP_KERNEL_MATMUL_NBITS_SILU_MUL_INT_ATTR_BITS == HIPDNN_EP_KERNEL_MATMUL_NBITS_INT_ATTR_BITS &&
                  HIPDNN_EP_KERNEL_MATMUL_NBITS_SILU_MUL_INT_ATTR_BLOCK_SIZE ==
                      HIPDNN_EP_KERNEL_MATMUL_NBITS_INT_ATTR_BLOCK_SIZE,
              "matmul_nbits_silu_mul's attributes must sit where matmul_nbits's do");

// m rows of A (input 0), K, N, the block size and the blocks a column.
struct NbitsDims {
  int64_t m, k, n, block, blocks;
};

inline NbitsDims nbits_dims(const hipdnn_ep_kernel_args_t& args) {
  const int64_t k = args.int_attrs[HIPDNN_EP_KERNEL_MATMUL_NBITS_INT_ATTR_K];
  const int64_t block = args.int_attrs[HIPDNN_EP_KERNEL_MATMUL_NBITS_INT_ATTR_BLOCK_SIZE];
  return {element_count(args.inputs[0]) / k, k, args.int_attrs[HIPDNN_EP_KERNEL_MATMUL_NBITS_INT_ATTR_N], block,
          (k + block - 1) / block};
}

}  // namespace hipdnn_ep::kernels

#endif  // HIPDNN_EP_KERNELS_NBITS_DIMS_H_
