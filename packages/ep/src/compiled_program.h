// A compiled fused node: its artifact, where each artifact argument comes
// from, and the OrtNodeComputeInfo that ORT calls to run it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ep_utils.h"
#include "onnx_writer.h"
#include "runtime_api.h"
#include "runtime_state.h"
#include "verified_artifact.h"

namespace hipdnn_ep {

// Expected type of one artifact argument, from the artifact's metadata.
struct ArgSpec {
  std::string name;
  int32_t dtype = 0;
  int32_t rank = -1;             // -1: not stated
  std::vector<int64_t> dims;     // -1 where the dim is symbolic
  int kernel_input = -1;         // index in the fused node's inputs, or
  std::vector<char> host_copy;   // the bytes, when ORT does not pass it
  std::vector<int64_t> host_dims;
};

class CompiledProgram : public OrtNodeComputeInfo {
 public:
  // Opens the verified artifact (kept alive while its code is loaded) and
  // binds its arguments to the fused node's inputs (or to copies of
  // initializers ORT does not pass).
  CompiledProgram(const ApiPtrs& api, std::shared_ptr<RuntimeApi> rt, std::shared_ptr<StatePool> states,
                  int32_t backend, const std::string& node_name, std::unique_ptr<LoadedArtifact> code,
                  const SubgraphModel& model);
  ~CompiledProgram();

 private:
  static OrtStatus* ORT_API_CALL CreateStateImpl(OrtNodeComputeInfo* this_ptr, OrtNodeComputeContext* ctx,
                                                 void** state) noexcept;
  static OrtStatus* ORT_API_CALL ComputeImpl(OrtNodeComputeInfo* this_ptr, void* state,
                                             OrtKernelContext* kernel_context) noexcept;
  static void ORT_API_CALL ReleaseStateImpl(OrtNodeComputeInfo* this_ptr, void* state) noexcept;

  void Run(OrtKernelContext* ctx);
  // Throws unless rc is OK; out of memory gets a message that says what to do.
  void CheckRun(const char* what, int32_t rc) const;

  ApiPtrs api_;
  std::shared_ptr<RuntimeApi> rt_;
  std::shared_ptr<StatePool> states_;
  int32_t backend_;
  std::string node_name_;
  std::unique_ptr<LoadedArtifact> code_;
  std::string path_;  // where the code came from, for messages
  hipdnn_ep_artifact_t* artifact_ = nullptr;
  std::vector<ArgSpec> args_;    // graph inputs, then weights
  std::vector<std::string> outputs_;
  uint64_t id_;  // unique per program in the process: keys its weights' device copies in a state
};

}  // namespace hipdnn_ep
