// Graph capture and replay of compiled programs (graph_cache.h says what and why).
#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "artifact.h"
#include "error.h"
#include "gpu/gpu_device.h"
#include "graph_cache.h"
#include "kernels/tensor_util.h"
#include "state.h"

namespace hipdnn_ep {

struct CapturedGraph {
  std::vector<int64_t> key;
  hipGraphExec_t exec = nullptr;
  std::unique_ptr<GrowOnDemandBlock> pool;          // the program's intermediates
  std::unique_ptr<GrowOnDemandBlock> host_scratch;  // its host scalars (read by captured copies)
  std::vector<void*> held;                          // allocator blocks its kernels use
  std::vector<void*> constants;                     // pinned copies of the program's constant data it reads
  const void* program_base = nullptr;               // the program's image (its constant data lies there)
  std::vector<void*> staging;                       // per graph input (nullptr: no bytes, or used in place)
  std::vector<uint64_t> staging_bytes;
  // Graph inputs used where they are, because the host places an output on them (a KV cache bound
  // as both past and present): (input index, its data), which a replay's inputs must match.
  std::vector<std::pair<size_t, void*>> in_place_inputs;
  std::vector<void*> in_place_outputs;  // per output: the input memory it is written to, else nullptr
  std::vector<uint64_t> in_place_bytes;  // and that input's size
  struct Output {
    std::vector<int64_t> dims;
    int32_t dtype = 0;
    void* data = nullptr;
    uint64_t bytes = 0;
    bool in_place = false;  // data is a graph input's memory, where the host must place the output again
  };
  std::vector<Output> outputs;
};

// Shapes run once without a graph, and which outputs that run's host placed on a graph input's memory.
struct SeenKey {
  std::vector<int64_t> key;
  std::vector<std::pair<size_t, size_t>> in_place;  // (graph input, output)
};

struct GraphCache {
  hipdnn_ep_state_t* state;
  std::list<std::unique_ptr<CapturedGraph>> graphs;     // most recently used first
  std::vector<std::unique_ptr<CapturedGraph>> retired;  // evicted, freed at the next synchronize
  std::list<SeenKey> seen;                              // keys run once without a graph
  SeenKey* pending = nullptr;                           // the entry of the run in progress (graph_note_run)
  std::unordered_map<uint64_t, std::string> refused;    // artifact serial -> why it cannot be captured
};

namespace {

uint64_t bytes_of(const hipdnn_ep_tensor_ref_t& t) {
  uint64_t n = kernels::dtype_size(t.dtype);
  for (int32_t d = 0; d < t.rank; ++d) n *= static_cast<uint64_t>(t.dims[d]);
  return n;
}

// What a replay must match: the artifact, every input's dtype and dims, and each weight's pointer
// (graph inputs are copied into the graph's staging buffers, weights are used where they are).
void make_key(const hipdnn_ep_artifact* artifact, const hipdnn_ep_tensor_ref_t* inputs, std::vector<int64_t>* key) {
  key->clear();
  key->push_back(static_cast<int64_t>(artifact->serial));
  for (size_t i = 0; i < artifact->inputs.size(); ++i) {
    const hipdnn_ep_tensor_ref_t& t = inputs[i];
    key->push_back((static_cast<int64_t>(t.dtype) << 32) | static_cast<uint32_t>(t.rank));
    key->insert(key->end(), t.dims, t.dims + t.rank);
    if (i >= artifact->n_graph_inputs) key->push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(t.data)));
  }
}

// Frees what a graph owns; the caller holds memory_mutex and the device is done with it.
void destroy(hipdnn_ep_state_t* state, CapturedGraph* g) {
  if (g->exec != nullptr) (void)hipGraphExecDestroy(g->exec);
  if (g->pool) g->pool->release_all();
  if (g->host_scratch) g->host_scratch->release_all();
  for (void* p : g->held) (void)state->allocator->free(p, state->stream.load());
  g->held.clear();
  for (void* p : g->constants) state->device->release_host(p);
  g->constants.clear();
}

GraphCache& cache(hipdnn_ep_state_t* state) {
  if (!state->graphs) state->graphs.reset(new GraphCache{state, {}, {}, {}, nullptr, {}});
  return *state->graphs;
}

