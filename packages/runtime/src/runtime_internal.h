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

// Whether the tensor's bytes lie inside one of the running program's weights (the artifact's inputs past
// the graph's), leaving out any weight that overlaps a graph input (a run may write those in place). No
// kernel of a run writes such memory, and it was written before the run began, so a kernel may read it
// before its stream predecessor ends. False outside a run (a kernel called directly).
bool holds_run_weights(hipdnn_ep_state_t* state, const hipdnn_ep_tensor_ref_t& tensor);

}  // namespace hipdnn_ep
