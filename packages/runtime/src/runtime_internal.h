// Internal contract between the runtime core and the code compiled into the
// same library (the op kernels under src/kernels/). Not installed.
//
// Every file that defines a runtime C function includes this header (and so
// the generated ABI header): with -Werror=missing-declarations a definition
// whose type differs from the manifest becomes a compile error.
#pragma once

#include <cstdint>
#include <string>

#include "hipdnn_ep/runtime_abi.h"

namespace hipdnn_ep {

// Records message as this thread's last error (hipdnn_ep_last_error) and
// returns status, so that failures read `return set_error(STATUS, "...");`.
int32_t set_error(int32_t status, std::string message);

// The backend (HIPDNN_EP_BACKEND_*) that state drives. state must be non-null.
int32_t state_backend(const hipdnn_ep_state_t* state);

// Counts a kernel entry point's call on state and returns its index within the run (-1 for a NULL
// state); kernel_failed records that the call of that index failed.
int64_t kernel_started(hipdnn_ep_state_t* state);
void kernel_failed(hipdnn_ep_state_t* state, int64_t call);

}  // namespace hipdnn_ep
