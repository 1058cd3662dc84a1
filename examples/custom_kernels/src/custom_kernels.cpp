// An example custom-kernel library: kernels with the runtime's calling convention, using the
// runtime's memory manager and copies, built against the installed runtime wheel.
#include "custom_kernels/custom_kernels.h"

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

namespace {

thread_local std::string last_error;

int32_t fail(int32_t status, std::string message) {
  last_error = std::move(message);
  return status;
}

// The runtime failed: keep its message, prefixed with what we were doing.
int32_t runtime_failed(int32_t status, const char* what) {
  const char* detail = hipdnn_ep_last_error();
  return fail(status, std::string(what) + ": " + (detail != nullptr ? detail : "no message"));
}

bool element_count(const hipdnn_ep_tensor_ref_t& t, int64_t* out) {
  if (t.rank < 0 || (t.rank > 0 && t.dims == nullptr)) return false;
  int64_t n = 1;
  for (int32_t i = 0; i < t.rank; ++i) {
    if (t.dims[i] < 0 || (t.dims[i] > 0 && n > INT64_MAX / t.dims[i])) return false;
    n *= t.dims[i];
  }
  *out = n;
  return true;
}

}  // namespace

extern "C" int32_t custom_kernels_check_runtime(void) {
  const uint32_t have = hipdnn_ep_abi_version();
  const uint32_t major = have >> 16, minor = have & 0xffffu;
  if (major != HIPDNN_EP_ABI_MAJOR || minor < HIPDNN_EP_ABI_MINOR) {
    return fail(HIPDNN_EP_STATUS_ABI_MISMATCH,
                "custom_kernels was built for runtime ABI " + std::to_string(HIPDNN_EP_ABI_MAJOR) + "." +
                    std::to_string(HIPDNN_EP_ABI_MINOR) + " but the loaded runtime has ABI " +
                    std::to_string(major) + "." + std::to_string(minor) + ". Fix: pip install 'hipdnn-ep-runtime>=" +
                    std::to_string(HIPDNN_EP_ABI_MAJOR) + "." + std::to_string(HIPDNN_EP_ABI_MINOR) + ",<" +
                    std::to_string(HIPDNN_EP_ABI_MAJOR + 1) + "', or rebuild custom_kernels against the installed one");
  }
  last_error.clear();
  return HIPDNN_EP_STATUS_OK;
}

extern "C" const char* custom_kernels_last_error(void) { return last_error.c_str(); }

