// Serializes an OrtGraph (the nodes ORT fused for us) into an ONNX ModelProto.
//
// The ORT C API has no OrtGraph -> ModelProto function, so this writes the
// protobuf wire format directly, for the subset the compiler needs: opsets,
// nodes with their attributes, typed graph inputs/outputs and intermediate
// value infos (symbolic dims by name), and constant initializers (an
// initializer that is also a graph input is only its default: it is written
// as a graph input, see ValueInfo_IsConstantInitializer).  Constant
// initializers larger than kInlineLimit bytes are weights held by reference:
// the model describes them (name, element type, dims, as ONNX external data
// at location kHostWeightsLocation) and carries the model property
// kHostWeightsKey, but their bytes are neither copied, hashed nor written
// anywhere: the compiler never reads weight values, and the program receives
// ORT's own tensors at run time.  Smaller initializers stay inline so the
// compiler can use them as constants (shapes, axes).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "ep_utils.h"
#include "mapped_weights.h"

namespace hipdnn_ep {

constexpr size_t kInlineLimit = 1024;
// The model property that says "external data is held by the host, no file
// holds it" (the compiler's frontend knows it), and the location its
// external tensors name.
constexpr const char* kHostWeightsKey = "hipdnn_ep.weights";
constexpr const char* kHostWeightsValue = "host";
constexpr const char* kHostWeightsLocation = "hipdnn-ep-host-memory";

// An initializer of the subgraph and where its bytes live in this process.
struct InitializerRef {
  std::string name;
  const void* data = nullptr;
  size_t size = 0;
  std::vector<int64_t> dims;  // its shape, as ORT has it
  // Where the model stores it, when that is an external data file (data is
  // valid during Compile only; the file is what the EP maps to keep it).
  ExternalLocation external;
};

struct SubgraphModel {
  std::string model_bytes;  // serialized ModelProto (no weight bytes in it)
  // Names of the fused node's inputs, in the order Compute receives them.
  std::vector<std::string> kernel_inputs;
  std::vector<std::string> outputs;
  std::vector<InitializerRef> initializers;
  // SHA-256 over the model: the cache's graph key.  It covers the graph's
  // structure, inline constants, element types and shapes (what the code
  // depends on), not the weights' values: one artifact serves a model whose
  // weights change.
  std::string hash;
};

// Builds the model for `graph`.  Throws EpError naming the node and attribute
// for anything it cannot represent (graph attributes, string tensors).
// ORT reports rank 0 both for scalars and for values whose shape it does not
// know; values named in `shapeless` (node outputs ORT reports as rank 0) are
// written without a shape, so the compiler infers it or refuses, instead of
// compiling for a scalar.
SubgraphModel WriteSubgraphModel(const ApiPtrs& api, const OrtGraph* graph,
                                 const std::set<std::string>* shapeless = nullptr);

// Only the interface of `graph` (kernel inputs, outputs, initializers),
// without serializing it; for EPContext nodes whose code already exists.
SubgraphModel DescribeSubgraph(const ApiPtrs& api, const OrtGraph* graph);

// Minimal protobuf wire-format writer (exposed for tests and ep_context).
class ProtoWriter {
 public:
  void Varint(uint64_t v);
  void Tag(int field, int wire_type) { Varint((uint64_t(field) << 3) | uint64_t(wire_type)); }
  void Int(int field, int64_t v) { Tag(field, 0); Varint(static_cast<uint64_t>(v)); }
  void Bytes(int field, const void* data, size_t size);
  void Str(int field, const std::string& s) { Bytes(field, s.data(), s.size()); }
  void Msg(int field, const ProtoWriter& m) { Str(field, m.buf()); }
  void Float(int field, float f);
  const std::string& buf() const { return buf_; }

 private:
  std::string buf_;
};

}  // namespace hipdnn_ep
