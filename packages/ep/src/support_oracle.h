// The support oracle: which nodes the compiler would take.  A cheap first
// filter decides what never reaches the compiler; the compiler's own verdict
// on each candidate partition decides the rest, kept per subgraph.
#pragma once

#include <onnxruntime_c_api.h>

#include <string>
#include <vector>

#include "compile_cache.h"
#include "compile_client.h"
#include "onnx_writer.h"
#include "runtime_api.h"

namespace hipdnn_ep {

// Why `node` cannot be handed to the compiler ("" when it can): an operator
// missing from the compiler's announced list (`caps` null: the compiler is
// unavailable, `caps_error` says why), a subgraph, an attribute or value type
// the EP cannot write.
std::string UnsupportedReason(const OrtApi& ort, const OrtNode* node, const CompilerCapabilities* caps,
                              const std::string& caps_error);

// The compiler's verdicts on the nodes of each model, decided against
// `runtime` (when loaded and `target_abi` is set) as Compile would.  Kept per
// subgraph (content hash, compiler, ABIs, backend): in memory for the process,
// and, when `cache` is given, in its folder support/ for later processes.
std::vector<std::vector<NodeVerdict>> SupportVerdicts(const CompileClient& client, const CompilerCapabilities& caps,
                                                      const CompileCache* cache, const RuntimeApi* runtime,
                                                      const std::string& backend,
                                                      const std::vector<SubgraphModel>& models,
                                                      const std::string& target_abi);

}  // namespace hipdnn_ep
