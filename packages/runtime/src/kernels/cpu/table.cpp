#include "kernels/backend_table.h"
#include "kernels/cpu/cpu_kernels.h"

namespace hipdnn_ep::kernels {

const KernelTable& cpu_kernel_table() {
  static const KernelTable table = [] {
    KernelTable t{};
#define HIPDNN_EP_KERNEL_SLOT(op) t.op = cpu::op;
    HIPDNN_EP_KERNELS(HIPDNN_EP_KERNEL_SLOT)
#undef HIPDNN_EP_KERNEL_SLOT
    return t;
  }();
  return table;
}

}  // namespace hipdnn_ep::kernels
