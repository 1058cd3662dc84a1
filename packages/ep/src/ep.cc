#include "ep.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <utility>

#include "compiled_program.h"
#include "ep_context.h"
#include "ep_factory.h"
#include "ep_options.h"
#include "onnx_writer.h"
#include "partition.h"
#include "private_files.h"
#include "sha256.h"
#include "verified_artifact.h"

namespace hipdnn_ep {
namespace fs = std::filesystem;

namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool ParseBool(const std::string& key, const std::string& v) {
  if (v == "1" || v == "true" || v == "True") return true;
  if (v == "0" || v == "false" || v == "False" || v.empty()) return false;
  throw EpError("hipdnn-ep: option " + key + " must be 0 or 1, got '" + v + "'", ORT_INVALID_ARGUMENT);
}

int64_t ParseInt(const std::string& key, const std::string& v, int64_t lo) {
  try {
    size_t used = 0;
    int64_t x = std::stoll(v, &used);
    if (used == v.size() && x >= lo) return x;
  } catch (const std::exception&) {
  }
  throw EpError("hipdnn-ep: option " + key + " must be an integer >= " + std::to_string(lo) + ", got '" + v + "'",
                ORT_INVALID_ARGUMENT);
}

// A byte count: digits with an optional suffix B, KiB, MiB, GiB or TiB (any case).
uint64_t ParseBytes(const std::string& key, const std::string& v) {
  static const std::pair<const char*, int> kUnits[] = {{"", 0}, {"b", 0}, {"kib", 10}, {"mib", 20}, {"gib", 30},
                                                       {"tib", 40}};
  size_t digits = 0;
  while (digits < v.size() && std::isdigit(static_cast<unsigned char>(v[digits]))) ++digits;
  const std::string unit = Lower(v.substr(digits));
  for (const auto& [name, shift] : kUnits) {
    if (digits == 0 || unit != name) continue;
    try {
      const unsigned long long n = std::stoull(v.substr(0, digits));
      if (n <= (UINT64_MAX >> shift)) return static_cast<uint64_t>(n) << shift;
    } catch (const std::exception&) {  // out of range
    }
    break;
  }
  throw EpError("hipdnn-ep: option " + key + " must be a byte count (e.g. 1073741824, 512MiB or 2GiB; 0: no limit), got '" +
                    v + "'", ORT_INVALID_ARGUMENT);
}

// Identifies a node across the OrtGraph views of GetCapability and Compile:
// its first output name, unique in a graph.
std::string NodeKey(const OrtApi& ort, const OrtNode* node) {
  size_t n = 0;
  ThrowIfError(ort, ort.Node_GetNumOutputs(node, &n));
  std::vector<const OrtValueInfo*> outs(n);
  if (n) ThrowIfError(ort, ort.Node_GetOutputs(node, outs.data(), n));
  const char* name = nullptr;
  if (n && outs[0]) ThrowIfError(ort, ort.GetValueInfoName(outs[0], &name));
  return name ? name : "";
}

constexpr const char* kEpContextOp = "EPContext";
// In the folder beside a non-embedded EPContext model: the artifact file the manifest declares.
constexpr const char* kArtifactFileName = HIPDNN_EP_ARTIFACT_FILE;
constexpr const char* kMsDomain = "com.microsoft";

// Attribute `name` of `node` as a string/int; nullopt-like fallbacks when absent.
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

// True for an EPContext node this EP wrote (attribute source == kEpName).
bool IsOurEpContextNode(const OrtApi& ort, const OrtNode* node) {
  const char *op = nullptr, *domain = nullptr;
  ThrowIfError(ort, ort.Node_GetOperatorType(node, &op));
  ThrowIfError(ort, ort.Node_GetDomain(node, &domain));
  if (std::string(op) != kEpContextOp || std::string(domain ? domain : "") != kMsDomain) return false;
  std::string source;
  return ReadStringAttr(ort, node, "source", &source) && source == kEpName;
}

std::string ModelPath(const OrtApi& ort, const OrtGraph* graph) {
  const ORTCHAR_T* path = nullptr;
  ThrowIfError(ort, ort.Graph_GetModelPath(graph, &path));
  return path ? std::string(path) : std::string();
}

std::string AbiText(uint32_t abi) { return std::to_string(abi >> 16) + "." + std::to_string(abi & 0xffff); }

// The ABI to compile for: the runtime's, or, when the runtime is newer than
// the compiler, the newest minor of the same major the compiler knows (minors
// only add functions, so such code runs on the newer runtime).
uint32_t TargetAbi(uint32_t runtime_abi, const CompilerCapabilities& caps) {
  if (caps.abi_major < 0) return runtime_abi;  // the compiler does not say: ask for the runtime's
  const int64_t major = runtime_abi >> 16, minor = runtime_abi & 0xffff;
  int64_t best = -1;
  std::string known;
  for (int64_t m : caps.abi_minors) {
    known += (known.empty() ? "" : ", ") + std::to_string(caps.abi_major) + "." + std::to_string(m);
    if (caps.abi_major == major && m <= minor && m > best) best = m;
  }
  if (best < 0) {
    throw EpError("hipdnn-ep: " + caps.name + " " + caps.version + " cannot compile for the runtime's ABI " +
                  AbiText(runtime_abi) + " (it targets ABI " + (known.empty() ? std::string("none") : known) +
                  "). Fix: install a hipdnn-ep-compiler for runtime ABI major " + std::to_string(major) +
                  " (pip install 'hipdnn-ep-compiler[runtime]' with hipdnn-ep's pins: pip install -U hipdnn-ep)");
  }
  return static_cast<uint32_t>((major << 16) | best);
}

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

// A graph without a parent node that is a control-flow body nonetheless (see ClaimNodes).
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

}  // namespace

