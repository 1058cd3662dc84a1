// The seam between the validated extern "C" kernel entry points and the
// per-backend implementations.
//
// entry.cpp validates every call (pointers, counts, dtypes, shapes) and then
// calls the function of the state's backend from its KernelTable. An
// implementation may assume the rules of its kernel's validator hold; it
// reports data-dependent problems (such as an out-of-range gather index) by
// throwing KernelError, which the entry point turns into a status. A backend
// that lacks a kernel leaves its slot null: the call then fails with
// UNSUPPORTED instead of crashing.
#ifndef HIPDNN_EP_KERNELS_BACKEND_TABLE_H_
#define HIPDNN_EP_KERNELS_BACKEND_TABLE_H_

#include "hipdnn_ep/runtime_abi.h"
#include "kernel_list.h"  // generated from the manifest's [[kernels]]

namespace hipdnn_ep::kernels {

using KernelFn = void (*)(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args);

// One slot per [[kernels]] entry of the manifest (kernel_list.h, generated).
struct KernelTable {
#define HIPDNN_EP_KERNEL_SLOT(op) KernelFn op;
  HIPDNN_EP_KERNELS(HIPDNN_EP_KERNEL_SLOT)
#undef HIPDNN_EP_KERNEL_SLOT
};

// The kernels of one backend (HIPDNN_EP_BACKEND_*); null if this build has
// no kernels for it.
const KernelTable* kernel_table(int32_t backend);

// Defined by kernels/cpu/table.cpp.
const KernelTable& cpu_kernel_table();
// Defined by kernels/gpu/table.hip in builds with a GPU backend (cuda or hip).
const KernelTable& gpu_kernel_table();

}  // namespace hipdnn_ep::kernels

#endif  // HIPDNN_EP_KERNELS_BACKEND_TABLE_H_
