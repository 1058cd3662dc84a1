// Runs custom_kernels_rms_norm_f32 on a CPU state and prints the result and the memory in use.
#include <cstdio>

#include "custom_kernels/custom_kernels.h"

int main() {
  if (custom_kernels_check_runtime() != HIPDNN_EP_STATUS_OK) {
    std::fprintf(stderr, "%s\n", custom_kernels_last_error());
    return 1;
  }
  hipdnn_ep_state_t* state = nullptr;
  if (hipdnn_ep_state_create(nullptr, &state) != HIPDNN_EP_STATUS_OK) {
    std::fprintf(stderr, "hipdnn_ep_state_create: %s\n", hipdnn_ep_last_error());
    return 1;
  }
  const float x[2][3] = {{1, 2, 2}, {3, 0, 4}};
  const float scale[3] = {1, 1, 2};
  void* y = nullptr;
  if (custom_kernels_rms_norm_f32(state, x, scale, 2, 3, 0.0, &y) != HIPDNN_EP_STATUS_OK) {
    std::fprintf(stderr, "%s\n", custom_kernels_last_error());
    return 1;
  }
  const float* out = static_cast<const float*>(y);  // a CPU state's memory is host memory
  for (int i = 0; i < 6; ++i) std::printf("%.4f%c", out[i], i % 3 == 2 ? '\n' : ' ');
  hipdnn_ep_free(state, y);
  return hipdnn_ep_state_destroy(state);
}