EpConfig EpConfig::FromSession(const OrtApi& ort, const OrtSessionOptions* so, const std::string& device_backend,
                               const std::string& device_id) {
  const std::string prefix = "ep." + Lower(kEpName) + ".";
  auto get = [&](const char* key, const std::string& fallback) {
    return GetSessionConfig(ort, so, prefix + key, fallback);
  };
  // A misspelt option must not be silently ignored.
  OrtKeyValuePairs* entries = nullptr;
  ThrowIfError(ort, ort.GetSessionOptionsConfigEntries(so, &entries));
  const char* const* keys = nullptr;
  const char* const* values = nullptr;
  size_t num = 0;
  ort.GetKeyValuePairs(entries, &keys, &values, &num);
  std::string unknown;
  for (size_t i = 0; i < num; ++i) {
    std::string key = keys[i];
    if (key.rfind(prefix, 0) != 0) continue;
    std::string name = key.substr(prefix.size());
    bool known = false;
    for (const char* k : options::kAllKeys) known = known || name == k;
    if (!known) unknown += (unknown.empty() ? "" : ", ") + key;
  }
  ort.ReleaseKeyValuePairs(entries);
  if (!unknown.empty()) {
    std::string all;
    for (const char* k : options::kAllKeys) all += (all.empty() ? "" : ", ") + std::string(k);
    throw EpError("hipdnn-ep: unknown option(s) " + unknown + "; the options are: " + all, ORT_INVALID_ARGUMENT);
  }

  EpConfig c;
  c.backend_name = get(options::kBackend, device_backend);
  if (c.backend_name == "cpu") c.backend = HIPDNN_EP_BACKEND_CPU;
  else if (c.backend_name == "cuda") c.backend = HIPDNN_EP_BACKEND_CUDA;
  else if (c.backend_name == "hip") c.backend = HIPDNN_EP_BACKEND_HIP;
  else {
    throw EpError("hipdnn-ep: option " + prefix + options::kBackend + " must be cpu, cuda or hip, got '" +
                  c.backend_name + "'", ORT_INVALID_ARGUMENT);
  }
  c.device_id = static_cast<int32_t>(ParseInt(prefix + options::kDeviceId, get(options::kDeviceId, device_id), 0));
  c.compiler_python = get(options::kCompilerPython, "");
  c.cache_dir = get(options::kCacheDir, "");
  c.cache_enable = ParseBool(prefix + options::kCacheEnable, get(options::kCacheEnable, "1"));
  c.cache_max_bytes = ParseBytes(prefix + options::kCacheMaxBytes, get(options::kCacheMaxBytes, "1GiB"));
  c.runtime_library = get(options::kRuntimeLibrary, "");
  c.max_states = static_cast<size_t>(ParseInt(prefix + options::kMaxStates, get(options::kMaxStates, "4"), 1));
  c.memory_limit = ParseBytes(prefix + options::kMemoryLimit, get(options::kMemoryLimit, "0"));
  c.graph_capture = ParseBool(prefix + options::kGraphCapture, get(options::kGraphCapture, "1"));
  c.trust_ep_context_code =
      ParseBool(prefix + options::kTrustEpContextCode, get(options::kTrustEpContextCode, "0"));
  c.compile_timeout_s = ParseInt(prefix + options::kCompileTimeout, get(options::kCompileTimeout, "600"), 1);
  c.context_enable = ParseBool(options::kOrtContextEnable, GetSessionConfig(ort, so, options::kOrtContextEnable, "0"));
  c.context_file_path = GetSessionConfig(ort, so, options::kOrtContextFilePath, "");
  c.context_embed = ParseBool(options::kOrtContextEmbedMode, GetSessionConfig(ort, so, options::kOrtContextEmbedMode, "0"));
  c.disable_cpu_fallback =
      ParseBool(options::kOrtDisableCpuFallback, GetSessionConfig(ort, so, options::kOrtDisableCpuFallback, "0"));
  return c;
}

