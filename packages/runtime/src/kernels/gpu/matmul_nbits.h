// What the MatMulNBits kernels share (matmul_nbits.hip and, on CUDA, the tensor-core decode GEMV in
// matmul_nbits_mma.hip): the call's parameters and the tensor-core launch.
#ifndef HIPDNN_EP_KERNELS_GPU_MATMUL_NBITS_H_
#define HIPDNN_EP_KERNELS_GPU_MATMUL_NBITS_H_

#include <cstdint>

#include "kernels/gpu/gpu_common.h"
#include "kernels/nbits_dims.h"

namespace hipdnn_ep::kernels::gpu {

// The call's shape (NbitsDims) and one weight's B and zero points.
struct NbitsArgs : NbitsDims {
  const uint8_t* b;
  const uint8_t* zp;  // null: zero point 8
  int64_t col_bytes, zp_stride;
  // B, its scales and zero points are weights of the running program (holds_run_weights): the tensor-core
  // GEMV loads its first step of them before waiting for its stream predecessor. Asked only where that
  // GEMV may run (CUDA, float16, a decode's rows); false elsewhere.
  bool constant_weights;
};

#if defined(HIPDNN_EP_PLATFORM_CUDA)
// The decode GEMV on tensor cores where it applies (float16 is the caller's; up to 8 rows of A, blocks of
// a power of two of at least 32 (under 128: one row, 4-byte aligned scales), 16-byte aligned B, a GPU of
// compute capability 8.0 or more): launches it and returns true, else false (the caller runs the scalar
// GEMV). `multiprocessors` (the device's) sizes
// its blocks. The caller checks the launch.
bool launch_gemv_mma(const NbitsArgs& p, const __half* a, const __half* scales, const __half* bias, __half* y,
                     int multiprocessors, hipStream_t stream);

// The same for matmul_nbits_silu_mul: y = SiLU(A x gate's weight) * (A x up's weight), where gate and up
// have the same m, k, n and block.
bool launch_gemv_mma_silu_mul(const NbitsArgs& gate, const __half* gate_scales, const NbitsArgs& up,
                              const __half* up_scales, const __half* a, __half* y, int multiprocessors,
                              hipStream_t stream);

// matmul_nbits_silu_mul's two products in one launch where the gated form does not apply (one row of A,
// blocks of 32 or 64): y_gate = A x gate's weight, y_up = A x up's weight. False where it does not apply.
bool launch_gemv_mma_paired(const NbitsArgs& gate, const __half* gate_scales, const NbitsArgs& up,
                            const __half* up_scales, const __half* a, __half* y_gate, __half* y_up,
                            int multiprocessors, hipStream_t stream);

// The prefill GEMM on tensor cores (matmul_nbits_gemm.hip), without a dequantized copy of B:
// gemm_nbits_applies says whether p and A fit it (float16 is the caller's; up to 128 rows, N wide enough to
// fill the device's `multiprocessors`, K a multiple of 64, blocks of at least 32, A and B 16-byte aligned).
// launch_gemm_nbits launches it and returns true, or false on a GPU below compute capability 8.0 (the
// caller dequantizes). The caller checks the launch.
bool gemm_nbits_applies(const NbitsArgs& p, const __half* a, int multiprocessors);
bool launch_gemm_nbits(const NbitsArgs& p, const __half* a, const __half* scales, const __half* bias, __half* y,
                       hipStream_t stream);
#endif

}  // namespace hipdnn_ep::kernels::gpu

#endif  // HIPDNN_EP_KERNELS_GPU_MATMUL_NBITS_H_