extern "C" int32_t custom_kernels_rms_norm(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t* args) {
  last_error.clear();
  if (state == nullptr || args == nullptr || args->struct_size < sizeof(hipdnn_ep_kernel_args_t)) {
    return fail(HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                "custom_kernels_rms_norm: state and args must not be NULL, args->struct_size at least " +
                    std::to_string(sizeof(hipdnn_ep_kernel_args_t)));
  }
  if (args->n_inputs != 2 || args->n_outputs != 1 || args->n_float_attrs != 1 || args->float_attrs == nullptr) {
    return fail(HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                "custom_kernels_rms_norm: takes inputs X and scale, output Y and float attribute epsilon");
  }
  const hipdnn_ep_tensor_ref_t& x = args->inputs[0];
  const hipdnn_ep_tensor_ref_t& scale = args->inputs[1];
  const hipdnn_ep_tensor_ref_t& y = args->outputs[0];
  int64_t n = 0, n_scale = 0, n_y = 0;
  if (x.dtype != HIPDNN_EP_DTYPE_FLOAT32 || scale.dtype != HIPDNN_EP_DTYPE_FLOAT32 ||
      y.dtype != HIPDNN_EP_DTYPE_FLOAT32) {
    return fail(HIPDNN_EP_STATUS_INVALID_ARGUMENT, "custom_kernels_rms_norm: X, scale and Y must be float32");
  }
  if (x.rank < 1 || !element_count(x, &n) || scale.rank != 1 || !element_count(scale, &n_scale) ||
      !element_count(y, &n_y) || scale.dims[0] != x.dims[x.rank - 1] || n_y != n) {
    return fail(HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                "custom_kernels_rms_norm: X must have rank >= 1, scale the shape [X's last dim], Y as many "
                "elements as X");
  }
  const int64_t cols = n_scale;
  if (n == 0) return HIPDNN_EP_STATUS_OK;
  const double epsilon = args->float_attrs[0];

  // Stage through the runtime's copies, so that the same code serves device memory on GPU states.
  std::vector<float> hx(static_cast<size_t>(n)), hs(static_cast<size_t>(cols)), hy(static_cast<size_t>(n));
  int32_t st = hipdnn_ep_memcpy(state, hx.data(), x.data, n * sizeof(float), HIPDNN_EP_MEMCPY_KIND_DEVICE_TO_HOST);
  if (st == HIPDNN_EP_STATUS_OK) {
    st = hipdnn_ep_memcpy(state, hs.data(), scale.data, cols * sizeof(float), HIPDNN_EP_MEMCPY_KIND_DEVICE_TO_HOST);
  }
  if (st == HIPDNN_EP_STATUS_OK) st = hipdnn_ep_synchronize(state);
  if (st != HIPDNN_EP_STATUS_OK) return runtime_failed(st, "custom_kernels_rms_norm: reading the inputs");

  for (int64_t r = 0; r < n / cols; ++r) {
    const float* row = hx.data() + r * cols;
    double sum = 0.0;
    for (int64_t c = 0; c < cols; ++c) sum += static_cast<double>(row[c]) * row[c];
    const double inv = 1.0 / std::sqrt(sum / static_cast<double>(cols) + epsilon);
    for (int64_t c = 0; c < cols; ++c) hy[r * cols + c] = static_cast<float>(row[c] * inv * hs[c]);
  }

  st = hipdnn_ep_memcpy(state, y.data, hy.data(), n * sizeof(float), HIPDNN_EP_MEMCPY_KIND_HOST_TO_DEVICE);
  if (st == HIPDNN_EP_STATUS_OK) st = hipdnn_ep_synchronize(state);  // hy is released on return
  if (st != HIPDNN_EP_STATUS_OK) return runtime_failed(st, "custom_kernels_rms_norm: writing Y");
  return HIPDNN_EP_STATUS_OK;
}

extern "C" int32_t custom_kernels_rms_norm_f32(hipdnn_ep_state_t* state, const void* x, const void* scale,
                                               int64_t rows, int64_t cols, double epsilon, void** out_y) {
  if (out_y == nullptr || rows < 0 || cols < 1 || (rows > 0 && cols > INT64_MAX / 4 / rows)) {
    return fail(HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                "custom_kernels_rms_norm_f32: out_y must not be NULL, rows >= 0, cols >= 1, rows*cols*4 in int64");
  }
  void* y = nullptr;
  int32_t st = hipdnn_ep_malloc(state, static_cast<uint64_t>(rows * cols) * sizeof(float), &y);
  if (st != HIPDNN_EP_STATUS_OK) return runtime_failed(st, "custom_kernels_rms_norm_f32: allocating Y");
  const int64_t x_dims[2] = {rows, cols};
  const int64_t s_dims[1] = {cols};
  const hipdnn_ep_tensor_ref_t inputs[2] = {{const_cast<void*>(x), x_dims, 2, HIPDNN_EP_DTYPE_FLOAT32},
                                            {const_cast<void*>(scale), s_dims, 1, HIPDNN_EP_DTYPE_FLOAT32}};
  const hipdnn_ep_tensor_ref_t outputs[1] = {{y, x_dims, 2, HIPDNN_EP_DTYPE_FLOAT32}};
  hipdnn_ep_kernel_args_t args{};
  args.struct_size = sizeof(args);
  args.inputs = inputs;
  args.outputs = outputs;
  args.float_attrs = &epsilon;
  args.n_inputs = 2;
  args.n_outputs = 1;
  args.n_float_attrs = 1;
  st = custom_kernels_rms_norm(state, &args);
  if (st != HIPDNN_EP_STATUS_OK) {
    hipdnn_ep_free(state, y);
    return st;
  }
  *out_y = y;
  return HIPDNN_EP_STATUS_OK;
}