HipdnnEp::HipdnnEp(HipdnnEpFactory& factory, EpConfig config, const OrtLogger& logger)
    : OrtEp{}, ApiPtrs(factory), factory_(factory), config_(std::move(config)), logger_(logger),
      client_(config_.compiler_python, config_.compile_timeout_s) {
  ort_version_supported = ORT_API_VERSION;
  GetName = GetNameImpl;
  GetCapability = GetCapabilityImpl;
  Compile = CompileImpl;
  ReleaseNodeComputeInfos = ReleaseNodeComputeInfosImpl;
  GetCompiledModelCompatibilityInfo = GetCompiledModelCompatibilityInfoImpl;
  // With the cache disabled no cache folder is created or needed (only the
  // per-install key of EPContext models lives there).
  if (config_.cache_enable) {
    cache_ = std::make_unique<CompileCache>(config_.cache_dir, config_.cache_max_bytes);
    if (!cache_->warning().empty()) Log(ort, logger_, ORT_LOGGING_LEVEL_WARNING, cache_->warning());
  }
  client_.SetNotice([this](const std::string& msg) { Log(ort, logger_, ORT_LOGGING_LEVEL_WARNING, msg); });
  Log(ort, logger_, ORT_LOGGING_LEVEL_INFO,
      "hipdnn-ep: backend " + config_.backend_name + ", compiler " + client_.python() + " (" +
          client_.python_reason() + "), cache " + (config_.cache_enable ? cache_->dir() : std::string("disabled")));
}

HipdnnEp::~HipdnnEp() = default;

std::string HipdnnEp::InstallKeyValue() {
  if (cache_) return InstallKey(cache_->folder());
  std::lock_guard<std::mutex> lock(key_dir_mu_);
  if (!key_dir_.is_open()) {
    CacheLocation where = ResolveCacheDir(config_.cache_dir);
    if (!where.warning.empty()) Log(ort, logger_, ORT_LOGGING_LEVEL_WARNING, where.warning);
    key_dir_ = PrivateDir::Open(where.dir, "compile cache");
  }
  return InstallKey(key_dir_);
}

const char* ORT_API_CALL HipdnnEp::GetNameImpl(const OrtEp*) noexcept { return kEpName; }