bool uncaptured(hipdnn_ep_state_t* state, std::string why) {
  ++state->graph_stats.uncaptured_runs;
  state->graph_stats.last_uncaptured = std::move(why);
  return false;
}

// Whether graph g can run these inputs: its key matched, and the inputs it uses in place are where they were.
bool matches(const CapturedGraph& g, const std::vector<int64_t>& key, const hipdnn_ep_tensor_ref_t* inputs) {
  if (g.key != key) return false;
  for (const auto& [i, data] : g.in_place_inputs) {
    if (inputs[i].data != data) return false;
  }
  return true;
}

void set_output_ref(CapturedGraph::Output& o, hipdnn_ep_tensor_ref_t* ref) {
  *ref = hipdnn_ep_tensor_ref_t{nullptr, o.dims.data(), static_cast<int32_t>(o.dims.size()), o.dtype};
}

// The outputs graph g writes in place: the host must place each where it was at the capture. False
// (the run then made without the graph) when it places one elsewhere; *status holds a failure.
bool place_in_place_outputs(hipdnn_ep_state_t* state, CapturedGraph& g, hipdnn_ep_tensor_ref_t* outputs,
                            int32_t* status) {
  *status = HIPDNN_EP_STATUS_OK;
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    CapturedGraph::Output& o = g.outputs[i];
    if (!o.in_place) continue;
    set_output_ref(o, &outputs[i]);
    *status = hipdnn_ep_output_alloc(state, outputs, static_cast<int32_t>(i), o.bytes);
    if (*status != HIPDNN_EP_STATUS_OK) return true;
    if (outputs[i].data == o.data) continue;
    // Without the host's allocator the block is new (it cannot be a live input's memory): give it back.
    if (state->output_allocator == nullptr) (void)hipdnn_ep_free(state, outputs[i].data);
    return false;
  }
  return true;
}

// One run from graph g: inputs into its staging buffers, the launch, outputs into the host's memory
// (those written in place are placed already).
int32_t launch(hipdnn_ep_state_t* state, CapturedGraph& g, const hipdnn_ep_tensor_ref_t* inputs,
               hipdnn_ep_tensor_ref_t* outputs) {
  const hipStream_t stream = current_stream(state);
  for (size_t i = 0; i < g.staging.size(); ++i) {
    if (g.staging_bytes[i] == 0) continue;
    if (hipError_t e = hipMemcpyAsync(g.staging[i], inputs[i].data, g.staging_bytes[i], hipMemcpyDefault, stream);
        e != hipSuccess) {
      (void)hipGetLastError();
      return set_error(HIPDNN_EP_STATUS_INTERNAL, gpu_error_text("graph replay: copying input " + std::to_string(i), e));
    }
  }
  if (hipError_t e = hipGraphLaunch(g.exec, stream); e != hipSuccess) {
    (void)hipGetLastError();
    return set_error(HIPDNN_EP_STATUS_INTERNAL, gpu_error_text("graph replay: launching the graph", e));
  }
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    CapturedGraph::Output& o = g.outputs[i];
    if (o.in_place) continue;
    set_output_ref(o, &outputs[i]);
    if (int32_t status = hipdnn_ep_output_alloc(state, outputs, static_cast<int32_t>(i), o.bytes);
        status != HIPDNN_EP_STATUS_OK) {
      return status;
    }
    if (o.bytes == 0) continue;
    if (hipError_t e = hipMemcpyAsync(outputs[i].data, o.data, o.bytes, hipMemcpyDefault, stream); e != hipSuccess) {
      (void)hipGetLastError();
      return set_error(HIPDNN_EP_STATUS_INTERNAL, gpu_error_text("graph replay: copying output " + std::to_string(i), e));
    }
  }
  return HIPDNN_EP_STATUS_OK;
}

