// The OrtEp: claims supported subgraphs, compiles them through the compiler
// (with the on-disk cache) and runs the artifacts through the runtime.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "compile_cache.h"
#include "compile_client.h"
#include "ep_config.h"
#include "ep_utils.h"
#include "runtime_api.h"
#include "runtime_state.h"

namespace hipdnn_ep {

class HipdnnEpFactory;

// One compiled fused node: the artifact and how to feed it.
class CompiledProgram;

class HipdnnEp : public OrtEp, public ApiPtrs {
 public:
  HipdnnEp(HipdnnEpFactory& factory, EpConfig config, const OrtLogger& logger);
  ~HipdnnEp();

 private:
  static const char* ORT_API_CALL GetNameImpl(const OrtEp* this_ptr) noexcept;
  static OrtStatus* ORT_API_CALL GetCapabilityImpl(OrtEp* this_ptr, const OrtGraph* graph,
                                                   OrtEpGraphSupportInfo* graph_support_info) noexcept;
  static OrtStatus* ORT_API_CALL CompileImpl(OrtEp* this_ptr, const OrtGraph** graphs, const OrtNode** fused_nodes,
                                             size_t count, OrtNodeComputeInfo** node_compute_infos,
                                             OrtNode** ep_context_nodes) noexcept;
  static void ORT_API_CALL ReleaseNodeComputeInfosImpl(OrtEp* this_ptr, OrtNodeComputeInfo** infos,
                                                       size_t num) noexcept;
  static const char* ORT_API_CALL GetCompiledModelCompatibilityInfoImpl(OrtEp* this_ptr,
                                                                        const OrtGraph* graph) noexcept;

  void ClaimNodes(const OrtGraph* graph, OrtEpGraphSupportInfo* info);
  std::unique_ptr<CompiledProgram> CompileOne(const OrtGraph* graph, const OrtNode* fused_node,
                                              OrtNode** ep_context_node);
  // The ABI a compile would target; "" when the runtime or the compiler cannot say yet.
  std::string SupportTargetAbi();
  // The runtime library (LoadRuntime), and with it the state pool on the
  // configured device (EnsureRuntime; fails when the device cannot be opened).
  void LoadRuntime();
  // The compiler's capabilities (kept beside the compile cache when it is on).
  CompilerCapabilities Caps();
  void EnsureRuntime();
  // GPU backends: the device state that holds the weights the EP keeps, for all its runtime states.
  std::shared_ptr<RuntimeState> WeightState();
  std::unique_ptr<CompiledProgram> LoadEpContext(const OrtGraph* graph, const OrtNode* node, const std::string& name);
  // Throws the list of unsupported nodes claimed only to report them.
  void RefuseRejectedNodes(const OrtGraph* graph);
  // The verified artifact of `model`: from the cache (a damaged entry is
  // rebuilt; `refresh` evicts the entry first) or compiled now.  *cached
  // tells whether it came from the cache.
  std::unique_ptr<LoadedArtifact> CompileArtifact(const struct SubgraphModel& model, const std::string& runtime_abi,
                                                  const std::string& target_abi, bool refresh, bool* cached);
  // The per-install key, from the compile cache's folder (opened only when
  // needed when the cache is off).
  std::string InstallKeyValue();

  HipdnnEpFactory& factory_;
  EpConfig config_;
  const OrtLogger& logger_;
  CompileClient client_;
  std::unique_ptr<CompileCache> cache_;  // null when cache_enable=0
  std::mutex key_dir_mu_;
  PrivateDir key_dir_;  // the key's folder when the cache is off (opened on first use)
  std::shared_ptr<RuntimeApi> runtime_;
  std::shared_ptr<StatePool> states_;
  std::string compatibility_info_;
  std::mutex rejected_mu_;
  // Node outputs ORT reports as rank 0: scalars, or values of unknown shape
  // (the API does not tell them apart), written without a shape.
  std::set<std::string> shapeless_;
  std::map<std::string, std::string> rejected_;  // node key -> why it cannot run here
};

}  // namespace hipdnn_ep
