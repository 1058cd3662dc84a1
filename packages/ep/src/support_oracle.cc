#include "support_oracle.h"

#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <system_error>

#include "abi_target.h"
#include "ep_utils.h"
#include "json.h"
#include "private_files.h"
#include "sha256.h"

namespace hipdnn_ep {
namespace fs = std::filesystem;

std::string UnsupportedReason(const OrtApi& ort, const OrtNode* node, const CompilerCapabilities* caps,
                              const std::string& caps_error) {
  // Only what keeps a node from reaching the compiler is decided here (the
  // compiler's announced op list, a cheap first filter, and what the EP
  // cannot hand over); the compiler decides the rest (SupportVerdicts).
  const char *op = nullptr, *domain = nullptr;
  ThrowIfError(ort, ort.Node_GetOperatorType(node, &op));
  ThrowIfError(ort, ort.Node_GetDomain(node, &domain));
  std::string d = domain ? domain : "";
  if (caps == nullptr) return "the compiler is unavailable: " + caps_error;
  if (caps->ops.count({d, op}) == 0) {
    return "operator " + (d.empty() ? std::string() : d + ":") + op + " is not supported by " + caps->name + " " +
           caps->version;
  }
  size_t num_subgraphs = 0;
  ThrowIfError(ort, ort.Node_GetNumSubgraphs(node, &num_subgraphs));
  if (num_subgraphs > 0) return "nodes with subgraphs are not supported";
  size_t num_attrs = 0;
  ThrowIfError(ort, ort.Node_GetNumAttributes(node, &num_attrs));
  std::vector<const OrtOpAttr*> attrs(num_attrs);
  if (num_attrs) ThrowIfError(ort, ort.Node_GetAttributes(node, attrs.data(), num_attrs));
  for (const OrtOpAttr* attr : attrs) {
    OrtOpAttrType type;
    ThrowIfError(ort, ort.OpAttr_GetType(attr, &type));
    if (type == ORT_OP_ATTR_STRINGS || type == ORT_OP_ATTR_GRAPH || type == ORT_OP_ATTR_UNDEFINED) {
      const char* name = nullptr;
      ThrowIfError(ort, ort.OpAttr_GetName(attr, &name));
      return std::string("attribute '") + (name ? name : "") + "' has a type the EP cannot pass to the compiler";
    }
  }
  for (int side = 0; side < 2; ++side) {
    size_t n = 0;
    ThrowIfError(ort, side == 0 ? ort.Node_GetNumInputs(node, &n) : ort.Node_GetNumOutputs(node, &n));
    std::vector<const OrtValueInfo*> values(n);
    if (n) ThrowIfError(ort, side == 0 ? ort.Node_GetInputs(node, values.data(), n) : ort.Node_GetOutputs(node, values.data(), n));
    for (const OrtValueInfo* vi : values) {
      if (vi == nullptr) continue;  // absent optional input
      const char* name = nullptr;
      ThrowIfError(ort, ort.GetValueInfoName(vi, &name));
      const OrtTypeInfo* type_info = nullptr;
      ThrowIfError(ort, ort.GetValueInfoTypeInfo(vi, &type_info));
      ONNXType onnx_type;
      ThrowIfError(ort, ort.GetOnnxTypeFromTypeInfo(type_info, &onnx_type));
      if (onnx_type != ONNX_TYPE_TENSOR) return std::string("value '") + name + "' is not a tensor";
      const OrtTensorTypeAndShapeInfo* tinfo = nullptr;
      ThrowIfError(ort, ort.CastTypeInfoToTensorInfo(type_info, &tinfo));
      ONNXTensorElementDataType et;
      ThrowIfError(ort, ort.GetTensorElementType(tinfo, &et));
      if (et == ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING) return std::string("value '") + name + "' is a string tensor";
    }
  }
  return {};
}

std::vector<std::vector<NodeVerdict>> SupportVerdicts(const CompileClient& client, const CompilerCapabilities& caps,
                                                      const CompileCache* cache, const RuntimeApi* runtime,
                                                      const std::string& backend,
                                                      const std::vector<SubgraphModel>& models,
                                                      const std::string& target_abi) {
  // Verdicts are kept per subgraph (content hash, compiler, target, backend):
  // in memory for the process, and in the cache folder for later processes.
  static std::mutex mu;
  static std::map<std::string, std::vector<NodeVerdict>> memory;
  std::vector<std::string> keys;
  std::vector<std::vector<NodeVerdict>> out(models.size());
  std::vector<size_t> missing;
  // The kept verdicts' folder, reached through the cache's descriptor (made
  // when a verdict is first kept).
  PrivateDir dir;
  bool keep = cache != nullptr;
  if (cache) {
    try {
      dir = cache->folder().Sub("support", false);
    } catch (const std::exception&) {  // not a usable folder: ask the compiler, keep nothing
      keep = false;
    }
  }
  for (size_t i = 0; i < models.size(); ++i) {
    keys.push_back(Sha256Hex("support 1\n" + models[i].hash + "\n" + caps.name + " " + caps.version + " " +
                             caps.build_id + "\n" +
                             (runtime ? AbiText(runtime->abi_version()) : std::string("-")) + "\n" +
                             target_abi + "\n" + backend));
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = memory.find(keys[i]);
      if (it != memory.end()) { out[i] = it->second; continue; }
    }
    if (dir.is_open() && dir.Exists(keys[i] + ".json")) {
      try {
        const json::Json v = json::Parse(dir.Read(keys[i] + ".json", "kept support verdict", json::kMaxAnswerBytes),
                                         json::kMaxAnswerBytes, "the kept support verdict " + keys[i] + ".json");
        for (const json::Json& n : json::Items(json::Member(v, "nodes"))) {
          out[i].push_back({json::Int(json::Member(n, "index"), -1), json::Bool(json::Member(n, "supported")),
                            json::String(json::Member(n, "reason"))});
        }
        if (json::String(json::Member(v, "key")) == keys[i]) continue;
      } catch (const std::exception&) {
      }
      out[i].clear();  // unreadable: ask again
    }
    missing.push_back(i);
  }
  if (missing.empty()) return out;
  // The models go to a private folder the compiler reaches through our descriptor.
  std::string tmp_name, tmp_path;
  PrivateDir tmp;
  if (cache) {
    tmp = cache->MakeTempDir("support", &tmp_name);
  } else {
    tmp_path = MakePrivateTempDir(fs::temp_directory_path().string(), "hipdnn-ep-support");
    tmp = PrivateDir::Open(tmp_path, "temporary");
  }
  auto remove_tmp = [&] {
    if (cache) {
      cache->Remove(tmp_name);
    } else {
      std::error_code ec;
      fs::remove_all(tmp_path, ec);
    }
  };
  std::vector<std::vector<NodeVerdict>> answers;
  try {
    const std::string child = tmp.PathForChild();
    std::vector<std::string> paths;
    for (size_t i : missing) {
      const PrivateDir folder = tmp.Sub(std::to_string(i), true);
      folder.WriteNew("model.onnx", models[i].model_bytes);
      // weights are held by reference (see onnx_writer.h): only the model is written
      paths.push_back((fs::path(child) / std::to_string(i) / "model.onnx").string());
    }
    std::string manifest;
    if (runtime && !target_abi.empty()) {  // decide against the runtime that will run the code, as Compile does
      tmp.WriteNew("runtimeabi_manifest.json", runtime->hipdnn_ep_abi_manifest());
      manifest = (fs::path(child) / "runtimeabi_manifest.json").string();
    }
    answers = client.Support(paths, backend, target_abi, manifest);
  } catch (...) {
    remove_tmp();
    throw;
  }
  for (size_t k = 0; k < missing.size(); ++k) {
    const size_t i = missing[k];
    out[i] = answers[k];
    {
      std::lock_guard<std::mutex> lock(mu);
      memory[keys[i]] = answers[k];
    }
    if (!keep) continue;
    try {
      json::Json nodes = json::Json::array();
      for (const NodeVerdict& v : answers[k]) {
        nodes.push_back({{"index", v.index}, {"supported", v.supported}, {"reason", v.reason}});
      }
      const std::string text =
          json::Dump(json::Json{{"key", keys[i]}, {"nodes", std::move(nodes)}}, "a support verdict");
      if (!dir.is_open()) dir = cache->folder().Sub("support", true);
      tmp.WriteNew(keys[i] + ".json", text, 0644);
      tmp.MoveTo(keys[i] + ".json", dir, keys[i] + ".json");  // atomic; a concurrent writer wrote the same
    } catch (const std::exception&) {  // not kept: asked again next time
    }
  }
  remove_tmp();
  return out;
}

}  // namespace hipdnn_ep
