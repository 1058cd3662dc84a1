#include "partitioner.h"

#include <exception>
#include <map>

#include "ep_utils.h"
#include "ort_graph.h"
#include "partition.h"

namespace hipdnn_ep {

std::pair<std::string, std::string> RejectionLine(const OrtApi& ort, const OrtNode* node, const std::string& why) {
  const char *name = nullptr, *op = nullptr;
  ThrowIfError(ort, ort.Node_GetName(node, &name));
  ThrowIfError(ort, ort.Node_GetOperatorType(node, &op));
  return {NodeKey(ort, node), std::string("\n  - node '") + (name ? name : "") + "' (" + op + "): " + why};
}

void RefineWithCompiler(const OrtApi& ort, const OrtGraph* graph, const std::vector<const OrtNode*>& nodes,
                        const std::vector<std::vector<size_t>>& producers, const WriteModelFn& write_model,
                        const VerdictsFn& verdicts_of, std::vector<bool>& supported,
                        std::vector<std::pair<std::string, std::string>>& rejected_lines,
                        std::string& compiler_error) {
  std::map<std::string, size_t> by_key;
  for (size_t i = 0; i < nodes.size(); ++i) by_key[NodeKey(ort, nodes[i])] = i;
  auto reject = [&](size_t i, const std::string& why) {
    supported[i] = false;
    rejected_lines.push_back(RejectionLine(ort, nodes[i], why));
  };
  // Each candidate partition is checked as the subgraph Compile will write;
  // a refused node splits its partition, and the parts are checked again.
  for (size_t round = 0; round <= nodes.size(); ++round) {
    std::vector<std::vector<size_t>> groups = GroupSupportedNodes(producers, supported);
    if (groups.empty()) return;
    std::vector<SubgraphModel> models;
    std::vector<std::vector<std::string>> model_nodes;  // node keys in the order the model lists them
    for (const std::vector<size_t>& group : groups) {
      std::vector<const OrtNode*> members;
      for (size_t i : group) members.push_back(nodes[i]);
      OrtGraph* view = nullptr;
      ThrowIfError(ort, ort.Graph_GetGraphView(graph, members.data(), members.size(), &view));
      try {
        models.push_back(write_model(view));
        size_t n = 0;
        ThrowIfError(ort, ort.Graph_GetNumNodes(view, &n));
        std::vector<const OrtNode*> listed(n);
        if (n) ThrowIfError(ort, ort.Graph_GetNodes(view, listed.data(), n));
        model_nodes.emplace_back();
        for (const OrtNode* node : listed) model_nodes.back().push_back(NodeKey(ort, node));
      } catch (...) {
        ort.ReleaseGraph(view);
        throw;
      }
      ort.ReleaseGraph(view);
    }
    std::vector<std::vector<NodeVerdict>> verdicts;
    try {
      verdicts = verdicts_of(models);
    } catch (const std::exception& e) {
      compiler_error = e.what();
      for (const std::vector<size_t>& group : groups) {
        for (size_t i : group) reject(i, std::string("the compiler could not check it: ") + e.what());
      }
      return;
    }
    bool changed = false;
    for (size_t g = 0; g < groups.size(); ++g) {
      for (const NodeVerdict& v : verdicts[g]) {
        if (v.supported) continue;
        auto it = v.index >= 0 && static_cast<size_t>(v.index) < model_nodes[g].size()
                      ? by_key.find(model_nodes[g][v.index])
                      : by_key.end();
        if (it == by_key.end() || !supported[it->second]) continue;
        reject(it->second, v.reason);
        changed = true;
      }
    }
    if (!changed) return;
  }
}

}  // namespace hipdnn_ep
