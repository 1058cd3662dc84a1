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
#include "kernels/nbits_dims.h"
#include "kernels/sigmoid.h"
#include "kernels/tensor_util.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::cpu {
namespace {

// ---------------------------------------------------------------- MatMulNBits

// y[m, n] = sum_k a[m, k] * (q[n, k] - zp[n, blk]) * scale[n, blk]
//         = sum_blk scale * (sum_{k in blk} a[m, k] q[n, k] - zp * sum_{k in blk} a[m, k])
// The per-block sums of A are computed once; B is then read once, column by
// column, with each 4-bit block unpacked to floats and dotted with every row.

// One quantized weight: B, scales and zero points (null: 8) at inputs at, at + 1 and at + 2.
template <typename T>
struct NbitsWeight {
  const uint8_t* b;
  const T* scales;
  const uint8_t* zp;

  NbitsWeight(const hipdnn_ep_kernel_args_t& args, int32_t at)
      : b(static_cast<const uint8_t*>(args.inputs[at].data)),
        scales(static_cast<const T*>(args.inputs[at + 1].data)),
        zp(args.n_inputs > at + 2 && is_present(args.inputs[at + 2])
               ? static_cast<const uint8_t*>(args.inputs[at + 2].data)
               : nullptr) {}
};

// The rows of A in float, zero-padded to whole blocks (kp elements a row), and their per-block sums.
struct NbitsRows {
  int64_t kp;
  std::vector<float> a, sums;
};

template <typename T>
NbitsRows stage_rows(const T* a_src, const NbitsDims& d) {
  NbitsRows rows{d.blocks * d.block, {}, {}};
  rows.a.assign(static_cast<size_t>(d.m * rows.kp), 0.0f);
  rows.sums.assign(static_cast<size_t>(d.m * d.blocks), 0.0f);
  for (int64_t r = 0; r < d.m; ++r) {
    float* ar = rows.a.data() + r * rows.kp;
    for (int64_t i = 0; i < d.k; ++i) ar[i] = load(a_src, r * d.k + i);
    for (int64_t blk = 0; blk < d.blocks; ++blk) {
      float s = 0.0f;
      for (int64_t i = 0; i < d.block; ++i) s += ar[blk * d.block + i];
      rows.sums[r * d.blocks + blk] = s;
    }
  }
  return rows;
}

// acc[r] = row r of A times column col of the weight (w: block floats of scratch).
template <typename T>
void column_dot(const NbitsRows& rows, const NbitsWeight<T>& weight, const NbitsDims& d, int64_t col,
                std::vector<float>& w, std::vector<float>& acc) {
  const int64_t blob = d.block / 2, zp_stride = (d.blocks + 1) / 2;
  std::fill(acc.begin(), acc.end(), 0.0f);
  const uint8_t* col_bytes = weight.b + col * d.blocks * blob;
  for (int64_t blk = 0; blk < d.blocks; ++blk) {
    const uint8_t* bytes = col_bytes + blk * blob;
    for (int64_t i = 0; i < blob; ++i) {
      w[2 * i] = static_cast<float>(bytes[i] & 0x0F);
      w[2 * i + 1] = static_cast<float>(bytes[i] >> 4);
    }
    const float scale = load(weight.scales, col * d.blocks + blk);
    float zero = 8.0f;
    if (weight.zp != nullptr) {
      const uint8_t packed = weight.zp[col * zp_stride + blk / 2];
      zero = static_cast<float>((blk % 2 == 0) ? (packed & 0x0F) : (packed >> 4));
    }
    for (int64_t r = 0; r < d.m; ++r) {
      const float* ar = rows.a.data() + r * rows.kp + blk * d.block;
      float dot = 0.0f;
      for (int64_t i = 0; i < d.block; ++i) dot += ar[i] * w[i];
      acc[r] += scale * (dot - zero * rows.sums[r * d.blocks + blk]);
    }
  }
}

template <typename T>
void matmul_nbits_typed(const hipdnn_ep_kernel_args_t& args, const NbitsDims& d) {
  const NbitsWeight<T> weight(args, 1);
  const bool has_bias = args.n_inputs > 4 && is_present(args.inputs[4]);
  const T* bias = has_bias ? static_cast<const T*>(args.inputs[4].data) : nullptr;
  T* y = static_cast<T*>(args.outputs[0].data);
  const NbitsRows rows = stage_rows(static_cast<const T*>(args.inputs[0].data), d);
  parallel_ranges(d.n, d.m * rows.kp, [&](int64_t first, int64_t last) {
    std::vector<float> w(static_cast<size_t>(d.block)), acc(static_cast<size_t>(d.m));
    for (int64_t col = first; col < last; ++col) {
      column_dot(rows, weight, d, col, w, acc);
      const float bias_value = has_bias ? static_cast<float>(load(bias, col)) : 0.0f;
      for (int64_t r = 0; r < d.m; ++r) store(y, r * d.n + col, acc[r] + bias_value);
    }
  });
}

// y = SiLU(A x gate) * (A x up), both columns of an output taken together in float.
template <typename T>
void matmul_nbits_silu_mul_typed(const hipdnn_ep_kernel_args_t& args, const NbitsDims& d) {
  const NbitsWeight<T> gate(args, 1), up(args, 4);
  T* y = static_cast<T*>(args.outputs[0].data);
  const NbitsRows rows = stage_rows(static_cast<const T*>(args.inputs[0].data), d);
  parallel_ranges(d.n, 2 * d.m * rows.kp, [&](int64_t first, int64_t last) {
    std::vector<float> w(static_cast<size_t>(d.block)), g(static_cast<size_t>(d.m)), u(static_cast<size_t>(d.m));
    for (int64_t col = first; col < last; ++col) {
      column_dot(rows, gate, d, col, w, g);
      column_dot(rows, up, d, col, w, u);
      for (int64_t r = 0; r < d.m; ++r) store(y, r * d.n + col, g[r] * sigmoid(g[r]) * u[r]);
    }
  });
}

}  // namespace

void matmul_nbits(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  if (element_count(args.outputs[0]) == 0) return;
  const NbitsDims d = nbits_dims(args);
  dispatch_float(args.inputs[0].dtype, "matmul_nbits", [&](auto tag) {
    matmul_nbits_typed<typename decltype(tag)::type>(args, d);
  });
}

void matmul_nbits_silu_mul(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  if (element_count(args.outputs[0]) == 0) return;
  const NbitsDims d = nbits_dims(args);
  dispatch_float(args.inputs[0].dtype, "matmul_nbits_silu_mul", [&](auto tag) {
    matmul_nbits_silu_mul_typed<typename decltype(tag)::type>(args, d);
  });
}

}  // namespace hipdnn_ep::kernels::cpu
