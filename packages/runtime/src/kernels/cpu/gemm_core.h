// The CPU matrix product core (matmul.cpp) for other kernels: convolution runs
// its im2col columns through the same packed micro-kernels as MatMul.
#ifndef HIPDNN_EP_KERNELS_CPU_GEMM_CORE_H_
#define HIPDNN_EP_KERNELS_CPU_GEMM_CORE_H_

#include <cstdint>

namespace hipdnn_ep::kernels::cpu {

// acc[i * n + j] += sum_kk a(i, kk) * b(kk, j), where a(i, kk) = a_data[a_offset + i * lda + kk]
// (a_dtype FLOAT32 or FLOAT16) and b(kk, j) = b[kk * ldb + j]; accumulates in float in the order of kk.
void gemm_accumulate(int64_t m, int64_t n, int64_t k, const void* a_data, int32_t a_dtype, int64_t a_offset,
                     int64_t lda, const float* b, int64_t ldb, float* acc);

}  // namespace hipdnn_ep::kernels::cpu

#endif  // HIPDNN_EP_KERNELS_CPU_GEMM_CORE_H_
