#include "kernels/backend_table.h"

namespace hipdnn_ep::kernels {

const KernelTable* kernel_table(int32_t backend) {
  switch (backend) {
    case HIPDNN_EP_BACKEND_CPU: return &cpu_kernel_table();
    // CUDA and HIP kernel tables register here when those backends are built.
    default: return nullptr;
  }
}

}  // namespace hipdnn_ep::kernels
