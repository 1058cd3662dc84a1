// EPContext nodes: the node that carries a compiled partition's code (embedded,
// or in a file beside the EPContext model) and reading it back, refusing
// native code this install did not produce unless the user trusts it.
#pragma once

#include <onnxruntime_c_api.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "ep_utils.h"
#include "onnx_writer.h"
#include "verified_artifact.h"

namespace hipdnn_ep {

// True for an EPContext node this EP wrote (attribute source == kEpName).
bool IsOurEpContextNode(const OrtApi& ort, const OrtNode* node);

// How an EPContext node is written.
struct EpContextWrite {
  bool embed = false;     // ep.context_embed_mode: the code inside the node
  std::string file_path;  // ep.context_file_path ("": <model>_ctx.onnx beside the source model)
  std::string compatibility;                // the compatibility info the notes record
  std::function<std::string()> install_key;  // the per-install signing key (read when signing)
};

// The EPContext node for the compiled partition `name` of `graph` (code
// signed with the install key); a non-embedded artifact is written now.
OrtNode* WriteEpContextNode(const ApiPtrs& api, const OrtGraph* graph, const std::string& name,
                            const LoadedArtifact& artifact, const SubgraphModel& model, const EpContextWrite& how);

// The code of an EPContext node and the compatibility info its notes record.
struct EpContextCode {
  std::unique_ptr<LoadedArtifact> artifact;
  std::optional<std::string> compatibility;  // absent when the notes have none
};

// Reads and verifies the code of EPContext `node` (named `name`) of `graph`:
// it runs only if its tag verifies with `install_key()` or `trust_code` is
// set; a file must lie inside the model's folder (symbolic links included).
EpContextCode ReadEpContextNode(const OrtApi& ort, const OrtGraph* graph, const OrtNode* node, const std::string& name,
                                bool trust_code, const std::function<std::string()>& install_key);

}  // namespace hipdnn_ep
