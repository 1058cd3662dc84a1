#include "gpu/gpu_blas.h"

#include <string>

#include "device_memory.h"
#include "gpu/gpu_device.h"
#include "gpu/hip_blas_portability.h"
#include "kernels/tensor_util.h"

namespace hipdnn_ep {
namespace {

constexpr uint64_t kWorkspaceBytes = 32u << 20;

void check_blas(hipblasStatus_t status, const char* what) {
  if (status != HIPBLAS_STATUS_SUCCESS) {
    kernels::fail(HIPDNN_EP_STATUS_INTERNAL,
                  std::string("GEMM library: ") + what + " failed with status " + std::to_string(int(status)));
  }
}

// The largest power of two (at most 256) that divides the address.
int64_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  int64_t align = 256;
  while (align > 1 && (a % static_cast<uintptr_t>(align)) != 0) align /= 2;
  return align;
}

}  // namespace

struct GpuBlas::Plan {
  hipblasLtMatmulDesc_t desc = nullptr;
  hipblasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  hipblasLtMatmulHeuristicResult_t heuristic{};
  ~Plan() {
    if (a) hipblasLtMatrixLayoutDestroy(a);
    if (b) hipblasLtMatrixLayoutDestroy(b);
    if (c) hipblasLtMatrixLayoutDestroy(c);
    if (desc) hipblasLtMatmulDescDestroy(desc);
  }
};

GpuBlas::GpuBlas(GpuDevice* device) : device_(device) {
  device_->make_current();
  hipblasLtHandle_t handle = nullptr;
  check_blas(hipblasLtCreate(&handle), "creating the handle");
  handle_ = handle;
  if (hipMalloc(&workspace_, kWorkspaceBytes) == hipSuccess) {
    workspace_size_ = kWorkspaceBytes;
    device_memory_totals(device_->backend(), device_->ordinal()).add_reserved(kWorkspaceBytes);
  } else {
    (void)hipGetLastError();
    workspace_ = nullptr;  // algorithms that need no workspace still run
  }
}

GpuBlas::~GpuBlas() {
  for (auto& entry : plans_) delete entry.second;
  if (workspace_ != nullptr) {
    hipFree(workspace_);
    device_memory_totals(device_->backend(), device_->ordinal()).sub_reserved(workspace_size_);
  }
  if (handle_ != nullptr) hipblasLtDestroy(static_cast<hipblasLtHandle_t>(handle_));
}