// Captures artifact's program into a new graph; nullptr (with the reason in *why) when it cannot.
// in_place: (graph input, output) pairs the host placed on the same memory in the run before.
std::unique_ptr<CapturedGraph> capture(hipdnn_ep_artifact* artifact, hipdnn_ep_state_t* state,
                                       const hipdnn_ep_tensor_ref_t* inputs,
                                       const std::vector<std::pair<size_t, size_t>>& in_place, std::string* why) {
  auto g = std::make_unique<CapturedGraph>();
  if (Dl_info info{}; dladdr(reinterpret_cast<void*>(artifact->entry), &info) != 0) g->program_base = info.dli_fbase;
  g->in_place_outputs.assign(artifact->outputs.size(), nullptr);
  g->in_place_bytes.assign(artifact->outputs.size(), 0);
  std::vector<bool> used_in_place(artifact->n_graph_inputs, false);
  for (const auto& [i, j] : in_place) {
    used_in_place[i] = true;
    g->in_place_inputs.emplace_back(i, inputs[i].data);
    g->in_place_outputs[j] = inputs[i].data;
    g->in_place_bytes[j] = bytes_of(inputs[i]);
  }
  hipdnn_ep_state* raw = state;
  g->pool = std::make_unique<GrowOnDemandBlock>(
      [raw](uint64_t size, void** out) { return raw->allocator->allocate(size, raw->stream.load(), out); },
      [raw](void* ptr) { raw->allocator->free(ptr, raw->stream.load()); }, state->alignment);
  g->host_scratch = std::make_unique<GrowOnDemandBlock>(
      [raw](uint64_t size, void** out) { return raw->device->allocate_host(size, raw->alignment, out); },
      [raw](void* ptr) { raw->device->release_host(ptr); }, state->alignment);
  std::vector<hipdnn_ep_tensor_ref_t> staged(inputs, inputs + artifact->inputs.size());
  {
    std::lock_guard<std::mutex> lock(state->memory_mutex);
    for (size_t i = 0; i < artifact->n_graph_inputs; ++i) {
      if (used_in_place[i]) {  // staged[i] stays the host's memory
        g->staging.push_back(nullptr);
        g->staging_bytes.push_back(0);
        continue;
      }
      const uint64_t bytes = bytes_of(inputs[i]);
      void* p = nullptr;
      if (bytes > 0) {
        if (state->allocator->allocate(bytes, state->stream.load(), &p) != HIPDNN_EP_STATUS_OK) {
          *why = std::string("no memory for the graph's input buffers: ") + hipdnn_ep_last_error();
          destroy(state, g.get());
          return nullptr;
        }
        g->held.push_back(p);
      }
      g->staging.push_back(p);
      g->staging_bytes.push_back(bytes);
      staged[i].data = p;
    }
    // The program's pool, host scratch and temporaries are the graph's while it is captured.
    std::swap(state->pool, g->pool);
    std::swap(state->host_scratch, g->host_scratch);
    state->allocator->set_hold(&g->held);
  }
  state->capture = g.get();
  state->capture_refusal.clear();
  const hipStream_t stream = current_stream(state);
  std::vector<hipdnn_ep_tensor_ref_t> outs(artifact->outputs.size(), hipdnn_ep_tensor_ref_t{nullptr, nullptr, -1, 0});
  hipError_t began = hipStreamBeginCapture(stream, hipStreamCaptureModeRelaxed);
  int32_t status = HIPDNN_EP_STATUS_INTERNAL;
  hipGraph_t graph = nullptr;
  hipError_t ended = hipSuccess;
  if (began == hipSuccess) {
    status = artifact->entry(state, staged.data(), outs.data());
    ended = hipStreamEndCapture(stream, &graph);
  }
  (void)hipGetLastError();
  state->capture = nullptr;
  {
    std::lock_guard<std::mutex> lock(state->memory_mutex);
    state->allocator->set_hold(nullptr);
    std::swap(state->pool, g->pool);
    std::swap(state->host_scratch, g->host_scratch);
  }
  hipError_t instantiated = hipSuccess;
  if (began == hipSuccess && status == HIPDNN_EP_STATUS_OK && ended == hipSuccess && graph != nullptr) {
    instantiated = hipGraphInstantiateWithFlags(&g->exec, graph, 0);
    (void)hipGetLastError();
  }
  if (graph != nullptr) (void)hipGraphDestroy(graph);
  if (g->exec == nullptr) {
    if (!state->capture_refusal.empty()) *why = state->capture_refusal;
    else if (began != hipSuccess) *why = gpu_error_text("the stream cannot be captured", began);
    else if (status != HIPDNN_EP_STATUS_OK) *why = std::string("the program failed while captured: ") + hipdnn_ep_last_error();
    else if (ended != hipSuccess) *why = gpu_error_text("ending the capture failed", ended);
    else *why = gpu_error_text("instantiating the graph failed", instantiated);
    std::lock_guard<std::mutex> lock(state->memory_mutex);
    destroy(state, g.get());
    return nullptr;
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    CapturedGraph::Output o;
    o.dims.assign(outs[i].dims, outs[i].dims + std::max(outs[i].rank, 0));
    o.dtype = outs[i].dtype;
    o.data = outs[i].data;
    o.bytes = bytes_of(outs[i]);
    o.in_place = o.data != nullptr && o.data == g->in_place_outputs[i];
    g->outputs.push_back(std::move(o));
  }
  return g;
}

}  // namespace

