#include "gpu/gpu_device.h"
#include "kernels/backend_table.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/gpu_kernels.h"

namespace hipdnn_ep::kernels {

const KernelTable& gpu_kernel_table() {
  static const KernelTable table = [] {
    KernelTable t{};
#define HIPDNN_EP_KERNEL_SLOT(op) t.op = gpu::op;
    HIPDNN_EP_KERNELS(HIPDNN_EP_KERNEL_SLOT)
#undef HIPDNN_EP_KERNEL_SLOT
    return t;
  }();
  return table;
}

namespace gpu {

void check_launch(const char* what) {
  const hipError_t error = hipGetLastError();
  if (error != hipSuccess) fail(HIPDNN_EP_STATUS_INTERNAL, gpu_error_text(std::string("launching ") + what, error));
}

}  // namespace gpu
}  // namespace hipdnn_ep::kernels
