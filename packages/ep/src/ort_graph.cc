#include "ort_graph.h"

#include <map>
#include <string>

#include "ep_utils.h"

namespace hipdnn_ep {

namespace {

// Whether `vi` is a rank-0 tensor of element type `type`.
bool IsScalar(const OrtApi& ort, const OrtValueInfo* vi, ONNXTensorElementDataType type) {
  const OrtTypeInfo* type_info = nullptr;
  ThrowIfError(ort, ort.GetValueInfoTypeInfo(vi, &type_info));
  const OrtTensorTypeAndShapeInfo* tensor = nullptr;
  ThrowIfError(ort, ort.CastTypeInfoToTensorInfo(type_info, &tensor));
  if (tensor == nullptr) return false;
  ONNXTensorElementDataType et;
  ThrowIfError(ort, ort.GetTensorElementType(tensor, &et));
  size_t rank = 0;
  ThrowIfError(ort, ort.GetDimensionsCount(tensor, &rank));
  return et == type && rank == 0;
}

// Whether this ONNX Runtime reports a tensor type without a shape apart from a scalar's: newer
// versions count 0 elements for a type that has no shape (a scalar has 1); 1.23 reports both alike.
bool ShapeAbsenceVisible(const OrtApi& ort) {
  static const bool visible = [&ort] {
    OrtTensorTypeAndShapeInfo* info = nullptr;
    if (OrtStatus* st = ort.CreateTensorTypeAndShapeInfo(&info)) {
      ort.ReleaseStatus(st);
      return false;
    }
    size_t count = 1;
    if (OrtStatus* st = ort.GetTensorShapeElementCount(info, &count)) ort.ReleaseStatus(st);
    ort.ReleaseTensorTypeAndShapeInfo(info);
    return count == 0;
  }();
  return visible;
}

// Whether a tensor type ORT reports may have no shape (unknown rank): rank 0 and, where this ORT
// tells the two apart, not a scalar. Where it cannot, rank 0 is taken for unknown: a node left to
// another EP runs; one compiled for a scalar that is fed a matrix never does.
bool MayLackShape(const OrtApi& ort, const OrtTensorTypeAndShapeInfo* tinfo) {
  size_t rank = 0;
  ThrowIfError(ort, ort.GetDimensionsCount(tinfo, &rank));
  if (rank != 0) return false;
  if (!ShapeAbsenceVisible(ort)) return true;
  size_t count = 1;
  ThrowIfError(ort, ort.GetTensorShapeElementCount(tinfo, &count));
  return count == 0;
}

bool ReadsOuterScope(const OrtApi& ort, const std::vector<const OrtNode*>& nodes) {
  for (const OrtNode* node : nodes) {
    size_t n = 0;
    ThrowIfError(ort, ort.Node_GetNumInputs(node, &n));
    std::vector<const OrtValueInfo*> inputs(n);
    if (n) ThrowIfError(ort, ort.Node_GetInputs(node, inputs.data(), n));
    for (const OrtValueInfo* vi : inputs) {
      bool outer = false;
      if (vi != nullptr) ThrowIfError(ort, ort.ValueInfo_IsFromOuterScope(vi, &outer));
      if (outer) return true;
    }
  }
  return false;
}

}  // namespace

std::string NodeKey(const OrtApi& ort, const OrtNode* node) {
  size_t n = 0;
  ThrowIfError(ort, ort.Node_GetNumOutputs(node, &n));
  std::vector<const OrtValueInfo*> outs(n);
  if (n) ThrowIfError(ort, ort.Node_GetOutputs(node, outs.data(), n));
  const char* name = nullptr;
  if (n && outs[0]) ThrowIfError(ort, ort.GetValueInfoName(outs[0], &name));
  return name ? name : "";
}

bool ReadStringAttr(const OrtApi& ort, const OrtNode* node, const char* name, std::string* out) {
  const OrtOpAttr* attr = nullptr;
  OrtStatus* st = ort.Node_GetAttributeByName(node, name, &attr);
  if (st) { ort.ReleaseStatus(st); return false; }
  if (!attr) return false;
  size_t n = 0;
  st = ort.ReadOpAttr(attr, ORT_OP_ATTR_STRING, nullptr, 0, &n);
  if (st) ort.ReleaseStatus(st);
  out->assign(n, '\0');
  if (n) ThrowIfError(ort, ort.ReadOpAttr(attr, ORT_OP_ATTR_STRING, out->data(), n, &n));
  return true;
}

int64_t ReadIntAttr(const OrtApi& ort, const OrtNode* node, const char* name, int64_t fallback) {
  const OrtOpAttr* attr = nullptr;
  OrtStatus* st = ort.Node_GetAttributeByName(node, name, &attr);
  if (st) { ort.ReleaseStatus(st); return fallback; }
  if (!attr) return fallback;
  int64_t v = fallback;
  size_t n = 0;
  ThrowIfError(ort, ort.ReadOpAttr(attr, ORT_OP_ATTR_INT, &v, sizeof v, &n));
  return v;
}

std::string ModelPath(const OrtApi& ort, const OrtGraph* graph) {
  const ORTCHAR_T* path = nullptr;
  ThrowIfError(ort, ort.Graph_GetModelPath(graph, &path));
  return path ? std::string(path) : std::string();
}

bool LooksLikeBody(const OrtApi& ort, const OrtGraph* graph, const std::vector<const OrtNode*>& nodes) {
  if (ReadsOuterScope(ort, nodes)) return true;
  size_t n_in = 0, n_out = 0;
  ThrowIfError(ort, ort.Graph_GetNumInputs(graph, &n_in));
  ThrowIfError(ort, ort.Graph_GetNumOutputs(graph, &n_out));
  if (n_in == 0) return true;
  if (n_in < 2 || n_out < 1) return false;
  std::vector<const OrtValueInfo*> in(n_in), out(n_out);
  ThrowIfError(ort, ort.Graph_GetInputs(graph, in.data(), n_in));
  ThrowIfError(ort, ort.Graph_GetOutputs(graph, out.data(), n_out));
  return IsScalar(ort, in[0], ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64) &&
         IsScalar(ort, in[1], ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL) &&
         IsScalar(ort, out[0], ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL);
}

void CollectShapeless(const OrtApi& ort, const OrtGraph* graph, const std::vector<const OrtNode*>& nodes,
                      std::set<std::string>* shapeless) {
  for (const OrtNode* node : nodes) {
    size_t n = 0;
    ThrowIfError(ort, ort.Node_GetNumOutputs(node, &n));
    std::vector<const OrtValueInfo*> outs(n);
    if (n) ThrowIfError(ort, ort.Node_GetOutputs(node, outs.data(), n));
    for (const OrtValueInfo* vi : outs) {
      if (vi == nullptr) continue;
      const OrtTypeInfo* type_info = nullptr;
      ONNXType onnx_type;
      ThrowIfError(ort, ort.GetValueInfoTypeInfo(vi, &type_info));
      ThrowIfError(ort, ort.GetOnnxTypeFromTypeInfo(type_info, &onnx_type));
      const OrtTensorTypeAndShapeInfo* tinfo = nullptr;
      size_t rank = 0;
      if (onnx_type != ONNX_TYPE_TENSOR) continue;
      ThrowIfError(ort, ort.CastTypeInfoToTensorInfo(type_info, &tinfo));
      ThrowIfError(ort, ort.GetDimensionsCount(tinfo, &rank));
      const char* name = nullptr;
      ThrowIfError(ort, ort.GetValueInfoName(vi, &name));
      if (rank == 0 && name) shapeless->insert(name);
    }
  }
  // A graph input declared without a shape is not a scalar either: written without one, the
  // compiler refuses the nodes that read it (compiled for rank 0, every Run would fail).
  size_t num_inputs = 0;
  ThrowIfError(ort, ort.Graph_GetNumInputs(graph, &num_inputs));
  std::vector<const OrtValueInfo*> inputs(num_inputs);
  if (num_inputs) ThrowIfError(ort, ort.Graph_GetInputs(graph, inputs.data(), num_inputs));
  for (const OrtValueInfo* vi : inputs) {
    const OrtTypeInfo* type_info = nullptr;
    ONNXType onnx_type;
    ThrowIfError(ort, ort.GetValueInfoTypeInfo(vi, &type_info));
    ThrowIfError(ort, ort.GetOnnxTypeFromTypeInfo(type_info, &onnx_type));
    if (onnx_type != ONNX_TYPE_TENSOR) continue;
    const OrtTensorTypeAndShapeInfo* tinfo = nullptr;
    ThrowIfError(ort, ort.CastTypeInfoToTensorInfo(type_info, &tinfo));
    const char* name = nullptr;
    ThrowIfError(ort, ort.GetValueInfoName(vi, &name));
    if (name && MayLackShape(ort, tinfo)) shapeless->insert(name);
  }
}

std::vector<std::vector<size_t>> NodeProducers(const OrtApi& ort, const std::vector<const OrtNode*>& nodes) {
  // Matched by value name, not through ValueInfo_GetValueProducer: onnxruntime 1.23 walks every output
  // of the producer there and dereferences the null of one left out (SkipSimplifiedLayerNormalization's
  // ["y", "", "", "sum"] in every onnxruntime-genai model), crashing the process.
  std::map<std::string, size_t> producer_of;  // value name -> index in `nodes` of the node writing it
  for (size_t i = 0; i < nodes.size(); ++i) {
    size_t n = 0;
    ThrowIfError(ort, ort.Node_GetNumOutputs(nodes[i], &n));
    std::vector<const OrtValueInfo*> outs(n);
    if (n) ThrowIfError(ort, ort.Node_GetOutputs(nodes[i], outs.data(), n));
    for (const OrtValueInfo* vi : outs) {
      const char* name = nullptr;
      if (vi) ThrowIfError(ort, ort.GetValueInfoName(vi, &name));
      if (name && *name) producer_of.emplace(name, i);
    }
  }
  std::vector<std::vector<size_t>> producers(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    size_t n = 0, implicit = 0;
    ThrowIfError(ort, ort.Node_GetNumInputs(nodes[i], &n));
    // A control-flow node's subgraphs read outer values as implicit inputs: they are edges too, or a
    // group could be formed around such a node (If reads A, B reads If) and ORT refuses the fusion.
    ThrowIfError(ort, ort.Node_GetNumImplicitInputs(nodes[i], &implicit));
    std::vector<const OrtValueInfo*> ins(n + implicit);
    if (n) ThrowIfError(ort, ort.Node_GetInputs(nodes[i], ins.data(), n));
    if (implicit) ThrowIfError(ort, ort.Node_GetImplicitInputs(nodes[i], ins.data() + n, implicit));
    for (const OrtValueInfo* vi : ins) {
      const char* name = nullptr;
      if (vi) ThrowIfError(ort, ort.GetValueInfoName(vi, &name));
      auto it = name ? producer_of.find(name) : producer_of.end();
      if (it != producer_of.end()) producers[i].push_back(it->second);
    }
  }
  return producers;
}

}  // namespace hipdnn_ep
