// The partitions the EP claims: candidate groups of supported nodes (partition.h)
// refined by the compiler's verdicts until every group is one it accepts.
#pragma once

#include <onnxruntime_c_api.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "compile_client.h"
#include "onnx_writer.h"

namespace hipdnn_ep {

// (node key, "\n  - node 'NAME' (OP): why"): one line of the list of nodes left to other EPs.
std::pair<std::string, std::string> RejectionLine(const OrtApi& ort, const OrtNode* node, const std::string& why);

// The model Compile would get for a graph view of one partition.
using WriteModelFn = std::function<SubgraphModel(const OrtGraph* view)>;
// The compiler's verdicts on the nodes of each model (support_oracle.h).
using VerdictsFn = std::function<std::vector<std::vector<NodeVerdict>>(const std::vector<SubgraphModel>&)>;

// Asks the compiler about each candidate partition of `nodes` (grouped as
// GroupSupportedNodes groups `supported`, written as `write_model` writes
// them) and drops the nodes it refuses, re-partitioning until every partition
// is accepted; each refusal becomes a line of `rejected_lines`.
// `compiler_error` is set (and every candidate refused) when the compiler
// could not answer at all.
void RefineWithCompiler(const OrtApi& ort, const OrtGraph* graph, const std::vector<const OrtNode*>& nodes,
                        const std::vector<std::vector<size_t>>& producers, const WriteModelFn& write_model,
                        const VerdictsFn& verdicts_of, std::vector<bool>& supported,
                        std::vector<std::pair<std::string, std::string>>& rejected_lines,
                        std::string& compiler_error);

}  // namespace hipdnn_ep
