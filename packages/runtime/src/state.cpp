// State lifecycle, options, backend selection, streams and synchronization.
#include "state.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>

#include "artifact.h"
#include "error.h"
#include "kernels/tensor_util.h"

namespace hipdnn_ep {
namespace {

constexpr uint64_t kMaxAlignment = 2u << 20;
constexpr uint64_t kMinAlignment = 16;
constexpr size_t kLeakReportLines = 16;
constexpr int32_t kMaxGraphCacheSize = 1024;

// Every field's default, struct_size = sizeof.
void default_options(hipdnn_ep_state_options_t* out) {
  *out = hipdnn_ep_state_options_t{};
  out->struct_size = sizeof(hipdnn_ep_state_options_t);
  out->backend = HIPDNN_EP_BACKEND_CPU;
  out->device_ordinal = 0;
  out->memory_limit_bytes = 0;
  out->alignment = 256;
  out->graph_capture = 1;
  out->graph_cache_size = 8;
}

// Copies the fields of *in that in->struct_size covers over the defaults.
int32_t read_options(const hipdnn_ep_state_options_t* in, hipdnn_ep_state_options_t* out) {
  default_options(out);
  if (in == nullptr) return HIPDNN_EP_STATUS_OK;
  HIPDNN_EP_REQUIRE(in->struct_size >= sizeof(uint64_t), HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_state_create: options->struct_size is " + std::to_string(in->struct_size) +
                        "; set it with hipdnn_ep_state_options_init");
#define HIPDNN_EP_READ_FIELD(field)                                                              \
  if (struct_covers(in->struct_size, offsetof(hipdnn_ep_state_options_t, field), sizeof(in->field))) \
  out->field = in->field
  HIPDNN_EP_READ_FIELD(backend);
  HIPDNN_EP_READ_FIELD(device_ordinal);
  HIPDNN_EP_READ_FIELD(memory_limit_bytes);
  HIPDNN_EP_READ_FIELD(alignment);
  HIPDNN_EP_READ_FIELD(graph_capture);
  HIPDNN_EP_READ_FIELD(graph_cache_size);
#undef HIPDNN_EP_READ_FIELD
  return HIPDNN_EP_STATUS_OK;
}

const char* built_backends() {
#if defined(HIPDNN_EP_WITH_CUDA)
  return "cpu, cuda";
#elif defined(HIPDNN_EP_WITH_HIP)
  return "cpu, hip";
#else
  return "cpu";
#endif
}

int32_t make_device(int32_t backend, int32_t ordinal, std::unique_ptr<Device>* out) {
  switch (backend) {
    case HIPDNN_EP_BACKEND_CPU:
      return make_cpu_device(ordinal, out);
    case HIPDNN_EP_BACKEND_CUDA:
#if defined(HIPDNN_EP_WITH_CUDA)
      return make_gpu_device(backend, ordinal, out);
#endif
    case HIPDNN_EP_BACKEND_HIP:
#if defined(HIPDNN_EP_WITH_HIP)
      if (backend == HIPDNN_EP_BACKEND_HIP) return make_gpu_device(backend, ordinal, out);
#endif
      return set_error(HIPDNN_EP_STATUS_BACKEND_UNAVAILABLE,
                       std::string("hipdnn_ep_state_create: this runtime was built without the ") +
                           (backend == HIPDNN_EP_BACKEND_CUDA ? "cuda" : "hip") + " backend (built backends: " +
                           built_backends() + "); rebuild it with HIPDNN_EP_BACKENDS=\"cpu;" +
                           (backend == HIPDNN_EP_BACKEND_CUDA ? "cuda" : "hip") + "\"");
    default:
      return set_error(HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                       "hipdnn_ep_state_create: unknown backend " + std::to_string(backend) +
                           " (expected one of hipdnn_ep_backend: 0 cpu, 1 cuda, 2 hip)");
  }
}

}  // namespace

int32_t state_backend(const hipdnn_ep_state_t* state) { return state->backend; }

int64_t kernel_started(hipdnn_ep_state_t* state) { return state == nullptr ? -1 : state->kernel_calls++; }

void kernel_failed(hipdnn_ep_state_t* state, int64_t call) {
  if (state != nullptr && state->failed_kernel < 0) state->failed_kernel = call;
}

namespace {

// The byte range [begin, end) of a run's input.
std::pair<uintptr_t, uintptr_t> byte_range(const hipdnn_ep_tensor_ref_t& t) {
  const auto begin = reinterpret_cast<uintptr_t>(t.data);
  return {begin, begin + static_cast<uintptr_t>(kernels::tensor_bytes(t))};
}

// Fills state->run_weights (see holds_run_weights).
void find_run_weights(hipdnn_ep_state_t* state) {
  const size_t graph_inputs = state->run_artifact->n_graph_inputs;
  state->run_weights.clear();
  for (size_t i = graph_inputs; i < state->run_artifact->inputs.size(); ++i) {
    const auto weight = byte_range(state->run_inputs[i]);
    bool overlaps = weight.first == weight.second;  // empty: nothing to read
    for (size_t j = 0; j < graph_inputs && !overlaps; ++j) {
      const auto input = byte_range(state->run_inputs[j]);
      overlaps = input.first < weight.second && weight.first < input.second;
    }
    if (!overlaps) state->run_weights.push_back(weight);
  }
  std::sort(state->run_weights.begin(), state->run_weights.end());
  state->run_weights_known = true;
}

}  // namespace

bool holds_run_weights(hipdnn_ep_state_t* state, const hipdnn_ep_tensor_ref_t& tensor) {
  if (state->run_artifact == nullptr || tensor.data == nullptr) return false;
  if (!state->run_weights_known) find_run_weights(state);
  const auto [begin, end] = byte_range(tensor);
  // the last weight that begins at or before the tensor (where weights overlap, a range inside an earlier one
  // is not found: false only costs the kernel its early reads)
  const auto after = std::upper_bound(state->run_weights.begin(), state->run_weights.end(),
                                      std::make_pair(begin, UINTPTR_MAX));
  return after != state->run_weights.begin() && end <= std::prev(after)->second;
}

void finish_synchronization(hipdnn_ep_state_t* state) {
  state->host_scratch->release_retired();
  state->pool->release_retired();  // frees through the allocator, before the streams merge
  graph_release_retired(state);
  state->allocator->mark_streams_synchronized();
  state->work_elsewhere = false;
  state->stream_used.store(false, std::memory_order_relaxed);
}

#if !defined(HIPDNN_EP_WITH_CUDA) && !defined(HIPDNN_EP_WITH_HIP)
// Without a GPU backend no state ever holds graphs.
void GraphCacheDeleter::operator()(GraphCache*) const {}
void graph_release_retired(hipdnn_ep_state_t*) {}
uint64_t graph_count(const hipdnn_ep_state_t*) { return 0; }
#endif

}  // namespace hipdnn_ep

