#include "ep.h"

#include <filesystem>
#include <map>
#include <utility>

#include "abi_target.h"
#include "compiled_program.h"
#include "ep_context.h"
#include "ep_context_io.h"
#include "ep_factory.h"
#include "ep_options.h"
#include "onnx_writer.h"
#include "ort_graph.h"
#include "partition.h"
#include "partitioner.h"
#include "private_files.h"
#include "support_oracle.h"
#include "verified_artifact.h"

namespace hipdnn_ep {
namespace fs = std::filesystem;

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

std::shared_ptr<RuntimeState> HipdnnEp::WeightState() {
  // The CPU backend's program reads host weights in place; under the host-as-device test hook it takes
  // the GPU backends' path (a device copy, the mapping's pages dropped).
  if (config_.backend == HIPDNN_EP_BACKEND_CPU && !factory_.HostAsDevice()) return nullptr;
  return factory_.DeviceState(config_.backend, config_.device_id);
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

void HipdnnEp::ClaimNodes(const OrtGraph* graph, OrtEpGraphSupportInfo* info) {
  // Nothing inside a control-flow body (Loop, If, Scan) is claimed: the fused
  // node would land in a subgraph that does not import the EP's domain.  The
  // node holding the body is never claimed either (see UnsupportedReason), so the
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
    CollectShapeless(ort, graph, nodes, &shapeless_);
  }
  std::vector<bool> supported(num_nodes);
  std::vector<std::vector<size_t>> producers = NodeProducers(ort, nodes);
  std::vector<std::pair<std::string, std::string>> rejected_lines;  // (node key, message line)
  std::vector<const OrtNode*> ep_context_nodes;
  for (size_t i = 0; i < num_nodes; ++i) {
    if (IsOurEpContextNode(ort, nodes[i])) {
      ep_context_nodes.push_back(nodes[i]);  // claimed alone, never grouped
      producers[i].clear();  // and ordered as a source node when the others are grouped
      continue;
    }
    std::string why = UnsupportedReason(ort, nodes[i], caps.get(), caps_error);
    supported[i] = why.empty();
    if (!why.empty()) rejected_lines.push_back(RejectionLine(ort, nodes[i], why));
  }
  std::string compiler_error = caps_error;
  if (caps) {
    const std::string target_abi = SupportTargetAbi();
    auto write_model = [&](const OrtGraph* view) {
      std::lock_guard<std::mutex> lock(rejected_mu_);
      return WriteSubgraphModel(*this, view, &shapeless_);
    };
    auto verdicts_of = [&](const std::vector<SubgraphModel>& models) {
      return SupportVerdicts(client_, Caps(), cache_.get(), runtime_.get(), config_.backend_name, models, target_abi);
    };
    RefineWithCompiler(ort, graph, nodes, producers, write_model, verdicts_of, supported, rejected_lines,
                       compiler_error);
  }
  OrtNodeFusionOptions fusion{};
  fusion.ort_version_supported = ORT_API_VERSION;
  // CPU backend: ORT passes the initializers in as the fused node's inputs, its own mapping of the
  // model's external data, read by the program in place.  A GPU backend's inputs live in device
  // memory, where ORT would load and copy every initializer while it creates the session: the EP
  // keeps them instead (mapped from the external data file, see mapped_weights.h) and a runtime
  // state uploads them on its first run.  Not while an EPContext model is written: ORT writes the
  // initializers of the fused nodes' inputs into it, and only those.
  fusion.drop_constant_initializers =
      (config_.backend != HIPDNN_EP_BACKEND_CPU || factory_.HostAsDevice()) && !config_.context_enable;
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
                                                model, WeightState());
  } catch (const std::exception& e) {
    if (!cached) throw;
    // A cached artifact that verifies but does not open: built again, once.
    Log(ort, logger_, ORT_LOGGING_LEVEL_WARNING,
        std::string("hipdnn-ep: the cached artifact does not open (") + e.what() + "); compiling again");
    artifact = CompileArtifact(model, AbiText(runtime_abi), AbiText(target_abi), true, &cached);
    code = artifact.get();
    program = std::make_unique<CompiledProgram>(*this, runtime_, states_, config_.backend, name, std::move(artifact),
                                                model, WeightState());
  }
  if (config_.context_enable && ep_context_node != nullptr) {
    EpContextWrite how{config_.context_embed, config_.context_file_path, compatibility_info_,
                       [this] { return InstallKeyValue(); }};
    *ep_context_node = WriteEpContextNode(*this, graph, name, *code, model, how);
  }
  return program;
}

std::unique_ptr<CompiledProgram> HipdnnEp::LoadEpContext(const OrtGraph* graph, const OrtNode* node,
                                                         const std::string& name) {
  EpContextCode code =
      ReadEpContextNode(ort, graph, node, name, config_.trust_ep_context_code, [this] { return InstallKeyValue(); });
  if (code.compatibility) compatibility_info_ = *code.compatibility;
  SubgraphModel iface = DescribeSubgraph(*this, graph);
  return std::make_unique<CompiledProgram>(*this, runtime_, states_, config_.backend, name, std::move(code.artifact),
                                           iface, WeightState());
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
