#include "gpu/gpu_blas.h"

#include <algorithm>
#include <string>

#include "device_memory.h"
#include "gpu/gpu_device.h"
#include "gpu/hip_blas_portability.h"
#include "kernels/tensor_util.h"

namespace hipdnn_ep {
namespace {

constexpr uint64_t kWorkspaceBytes = 32u << 20;
// The heuristic's candidates kept per problem and timed on its first call (GpuBlas::tune).
constexpr int kCandidates = 8;
// Another candidate replaces the heuristic's first only when it is this much faster: near-ties keep the
// heuristic's choice, so that timing noise seldom changes the algorithm (and so the output's rounding)
// from one process to the next.
constexpr float kTuneMargin = 0.95f;
// A candidate is timed over a graph of as many calls as fill about kTuneSpanUs (at most kTuneMaxRuns);
// a problem whose first candidate takes over kTuneMaxUs a call is not timed (its heuristic choice is near
// the rate already, and timing it would cost seconds).
constexpr float kTuneSpanUs = 200.0f;
constexpr int kTuneMaxRuns = 20;
constexpr float kTuneMaxUs = 1000.0f;

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
  hipblasLtMatmulHeuristicResult_t candidates[kCandidates]{};
  int found = 0;
  int chosen = 0;      // the candidate every call runs
  bool tuned = false;  // the candidates were timed (GpuBlas::tune)
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
  const hipblasStatus_t status =
      hipblasLtMatmulAlgoGetHeuristic(static_cast<hipblasLtHandle_t>(handle_), plan->desc, plan->a, plan->b, plan->c,
                                      plan->c, pref, kCandidates, plan->candidates, &plan->found);
  (void)hipblasLtMatmulPreferenceDestroy(pref);
  if (status != HIPBLAS_STATUS_SUCCESS || plan->found == 0) {
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

int GpuBlas::run(const GemmProblem& p, Plan& pl, int candidate, hipStream_t stream) {
  const float alpha = p.alpha;
  const float beta = p.beta;
  return hipblasLtMatmul(static_cast<hipblasLtHandle_t>(handle_), pl.desc, &alpha, p.b, pl.a, p.a, pl.b, &beta, p.c,
                         pl.c, p.c, pl.c, &pl.candidates[candidate].algo, workspace_, workspace_size_, stream);
}

// Device microseconds of one call of candidate `candidate`, from `runs` calls captured into a graph on
// `side` and replayed once to warm up and once timed: a replay runs its kernels back to back, where calls
// launched one by one from the host would time the host. Negative: the candidate could not be timed.
float GpuBlas::time_candidate(const GemmProblem& p, Plan& pl, int candidate, int runs, hipStream_t side,
                              hipEvent_t start, hipEvent_t stop) {
  hipGraph_t graph = nullptr;
  hipGraphExec_t exec = nullptr;
  if (hipStreamBeginCapture(side, hipStreamCaptureModeRelaxed) != hipSuccess) {
    (void)hipGetLastError();
    return -1.0f;
  }
  bool ok = true;
  for (int r = 0; r < runs && ok; ++r) ok = run(p, pl, candidate, side) == HIPBLAS_STATUS_SUCCESS;
  ok = hipStreamEndCapture(side, &graph) == hipSuccess && ok;
  ok = ok && hipGraphInstantiateWithFlags(&exec, graph, 0) == hipSuccess;
  float us = -1.0f, ms = 0.0f;
  if (ok && hipGraphLaunch(exec, side) == hipSuccess && hipEventRecord(start, side) == hipSuccess &&
      hipGraphLaunch(exec, side) == hipSuccess && hipEventRecord(stop, side) == hipSuccess &&
      hipEventSynchronize(stop) == hipSuccess && hipEventElapsedTime(&ms, start, stop) == hipSuccess) {
    us = ms * 1000.0f / static_cast<float>(runs);
  }
  if (exec != nullptr) (void)hipGraphExecDestroy(exec);
  if (graph != nullptr) (void)hipGraphDestroy(graph);
  (void)hipGetLastError();
  return us;
}

// The heuristic ranks algorithms by a model of the GPU, and for the products of encoders at a few batches
// its first is measurably not the fastest (an H100, [1024, 3072] x [3072, 768] with a bias: 12.4 us against
// 9.9 for its third). So each problem's candidates are timed once, on its first call that the stream does
// not capture, on that call's own operands, on a side stream ordered after the call's: only where beta is
// 0, so C is written and not read, and the call itself, ordered after the trials, overwrites what they
// left. A candidate the library refuses, or any error while timing, leaves the heuristic's first in place.
void GpuBlas::tune(const GemmProblem& p, Plan& pl, hipStream_t stream) {
  hipStreamCaptureStatus capture = hipStreamCaptureStatusNone;
  if (hipStreamIsCapturing(stream, &capture) != hipSuccess || capture != hipStreamCaptureStatusNone) {
    (void)hipGetLastError();
    return;  // timed on a later call outside the capture
  }
  pl.tuned = true;
  if (pl.found < 2 || p.beta != 0.0f) return;
  hipStream_t side = nullptr;
  hipEvent_t ready = nullptr, start = nullptr, stop = nullptr;
  if (hipStreamCreateWithFlags(&side, hipStreamNonBlocking) == hipSuccess && hipEventCreate(&ready) == hipSuccess &&
      hipEventCreate(&start) == hipSuccess && hipEventCreate(&stop) == hipSuccess &&
      hipEventRecord(ready, stream) == hipSuccess && hipStreamWaitEvent(side, ready, 0) == hipSuccess) {
    const float once = time_candidate(p, pl, 0, 1, side, start, stop);
    if (once > 0.0f && once <= kTuneMaxUs) {
      const int runs = std::max(1, std::min(kTuneMaxRuns, static_cast<int>(kTuneSpanUs / once)));
      const float first = time_candidate(p, pl, 0, runs, side, start, stop);
      float best_us = first;
      int best = 0;
      for (int i = 1; i < pl.found && first > 0.0f; ++i) {
        const float us = time_candidate(p, pl, i, runs, side, start, stop);
        if (us > 0.0f && us < best_us) {
          best_us = us;
          best = i;
        }
      }
      if (best != 0 && best_us < kTuneMargin * first) pl.chosen = best;
    }
    // the call, on `stream`, after every trial
    if (hipEventRecord(ready, side) == hipSuccess) (void)hipStreamWaitEvent(stream, ready, 0);
  }
  for (hipEvent_t e : {ready, start, stop}) {
    if (e != nullptr) (void)hipEventDestroy(e);
  }
  if (side != nullptr) (void)hipStreamDestroy(side);
  (void)hipGetLastError();
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
  if (!pl.tuned) tune(p, pl, stream);
  check_blas(static_cast<hipblasStatus_t>(run(p, pl, pl.chosen, stream)), "matmul");
}

}  // namespace hipdnn_ep