GpuBlas::Plan& GpuBlas::plan(const GemmProblem& p, const Key& key) {
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;
  auto plan = std::make_unique<Plan>();
  const hipDataType type = p.dtype == HIPDNN_EP_DTYPE_FLOAT16 ? HIP_R_16F : HIP_R_32F;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the
  // library's first operand is B's memory and its second is A's.
  check_blas(hipblasLtMatmulDescCreate(&plan->desc, HIPBLAS_COMPUTE_32F, HIP_R_32F), "creating the matmul descriptor");
  const hipblasOperation_t op_first = p.trans_b ? HIPBLAS_OP_T : HIPBLAS_OP_N;
  const hipblasOperation_t op_second = p.trans_a ? HIPBLAS_OP_T : HIPBLAS_OP_N;
  check_blas(hipblasLtMatmulDescSetAttribute(plan->desc, HIPBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof op_first),
             "setting TRANSA");
  check_blas(hipblasLtMatmulDescSetAttribute(plan->desc, HIPBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof op_second),
             "setting TRANSB");
  if (p.bias != nullptr) {
    // Column-major D is [n, m]: the library's bias, one value per row of D, is ours per column.
    const hipblasLtEpilogue_t epilogue = HIPBLASLT_EPILOGUE_BIAS;
    check_blas(hipblasLtMatmulDescSetAttribute(plan->desc, HIPBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
               "setting the bias epilogue");
  }
  const uint64_t first_rows = p.trans_b ? p.k : p.n, first_cols = p.trans_b ? p.n : p.k;
  const uint64_t second_rows = p.trans_a ? p.m : p.k, second_cols = p.trans_a ? p.k : p.m;
  check_blas(hipblasLtMatrixLayoutCreate(&plan->a, type, first_rows, first_cols, p.ldb), "creating layout B");
  check_blas(hipblasLtMatrixLayoutCreate(&plan->b, type, second_rows, second_cols, p.lda), "creating layout A");
  check_blas(hipblasLtMatrixLayoutCreate(&plan->c, type, p.n, p.m, p.ldc), "creating layout C");
  if (p.batch > 1) {
    const int32_t count = static_cast<int32_t>(p.batch);
    const int64_t strides[3] = {p.stride_b, p.stride_a, p.stride_c};
    hipblasLtMatrixLayout_t layouts[3] = {plan->a, plan->b, plan->c};
    for (int i = 0; i < 3; ++i) {
      check_blas(hipblasLtMatrixLayoutSetAttribute(layouts[i], HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
                 "setting the batch count");
      check_blas(hipblasLtMatrixLayoutSetAttribute(layouts[i], HIPBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strides[i],
                                                   sizeof strides[i]),
                 "setting the batch stride");
    }
  }
  hipblasLtMatmulPreference_t pref = nullptr;
  check_blas(hipblasLtMatmulPreferenceCreate(&pref), "creating the preference");
  check_blas(hipblasLtMatmulPreferenceSetAttribute(pref, HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_size_,
                                                   sizeof workspace_size_),
             "setting the workspace size");
#if defined(HIPDNN_EP_PLATFORM_CUDA)
  // The heuristic assumes 256-byte aligned pointers unless told otherwise.
  const uint32_t align[4] = {static_cast<uint32_t>(key[12]), static_cast<uint32_t>(key[13]),
                             static_cast<uint32_t>(key[14]), static_cast<uint32_t>(key[14])};
  const cublasLtMatmulPreferenceAttributes_t which[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i) {
    check_blas(cublasLtMatmulPreferenceSetAttribute(pref, which[i], &align[i], sizeof align[i]), "setting alignments");
  }
#endif
  int found = 0;
  const hipblasStatus_t status =
      hipblasLtMatmulAlgoGetHeuristic(static_cast<hipblasLtHandle_t>(handle_), plan->desc, plan->a, plan->b, plan->c,
                                      plan->c, pref, 1, &plan->heuristic, &found);
  (void)hipblasLtMatmulPreferenceDestroy(pref);
  if (status != HIPBLAS_STATUS_SUCCESS || found == 0) {
    kernels::fail(HIPDNN_EP_STATUS_UNSUPPORTED,
                  "the GEMM library has no algorithm for m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) +
                      " k=" + std::to_string(p.k) + " batch=" + std::to_string(p.batch) +
                      (p.bias != nullptr ? " with a bias epilogue" : "") + " (" +
                      kernels::dtype_name(p.dtype) + ")");
  }
  Plan* raw = plan.release();
  plans_.emplace(key, raw);
  return *raw;
}

void GpuBlas::gemm(const GemmProblem& p, hipStream_t stream) {
  const Key key{p.dtype,          p.m,       p.n,      p.k,        p.trans_a, p.trans_b,
                p.lda,            p.stride_a, p.ldb,   p.stride_b, p.ldc,     p.stride_c,
                alignment_of(p.b), alignment_of(p.a), std::min(alignment_of(p.c), int64_t{256}), p.batch,
                p.bias != nullptr};
  Plan& pl = plan(p, key);
  if (p.bias != nullptr) {
    // Set per call: the plan is shared by every bias of this problem (a state's device has one GpuBlas,
    // and a state runs one program at a time, as the plan cache itself assumes).
    check_blas(hipblasLtMatmulDescSetAttribute(pl.desc, HIPBLASLT_MATMUL_DESC_BIAS_POINTER, &p.bias, sizeof p.bias),
               "setting the bias pointer");
  }
  const float alpha = p.alpha;
  const float beta = p.beta;
  check_blas(hipblasLtMatmul(static_cast<hipblasLtHandle_t>(handle_), pl.desc, &alpha, p.b, pl.a, p.a, pl.b, &beta,
                             p.c, pl.c, p.c, pl.c, &pl.heuristic.algo, workspace_, workspace_size_, stream),
             "matmul");
}

}  // namespace hipdnn_ep
