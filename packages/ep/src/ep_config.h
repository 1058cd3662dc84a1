// The EP's configuration: the session options it reads (keys in ep_options.h),
// parsed and validated once when the EP is created.
#pragma once

#include <onnxruntime_c_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime_api.h"

namespace hipdnn_ep {

// Everything the EP reads from the session options, parsed and validated once.
struct EpConfig {
  int32_t backend = HIPDNN_EP_BACKEND_CPU;
  std::string backend_name = "cpu";
  int32_t device_id = 0;
  std::string compiler_python;
  std::string cache_dir;
  bool cache_enable = true;
  uint64_t cache_max_bytes = uint64_t{1} << 30;  // size bound of the compile cache; 0: none
  std::string runtime_library;
  size_t max_states = 4;
  uint64_t memory_limit = 0;  // bytes per runtime state; 0: no limit
  bool graph_capture = true;  // GPU backends: replay compiled nodes from captured graphs
  bool trust_ep_context_code = false;
  int64_t compile_timeout_s = 600;
  bool context_enable = false;
  std::string context_file_path;
  bool context_embed = false;
  bool disable_cpu_fallback = false;

  static EpConfig FromSession(const OrtApi& ort, const OrtSessionOptions* so, const std::string& device_backend,
                              const std::string& device_id);
};

}  // namespace hipdnn_ep
