// A compiled artifact: its metadata, checked against this runtime, and its
// loaded program.
#pragma once

#include <string>
#include <vector>

#include "hipdnn_ep/metadata_schema.h"
#include "json.h"
#include "runtime_internal.h"

namespace hipdnn_ep {

struct TensorSpec {
  std::string name;
  int32_t dtype = 0;
  std::vector<int64_t> dims;  // -1 where the dim is symbolic
  std::vector<std::string> dim_text;  // each dim as the metadata spells it, for messages
};

}  // namespace hipdnn_ep

struct hipdnn_ep_artifact {
  std::string path;            // the program's shared object
  std::string metadata_text;   // the .hipdnn_ep_meta section
  hipdnn_ep::json::Value metadata;
  std::vector<hipdnn_ep::TensorSpec> inputs;  // graph inputs, then weights
  std::vector<hipdnn_ep::TensorSpec> outputs;
  std::vector<std::string> kernel_nodes;  // the node of each kernel call (metadata kernel_nodes; may be empty)
  std::vector<hipdnn_ep::metadata::Checks> checks;    // the shape checks, re-evaluated to name a refusal
  std::vector<hipdnn_ep::metadata::Symbols> symbols;  // the named symbols those checks may use
  void* handle = nullptr;
  hipdnn_ep_program_run_fn entry = nullptr;
  bool writes_in_place = false;  // imports hipdnn_ep_output_alloc: asks for each output before its first kernel
  size_t n_graph_inputs = 0;     // inputs[0, n) are the graph's inputs, the rest its weights
  uint64_t serial = 0;           // unique in the process (keys its captured graphs)
};
