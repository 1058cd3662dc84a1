// Client of the compiler protocol (packages/abi/protocol.toml, whose generated
// readers and writers, hipdnn_ep/protocol_schema.h, build and read every
// message; packages/abi/README.md describes it): sends each
// request, one JSON line, to a
// `PYTHON -m hipdnn_ep_compiler.protocol --serve` process of the
// interpreter's CompilerPool and reads the one-line response.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler_process.h"  // CompilerTimeout
#include "hipdnn_ep/protocol_schema.h"  // generated from packages/abi/protocol.toml
#include "json.h"

namespace hipdnn_ep {

// The protocol packages/abi/protocol.toml declares (its MAJOR). 2: the support
// action; 3: weights held by reference (onnx_writer.h), which compilers before
// 0.4.1 cannot read (the EP's pin then excludes them).
constexpr int kCompilerProtocolVersion = protocol::kMajor;

struct CompilerCapabilities {
  std::string name;
  std::string version;
  // A digest of the compiler's content (its sources and bundled manifest):
  // another build id means other code, even at the same version.  "" when
  // the compiler does not state one (compilers up to 0.3.0).
  std::string build_id;
  // (domain, op_type) pairs the compiler lowers; "" is the ONNX domain.
  std::set<std::pair<std::string, std::string>> ops;
  // The runtime ABI the compiler can target: one major and its minors
  // (abi_major < 0: not stated, i.e. the compiler targets what it is asked).
  int64_t abi_major = -1;
  std::vector<int64_t> abi_minors;
  // Files whose change means another compiler install (the answer may be
  // kept on disk while none of them changes); empty: never kept.
  std::vector<std::string> install_files;
};

struct CompileResult {
  std::string artifact;   // path of the artifact shared object
  json::Json metadata;    // the artifact's metadata as the compiler reports it
};

// The compiler's verdict on node `index` (its position in the model's graph).
struct NodeVerdict {
  int64_t index = -1;
  bool supported = false;
  std::string reason;  // why not, when not supported
};

class CompileClient {
 public:
  // `python_option`: the EP option compiler_python ("" when not given);
  // `timeout_s`: how long one request may take before the process is killed.
  CompileClient(std::string python_option, int64_t timeout_s);

  // The interpreter that runs the compiler, and why it was chosen.
  const std::string& python() const { return python_; }
  const std::string& python_reason() const { return python_reason_; }

  // Hears of a compiler process that ended on its own (killed, crashed,
  // out of memory) and was replaced by a new one.
  void SetNotice(std::function<void(const std::string&)> notice) { notice_ = std::move(notice); }

  // `raw`, when given, receives the answer as the compiler wrote it.
  CompilerCapabilities Capabilities(std::string* raw = nullptr) const;
  // Reads a capabilities_response (a kept one too); throws EpError naming a malformed field.
  static CompilerCapabilities ParseCapabilities(const json::Json& response);
  // `manifest`: path of the runtime ABI manifest JSON to compile against ("": the compiler's own).
  CompileResult Compile(const std::string& model_path, const std::string& out_dir, const std::string& backend,
                        const std::string& abi, const std::string& manifest = "") const;

  // Per model (paths of subgraph models), the verdict on each of its nodes.
  // `abi` and `manifest` as for Compile ("": the compiler's defaults).
  std::vector<std::vector<NodeVerdict>> Support(const std::vector<std::string>& model_paths,
                                                const std::string& backend, const std::string& abi,
                                                const std::string& manifest) const;

 private:
  static CompilerCapabilities FromResponse(const protocol::CapabilitiesResponse& response);
  // Sends `request` (the JSON of a <action>_request) and returns the answer,
  // read as a <action>_response; `compile`: a compile request (see
  // CompilerPool's bounds).
  template <class Response>
  Response Call(const json::Json& request, const std::string& action, bool compile, std::string* raw = nullptr) const;
  std::string python_;
  std::string python_reason_;
  int64_t timeout_s_;
  std::function<void(const std::string&)> notice_;
};

}  // namespace hipdnn_ep
