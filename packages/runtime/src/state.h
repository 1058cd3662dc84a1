// The per-session runtime state behind hipdnn_ep_state_t.
//
// Threading: the memory manager entry points (malloc, free, memory_stats,
// empty_cache, memcpy, synchronize) may be called from several threads at
// once; memory_mutex serializes them. A state runs one program at a time:
// the host scratch and the pool belong to that run (`running` enforces it).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "caching_allocator.h"
#include "graph_cache.h"
#include "device.h"
#include "host_scratch.h"

struct hipdnn_ep_state {
  int32_t backend = HIPDNN_EP_BACKEND_CPU;
  int32_t device_ordinal = 0;
  uint64_t alignment = 256;
  std::unique_ptr<hipdnn_ep::Device> device;
  std::mutex memory_mutex;  // guards allocator, host_scratch and pool
  std::unique_ptr<hipdnn_ep::CachingAllocator> allocator;
  std::unique_ptr<hipdnn_ep::GrowOnDemandBlock> host_scratch;
  std::unique_ptr<hipdnn_ep::GrowOnDemandBlock> pool;
  std::atomic<uint64_t> stream{0};
  // Whether work may have been ordered on the current stream since the state last synchronized
  // (set by the calls that order work on it: malloc, free, copies, kernels through current_stream).
  std::atomic<bool> stream_used{false};
  // Whether a stream other than the current one may still hold the state's work (an earlier current
  // stream, a copy queued on another stream) since the state last synchronized; guarded by
  // memory_mutex. While set, hipdnn_ep_stream_synchronize on the current stream waits for the whole
  // device.
  bool work_elsewhere = false;
  std::atomic<bool> running{false};
  // Why the running program is about to fail (hipdnn_ep_set_error_message); cleared per run.
  std::string program_error;
  // Kernel entry points called on this state since the run began, and the index of the one that
  // failed (-1: none), so that a run's error can name the node of that call (the metadata's
  // kernel_nodes); reset per run.
  int64_t kernel_calls = 0;
  int64_t failed_kernel = -1;
  // During a run: the artifact, its inputs (graph inputs first, then weights), and the weights' byte ranges
  // [begin, end), sorted, built on the first holds_run_weights of the run (run_weights_known); cleared
  // when the run ends.
  const hipdnn_ep_artifact* run_artifact = nullptr;
  const hipdnn_ep_tensor_ref_t* run_inputs = nullptr;
  bool run_weights_known = false;
  std::vector<std::pair<uintptr_t, uintptr_t>> run_weights;
  // During hipdnn_ep_artifact_run_into: the host's allocator, and the outputs it provided
  // (hipdnn_ep_free leaves those alone; guarded by memory_mutex).
  const hipdnn_ep_output_allocator_t* output_allocator = nullptr;
  std::vector<void*> host_outputs;
  // Graph capture and replay of programs (GPU backends; graph_cache.h).
  bool graph_capture = false;
  uint32_t graph_cache_size = 8;
  std::unique_ptr<hipdnn_ep::GraphCache, hipdnn_ep::GraphCacheDeleter> graphs;
  hipdnn_ep::GraphStats graph_stats;
  // During a capture: the graph being captured, and why the program cannot be captured when
  // it made a call that a graph cannot hold (a host read of device data, a host wait).
  hipdnn_ep::CapturedGraph* capture = nullptr;
  std::string capture_refusal;
};

namespace hipdnn_ep {

// What a state's synchronization does once the state's work has completed (memory_mutex held):
// releases retired host-scratch and pool blocks and evicted graphs, makes blocks freed on any
// stream reusable on every stream, and forgets the streams that held work.
void finish_synchronization(hipdnn_ep_state_t* state);

// Whether a caller's versioned struct (first field uint64_t struct_size)
// covers the field at offset with the given size.
inline bool struct_covers(uint64_t struct_size, size_t offset, size_t size) {
  return struct_size >= offset + size;
}

// The checks of a call that fills a caller's versioned stats struct: out and its struct_size (at
// least the field itself). OK, or INVALID_ARGUMENT with the error set, naming the function and type.
int32_t check_stats_struct(const char* function, const void* out, const char* type);

// Copies the fields of `all` that the caller's struct covers (out->struct_size bytes) into *out,
// after struct_size itself; nothing past that size is written (an older caller's struct has fewer
// fields). The stats structs hold 8-byte fields only (uint64_t and pointers), so whole words are the
// fields.
template <typename T>
void write_covered(T* out, const T& all) {
  static_assert(sizeof(T) % sizeof(uint64_t) == 0 && offsetof(T, struct_size) == 0,
                "a stats struct: struct_size first, 8-byte fields");
  const uint64_t size = out->struct_size < sizeof(T) ? out->struct_size : sizeof(T);
  for (size_t offset = sizeof(uint64_t); offset + sizeof(uint64_t) <= size; offset += sizeof(uint64_t)) {
    std::memcpy(reinterpret_cast<char*>(out) + offset, reinterpret_cast<const char*>(&all) + offset,
                sizeof(uint64_t));
  }
}

}  // namespace hipdnn_ep
