#include "kernels/backend_table.h"

namespace hipdnn_ep::kernels {

const KernelTable* kernel_table(int32_t backend) {
  switch (backend) {
    case HIPDNN_EP_BACKEND_CPU: return &cpu_kernel_table();
#if defined(HIPDNN_EP_WITH_CUDA)
    case HIPDNN_EP_BACKEND_CUDA: return &gpu_kernel_table();
#endif
#if defined(HIPDNN_EP_WITH_HIP)
    case HIPDNN_EP_BACKEND_HIP: return &gpu_kernel_table();
#endif
    default: return nullptr;
  }
}

}  // namespace hipdnn_ep::kernels