std::string HipdnnEp::Unsupported(const OrtNode* node, const CompilerCapabilities* caps,
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

CompilerCapabilities HipdnnEp::Caps() {
  // A compiler too old for weights held by reference refuses the protocol
  // (3) this EP speaks, naming the fix, before anything is compiled.
  return factory_.Capabilities(client_, cache_ ? &cache_->folder() : nullptr);
}

std::string HipdnnEp::SupportTargetAbi() {
  // The ABI a compile would target; "" (the compiler's newest) when the
  // runtime or the compiler cannot say yet: Compile then reports why.
  try {
    LoadRuntime();
    return AbiText(TargetAbi(runtime_->abi_version(), Caps()));
  } catch (const std::exception&) {
    return {};
  }
}

void HipdnnEp::LoadRuntime() {
  if (!runtime_) runtime_ = factory_.Runtime(config_.runtime_library);
}

void HipdnnEp::EnsureRuntime() {
  if (states_) return;
  LoadRuntime();
  states_ = std::make_shared<StatePool>(runtime_, StateConfig{config_.backend, config_.device_id, config_.memory_limit, config_.graph_capture},
                                         config_.max_states);
  // The device is opened now, so a wrong backend or device_id fails
  // session creation instead of the first Run (the state stays pooled).
  try {
    states_->Acquire();
  } catch (const std::exception& e) {
    states_.reset();
    throw EpError("hipdnn-ep: the EP options ask for backend '" + config_.backend_name + "' device " +
                      std::to_string(config_.device_id) + ", which the runtime cannot open: " + e.what() +
                      ". Choose an available device with the EP options " + options::kBackend + " and " +
                      options::kDeviceId + " (hipdnn-ep doctor lists them)",
                  ORT_INVALID_ARGUMENT);
  }
}

std::vector<std::vector<NodeVerdict>> HipdnnEp::SupportVerdicts(const std::vector<SubgraphModel>& models,
                                                                const std::string& target_abi) {
  // Verdicts are kept per subgraph (content hash, compiler, target, backend):
  // in memory for the process, and in the cache folder for later processes.
  static std::mutex mu;
  static std::map<std::string, std::vector<NodeVerdict>> memory;
  const CompilerCapabilities caps = Caps();
  std::vector<std::string> keys;
  std::vector<std::vector<NodeVerdict>> out(models.size());
  std::vector<size_t> missing;
  // The kept verdicts' folder, reached through the cache's descriptor (made
  // when a verdict is first kept).
  PrivateDir dir;
  bool keep = cache_ != nullptr;
  if (cache_) {
    try {
      dir = cache_->folder().Sub("support", false);
    } catch (const std::exception&) {  // not a usable folder: ask the compiler, keep nothing
      keep = false;
    }
  }
  for (size_t i = 0; i < models.size(); ++i) {
    keys.push_back(Sha256Hex("support 1\n" + models[i].hash + "\n" + caps.name + " " + caps.version + " " +
                             caps.build_id + "\n" +
                             (runtime_ ? AbiText(runtime_->abi_version()) : std::string("-")) + "\n" +
                             target_abi + "\n" + config_.backend_name));
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
  if (cache_) {
    tmp = cache_->MakeTempDir("support", &tmp_name);
  } else {
    tmp_path = MakePrivateTempDir(fs::temp_directory_path().string(), "hipdnn-ep-support");
    tmp = PrivateDir::Open(tmp_path, "temporary");
  }
  auto remove_tmp = [&] {
    if (cache_) {
      cache_->Remove(tmp_name);
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
    if (runtime_ && !target_abi.empty()) {  // decide against the runtime that will run the code, as Compile does
      tmp.WriteNew("runtime_abi_manifest.json", runtime_->hipdnn_ep_abi_manifest());
      manifest = (fs::path(child) / "runtime_abi_manifest.json").string();
    }
    answers = client_.Support(paths, config_.backend_name, target_abi, manifest);
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
      if (!dir.is_open()) dir = cache_->folder().Sub("support", true);
      tmp.WriteNew(keys[i] + ".json", text, 0644);
      tmp.MoveTo(keys[i] + ".json", dir, keys[i] + ".json");  // atomic; a concurrent writer wrote the same
    } catch (const std::exception&) {  // not kept: asked again next time
    }
  }
  remove_tmp();
  return out;
}

void HipdnnEp::AskCompiler(const OrtGraph* graph, const std::vector<const OrtNode*>& nodes,
                           const std::vector<std::vector<size_t>>& producers, std::vector<bool>& supported,
                           std::vector<std::pair<std::string, std::string>>& rejected_lines,
                           std::string& compiler_error) {
  std::map<std::string, size_t> by_key;
  for (size_t i = 0; i < nodes.size(); ++i) by_key[NodeKey(ort, nodes[i])] = i;
  auto reject = [&](size_t i, const std::string& why) {
    supported[i] = false;
    const char *name = nullptr, *op = nullptr;
    ThrowIfError(ort, ort.Node_GetName(nodes[i], &name));
    ThrowIfError(ort, ort.Node_GetOperatorType(nodes[i], &op));
    rejected_lines.emplace_back(NodeKey(ort, nodes[i]),
                                std::string("\n  - node '") + (name ? name : "") + "' (" + op + "): " + why);
  };
  const std::string target_abi = SupportTargetAbi();
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
        std::lock_guard<std::mutex> lock(rejected_mu_);
        models.push_back(WriteSubgraphModel(*this, view, &shapeless_));
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
      verdicts = SupportVerdicts(models, target_abi);
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

void HipdnnEp::ClaimNodes(const OrtGraph* graph, OrtEpGraphSupportInfo* info) {
  // Nothing inside a control-flow body (Loop, If, Scan) is claimed: the fused
  // node would land in a subgraph that does not import the EP's domain.  The
  // node holding the body is never claimed either (see Unsupported), so the
  // whole construct runs on another EP; with fallback disabled the session
  // is refused naming that node.
  const OrtNode* parent = nullptr;
  ThrowIfError(ort, ort.Graph_GetParentNode(graph, &parent));
  if (parent != nullptr) return;
  size_t num_nodes = 0;
  ThrowIfError(ort, ort.Graph_GetNumNodes(graph, &num_nodes));
  std::vector<const OrtNode*> nodes(num_nodes);
  if (num_nodes) ThrowIfError(ort, ort.Graph_GetNodes(graph, nodes.data(), num_nodes));
  // onnxruntime 1.23 hands a body over without its parent node: a graph that
  // reads a value of an enclosing scope, has a Loop body's signature, or has
  // no inputs (an If branch) is taken for a body all the same.
  if (LooksLikeBody(ort, graph, nodes)) return;

  std::unique_ptr<CompilerCapabilities> caps;
  std::string caps_error;
  try {
    caps = std::make_unique<CompilerCapabilities>(Caps());
  } catch (const std::exception& e) {
    caps_error = e.what();
  }

  {
    std::lock_guard<std::mutex> lock(rejected_mu_);
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
        if (rank == 0 && name) shapeless_.insert(name);
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
      if (name && MayLackShape(ort, tinfo)) shapeless_.insert(name);
    }
  }
  std::map<const OrtNode*, size_t> index;
  for (size_t i = 0; i < num_nodes; ++i) index[nodes[i]] = i;
  std::vector<bool> supported(num_nodes);
  std::vector<std::vector<size_t>> producers(num_nodes);
  std::vector<std::pair<std::string, std::string>> rejected_lines;  // (node key, message line)
  std::vector<const OrtNode*> ep_context_nodes;
  for (size_t i = 0; i < num_nodes; ++i) {
    if (IsOurEpContextNode(ort, nodes[i])) {
      ep_context_nodes.push_back(nodes[i]);  // claimed alone, never grouped
      continue;
    }
    std::string why = Unsupported(nodes[i], caps.get(), caps_error);
    supported[i] = why.empty();
    if (!why.empty()) {
      const char *name = nullptr, *op = nullptr;
      ThrowIfError(ort, ort.Node_GetName(nodes[i], &name));
      ThrowIfError(ort, ort.Node_GetOperatorType(nodes[i], &op));
      rejected_lines.emplace_back(NodeKey(ort, nodes[i]),
                                  std::string("\n  - node '") + (name ? name : "") + "' (" + op + "): " + why);
    }
    size_t n = 0;
    ThrowIfError(ort, ort.Node_GetNumInputs(nodes[i], &n));
    std::vector<const OrtValueInfo*> ins(n);
    if (n) ThrowIfError(ort, ort.Node_GetInputs(nodes[i], ins.data(), n));
    for (const OrtValueInfo* vi : ins) {
      if (vi == nullptr) continue;
      const OrtNode* producer = nullptr;
      size_t out_index = 0;
      ThrowIfError(ort, ort.ValueInfo_GetValueProducer(vi, &producer, &out_index));
      auto it = producer ? index.find(producer) : index.end();
      if (it != index.end()) producers[i].push_back(it->second);
    }
  }
  std::string compiler_error = caps_error;
  if (caps) AskCompiler(graph, nodes, producers, supported, rejected_lines, compiler_error);
  OrtNodeFusionOptions fusion{};
  fusion.ort_version_supported = ORT_API_VERSION;
  fusion.drop_constant_initializers = false;
  if (!rejected_lines.empty()) {
    std::string all;
    for (const auto& [key, line] : rejected_lines) all += line;
    if (config_.disable_cpu_fallback) {
      // ORT only logs an error returned here and then fails with a generic
      // message.  To give the user the list, the EP claims the whole graph
      // and Compile refuses with it (see RefuseRejectedNodes).
      std::lock_guard<std::mutex> lock(rejected_mu_);
      for (const auto& [key, line] : rejected_lines) rejected_[key] = line;
      ThrowIfError(ort, ep.EpGraphSupportInfo_AddNodesToFuse(info, nodes.data(), nodes.size(), &fusion));
      return;
    }
    if (!compiler_error.empty()) {
      // Not a verdict on the model but a broken install: at the default log
      // level a user would otherwise see the model run, slowly, on another EP.
      Log(ort, logger_, ORT_LOGGING_LEVEL_WARNING,
          "hipdnn-ep: the compiler could not be used, so this graph's nodes run on other EPs: " + compiler_error +
              "\nFix: install hipdnn-ep-compiler into that Python environment (pip install hipdnn-ep-compiler), or "
              "name an interpreter that has it with the EP option compiler_python.");
    } else {
      Log(ort, logger_, ORT_LOGGING_LEVEL_INFO, "hipdnn-ep: nodes left to other EPs:" + all);
    }
  }
  for (const OrtNode* node : ep_context_nodes) {
    ThrowIfError(ort, ep.EpGraphSupportInfo_AddNodesToFuse(info, &node, 1, &fusion));
  }
  for (const std::vector<size_t>& group : GroupSupportedNodes(producers, supported)) {
    std::vector<const OrtNode*> members;
    for (size_t i : group) members.push_back(nodes[i]);
    ThrowIfError(ort, ep.EpGraphSupportInfo_AddNodesToFuse(info, members.data(), members.size(), &fusion));
  }
}

OrtStatus* ORT_API_CALL HipdnnEp::GetCapabilityImpl(OrtEp* this_ptr, const OrtGraph* graph,
                                                    OrtEpGraphSupportInfo* info) noexcept {
  auto* self = static_cast<HipdnnEp*>(this_ptr);
  return Guard(self->ort, [&] { self->ClaimNodes(graph, info); });
}

std::unique_ptr<LoadedArtifact> HipdnnEp::CompileArtifact(const SubgraphModel& model, const std::string& runtime_abi,
                                                          const std::string& target_abi, bool refresh, bool* cached) {
  CompilerCapabilities caps = Caps();
  *cached = false;
  // Writes the model into `dir` and has the compiler compile it there; the
  // compiler reaches the folder through our descriptor of it.  Returns the
  // artifact's path relative to `dir` (read back through the descriptor).
  auto build = [&](const PrivateDir& dir) -> std::string {
    dir.WriteNew("model.onnx", model.model_bytes);  // weights by reference: no file
    dir.Sub("out", true);
    // Compile against the runtime that will run the code (its own manifest), not the compiler's copy.
    dir.WriteNew("runtime_abi_manifest.json", runtime_->hipdnn_ep_abi_manifest());
    const fs::path child = dir.PathForChild();
    const fs::path out_dir = child / "out";
    const fs::path artifact = fs::path(client_
                                           .Compile((child / "model.onnx").string(), out_dir.string(),
                                                    config_.backend_name, target_abi,
                                                    (child / "runtime_abi_manifest.json").string())
                                           .artifact)
                                  .lexically_normal();
    if (artifact != (out_dir / HIPDNN_EP_ARTIFACT_FILE).lexically_normal()) {
      throw EpError("hipdnn-ep: the compiler reports its artifact at " + artifact.string() +
                    ", not in the folder it was given (" + out_dir.string() + "); refusing to load it");
    }
    return std::string("out/") + HIPDNN_EP_ARTIFACT_FILE;
  };
  if (cache_) {
    CacheKey key{model.hash, caps.name + " " + caps.version, caps.build_id, runtime_abi, target_abi,
                 config_.backend_name};
    if (refresh) cache_->Evict(key);
    std::string problem;
    if (std::unique_ptr<LoadedArtifact> hit = cache_->Lookup(key, &problem)) {
      Log(ort, logger_, ORT_LOGGING_LEVEL_INFO, "hipdnn-ep: compile cache hit " + hit->origin());
      *cached = true;
      return hit;
    }
    if (!problem.empty()) Log(ort, logger_, ORT_LOGGING_LEVEL_WARNING, "hipdnn-ep: " + problem + "; compiling again");
    Log(ort, logger_, ORT_LOGGING_LEVEL_INFO, "hipdnn-ep: compile cache miss for " + key.Digest());
    return cache_->Insert(key, build);
  }
  // No cache: compile in a private folder of the temp dir, load the bytes, drop the folder.
  const std::string path = MakePrivateTempDir(fs::temp_directory_path().string(), "hipdnn-ep-compile");
  try {
    const PrivateDir dir = PrivateDir::Open(path, "temporary compile");
    auto loaded = ReadCompilerOutput(dir, build(dir));
    std::error_code ec;
    fs::remove_all(path, ec);
    return loaded;
  } catch (...) {
    std::error_code ec;
    fs::remove_all(path, ec);
    throw;
  }
}

void HipdnnEp::RefuseRejectedNodes(const OrtGraph* graph) {
  size_t num_nodes = 0;
  ThrowIfError(ort, ort.Graph_GetNumNodes(graph, &num_nodes));
  std::vector<const OrtNode*> nodes(num_nodes);
  if (num_nodes) ThrowIfError(ort, ort.Graph_GetNodes(graph, nodes.data(), num_nodes));
  std::string lines;
  std::lock_guard<std::mutex> lock(rejected_mu_);
  for (const OrtNode* node : nodes) {
    auto it = rejected_.find(NodeKey(ort, node));
    if (it != rejected_.end()) lines += it->second;
  }
  if (!lines.empty()) {
    throw EpError("hipdnn-ep: CPU fallback is disabled (session.disable_cpu_ep_fallback=1) and these nodes "
                  "cannot run on HipdnnEp:" + lines);
  }
}

std::unique_ptr<CompiledProgram> HipdnnEp::CompileOne(const OrtGraph* graph, const OrtNode* fused_node,
                                                      OrtNode** ep_context_node) {
  RefuseRejectedNodes(graph);
  EnsureRuntime();
  const char* node_name = nullptr;
  ThrowIfError(ort, ort.Node_GetName(fused_node, &node_name));
  const std::string name = node_name ? node_name : "";

  size_t num_nodes = 0;
  ThrowIfError(ort, ort.Graph_GetNumNodes(graph, &num_nodes));
  if (num_nodes == 1) {
    const OrtNode* only = nullptr;
    ThrowIfError(ort, ort.Graph_GetNodes(graph, &only, 1));
    if (IsOurEpContextNode(ort, only)) return LoadEpContext(graph, only, name);
  }

  const uint32_t runtime_abi = runtime_->abi_version();
  CompilerCapabilities caps = Caps();
  const uint32_t target_abi = TargetAbi(runtime_abi, caps);
  SubgraphModel model = [&] {
    std::lock_guard<std::mutex> lock(rejected_mu_);
    return WriteSubgraphModel(*this, graph, &shapeless_);
  }();
  bool cached = false;
  std::unique_ptr<LoadedArtifact> artifact =
      CompileArtifact(model, AbiText(runtime_abi), AbiText(target_abi), false, &cached);
  // The info names the ABI the code needs, which the verdict compares with the runtime's.
  compatibility_info_ = MakeCompatibilityInfo(target_abi, config_.backend_name, caps.name + " " + caps.version);
  const LoadedArtifact* code = artifact.get();
  std::unique_ptr<CompiledProgram> program;
  try {
    program = std::make_unique<CompiledProgram>(*this, runtime_, states_, config_.backend, name, std::move(artifact),
                                                model);
  } catch (const std::exception& e) {
    if (!cached) throw;
    // A cached artifact that verifies but does not open: built again, once.
    Log(ort, logger_, ORT_LOGGING_LEVEL_WARNING,
        std::string("hipdnn-ep: the cached artifact does not open (") + e.what() + "); compiling again");
    artifact = CompileArtifact(model, AbiText(runtime_abi), AbiText(target_abi), true, &cached);
    code = artifact.get();
    program = std::make_unique<CompiledProgram>(*this, runtime_, states_, config_.backend, name, std::move(artifact),
                                                model);
  }
  if (config_.context_enable && ep_context_node != nullptr) {
    *ep_context_node = MakeEpContextNode(graph, name, *code, model);
  }
  return program;
}

OrtNode* HipdnnEp::MakeEpContextNode(const OrtGraph* graph, const std::string& name, const LoadedArtifact& artifact,
                                     const SubgraphModel& model) {
  if (editor == nullptr) throw EpError("hipdnn-ep: this ONNX Runtime has no model editor API; EPContext unavailable");
  const std::string& bytes = artifact.bytes();
  const std::string tag = SignArtifact(InstallKeyValue(), bytes);
  std::string context;  // ep_cache_context: the code itself, or a path relative to the EPContext model
  if (config_.context_embed) {
    context = bytes;
  } else {
    fs::path ctx_model = config_.context_file_path;
    if (ctx_model.empty()) {
      fs::path src = ModelPath(ort, graph);
      ctx_model = src.parent_path() / (src.stem().string() + "_ctx.onnx");
    }
    std::string safe_name;
    for (char c : name) safe_name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    fs::path folder = ctx_model.stem().string() + "_" + safe_name + ".hipdnn";
    fs::path dest = ctx_model.parent_path() / folder;
    std::error_code ec;
    fs::remove_all(dest, ec);
    fs::create_directories(dest);
    const fs::path file = dest / kArtifactFileName;
    std::ofstream out(file, std::ios::binary);
    out << bytes;
    if (!out.flush()) throw EpError("hipdnn-ep: cannot write the EPContext artifact " + file.string());
    context = (folder / kArtifactFileName).string();
  }
  const std::string notes =
      json::Dump(json::Json{{"tag", tag}, {"compatibility", compatibility_info_}},
                 "the notes of EPContext node '" + name + "'");

  std::vector<OrtOpAttr*> attrs;
  auto add_int = [&](const char* key, int64_t v) {
    OrtOpAttr* a = nullptr;
    ThrowIfError(ort, ort.CreateOpAttr(key, &v, 1, ORT_OP_ATTR_INT, &a));
    attrs.push_back(a);
  };
  auto add_str = [&](const char* key, const std::string& v) {
    OrtOpAttr* a = nullptr;
    ThrowIfError(ort, ort.CreateOpAttr(key, v.data(), static_cast<int>(v.size()), ORT_OP_ATTR_STRING, &a));
    attrs.push_back(a);
  };
  OrtNode* node = nullptr;
  try {
    add_int("main_context", 1);
    add_int("embed_mode", config_.context_embed ? 1 : 0);
    add_str("ep_cache_context", context);
    add_str("source", kEpName);
    add_str("partition_name", name);
    add_str("ep_sdk_version", HIPDNN_EP_VERSION);
    add_str("notes", notes);
    std::vector<const char*> ins, outs;
    for (const std::string& n : model.kernel_inputs) ins.push_back(n.c_str());
    for (const std::string& n : model.outputs) outs.push_back(n.c_str());
    ThrowIfError(ort, editor->CreateNode(kEpContextOp, kMsDomain, name.c_str(), ins.data(), ins.size(), outs.data(),
                                         outs.size(), attrs.data(), attrs.size(), &node));
  } catch (...) {
    for (OrtOpAttr* a : attrs) ort.ReleaseOpAttr(a);
    throw;
  }
  for (OrtOpAttr* a : attrs) ort.ReleaseOpAttr(a);
  return node;
}

std::unique_ptr<CompiledProgram> HipdnnEp::LoadEpContext(const OrtGraph* graph, const OrtNode* node,
                                                         const std::string& name) {
  std::string context, notes_text;
  if (!ReadStringAttr(ort, node, "ep_cache_context", &context) || context.empty()) {
    throw EpError("hipdnn-ep: EPContext node '" + name + "' has no ep_cache_context");
  }
  ReadStringAttr(ort, node, "notes", &notes_text);
  const bool embedded = ReadIntAttr(ort, node, "embed_mode", 0) == 1;
  // The notes are read before any trust decision: a hostile model reaches this parse.
  const json::Json notes = json::Parse(notes_text.empty() ? "{}" : notes_text, json::kMaxNotesBytes,
                                       "the notes attribute of EPContext node '" + name + "'");
  const std::string tag = json::String(json::Member(notes, "tag"));
  // Native code runs only if this install produced it (the tag verifies with
  // the per-install key) or the user explicitly trusts EPContext code.  The
  // bytes checked are the bytes loaded (verified_artifact.h).
  auto verify = [&](const std::string& bytes) {
    if (config_.trust_ep_context_code) return;
    if (!tag.empty() && VerifyArtifactTag(InstallKeyValue(), bytes, tag)) return;
    throw EpError("hipdnn-ep: EPContext node '" + name + "' carries native code that this installation did not "
                  "produce; refusing to run it. If you trust the model, set the EP option " +
                  std::string(options::kTrustEpContextCode) + "=1", ORT_NOT_IMPLEMENTED);
  };
  std::unique_ptr<LoadedArtifact> artifact;
  if (embedded) {
    verify(context);  // refused code is never written anywhere
    artifact = LoadedArtifact::FromBytes(context, "embedded in EPContext node '" + name + "'");
  } else {
    fs::path rel = context;
    if (rel.is_absolute() || rel.lexically_normal().string().rfind("..", 0) == 0) {
      throw EpError("hipdnn-ep: EPContext node '" + name + "' points outside its model's folder: " + context);
    }
    const std::string model_path = ModelPath(ort, graph);
    if (model_path.empty()) {
      // Resolved against nothing, the relative path would name a file in
      // whatever folder the process happens to run in.
      throw EpError("hipdnn-ep: EPContext node '" + name + "' keeps its code in the file " + context +
                    " beside its model, but the model was loaded from bytes, so it has no folder to find it in; "
                    "load the model from its file, or compile it with ep.context_embed_mode=1 to embed the code");
    }
    const fs::path folder = fs::path(model_path).parent_path();
    const fs::path path = folder / rel;
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
      throw EpError("hipdnn-ep: the artifact of EPContext node '" + name + "' is missing: " + path.string());
    }
    // Symbolic links must not lead out of the model's folder either.
    const fs::path real = fs::canonical(path, ec);
    const fs::path real_folder = fs::canonical(folder.empty() ? fs::path(".") : folder, ec);
    const std::string inside = real_folder.string() + (real_folder.string() == "/" ? "" : "/");
    if (ec || real.string().rfind(inside, 0) != 0) {
      throw EpError("hipdnn-ep: EPContext node '" + name + "' points outside its model's folder: " + context +
                    " resolves to " + real.string() + " through a symbolic link; copy the artifact into " +
                    real_folder.string());
    }
    artifact = LoadedArtifact::FromFile(real.string(), verify);
  }
  const json::Json& compatibility = json::Member(notes, "compatibility");
  if (compatibility.is_string()) compatibility_info_ = json::String(compatibility);
  SubgraphModel iface = DescribeSubgraph(*this, graph);
  return std::make_unique<CompiledProgram>(*this, runtime_, states_, config_.backend, name, std::move(artifact),
                                           iface);
}

OrtStatus* ORT_API_CALL HipdnnEp::CompileImpl(OrtEp* this_ptr, const OrtGraph** graphs, const OrtNode** fused_nodes,
                                              size_t count, OrtNodeComputeInfo** node_compute_infos,
                                              OrtNode** ep_context_nodes) noexcept {
  auto* self = static_cast<HipdnnEp*>(this_ptr);
  for (size_t i = 0; i < count; ++i) node_compute_infos[i] = nullptr;
  return Guard(self->ort, [&] {
    std::vector<std::unique_ptr<CompiledProgram>> programs;
    for (size_t i = 0; i < count; ++i) {
      programs.push_back(self->CompileOne(graphs[i], fused_nodes[i], ep_context_nodes ? &ep_context_nodes[i] : nullptr));
    }
    for (size_t i = 0; i < count; ++i) node_compute_infos[i] = programs[i].release();
  });
}

void ORT_API_CALL HipdnnEp::ReleaseNodeComputeInfosImpl(OrtEp*, OrtNodeComputeInfo** infos, size_t num) noexcept {
  for (size_t i = 0; i < num; ++i) delete static_cast<CompiledProgram*>(infos[i]);
}

const char* ORT_API_CALL HipdnnEp::GetCompiledModelCompatibilityInfoImpl(OrtEp* this_ptr, const OrtGraph*) noexcept {
  auto* self = static_cast<HipdnnEp*>(this_ptr);
  return self->compatibility_info_.empty() ? nullptr : self->compatibility_info_.c_str();
}

}  // namespace hipdnn_ep
