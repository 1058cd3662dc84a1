// Matrix products on the GPU through hipBLASLt (cuBLASLt on NVIDIA): one
// entry point for MatMul and Gemm. The library's handle, a workspace and a
// cache of matmul plans (descriptors plus the chosen algorithm, keyed by the
// problem) live as long as the device, so a repeated shape costs no
// heuristic query; a problem's candidates are timed on its first call.
#pragma once

#include <cstdint>
#include <map>
#include <array>

#include "gpu/hip_portability.h"

namespace hipdnn_ep {

class GpuDevice;

// Row-major C[m, n] = alpha * op(A) * op(B) + beta * C over `batch` matrices.
// Leading dims and batch strides are in elements; a batch stride of 0 reuses
// one matrix for every batch. dtype is FLOAT32 or FLOAT16 for all three;
// accumulation is in float32 (no TF32). C is not read when beta is 0.
struct GemmProblem {
  int32_t dtype;
  int64_t m, n, k;
  bool trans_a, trans_b;
  const void* a;
  int64_t lda, stride_a;
  const void* b;
  int64_t ldb, stride_b;
  void* c;
  int64_t ldc, stride_c;
  int64_t batch;
  float alpha, beta;
  // Optional epilogue: C[i, j] += bias[j] (n values of dtype) after alpha * op(A) op(B) + beta * C, in
  // the library's kernel (no second pass over C). The plan is the problem's and not the pointer's.
  const void* bias = nullptr;
};

class GpuBlas {
 public:
  explicit GpuBlas(GpuDevice* device);
  ~GpuBlas();
  GpuBlas(const GpuBlas&) = delete;
  GpuBlas& operator=(const GpuBlas&) = delete;

  // Enqueues the product on stream; throws KernelError when the library
  // refuses the problem.
  void gemm(const GemmProblem& p, hipStream_t stream);

 private:
  struct Plan;
  using Key = std::array<int64_t, 17>;
  Plan& plan(const GemmProblem& p, const Key& key);
  // One call of the plan's candidate `candidate` (an index into its heuristic results).
  int run(const GemmProblem& p, Plan& pl, int candidate, hipStream_t stream);
  // Times the plan's candidates once and keeps the fastest (gpu_blas.hip says when and how).
  void tune(const GemmProblem& p, Plan& pl, hipStream_t stream);
  float time_candidate(const GemmProblem& p, Plan& pl, int candidate, int runs, hipStream_t side, hipEvent_t start,
                       hipEvent_t stop);

  GpuDevice* device_;
  void* handle_ = nullptr;  // hipblasLtHandle_t
  void* workspace_ = nullptr;
  uint64_t workspace_size_ = 0;
  std::map<Key, Plan*> plans_;
};

}  // namespace hipdnn_ep
