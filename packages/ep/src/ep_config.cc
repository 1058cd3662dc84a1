#include "ep_config.h"

#include <algorithm>
#include <cctype>
#include <exception>
#include <utility>

#include "ep_options.h"
#include "ep_utils.h"

namespace hipdnn_ep {

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

}  // namespace hipdnn_ep
