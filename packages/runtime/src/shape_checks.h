// The shape checks an artifact's program verifies (its metadata's "checks"),
// re-evaluated on the host to name the one that refused a run.
#pragma once

#include <cstddef>
#include <string>

#include <vector>

#include "hipdnn_ep/metadata_schema.h"
#include "runtime_internal.h"

namespace hipdnn_ep {

// "where: text" for the first of the metadata's checks that fails for these
// inputs (the program's own order and int64 arithmetic: add/mul that wrap,
// INT64_MIN / -1, count as failures; x / 0 is 0), or "" when every check holds
// or none can be read. Values of small integer inputs ("v" symbols) are read
// with a DEVICE_TO_HOST copy through state. Named symbols ("s" symbols) are
// defined by the metadata's symbols (compiler 0.4 on; absent in older artifacts).
std::string first_failed_check(const std::vector<metadata::Checks>& checks,
                               const std::vector<metadata::Symbols>& symbols, hipdnn_ep_state_t* state,
                               const hipdnn_ep_tensor_ref_t* inputs, size_t n_inputs);

}  // namespace hipdnn_ep
