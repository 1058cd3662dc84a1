// The extern "C" kernel entry points of the runtime ABI.
//
// Each one validates its arguments (kernels/validate.h), picks the state's
// backend from the kernel tables (kernels/backend_table.h) and runs the
// implementation. Nothing escapes as a C++ exception: every failure becomes a
// status code and a thread-local message that starts with the kernel's name.
#include <new>
#include <string>

#include "hipdnn_ep/runtime_abi.h"
#include "kernels/backend_table.h"
#include "kernels/tensor_util.h"
#include "kernels/validate.h"
#include "runtime_internal.h"

namespace hipdnn_ep::kernels {
namespace {

using Validator = void (*)(const hipdnn_ep_kernel_args_t* args);

std::string backend_name(int32_t backend) {
  switch (backend) {
    case HIPDNN_EP_BACKEND_CPU: return "cpu";
    case HIPDNN_EP_BACKEND_CUDA: return "cuda";
    case HIPDNN_EP_BACKEND_HIP: return "hip";
    default: return "backend " + std::to_string(backend);
  }
}

int32_t run_kernel_counted(const char* name, Validator validate, KernelFn KernelTable::*slot, hipdnn_ep_state_t* state,
                           const hipdnn_ep_kernel_args_t* args) noexcept {
  try {
    if (state == nullptr) fail_invalid("state is NULL");
    validate(args);
    const int32_t backend = state_backend(state);
    const KernelTable* table = kernel_table(backend);
    const KernelFn fn = table == nullptr ? nullptr : table->*slot;
    if (fn == nullptr) {
      fail(HIPDNN_EP_STATUS_UNSUPPORTED, "not implemented for the " + backend_name(backend) + " backend in this build");
    }
    fn(state, *args);
    return HIPDNN_EP_STATUS_OK;
  } catch (const KernelError& e) {
    return set_error(e.status(), std::string(name) + ": " + e.what());
  } catch (const std::bad_alloc&) {
    return set_error(HIPDNN_EP_STATUS_OUT_OF_MEMORY, std::string(name) + ": out of host memory for temporary buffers");
  } catch (const std::exception& e) {
    return set_error(HIPDNN_EP_STATUS_INTERNAL, std::string(name) + ": internal error: " + e.what());
  } catch (...) {
    return set_error(HIPDNN_EP_STATUS_INTERNAL, std::string(name) + ": internal error: unknown exception");
  }
}

// Every call is counted on its state, and a failing one noted, so that a program's run can say
// which of its nodes failed.
int32_t run_kernel(const char* name, Validator validate, KernelFn KernelTable::*slot, hipdnn_ep_state_t* state,
                   const hipdnn_ep_kernel_args_t* args) noexcept {
  const int64_t call = kernel_started(state);
  const int32_t status = run_kernel_counted(name, validate, slot, state, args);
  if (status != HIPDNN_EP_STATUS_OK) kernel_failed(state, call);
  return status;
}

}  // namespace
}  // namespace hipdnn_ep::kernels

// One definition per [[kernels]] entry of the manifest (kernel_list.h, generated).
#define HIPDNN_EP_DEFINE_KERNEL(op)                                                                          \
  extern "C" int32_t hipdnn_ep_kernel_##op(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t* args) { \
    using namespace hipdnn_ep::kernels;                                                                     \
    return run_kernel("hipdnn_ep_kernel_" #op, validate_##op, &KernelTable::op, state, args);             \
  }

HIPDNN_EP_KERNELS(HIPDNN_EP_DEFINE_KERNEL)

#undef HIPDNN_EP_DEFINE_KERNEL
