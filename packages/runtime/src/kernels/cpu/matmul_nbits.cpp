// CPU kernel of int4 MatMulNBits. Decode (one token per step) is bandwidth-bound, so it streams
// every weight byte once for all rows of A, dequantizing a block at a time in registers; the loop
// is written per output column, the unit a GPU port maps to thread blocks, and large calls split
// the columns over threads (parallel.h). Everything computes in float.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel.h"
#include "kernels/tensor_util.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::cpu {
namespace {

// ---------------------------------------------------------------- MatMulNBits

// y[m, n] = sum_k a[m, k] * (q[n, k] - zp[n, blk]) * scale[n, blk]
//         = sum_blk scale * (sum_{k in blk} a[m, k] q[n, k] - zp * sum_{k in blk} a[m, k])
// The per-block sums of A are computed once; B is then read once, column by
// column, with each 4-bit block unpacked to floats and dotted with every row.
template <typename T>
void matmul_nbits_typed(const hipdnn_ep_kernel_args_t& args, int64_t k, int64_t n, int64_t block) {
  const hipdnn_ep_tensor_ref_t& a_ref = args.inputs[0];
  const int64_t m = element_count(a_ref) / k;
  const int64_t blocks = (k + block - 1) / block;
  const int64_t blob = block / 2;
  const auto* b = static_cast<const uint8_t*>(args.inputs[1].data);
  const T* scales = static_cast<const T*>(args.inputs[2].data);
  const bool has_zp = args.n_inputs > 3 && is_present(args.inputs[3]);
  const auto* zp = has_zp ? static_cast<const uint8_t*>(args.inputs[3].data) : nullptr;
  const int64_t zp_stride = (blocks + 1) / 2;
  const bool has_bias = args.n_inputs > 4 && is_present(args.inputs[4]);
  const T* bias = has_bias ? static_cast<const T*>(args.inputs[4].data) : nullptr;
  T* y = static_cast<T*>(args.outputs[0].data);

  // A in float, zero-padded to whole blocks, and its per-block sums.
  const int64_t kp = blocks * block;
  std::vector<float> a(static_cast<size_t>(m * kp), 0.0f);
  std::vector<float> a_sums(static_cast<size_t>(m * blocks), 0.0f);
  const T* a_src = static_cast<const T*>(a_ref.data);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t i = 0; i < k; ++i) a[r * kp + i] = load(a_src, r * k + i);
    for (int64_t blk = 0; blk < blocks; ++blk) {
      float s = 0.0f;
      for (int64_t i = 0; i < block; ++i) s += a[r * kp + blk * block + i];
      a_sums[r * blocks + blk] = s;
    }
  }
  parallel_ranges(n, m * kp, [&](int64_t first, int64_t last) {
    std::vector<float> w(static_cast<size_t>(block));
    std::vector<float> acc(static_cast<size_t>(m));
    for (int64_t col = first; col < last; ++col) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      const uint8_t* col_bytes = b + col * blocks * blob;
      for (int64_t blk = 0; blk < blocks; ++blk) {
        const uint8_t* bytes = col_bytes + blk * blob;
        for (int64_t i = 0; i < blob; ++i) {
          w[2 * i] = static_cast<float>(bytes[i] & 0x0F);
          w[2 * i + 1] = static_cast<float>(bytes[i] >> 4);
        }
        const float scale = load(scales, col * blocks + blk);
        float zero = 8.0f;
        if (has_zp) {
          const uint8_t packed = zp[col * zp_stride + blk / 2];
          zero = static_cast<float>((blk % 2 == 0) ? (packed & 0x0F) : (packed >> 4));
        }
        for (int64_t r = 0; r < m; ++r) {
          const float* ar = a.data() + r * kp + blk * block;
          float dot = 0.0f;
          for (int64_t i = 0; i < block; ++i) dot += ar[i] * w[i];
          acc[r] += scale * (dot - zero * a_sums[r * blocks + blk]);
        }
      }
      const float bias_value = has_bias ? static_cast<float>(load(bias, col)) : 0.0f;
      for (int64_t r = 0; r < m; ++r) store(y, r * n + col, acc[r] + bias_value);
    }
  });
}

}  // namespace

void matmul_nbits(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const int64_t k = args.int_attrs[HIPDNN_EP_KERNEL_MATMUL_NBITS_INT_ATTR_K];
  const int64_t n = args.int_attrs[HIPDNN_EP_KERNEL_MATMUL_NBITS_INT_ATTR_N];
  const int64_t block = args.int_attrs[HIPDNN_EP_KERNEL_MATMUL_NBITS_INT_ATTR_BLOCK_SIZE];
  if (element_count(args.outputs[0]) == 0) return;
  dispatch_float(args.inputs[0].dtype, "matmul_nbits", [&](auto tag) {
    matmul_nbits_typed<typename decltype(tag)::type>(args, k, n, block);
  });
}

}  // namespace hipdnn_ep::kernels::cpu