// With the state's memory_mutex held and the device synchronized (hipdnn_ep_state_destroy).
void GraphCacheDeleter::operator()(GraphCache* c) const {
  if (c == nullptr) return;
  for (auto& g : c->graphs) destroy(c->state, g.get());
  for (auto& g : c->retired) destroy(c->state, g.get());
  delete c;
}

bool graph_run(hipdnn_ep_artifact* artifact, hipdnn_ep_state_t* state, const hipdnn_ep_tensor_ref_t* inputs,
               hipdnn_ep_tensor_ref_t* outputs, int32_t* status) {
  if (!state->graph_capture) return uncaptured(state, "graph capture is off for this state");
  if (!artifact->writes_in_place) {
    return uncaptured(state, "the program was compiled for ABI 1.2 or older and allocates its own outputs");
  }
  GraphCache& c = cache(state);
  c.pending = nullptr;
  if (auto it = c.refused.find(artifact->serial); it != c.refused.end()) return uncaptured(state, it->second);
  thread_local std::vector<int64_t> key;
  make_key(artifact, inputs, &key);
  for (auto it = c.graphs.begin(); it != c.graphs.end(); ++it) {
    if (!matches(**it, key, inputs)) continue;
    if (!place_in_place_outputs(state, **it, outputs, status)) {
      return uncaptured(state, "the host placed an output the graph writes in place of an input elsewhere");
    }
    c.graphs.splice(c.graphs.begin(), c.graphs, it);
    ++state->graph_stats.replays;
    if (*status == HIPDNN_EP_STATUS_OK) *status = launch(state, *c.graphs.front(), inputs, outputs);
    return true;
  }
  // Captured when a key repeats: a shape seen once may never come back.
  auto seen = std::find_if(c.seen.begin(), c.seen.end(), [](const SeenKey& s) { return s.key == key; });
  if (seen == c.seen.end()) {
    c.seen.push_front(SeenKey{key, {}});
    if (c.seen.size() > 2 * static_cast<size_t>(state->graph_cache_size)) c.seen.pop_back();
    c.pending = &c.seen.front();
    return uncaptured(state, "first run with these input shapes (captured when they repeat)");
  }
  const std::vector<std::pair<size_t, size_t>> in_place = std::move(seen->in_place);
  c.seen.erase(seen);
  std::string why;
  std::unique_ptr<CapturedGraph> g = capture(artifact, state, inputs, in_place, &why);
  set_error(HIPDNN_EP_STATUS_OK, "");
  if (!g) {
    // A refused program stays refused on this state; another failure is reported by the plain run.
    if (!state->capture_refusal.empty()) c.refused[artifact->serial] = why;
    state->capture_refusal.clear();
    return uncaptured(state, "not captured: " + why);
  }
  g->key = key;
  ++state->graph_stats.captures;
  c.graphs.push_front(std::move(g));
  if (c.graphs.size() > state->graph_cache_size) {
    // hipdnn_ep_synchronize, callable from any thread, frees the retired graphs under this lock
    std::lock_guard<std::mutex> lock(state->memory_mutex);
    while (c.graphs.size() > state->graph_cache_size) {
      c.retired.push_back(std::move(c.graphs.back()));
      c.graphs.pop_back();
      ++state->graph_stats.evictions;
    }
  }
  if (!place_in_place_outputs(state, *c.graphs.front(), outputs, status)) {
    return uncaptured(state, "the host placed an output the graph writes in place of an input elsewhere");
  }
  if (*status == HIPDNN_EP_STATUS_OK) *status = launch(state, *c.graphs.front(), inputs, outputs);
  return true;
}

