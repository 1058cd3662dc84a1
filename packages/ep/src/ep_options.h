// Every option key the hipdnn-ep plugin understands, in one place.
//
// Session options reach the EP as "ep.<ep name lower-cased>.<key>" (ORT adds
// the prefix for options given to add_provider_for_devices); the ORT-wide
// keys below are read as they are.
#pragma once

namespace hipdnn_ep::options {

// Backend of the runtime state: "cpu", "cuda" or "hip".  Default: the backend
// of the hardware device ORT selected ("cpu" for the CPU device).
constexpr const char* kBackend = "backend";
// Device ordinal for GPU backends (default 0).
constexpr const char* kDeviceId = "device_id";
// Python interpreter that runs the compiler (see compile_client.cc for the
// order in which it is chosen).
constexpr const char* kCompilerPython = "compiler_python";
// Directory of the on-disk compile cache (default: $HIPDNN_EP_CACHE_DIR, else
// $XDG_CACHE_HOME/hipdnn-ep, else ~/.cache/hipdnn-ep, else
// <temp>/hipdnn-ep-cache-<uid>); it must be private to the user.
constexpr const char* kCacheDir = "cache_dir";
// "0" disables the compile cache (every session compiles again, and no cache
// folder is created).
constexpr const char* kCacheEnable = "cache_enable";
// Size bound of the compile cache (a byte count like memory_limit; default
// 1GiB, "0": none).  After an insert, the least recently used entries are
// evicted until the cache fits.
constexpr const char* kCacheMaxBytes = "cache_max_bytes";
// Absolute path of the runtime library to use instead of the one installed
// next to the hipdnn_ep package.
constexpr const char* kRuntimeLibrary = "runtime_library";
// Maximum number of runtime states kept per EP instance for concurrent runs.
constexpr const char* kMaxStates = "max_states";
// Bytes of device memory each runtime state of the EP may hold (an integer,
// optionally with a suffix B, KiB, MiB, GiB or TiB); "0" (default): no limit.
// A Run that needs more fails with an out-of-memory error.
constexpr const char* kMemoryLimit = "memory_limit";
// "1": an EPContext model may carry native code this install did not produce
// (artifacts outside the compile cache).  Default "0": such models are refused.
constexpr const char* kTrustEpContextCode = "trust_ep_context_code";
// Seconds one compiler request (a compile or a support check) may take before
// the compiler process is killed and session creation fails (default 600).
constexpr const char* kCompileTimeout = "compile_timeout";

// GPU backends: "1" (default) captures a compiled node into a CUDA/HIP graph once it ran twice
// with the same input shapes, and replays the graph on later Runs with those shapes; "0" launches
// every kernel from the host on every Run.
constexpr const char* kGraphCapture = "graph_capture";

// Every EP option key above; any other "ep.hipdnnep.*" key is refused.
constexpr const char* kAllKeys[] = {kBackend,        kDeviceId,       kCompilerPython, kCacheDir,    kCacheEnable,
                                    kCacheMaxBytes,  kRuntimeLibrary, kMaxStates,      kMemoryLimit, kTrustEpContextCode,
                                    kCompileTimeout, kGraphCapture};

// ORT's own session keys the EP reads.
constexpr const char* kOrtContextEnable = "ep.context_enable";
constexpr const char* kOrtContextFilePath = "ep.context_file_path";
constexpr const char* kOrtContextEmbedMode = "ep.context_embed_mode";
constexpr const char* kOrtDisableCpuFallback = "session.disable_cpu_ep_fallback";

}  // namespace hipdnn_ep::options
