// A compiled fused node: its artifact, where each artifact argument comes
// from, and the OrtNodeComputeInfo that ORT calls to run it.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "ep_utils.h"
#include "mapped_weights.h"
#include "onnx_writer.h"
#include "runtime_api.h"
#include "runtime_state.h"
#include "verified_artifact.h"

namespace hipdnn_ep {

// Expected type of one artifact argument, from the artifact's metadata.
struct ArgSpec {
  std::string name;
  int32_t dtype = 0;
  int kernel_input = -1;         // index in the fused node's inputs, or, when ORT does not pass it,
  const char* host_data = nullptr;  // its bytes in host memory: a range of
  size_t host_size = 0;
  std::shared_ptr<const MappedFile> mapped;  // the model's external data file, mapped (no copy), or
  std::vector<char> host_copy;               // a copy made during Compile
  std::vector<int64_t> host_dims;
};

struct RunAllocations;

class CompiledProgram : public OrtNodeComputeInfo {
 public:
  // Opens the verified artifact (kept alive while its code is loaded) and
  // binds its arguments to the fused node's inputs (or to copies of
  // initializers ORT does not pass).
  // `weights`: GPU backends, the device's state that uploads the weights ORT does not pass, once for
  // all runtime states (null: each runtime state uploads its own).
  CompiledProgram(const ApiPtrs& api, std::shared_ptr<RuntimeApi> rt, std::shared_ptr<StatePool> states,
                  int32_t backend, const std::string& node_name, std::unique_ptr<LoadedArtifact> code,
                  const SubgraphModel& model, std::shared_ptr<RuntimeState> weights = nullptr);
  ~CompiledProgram();

 private:
  static OrtStatus* ORT_API_CALL CreateStateImpl(OrtNodeComputeInfo* this_ptr, OrtNodeComputeContext* ctx,
                                                 void** state) noexcept;
  static OrtStatus* ORT_API_CALL ComputeImpl(OrtNodeComputeInfo* this_ptr, void* state,
                                             OrtKernelContext* kernel_context) noexcept;
  static void ORT_API_CALL ReleaseStateImpl(OrtNodeComputeInfo* this_ptr, void* state) noexcept;

  // The output allocator of one run (hipdnn_ep_output_allocator_t): each output in ORT's buffer.
  struct OrtOutputs {
    struct Staged {  // an output ORT wants in host memory, written on the device first
      void* host;
      void* device;
      size_t bytes;
    };
    const CompiledProgram* program;
    OrtKernelContext* ctx;
    hipdnn_ep_state_t* state;
    RunAllocations* allocs;
    std::vector<Staged> staged;
    std::string error;  // why Alloc failed (the runtime reports only a status for it)
    static int32_t Alloc(void* context, int32_t index, const hipdnn_ep_tensor_ref_t* output, uint64_t size,
                         void** out_data) noexcept;
    void Provide(int32_t index, const hipdnn_ep_tensor_ref_t& output, uint64_t size, void** out_data);
  };

  void Run(OrtKernelContext* ctx);
  // The stream ORT hands this Compute when this library created it (GPU backends), else 0: the
  // runtime state's own stream. Logs once per node which one it is.
  uint64_t ComputeStream(OrtKernelContext* ctx);
  // Logs once whether the node is replayed from a graph, or why not (GPU backends).
  // (graph_runs_before: the state's captures + replays before this node's run.)
  void NoteGraph(OrtKernelContext* ctx, hipdnn_ep_state_t* state, uint64_t graph_runs_before);
  // The state's captures + replays so far, and why its last run without a graph had none.
  uint64_t GraphRuns(hipdnn_ep_state_t* state, std::string* last_uncaptured) const;
  // Throws unless rc is OK; out of memory gets a message that says what to do.
  void CheckRun(const char* what, int32_t rc) const;

  ApiPtrs api_;
  std::shared_ptr<RuntimeApi> rt_;
  std::shared_ptr<StatePool> states_;
  std::shared_ptr<RuntimeState> weights_;  // the device copies of the weights; null: the program reads host weights
  int32_t backend_;
  std::string node_name_;
  std::unique_ptr<LoadedArtifact> code_;
  std::string path_;  // where the code came from, for messages
  hipdnn_ep_artifact_t* artifact_ = nullptr;
  std::vector<ArgSpec> args_;    // graph inputs, then weights
  std::vector<std::string> outputs_;
  uint64_t id_;  // unique per program in the process: keys its weights' device copies in a state
  std::atomic<bool> graph_noted_{false};
  std::atomic<bool> stream_noted_{false};
};

}  // namespace hipdnn_ep
