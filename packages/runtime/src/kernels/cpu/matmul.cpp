// CPU matrix products: MatMul (ONNX semantics, broadcast batch dims) and Gemm.
//
// Both reduce to accumulate_product(): acc(MxN, float) += op(A) op(B). It
// packs a KC x NC panel of B and a KC x 4 (or 8) block of A into float buffers (which
// also converts float16 and applies transposes), then a micro-kernel keeps a
// 4 x 8 (with AVX2 4 x 16 or 8 x 8) tile of the result in vector registers over the panel's KC products:
// each B load feeds four rows. No BLAS dependency; accumulation is in float, in
// the order of k, so the results do not depend on the run.
#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/gemm_core.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/tensor_util.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::cpu {
namespace {

constexpr int64_t kPanelK = 128;  // rows of the packed B panel
constexpr int64_t kPanelN = 256;  // columns of the packed B panel (128 KiB)

// A matrix inside a tensor buffer: element (r, c) is at
// data[offset + r * row_stride + c * col_stride].
struct MatrixView {
  const void* data;
  int32_t dtype;
  int64_t offset;
  int64_t row_stride;
  int64_t col_stride;
};

// dst[r * ld_r + c * ld_c] = view(r0 + r, c0 + c) as float.
void pack(const MatrixView& v, int64_t r0, int64_t rows, int64_t c0, int64_t cols, float* dst, int64_t ld_r,
          int64_t ld_c) {
  dispatch_float(v.dtype, "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* base = static_cast<const T*>(v.data) + v.offset;
    for (int64_t r = 0; r < rows; ++r) {
      const T* src = base + (r0 + r) * v.row_stride + c0 * v.col_stride;
      float* out = dst + r * ld_r;
      if constexpr (std::is_same_v<T, float>) {
        if (v.col_stride == 1 && ld_c == 1) {
          std::memcpy(out, src, static_cast<size_t>(cols) * sizeof(float));
          continue;
        }
      }
      for (int64_t c = 0; c < cols; ++c) out[c * ld_c] = load(src, c * v.col_stride);
    }
  });
}

// The register tile of the micro-kernel: R x (NV vectors) outputs stay in
// registers across a whole panel of k. The tile is 4 x 8 with baseline SSE2;
// where the CPU has AVX2 (chosen at run time; the wheel targets plain x86-64)
// it is 4 x 16, or 8 x 8 for products of fewer than 16 columns (attention's
// head dim). All compute every output as the same sequence of float multiplies
// and adds in the order of k (no fused multiply-add), so they give identical bits.
constexpr int64_t kMaxRows = 8;
constexpr int64_t kMaxCols = 16;  // the widest tile: panels are padded to a multiple of it

// c[r * ldc + j] += sum_kk a[kk * R + r] * b[kk * ldb + j] for r < rows, j < cols;
// `a` holds R rows (zero-padded), `b` NV * W readable columns (zero-padded).
template <typename V, int64_t W, int64_t R, int64_t NV>
HIPDNN_EP_VEC_INLINE void tile_kernel(int64_t kc, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc,
                                      int64_t rows, int64_t cols) {
  const V zero{};
  V acc[R][NV];
  for (int64_t r = 0; r < R; ++r) {
    acc[r][0] = zero;
    if constexpr (NV == 2) acc[r][1] = zero;
  }
  for (int64_t kk = 0; kk < kc; ++kk) {
    V b0;
    V b1{};
    std::memcpy(&b0, b + kk * ldb, sizeof b0);
    if constexpr (NV == 2) std::memcpy(&b1, b + kk * ldb + W, sizeof b1);
    const float* ak = a + kk * R;
    for (int64_t r = 0; r < R; ++r) {
      const V ar = zero + ak[r];  // broadcast
      acc[r][0] += ar * b0;
      if constexpr (NV == 2) acc[r][1] += ar * b1;
    }
  }
  if (rows == R && cols == NV * W) {
    for (int64_t r = 0; r < R; ++r) {
      for (int64_t h = 0; h < NV; ++h) {
        V cv;
        std::memcpy(&cv, c + r * ldc + h * W, sizeof cv);
        cv += acc[r][h];
        std::memcpy(c + r * ldc + h * W, &cv, sizeof cv);
      }
    }
    return;
  }
  alignas(32) float tile[R][NV * W];
  std::memcpy(tile, acc, sizeof tile);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; ++j) c[r * ldc + j] += tile[r][j];
  }
}

