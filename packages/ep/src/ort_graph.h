// Read-only questions the EP asks of ORT's graph and node views (OrtGraph,
// OrtNode, OrtValueInfo): node identity, attributes, shapes, control-flow bodies.
#pragma once

#include <onnxruntime_c_api.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace hipdnn_ep {

// Identifies a node across the OrtGraph views of GetCapability and Compile:
// its first output name, unique in a graph.
std::string NodeKey(const OrtApi& ort, const OrtNode* node);

// Attribute `name` of `node` as a string (false when absent) or an int (`fallback` when absent).
bool ReadStringAttr(const OrtApi& ort, const OrtNode* node, const char* name, std::string* out);
int64_t ReadIntAttr(const OrtApi& ort, const OrtNode* node, const char* name, int64_t fallback);

// The path of the model file `graph` was loaded from ("" when loaded from bytes).
std::string ModelPath(const OrtApi& ort, const OrtGraph* graph);

// A graph without a parent node that is a control-flow body nonetheless: it
// reads a value of an enclosing scope, has a Loop body's signature, or has no
// inputs (an If branch); onnxruntime 1.23 hands bodies over that way.
bool LooksLikeBody(const OrtApi& ort, const OrtGraph* graph, const std::vector<const OrtNode*>& nodes);

// Adds to `shapeless` the values of `graph` that must be written without a
// shape: node outputs ORT reports as rank 0 (scalars, or values of unknown
// shape; the API does not tell them apart) and graph inputs declared without one.
void CollectShapeless(const OrtApi& ort, const OrtGraph* graph, const std::vector<const OrtNode*>& nodes,
                      std::set<std::string>* shapeless);

// For each of `nodes`, the positions (in `nodes`) of the nodes whose outputs it consumes.
std::vector<std::vector<size_t>> NodeProducers(const OrtApi& ort, const std::vector<const OrtNode*>& nodes);

}  // namespace hipdnn_ep
