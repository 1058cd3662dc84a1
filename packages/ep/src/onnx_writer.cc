#include "onnx_writer.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <utility>
#include <set>

#include "sha256.h"

namespace hipdnn_ep {

void ProtoWriter::Varint(uint64_t v) {
  while (v >= 0x80) {
    buf_ += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  buf_ += static_cast<char>(v);
}

void ProtoWriter::Bytes(int field, const void* data, size_t size) {
  Tag(field, 2);
  Varint(size);
  buf_.append(static_cast<const char*>(data), size);
}

void ProtoWriter::Float(int field, float f) {
  Tag(field, 5);
  char b[4];
  std::memcpy(b, &f, 4);  // protobuf fixed32 is little-endian, as is x86-64
  buf_.append(b, 4);
}

namespace {

// Field numbers of onnx.proto (stable since IR version 3).
namespace model_f {
enum { kIrVersion = 1, kProducerName = 2, kProducerVersion = 3, kGraph = 7, kOpsetImport = 8, kMetadataProps = 14 };
}
namespace entry_f { enum { kKey = 1, kValue = 2 }; }  // StringStringEntryProto
namespace opset_f { enum { kDomain = 1, kVersion = 2 }; }
namespace graph_f { enum { kNode = 1, kName = 2, kInitializer = 5, kInput = 11, kOutput = 12, kValueInfo = 13 }; }
namespace node_f { enum { kInput = 1, kOutput = 2, kName = 3, kOpType = 4, kAttribute = 5, kDomain = 7 }; }
namespace attr_f {
enum { kName = 1, kF = 2, kI = 3, kS = 4, kT = 5, kFloats = 7, kInts = 8, kStrings = 9, kType = 20 };
enum { kFloat = 1, kInt = 2, kString = 3, kTensor = 4, kFloatsT = 6, kIntsT = 7, kStringsT = 8 };
}  // namespace attr_f
namespace vi_f { enum { kName = 1, kType = 2 }; }
namespace type_f { enum { kTensorType = 1, kElemType = 1, kShape = 2, kDim = 1, kDimValue = 1, kDimParam = 2 }; }
namespace tensor_f {
enum { kDims = 1, kDataType = 2, kName = 8, kRawData = 9, kExternalData = 13, kDataLocation = 14 };
enum { kKey = 1, kValue = 2, kLocationExternal = 1 };
}  // namespace tensor_f

struct TensorInfo {
  int32_t dtype = 0;
  bool has_shape = false;
  std::vector<int64_t> dims;
  std::vector<std::string> dim_names;
};

TensorInfo ReadTensorInfo(const OrtApi& ort, const OrtTypeInfo* type_info) {
  TensorInfo t;
  const OrtTensorTypeAndShapeInfo* tinfo = nullptr;
  ThrowIfError(ort, ort.CastTypeInfoToTensorInfo(type_info, &tinfo));
  if (tinfo == nullptr) throw EpError("hipdnn-ep: value is not a tensor");
  ONNXTensorElementDataType et;
  ThrowIfError(ort, ort.GetTensorElementType(tinfo, &et));
  t.dtype = static_cast<int32_t>(et);
  size_t rank = 0;
  ThrowIfError(ort, ort.GetDimensionsCount(tinfo, &rank));
  t.dims.resize(rank);
  std::vector<const char*> names(rank, nullptr);
  ThrowIfError(ort, ort.GetDimensions(tinfo, t.dims.data(), rank));
  ThrowIfError(ort, ort.GetSymbolicDimensions(tinfo, names.data(), rank));
  for (const char* n : names) t.dim_names.emplace_back(n ? n : "");
  // ORT reports rank 0 for both scalars and unknown shapes; the graph's
  // shape inference keeps real scalars, so rank 0 is written as a scalar.
  t.has_shape = true;
  return t;
}

std::string ValueName(const OrtApi& ort, const OrtValueInfo* vi) {
  const char* name = nullptr;
  ThrowIfError(ort, ort.GetValueInfoName(vi, &name));
  return name ? name : "";
}

// Orders values by name (names are unique within a graph).
void SortByName(const OrtApi& ort, std::vector<const OrtValueInfo*>& values) {
  std::vector<std::pair<std::string, const OrtValueInfo*>> named;
  for (const OrtValueInfo* vi : values) named.emplace_back(ValueName(ort, vi), vi);
  std::stable_sort(named.begin(), named.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < named.size(); ++i) values[i] = named[i].second;
}

ProtoWriter ValueInfoProto(const OrtApi& ort, const OrtValueInfo* vi, const std::set<std::string>* shapeless) {
  const OrtTypeInfo* type_info = nullptr;
  ThrowIfError(ort, ort.GetValueInfoTypeInfo(vi, &type_info));
  TensorInfo t = ReadTensorInfo(ort, type_info);
  if (t.dims.empty() && shapeless != nullptr && shapeless->count(ValueName(ort, vi))) t.has_shape = false;
  ProtoWriter shape;
  for (size_t i = 0; i < t.dims.size(); ++i) {
    ProtoWriter dim;
    if (t.dims[i] >= 0) dim.Int(type_f::kDimValue, t.dims[i]);
    else if (!t.dim_names[i].empty()) dim.Str(type_f::kDimParam, t.dim_names[i]);
    shape.Msg(type_f::kDim, dim);
  }
  ProtoWriter tensor_type;
  tensor_type.Int(type_f::kElemType, t.dtype);
  if (t.has_shape) tensor_type.Msg(type_f::kShape, shape);
  ProtoWriter type;
  type.Msg(type_f::kTensorType, tensor_type);
  ProtoWriter out;
  out.Str(vi_f::kName, ValueName(ort, vi));
  out.Msg(vi_f::kType, type);
  return out;
}

ProtoWriter TensorHeader(const std::string& name, const TensorData& d) {
  ProtoWriter t;
  for (int64_t dim : d.dims) t.Int(tensor_f::kDims, dim);
  t.Int(tensor_f::kDataType, d.dtype);
  t.Str(tensor_f::kName, name);
  return t;
}

// Element count (bytes for strings) of a list or string attribute.  ORT
// answers a query with no buffer by an error status that carries the size.
// ReadOpAttr reports the buffer size it needs in bytes, not elements.
size_t AttrBytes(const OrtApi& ort, const OrtOpAttr* attr, OrtOpAttrType type) {
  size_t bytes = 0;
  OrtStatus* st = ort.ReadOpAttr(attr, type, nullptr, 0, &bytes);
  if (st) ort.ReleaseStatus(st);
  return bytes;
}

ProtoWriter AttributeProto(const ApiPtrs& api, const std::string& node_name, const OrtOpAttr* attr) {
  const OrtApi& ort = api.ort;
  const char* cname = nullptr;
  ThrowIfError(ort, ort.OpAttr_GetName(attr, &cname));
  std::string name = cname ? cname : "";
  OrtOpAttrType type;
  ThrowIfError(ort, ort.OpAttr_GetType(attr, &type));
  ProtoWriter a;
  a.Str(attr_f::kName, name);
  size_t n = 0;
  switch (type) {
    case ORT_OP_ATTR_INT: {
      int64_t v = 0;
      ThrowIfError(ort, ort.ReadOpAttr(attr, type, &v, sizeof v, &n));
      a.Int(attr_f::kI, v);
      a.Int(attr_f::kType, attr_f::kInt);
      break;
    }
    case ORT_OP_ATTR_FLOAT: {
      float v = 0;
      ThrowIfError(ort, ort.ReadOpAttr(attr, type, &v, sizeof v, &n));
      a.Float(attr_f::kF, v);
      a.Int(attr_f::kType, attr_f::kFloat);
      break;
    }
    case ORT_OP_ATTR_INTS: {
      std::vector<int64_t> v(AttrBytes(ort, attr, type) / sizeof(int64_t));
      if (!v.empty()) ThrowIfError(ort, ort.ReadOpAttr(attr, type, v.data(), v.size() * sizeof(int64_t), &n));
      for (int64_t x : v) a.Int(attr_f::kInts, x);
      a.Int(attr_f::kType, attr_f::kIntsT);
      break;
    }
    case ORT_OP_ATTR_FLOATS: {
      std::vector<float> v(AttrBytes(ort, attr, type) / sizeof(float));
      if (!v.empty()) ThrowIfError(ort, ort.ReadOpAttr(attr, type, v.data(), v.size() * sizeof(float), &n));
      for (float x : v) a.Float(attr_f::kFloats, x);
      a.Int(attr_f::kType, attr_f::kFloatsT);
      break;
    }
    case ORT_OP_ATTR_STRING: {
      n = AttrBytes(ort, attr, type);
      std::string s(n, '\0');
      if (n) ThrowIfError(ort, ort.ReadOpAttr(attr, type, s.data(), n, &n));
      a.Str(attr_f::kS, s);
      a.Int(attr_f::kType, attr_f::kString);
      break;
    }
    case ORT_OP_ATTR_TENSOR: {
      OrtValue* value = nullptr;
      ThrowIfError(ort, ort.OpAttr_GetTensorAttributeAsOrtValue(attr, &value));
      try {
        TensorData d = ReadTensorValue(ort, value);
        ProtoWriter t = TensorHeader("", d);
        t.Bytes(tensor_f::kRawData, d.data, d.size);
        a.Msg(attr_f::kT, t);
      } catch (...) {
        ort.ReleaseValue(value);
        throw;
      }
      ort.ReleaseValue(value);
      a.Int(attr_f::kType, attr_f::kTensor);
      break;
    }
    default:
      throw EpError("hipdnn-ep: node '" + node_name + "': attribute '" + name +
                    "' has a type the EP cannot serialize (graph or string list)");
  }
  return a;
}

// The external data file, offset and length ORT reports for an initializer
// (empty file when it is not stored in one, or ORT cannot say).  ORT names the
// file relative to the model's folder; a name that is absolute or climbs out of
// that folder (ORT refuses such names when it loads the data itself), or a model
// without a path (loaded from bytes), gives no file.
ExternalLocation ExternalOf(const OrtApi& ort, const std::string& model_dir, const OrtValueInfo* vi) {
  ExternalLocation where;
  OrtExternalInitializerInfo* info = nullptr;
  OrtStatus* st = ort.ValueInfo_GetExternalInitializerInfo(vi, &info);
  if (st != nullptr) {
    ort.ReleaseStatus(st);
    return where;
  }
  if (info == nullptr) return where;
  const ORTCHAR_T* path = ort.ExternalInitializerInfo_GetFilePath(info);
  const std::filesystem::path relative = std::filesystem::path(path ? path : "").lexically_normal();
  const bool inside = !relative.empty() && relative.is_relative() && *relative.begin() != "..";
  if (inside && !model_dir.empty()) where.file = (std::filesystem::path(model_dir) / relative).string();
  where.offset = ort.ExternalInitializerInfo_GetFileOffset(info);
  where.length = ort.ExternalInitializerInfo_GetByteSize(info);
  ort.ReleaseExternalInitializerInfo(info);
  return where;
}

std::string ModelDir(const OrtApi& ort, const OrtGraph* graph) {
  const ORTCHAR_T* path = nullptr;
  OrtStatus* st = ort.Graph_GetModelPath(graph, &path);
  if (st != nullptr) {
    ort.ReleaseStatus(st);
    return {};
  }
  if (path == nullptr || *path == 0) return {};
  return std::filesystem::path(path).parent_path().string();
}

}  // namespace

SubgraphModel WriteSubgraphModel(const ApiPtrs& api, const OrtGraph* graph, const std::set<std::string>* shapeless) {
  const OrtApi& ort = api.ort;
  SubgraphModel out;
  ProtoWriter g;

  size_t num_nodes = 0;
  ThrowIfError(ort, ort.Graph_GetNumNodes(graph, &num_nodes));
  std::vector<const OrtNode*> nodes(num_nodes);
  ThrowIfError(ort, ort.Graph_GetNodes(graph, nodes.data(), num_nodes));

  std::set<std::string> typed;  // values that already have a value_info
  std::set<std::string> produced;  // outputs of the graph's nodes
  std::vector<const OrtValueInfo*> intermediates;
  for (const OrtNode* node : nodes) {
    const char *op = nullptr, *domain = nullptr, *name = nullptr;
    ThrowIfError(ort, ort.Node_GetOperatorType(node, &op));
    ThrowIfError(ort, ort.Node_GetDomain(node, &domain));
    ThrowIfError(ort, ort.Node_GetName(node, &name));
    ProtoWriter n;
    size_t ni = 0, no = 0, na = 0;
    ThrowIfError(ort, ort.Node_GetNumInputs(node, &ni));
    std::vector<const OrtValueInfo*> ins(ni);
    ThrowIfError(ort, ort.Node_GetInputs(node, ins.data(), ni));
    for (const OrtValueInfo* vi : ins) n.Str(node_f::kInput, vi ? ValueName(ort, vi) : "");
    ThrowIfError(ort, ort.Node_GetNumOutputs(node, &no));
    std::vector<const OrtValueInfo*> outs(no);
    ThrowIfError(ort, ort.Node_GetOutputs(node, outs.data(), no));
    for (const OrtValueInfo* vi : outs) {
      n.Str(node_f::kOutput, vi ? ValueName(ort, vi) : "");
      if (vi) {
        intermediates.push_back(vi);
        produced.insert(ValueName(ort, vi));
      }
    }
    n.Str(node_f::kName, name ? name : "");
    n.Str(node_f::kOpType, op);
    ThrowIfError(ort, ort.Node_GetNumAttributes(node, &na));
    std::vector<const OrtOpAttr*> attrs(na);
    if (na) ThrowIfError(ort, ort.Node_GetAttributes(node, attrs.data(), na));
    for (const OrtOpAttr* attr : attrs) n.Msg(node_f::kAttribute, AttributeProto(api, name ? name : op, attr));
    if (domain && *domain) n.Str(node_f::kDomain, domain);
    g.Msg(graph_f::kNode, n);
  }
  g.Str(graph_f::kName, "hipdnn_ep_subgraph");

  // Initializers: inline when small, else described by reference (no bytes).
  size_t num_init = 0;
  ThrowIfError(ort, ort.Graph_GetNumInitializers(graph, &num_init));
  std::vector<const OrtValueInfo*> inits(num_init);
  if (num_init) ThrowIfError(ort, ort.Graph_GetInitializers(graph, inits.data(), num_init));
  // ORT hands initializers (and the subgraph's inputs) over in an order that
  // changes between sessions of one model; the model is written in name
  // order, so its bytes, and the cache key hashed from them, depend on the
  // graph's content only.
  SortByName(ort, inits);
  std::set<std::string> init_names;
  bool by_reference = false;
  const std::string model_dir = ModelDir(ort, graph);
  for (const OrtValueInfo* vi : inits) {
    std::string name = ValueName(ort, vi);
    // An initializer that is also a graph input (ONNX IR >= 4) is only the default of that input: the
    // caller may feed another value, and ORT hands the fused node whichever applies. It is written as
    // a graph input, never as a constant the compiler could fold into the program.
    bool constant = true;
    ThrowIfError(ort, ort.ValueInfo_IsConstantInitializer(vi, &constant));
    if (!constant) continue;
    init_names.insert(name);
    const OrtValue* value = nullptr;
    ThrowIfError(ort, ort.ValueInfo_GetInitializerValue(vi, &value));
    TensorData d = ReadTensorValue(ort, value);
    out.initializers.push_back({name, d.data, d.size, d.dims, ExternalOf(ort, model_dir, vi)});
    ProtoWriter t = TensorHeader(name, d);
    if (d.size <= kInlineLimit) {
      t.Bytes(tensor_f::kRawData, d.data, d.size);
    } else {
      by_reference = true;
      for (auto [k, v] : {std::pair<std::string, std::string>{"location", kHostWeightsLocation},
                          {"length", std::to_string(d.size)}}) {
        ProtoWriter e;
        e.Str(tensor_f::kKey, k);
        e.Str(tensor_f::kValue, v);
        t.Msg(tensor_f::kExternalData, e);
      }
      t.Int(tensor_f::kDataLocation, tensor_f::kLocationExternal);
    }
    g.Msg(graph_f::kInitializer, t);
  }

  size_t num_in = 0, num_out = 0;
  ThrowIfError(ort, ort.Graph_GetNumInputs(graph, &num_in));
  std::vector<const OrtValueInfo*> gin(num_in);
  if (num_in) ThrowIfError(ort, ort.Graph_GetInputs(graph, gin.data(), num_in));
  // kernel_inputs keep the fused node's order (the EPContext node's inputs);
  // the model lists them by name (the program finds its arguments by name).
  for (const OrtValueInfo* vi : gin) out.kernel_inputs.push_back(ValueName(ort, vi));
  SortByName(ort, gin);
  // onnxruntime 1.23 lists a graph view's input once per consumer, and lists
  // a value that a node of the view produces and several of its nodes read
  // (a Shape read by two Gathers) among the inputs too: such a value is an
  // intermediate (value_info below), a graph input as well would break SSA.
  std::set<std::string> listed;
  for (const OrtValueInfo* vi : gin) {
    std::string name = ValueName(ort, vi);
    if (produced.count(name) || !listed.insert(name).second) continue;
    typed.insert(name);
    if (init_names.count(name) == 0) g.Msg(graph_f::kInput, ValueInfoProto(ort, vi, shapeless));
  }
  ThrowIfError(ort, ort.Graph_GetNumOutputs(graph, &num_out));
  std::vector<const OrtValueInfo*> gout(num_out);
  if (num_out) ThrowIfError(ort, ort.Graph_GetOutputs(graph, gout.data(), num_out));
  for (const OrtValueInfo* vi : gout) {
    // onnxruntime 1.23 lists a null among a candidate view's outputs where a node of the view leaves an
    // optional output out (Attention's present_key/value before qk_matmul_output); its name API crashes on it
    if (vi == nullptr) continue;
    std::string name = ValueName(ort, vi);
    out.outputs.push_back(name);
    typed.insert(name);
    g.Msg(graph_f::kOutput, ValueInfoProto(ort, vi, shapeless));
  }
  SortByName(ort, intermediates);
  for (const OrtValueInfo* vi : intermediates) {
    std::string name = ValueName(ort, vi);
    if (typed.insert(name).second) g.Msg(graph_f::kValueInfo, ValueInfoProto(ort, vi, shapeless));
  }

  ProtoWriter m;
  int64_t ir_version = 0;
  ThrowIfError(ort, ort.Graph_GetOnnxIRVersion(graph, &ir_version));
  m.Int(model_f::kIrVersion, ir_version > 0 ? ir_version : 8);
  m.Str(model_f::kProducerName, "hipdnn-ep");
  m.Msg(model_f::kGraph, g);
  size_t num_opsets = 0;
  ThrowIfError(ort, ort.Graph_GetNumOperatorSets(graph, &num_opsets));
  std::vector<const char*> domains(num_opsets);
  std::vector<int64_t> versions(num_opsets);
  if (num_opsets) ThrowIfError(ort, ort.Graph_GetOperatorSets(graph, domains.data(), versions.data(), num_opsets));
  for (size_t i = 0; i < num_opsets; ++i) {
    ProtoWriter o;
    if (domains[i] && *domains[i]) o.Str(opset_f::kDomain, domains[i]);
    o.Int(opset_f::kVersion, versions[i]);
    m.Msg(model_f::kOpsetImport, o);
  }
  if (by_reference) {
    ProtoWriter p;
    p.Str(entry_f::kKey, kHostWeightsKey);
    p.Str(entry_f::kValue, kHostWeightsValue);
    m.Msg(model_f::kMetadataProps, p);
  }
  out.model_bytes = m.buf();

  Sha256 h;
  h.Update(out.model_bytes);
  out.hash = h.HexDigest();
  return out;
}

SubgraphModel DescribeSubgraph(const ApiPtrs& api, const OrtGraph* graph) {
  const OrtApi& ort = api.ort;
  SubgraphModel out;
  size_t n = 0;
  ThrowIfError(ort, ort.Graph_GetNumInputs(graph, &n));
  std::vector<const OrtValueInfo*> values(n);
  if (n) ThrowIfError(ort, ort.Graph_GetInputs(graph, values.data(), n));
  for (const OrtValueInfo* vi : values) out.kernel_inputs.push_back(ValueName(ort, vi));
  ThrowIfError(ort, ort.Graph_GetNumOutputs(graph, &n));
  values.assign(n, nullptr);
  if (n) ThrowIfError(ort, ort.Graph_GetOutputs(graph, values.data(), n));
  for (const OrtValueInfo* vi : values) {
    if (vi != nullptr) out.outputs.push_back(ValueName(ort, vi));  // see WriteSubgraphModel: 1.23 lists nulls
  }
  ThrowIfError(ort, ort.Graph_GetNumInitializers(graph, &n));
  values.assign(n, nullptr);
  if (n) ThrowIfError(ort, ort.Graph_GetInitializers(graph, values.data(), n));
  const std::string model_dir = ModelDir(ort, graph);
  for (const OrtValueInfo* vi : values) {
    const OrtValue* value = nullptr;
    ThrowIfError(ort, ort.ValueInfo_GetInitializerValue(vi, &value));
    TensorData d = ReadTensorValue(ort, value);
    out.initializers.push_back({ValueName(ort, vi), d.data, d.size, d.dims, ExternalOf(ort, model_dir, vi)});
  }
  return out;
}

}  // namespace hipdnn_ep