using MicroKernel = void (*)(int64_t, const float*, const float*, int64_t, float*, int64_t, int64_t, int64_t);

void micro_kernel_sse(int64_t kc, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t rows,
                      int64_t cols) {
  tile_kernel<vec::f32x4, 4, 4, 2>(kc, a, b, ldb, c, ldc, rows, cols);
}

#if HIPDNN_EP_VEC_AVX2
HIPDNN_EP_TARGET_AVX2 void micro_kernel_avx2(int64_t kc, const float* a, const float* b, int64_t ldb, float* c,
                                             int64_t ldc, int64_t rows, int64_t cols) {
  tile_kernel<vec::f32x8, 8, 4, 2>(kc, a, b, ldb, c, ldc, rows, cols);
}
HIPDNN_EP_TARGET_AVX2 void micro_kernel_avx2_narrow(int64_t kc, const float* a, const float* b, int64_t ldb, float* c,
                                                    int64_t ldc, int64_t rows, int64_t cols) {
  tile_kernel<vec::f32x8, 8, 8, 1>(kc, a, b, ldb, c, ldc, rows, cols);
}
#endif

struct TileChoice {
  MicroKernel kernel;
  int64_t rows;
  int64_t cols;
};

TileChoice tile_choice(int64_t n) {
#if HIPDNN_EP_VEC_AVX2
  if (vec::has_avx2()) return n >= 16 ? TileChoice{micro_kernel_avx2, 4, 16} : TileChoice{micro_kernel_avx2_narrow, 8, 8};
#endif
  return {micro_kernel_sse, 4, 2 * vec::kWidth};
}

// acc[i * n + j] += sum_k a(i, k) * b(k, j)
void accumulate_product(int64_t m, int64_t n, int64_t k, const MatrixView& a, const MatrixView& b, float* acc) {
  const int64_t kc_max = std::min(k, kPanelK);
  const TileChoice tile = tile_choice(n);
  const int64_t nc_max = (std::min(n, kPanelN) + kMaxCols - 1) / kMaxCols * kMaxCols;  // padded to whole tiles
  std::vector<float> b_panel(static_cast<size_t>(kc_max * nc_max));
  std::vector<float> a_block(static_cast<size_t>(kc_max * kMaxRows));
  for (int64_t k0 = 0; k0 < k; k0 += kPanelK) {
    const int64_t kc = std::min(kPanelK, k - k0);
    for (int64_t n0 = 0; n0 < n; n0 += kPanelN) {
      const int64_t nc = std::min(kPanelN, n - n0);
      const int64_t ldb = (nc + kMaxCols - 1) / kMaxCols * kMaxCols;
      std::fill(b_panel.begin(), b_panel.end(), 0.0f);
      pack(b, k0, kc, n0, nc, b_panel.data(), ldb, 1);
      for (int64_t i0 = 0; i0 < m; i0 += tile.rows) {
        const int64_t rows = std::min(tile.rows, m - i0);
        // a_block[kk * tile.rows + r] = a(i0 + r, k0 + kk), rows past m are 0.
        if (rows < tile.rows) std::fill(a_block.begin(), a_block.end(), 0.0f);
        pack(a, i0, rows, k0, kc, a_block.data(), 1, tile.rows);
        for (int64_t j0 = 0; j0 < nc; j0 += tile.cols) {
          tile.kernel(kc, a_block.data(), b_panel.data() + j0, ldb, acc + i0 * n + n0 + j0, n, rows,
                      std::min(tile.cols, nc - j0));
        }
      }
    }
  }
}

// Writes out[i] = value(i) for i < count, converting to the output dtype.
template <typename ValueFn>
void write_output(const hipdnn_ep_tensor_ref_t& out, int64_t offset, int64_t count, ValueFn value) {
  dispatch_float(out.dtype, "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = static_cast<T*>(out.data) + offset;
    for (int64_t i = 0; i < count; ++i) store(dst, i, value(i));
  });
}

}  // namespace