using hipdnn_ep::set_error;

// Writes only the fields of ABI 1.0: a caller built for ABI 1.0 to 1.2 passes a struct that ends after
// alignment, and says nothing of its size, so anything written past it lands on the caller's own memory
// (its stack: released EPs crashed). The fields added later keep their defaults unless the caller sets them
// and struct_size = sizeof(hipdnn_ep_state_options_t).
extern "C" void hipdnn_ep_state_options_init(hipdnn_ep_state_options_t* options) {
  if (options == nullptr) return;
  constexpr size_t kAbi10Size = offsetof(hipdnn_ep_state_options_t, graph_capture);
  static_assert(kAbi10Size == 32, "the ABI 1.0 fields of hipdnn_ep_state_options_t end at byte 32");
  hipdnn_ep_state_options_t defaults;
  hipdnn_ep::default_options(&defaults);
  std::memcpy(options, &defaults, kAbi10Size);
  options->struct_size = kAbi10Size;
}

extern "C" int32_t hipdnn_ep_state_create(const hipdnn_ep_state_options_t* options, hipdnn_ep_state_t** out_state) {
  HIPDNN_EP_REQUIRE(out_state != nullptr, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_state_create: out_state is NULL");
  *out_state = nullptr;
  hipdnn_ep_state_options_t opts;
  if (int32_t status = hipdnn_ep::read_options(options, &opts); status != HIPDNN_EP_STATUS_OK) return status;
  if (opts.alignment == 0) opts.alignment = 256;
  const uint64_t a = opts.alignment;
  HIPDNN_EP_REQUIRE((a & (a - 1)) == 0 && a >= hipdnn_ep::kMinAlignment && a <= hipdnn_ep::kMaxAlignment,
                    HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_state_create: alignment " + std::to_string(a) +
                        " must be a power of two between 16 and 2097152");
  HIPDNN_EP_REQUIRE(opts.graph_capture == 0 || opts.graph_capture == 1, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_state_create: graph_capture is " + std::to_string(opts.graph_capture) +
                        "; set 1 (capture and replay programs on GPU backends) or 0 (off)");
  HIPDNN_EP_REQUIRE(opts.graph_cache_size >= 0 && opts.graph_cache_size <= hipdnn_ep::kMaxGraphCacheSize,
                    HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_state_create: graph_cache_size " + std::to_string(opts.graph_cache_size) +
                        " must be between 0 (the default, 8) and " + std::to_string(hipdnn_ep::kMaxGraphCacheSize));
  std::unique_ptr<hipdnn_ep::Device> device;
  if (int32_t status = hipdnn_ep::make_device(opts.backend, opts.device_ordinal, &device);
      status != HIPDNN_EP_STATUS_OK) {
    return status;
  }
  auto state = std::make_unique<hipdnn_ep_state>();
  state->backend = opts.backend;
  state->device_ordinal = opts.device_ordinal;
  state->alignment = a;
  state->graph_capture = opts.graph_capture == 1 && opts.backend != HIPDNN_EP_BACKEND_CPU;
  state->graph_cache_size = opts.graph_cache_size == 0 ? 8u : static_cast<uint32_t>(opts.graph_cache_size);
  state->device = std::move(device);
  state->allocator =
      std::make_unique<hipdnn_ep::CachingAllocator>(state->device.get(), a, opts.memory_limit_bytes,
                                                    &hipdnn_ep::device_memory_totals(opts.backend, opts.device_ordinal));
  hipdnn_ep_state* raw = state.get();
  state->host_scratch = std::make_unique<hipdnn_ep::GrowOnDemandBlock>(
      [raw](uint64_t size, void** out) { return raw->device->allocate_host(size, raw->alignment, out); },
      [raw](void* ptr) { raw->device->release_host(ptr); }, a);
  // The pool takes its blocks from the caching allocator, so it counts against the limit.
  state->pool = std::make_unique<hipdnn_ep::GrowOnDemandBlock>(
      [raw](uint64_t size, void** out) { return raw->allocator->allocate(size, raw->stream.load(), out); },
      [raw](void* ptr) { raw->allocator->free(ptr, raw->stream.load()); }, a);
  *out_state = state.release();
  return HIPDNN_EP_STATUS_OK;
}

extern "C" int32_t hipdnn_ep_state_destroy(hipdnn_ep_state_t* state) {
  if (state == nullptr) return HIPDNN_EP_STATUS_OK;
  std::unique_ptr<hipdnn_ep_state> owned(state);
  std::lock_guard<std::mutex> lock(state->memory_mutex);
  state->device->synchronize();
  state->graphs.reset();  // gives the graphs' blocks back to the allocator before the leak check
  state->pool->release_all();
  state->host_scratch->release_all();
  const hipdnn_ep::AllocatorStats stats = state->allocator->stats();
  if (stats.live_allocations == 0) return HIPDNN_EP_STATUS_OK;
  return set_error(HIPDNN_EP_STATUS_LEAK_DETECTED,
                   "hipdnn_ep_state_destroy: " + std::to_string(stats.live_allocations) +
                       " device allocation(s) still live (" + std::to_string(stats.bytes_in_use) +
                       " bytes); the state was destroyed anyway. Live blocks:" +
                       state->allocator->leak_report(hipdnn_ep::kLeakReportLines));
}

extern "C" int32_t hipdnn_ep_state_set_stream(hipdnn_ep_state_t* state, uint64_t stream) {
  HIPDNN_EP_REQUIRE(state != nullptr, HIPDNN_EP_STATUS_INVALID_ARGUMENT, "hipdnn_ep_state_set_stream: state is NULL");
  HIPDNN_EP_REQUIRE(stream != UINT64_MAX, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_state_set_stream: stream id UINT64_MAX is reserved");
  std::lock_guard<std::mutex> lock(state->memory_mutex);
  if (stream == state->stream.load()) return HIPDNN_EP_STATUS_OK;
  // The stream left may still run the state's work: remember that until the state synchronizes.
  if (state->stream_used.exchange(false)) state->work_elsewhere = true;
  state->stream.store(stream);
  return HIPDNN_EP_STATUS_OK;
}

extern "C" int32_t hipdnn_ep_synchronize(hipdnn_ep_state_t* state) {
  HIPDNN_EP_REQUIRE(state != nullptr, HIPDNN_EP_STATUS_INVALID_ARGUMENT, "hipdnn_ep_synchronize: state is NULL");
  std::lock_guard<std::mutex> lock(state->memory_mutex);
  if (int32_t status = state->device->synchronize(); status != HIPDNN_EP_STATUS_OK) return status;
  hipdnn_ep::finish_synchronization(state);
  // The run's wait is where a kernel's data check that failed on the device is reported.
  return state->device->take_data_error();
}

extern "C" int32_t hipdnn_ep_graph_stats(hipdnn_ep_state_t* state, hipdnn_ep_graph_stats_t* out_stats) {
  HIPDNN_EP_REQUIRE(state != nullptr, HIPDNN_EP_STATUS_INVALID_ARGUMENT, "hipdnn_ep_graph_stats: state is NULL");
  if (int32_t status = hipdnn_ep::check_stats_struct("hipdnn_ep_graph_stats", out_stats, "hipdnn_ep_graph_stats_t");
      status != HIPDNN_EP_STATUS_OK) {
    return status;
  }
  const hipdnn_ep::GraphStats& s = state->graph_stats;
  hipdnn_ep_graph_stats_t all{};
  all.captures = s.captures;
  all.replays = s.replays;
  all.uncaptured_runs = s.uncaptured_runs;
  all.graphs_cached = hipdnn_ep::graph_count(state);
  all.evictions = s.evictions;
  all.last_uncaptured = s.last_uncaptured.c_str();
  hipdnn_ep::write_covered(out_stats, all);
  return HIPDNN_EP_STATUS_OK;
}

namespace hipdnn_ep {

int32_t check_stats_struct(const char* function, const void* out, const char* type) {
  HIPDNN_EP_REQUIRE(out != nullptr, HIPDNN_EP_STATUS_INVALID_ARGUMENT, std::string(function) + ": out_stats is NULL");
  const uint64_t size = *static_cast<const uint64_t*>(out);  // struct_size, the first field
  HIPDNN_EP_REQUIRE(size >= sizeof(uint64_t), HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    std::string(function) + ": out_stats->struct_size is " + std::to_string(size) + "; set it to sizeof(" +
                        type + ")");
  return HIPDNN_EP_STATUS_OK;
}

}  // namespace hipdnn_ep