void graph_note_run(hipdnn_ep_state_t* state, const hipdnn_ep_tensor_ref_t* inputs, size_t n_graph_inputs,
                    const hipdnn_ep_tensor_ref_t* outputs, size_t n_outputs) {
  if (!state->graphs || state->graphs->pending == nullptr) return;
  SeenKey& seen = *state->graphs->pending;
  state->graphs->pending = nullptr;
  for (size_t j = 0; j < n_outputs; ++j) {
    if (outputs[j].data == nullptr) continue;
    for (size_t i = 0; i < n_graph_inputs; ++i) {
      if (inputs[i].data == outputs[j].data && bytes_of(inputs[i]) == bytes_of(outputs[j])) {
        seen.in_place.emplace_back(i, j);
        break;
      }
    }
  }
}

int32_t graph_output_alloc(hipdnn_ep_state_t* state, hipdnn_ep_tensor_ref_t* outputs, int32_t index, uint64_t size) {
  const auto k = static_cast<size_t>(index);
  if (void* in_place = state->capture->in_place_outputs[k]; in_place != nullptr && state->capture->in_place_bytes[k] == size) {
    outputs[index].data = in_place;  // where the host placed it in the run before: written in place
    return HIPDNN_EP_STATUS_OK;
  }
  std::lock_guard<std::mutex> lock(state->memory_mutex);
  void* p = nullptr;
  if (size > 0) {
    if (int32_t status = state->allocator->allocate(size, state->stream.load(), &p); status != HIPDNN_EP_STATUS_OK) {
      return status;
    }
    state->capture->held.push_back(p);
  }
  outputs[index].data = p;
  return HIPDNN_EP_STATUS_OK;
}

int32_t graph_capture_copy(hipdnn_ep_state_t* state, void* dst, const void* src, uint64_t size, int32_t kind) {
  const char* refusal = nullptr;
  hipMemcpyKind direction = hipMemcpyDeviceToDevice;
  if (kind == HIPDNN_EP_MEMCPY_KIND_DEVICE_TO_HOST) {
    refusal = "the program reads device data on the host (hipdnn_ep_memcpy DEVICE_TO_HOST: an input whose values "
              "set shapes, such as a Reshape target or Slice starts fed as a graph input)";
  } else if (kind == HIPDNN_EP_MEMCPY_KIND_HOST_TO_HOST) {
    refusal = "the program copies host memory after device work (hipdnn_ep_memcpy HOST_TO_HOST)";
  } else if (kind == HIPDNN_EP_MEMCPY_KIND_HOST_TO_DEVICE) {
    // The graph's own host scratch keeps the values a replay copies; other host memory may not.
    bool owned = false;
    {
      std::lock_guard<std::mutex> lock(state->memory_mutex);
      owned = state->host_scratch->contains(src, size);
    }
    direction = hipMemcpyHostToDevice;
    Dl_info info{};
    if (!owned && state->capture->program_base != nullptr && dladdr(src, &info) != 0 &&
        info.dli_fbase == state->capture->program_base) {
      // The program's constant data (a static value a kernel reads on the device): read-only, so a pinned
      // copy made now, which the graph owns, holds what every replay copies.
      void* pinned = nullptr;
      if (int32_t status = state->device->allocate_host(size, state->alignment, &pinned);
          status != HIPDNN_EP_STATUS_OK) {
        return status;
      }
      state->capture->constants.push_back(pinned);
      std::memcpy(pinned, src, size);
      src = pinned;
      owned = true;
    }
    if (!owned) refusal = "the program copies host memory outside its host scratch to the device";
  }
  if (refusal != nullptr) {
    state->capture_refusal = refusal;
    return set_error(HIPDNN_EP_STATUS_UNSUPPORTED, std::string(refusal) + ", which a graph cannot capture");
  }
  if (hipError_t e = hipMemcpyAsync(dst, src, size, direction, current_stream(state)); e != hipSuccess) {
    (void)hipGetLastError();
    return set_error(HIPDNN_EP_STATUS_INTERNAL, gpu_error_text("hipdnn_ep_memcpy during a graph capture", e));
  }
  return HIPDNN_EP_STATUS_OK;
}

void graph_release_retired(hipdnn_ep_state_t* state) {
  if (!state->graphs) return;
  for (auto& g : state->graphs->retired) destroy(state, g.get());
  state->graphs->retired.clear();
}

uint64_t graph_count(const hipdnn_ep_state_t* state) { return state->graphs ? state->graphs->graphs.size() : 0; }

}  // namespace hipdnn_ep