void gemm_accumulate(int64_t m, int64_t n, int64_t k, const void* a_data, int32_t a_dtype, int64_t a_offset,
                     int64_t lda, const float* b, int64_t ldb, float* acc) {
  accumulate_product(m, n, k, MatrixView{a_data, a_dtype, a_offset, lda, 1},
                     MatrixView{b, HIPDNN_EP_DTYPE_FLOAT32, 0, ldb, 1}, acc);
}

void matmul(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& a = args.inputs[0];
  const hipdnn_ep_tensor_ref_t& b = args.inputs[1];
  const hipdnn_ep_tensor_ref_t& out = args.outputs[0];
  const MatmulShape s = matmul_shape(dims_of(a), dims_of(b));
  if (s.m == 0 || s.n == 0 || element_count(s.batch) == 0) return;
  const std::array<Dims, 3> strides{contiguous_strides(s.batch), broadcast_strides(s.a_batch, s.batch),
                                    broadcast_strides(s.b_batch, s.batch)};
  const int64_t a_size = s.m * s.k;
  const int64_t b_size = s.k * s.n;
  const int64_t out_size = s.m * s.n;
  std::vector<float> acc(static_cast<size_t>(out_size));
  // Each call of the row function covers `count` batches; the strides count
  // batches, so scale them by the matrix sizes.
  for_each_row<3>(s.batch, strides, [&](const std::array<int64_t, 3>& off, int64_t count, const std::array<int64_t, 3>& st) {
    for (int64_t i = 0; i < count; ++i) {
      const MatrixView av{a.data, a.dtype, (off[1] + i * st[1]) * a_size, s.k, 1};
      const MatrixView bv{b.data, b.dtype, (off[2] + i * st[2]) * b_size, s.n, 1};
      std::fill(acc.begin(), acc.end(), 0.0f);
      accumulate_product(s.m, s.n, s.k, av, bv, acc.data());
      write_output(out, (off[0] + i * st[0]) * out_size, out_size, [&](int64_t j) { return acc[j]; });
    }
  });
}

void gemm(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& a = args.inputs[0];
  const hipdnn_ep_tensor_ref_t& b = args.inputs[1];
  const hipdnn_ep_tensor_ref_t& out = args.outputs[0];
  const bool trans_a = args.int_attrs[HIPDNN_EP_KERNEL_GEMM_INT_ATTR_TRANS_A] != 0;
  const bool trans_b = args.int_attrs[HIPDNN_EP_KERNEL_GEMM_INT_ATTR_TRANS_B] != 0;
  const auto alpha = static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_GEMM_FLOAT_ATTR_ALPHA]);
  const auto beta = static_cast<float>(args.float_attrs[HIPDNN_EP_KERNEL_GEMM_FLOAT_ATTR_BETA]);
  const int64_t m = out.dims[0];
  const int64_t n = out.dims[1];
  const int64_t k = trans_a ? a.dims[0] : a.dims[1];
  if (m == 0 || n == 0) return;
  // Stored A is [M, K] or, transposed, [K, M]: element (i, kk) of op(A).
  const MatrixView av{a.data, a.dtype, 0, trans_a ? 1 : k, trans_a ? m : 1};
  const MatrixView bv{b.data, b.dtype, 0, trans_b ? 1 : n, trans_b ? k : 1};
  std::vector<float> acc(static_cast<size_t>(m * n), 0.0f);
  accumulate_product(m, n, k, av, bv, acc.data());

  // C is ignored when beta is 0, as in ONNX Runtime (so NaN in C stays out).
  const bool use_c = args.n_inputs > 2 && is_present(args.inputs[2]) && beta != 0.0f;
  if (!use_c) {
    write_output(out, 0, m * n, [&](int64_t j) { return alpha * acc[j]; });
    return;
  }
  const hipdnn_ep_tensor_ref_t& c = args.inputs[2];
  const Dims shape{m, n};
  const Dims c_strides = broadcast_strides(dims_of(c), shape);
  dispatch_float(c.dtype, "gemm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pc = static_cast<const T*>(c.data);
    for (int64_t row = 0; row < m; ++row) {
      const float* acc_row = acc.data() + row * n;
      const T* c_row = pc + row * c_strides[0];
      write_output(out, row * n, n, [&](int64_t col) { return alpha * acc_row[col] + beta * load(c_row, col * c_strides[1]); });
    }
  });
}

}  // namespace hipdnn_ep::kernels::cpu
