#include "compiled_program.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>

#include "ep_options.h"
#include "ep_stream.h"
#include "hipdnn_ep/metadata_schema.h"
#include "json.h"

namespace hipdnn_ep {

namespace {

// Which program input an entry of the metadata's `inputs`/`weights` is. Its dims are the runtime's to
// read (hipdnn_ep_artifact_run_into checks every input against them): the EP hands over the shapes
// ORT has, of the fused node's inputs and of the initializers it keeps.
template <class Tensor>  // metadata::Inputs or metadata::Weights (generated from packages/abi/metadata.toml)
ArgSpec SpecFromMetadata(const Tensor& v) {
  ArgSpec a;
  a.name = v.name;
  a.dtype = static_cast<int32_t>(v.dtype);
  return a;
}

}  // namespace

// Frees runtime allocations made during one Compute, whatever happens. Frees are ordered on the
// state's stream (work still queued there finishes first), so they need no wait of their own: a
// Run waits for the device once, at its end.
struct RunAllocations {
  const RuntimeApi& rt;
  hipdnn_ep_state_t* state;
  std::vector<void*> ptrs;
  void FreeAll() {
    for (void* p : ptrs) rt.hipdnn_ep_free(state, p);
    ptrs.clear();
  }
  ~RunAllocations() { FreeAll(); }
};

int32_t CompiledProgram::OrtOutputs::Alloc(void* context, int32_t index, const hipdnn_ep_tensor_ref_t* output,
                                           uint64_t size, void** out_data) noexcept {
  auto* self = static_cast<OrtOutputs*>(context);
  try {
    self->Provide(index, *output, size, out_data);
    return HIPDNN_EP_STATUS_OK;
  } catch (const std::exception& e) {
    self->error = e.what();
    return HIPDNN_EP_STATUS_INVALID_ARGUMENT;
  }
}

void CompiledProgram::OrtOutputs::Provide(int32_t index, const hipdnn_ep_tensor_ref_t& o, uint64_t size,
                                          void** out_data) {
  const CompiledProgram& p = *program;
  const OrtApi& ort = p.api_.ort;
  const std::string& name = p.outputs_.at(static_cast<size_t>(index));
  OrtValue* out = nullptr;
  ThrowIfError(ort, ort.KernelContext_GetOutput(ctx, static_cast<size_t>(index), o.dims, static_cast<size_t>(o.rank),
                                                &out));
  OrtTensorTypeAndShapeInfo* oinfo = nullptr;
  ThrowIfError(ort, ort.GetTensorTypeAndShape(out, &oinfo));
  ONNXTensorElementDataType oet;
  OrtStatus* st = ort.GetTensorElementType(oinfo, &oet);
  ort.ReleaseTensorTypeAndShapeInfo(oinfo);
  ThrowIfError(ort, st);
  if (static_cast<int32_t>(oet) != o.dtype) {
    throw EpError("hipdnn-ep: node '" + p.node_name_ + "': the artifact produces output '" + name + "' with dtype " +
                  std::to_string(o.dtype) + ", the graph declares " + std::to_string(oet) +
                  "; the artifact does not belong to this model: recompile it");
  }
  void* dst = nullptr;
  ThrowIfError(ort, ort.GetTensorMutableData(out, &dst));
  const OrtMemoryDevice* mem = p.api_.ep.Value_GetMemoryDevice(out);
  const bool dst_host = mem == nullptr || p.api_.ep.MemoryDevice_GetDeviceType(mem) == OrtMemoryInfoDeviceType_CPU;
  if (p.backend_ != HIPDNN_EP_BACKEND_CPU && dst_host) {
    // ORT placed this output in host memory: the program writes a device block, copied after the run.
    void* device = nullptr;
    p.CheckRun("allocating an output", p.rt_->hipdnn_ep_malloc(state, size, &device));
    allocs->ptrs.push_back(device);
    size_t bytes = ElementSize(o.dtype);
    for (int32_t d = 0; d < o.rank; ++d) bytes *= static_cast<size_t>(o.dims[d]);
    if (bytes > 0) staged.push_back({dst, device, bytes});
    dst = device;
  }
  *out_data = dst;
}

CompiledProgram::CompiledProgram(const ApiPtrs& api, std::shared_ptr<RuntimeApi> rt,
                                 std::shared_ptr<StatePool> states, int32_t backend, const std::string& node_name,
                                 std::unique_ptr<LoadedArtifact> code, const SubgraphModel& model,
                                 std::shared_ptr<RuntimeState> weights)
    : OrtNodeComputeInfo{}, api_(api), rt_(std::move(rt)), states_(std::move(states)), weights_(std::move(weights)),
      backend_(backend),
      node_name_(node_name), code_(std::move(code)), path_(code_->origin()) {
  static std::atomic<uint64_t> next_id{1};
  id_ = next_id.fetch_add(1);
  ort_version_supported = ORT_API_VERSION;
  CreateState = CreateStateImpl;
  Compute = ComputeImpl;
  ReleaseState = ReleaseStateImpl;

  const std::string& path = path_;
  try {
    rt_->Check("hipdnn_ep_artifact_open", rt_->hipdnn_ep_artifact_open(code_->path().c_str(), &artifact_));
  } catch (const EpError& e) {
    // The runtime names the verified copy it opened; say where it came from.
    throw EpError("hipdnn-ep: cannot open the artifact " + path + " (verified copy " + code_->path() +
                  "): " + e.what(), e.code());
  }
  const char* meta_text = rt_->hipdnn_ep_artifact_metadata(artifact_);
  json::Json meta;
  try {
    meta = json::Parse(meta_text ? meta_text : "", json::kMaxMetadataBytes, "its metadata");
  } catch (const std::exception& e) {
    throw EpError("hipdnn-ep: artifact " + path + " has unreadable metadata: " + e.what());
  }
  // The metadata formats this EP reads, from the manifest it was built with (a runtime of
  // ABI 1.2 or older opens an artifact without checking its format).
  const json::Json& format = json::Member(meta, "format");
  const int64_t format_number = json::Int(format, -1);
  if (!format.is_number() || format_number < HIPDNN_EP_ARTIFACT_OLDEST_FORMAT ||
      format_number > HIPDNN_EP_ARTIFACT_FORMAT) {
    throw EpError("hipdnn-ep: artifact " + path + " has metadata format " +
                  (format.is_number() ? format.dump() : std::string("(none)")) +
                  "; this hipdnn-ep reads formats " + std::to_string(HIPDNN_EP_ARTIFACT_OLDEST_FORMAT) + " to " +
                  std::to_string(HIPDNN_EP_ARTIFACT_FORMAT) +
                  ": install hipdnn-ep, hipdnn-ep-compiler and hipdnn-ep-runtime versions that match, then compile "
                  "the model again (for an EPContext model: export it again)");
  }
  // The format read, the rest is read through the schema's generated reader.
  metadata::Metadata fields;
  std::string schema_error;
  if (!metadata::Read(meta, &fields, &schema_error)) {
    throw EpError("hipdnn-ep: artifact " + path + " has metadata that does not follow the artifact metadata schema " +
                  std::to_string(metadata::kMajor) + "." + std::to_string(metadata::kMinor) + ": " + schema_error +
                  "; compile the model again (for an EPContext model: export it again)");
  }
  for (const metadata::Inputs& v : fields.inputs) args_.push_back(SpecFromMetadata(v));
  for (const metadata::Weights& v : fields.weights) args_.push_back(SpecFromMetadata(v));
  for (const metadata::Outputs& v : fields.outputs) outputs_.push_back(v.name);
  if (outputs_.size() != model.outputs.size()) {
    throw EpError("hipdnn-ep: artifact " + path + " has " + std::to_string(outputs_.size()) +
                  " outputs, the fused node '" + node_name + "' has " + std::to_string(model.outputs.size()));
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (outputs_[i] != model.outputs[i]) {
      throw EpError("hipdnn-ep: artifact output " + std::to_string(i) + " is '" + outputs_[i] +
                    "', the fused node's is '" + model.outputs[i] + "'");
    }
  }
  for (ArgSpec& a : args_) {
    for (size_t k = 0; k < model.kernel_inputs.size(); ++k) {
      if (model.kernel_inputs[k] == a.name) a.kernel_input = static_cast<int>(k);
    }
    if (a.kernel_input >= 0) continue;
    const InitializerRef* init = nullptr;
    for (const InitializerRef& r : model.initializers) {
      if (r.name == a.name) init = &r;
    }
    if (init == nullptr) {
      throw EpError("hipdnn-ep: artifact " + path + " needs '" + a.name +
                    "', which is neither an input nor an initializer of the fused node '" + node_name + "'");
    }
    // ORT guarantees initializer memory only during Compile: a weight stored in an external data file
    // is kept as a mapping of that file (nothing is read until a run uploads or reads it), anything
    // else as a copy.
    a.host_dims = init->dims;
    a.host_size = init->size;
    const ExternalLocation& ext = init->external;
    if (!ext.file.empty() && ext.length == init->size) {
      try {
        std::shared_ptr<const MappedFile> file = MappedFile::Open(ext.file);
        if (const char* bytes = file->Range(ext.offset, ext.length)) {
          a.mapped = std::move(file);
          a.host_data = bytes;
        }
      } catch (const EpError&) {  // not mappable (a file gone or replaced): copied below
      }
    }
    if (a.host_data == nullptr) {
      const char* p = static_cast<const char*>(init->data);
      a.host_copy.assign(p, p + init->size);
      a.host_data = a.host_copy.data();
    }
  }
}

CompiledProgram::~CompiledProgram() {
  if (weights_) weights_->ReleaseDeviceCopies(id_);
  if (artifact_) rt_->hipdnn_ep_artifact_close(artifact_);
}

OrtStatus* ORT_API_CALL CompiledProgram::CreateStateImpl(OrtNodeComputeInfo* this_ptr, OrtNodeComputeContext*,
                                                         void** state) noexcept {
  *state = this_ptr;  // all per-run state lives in Compute
  return nullptr;
}

void ORT_API_CALL CompiledProgram::ReleaseStateImpl(OrtNodeComputeInfo*, void*) noexcept {}

OrtStatus* ORT_API_CALL CompiledProgram::ComputeImpl(OrtNodeComputeInfo* this_ptr, void*,
                                                     OrtKernelContext* kernel_context) noexcept {
  auto* self = static_cast<CompiledProgram*>(this_ptr);
  return Guard(self->api_.ort, [&] { self->Run(kernel_context); });
}

void CompiledProgram::CheckRun(const char* what, int32_t rc) const {
  if (rc == HIPDNN_EP_STATUS_OK) return;
  const std::string where = std::string(what) + " of node '" + node_name_ + "'";
  if (rc != HIPDNN_EP_STATUS_OUT_OF_MEMORY) throw EpError(rt_->Error(where.c_str(), rc));
  const char* detail = rt_->hipdnn_ep_last_error();
  const uint64_t limit = states_->config().memory_limit_bytes;
  std::string advice =
      limit != 0 ? "Raise the EP option " + std::string(options::kMemoryLimit) + " (now " + std::to_string(limit) +
                       " bytes per runtime state) or run smaller inputs."
                 : "The device cannot provide that much memory; run smaller inputs or free device memory (the EP "
                   "option " + std::string(options::kMemoryLimit) + " bounds what this EP takes).";
  throw EpError(std::string("hipdnn-ep: ") + kEpName + " is out of memory " + where + ": " +
                    (detail && *detail ? detail : "no details from the runtime") + ". " + advice,
                ORT_RUNTIME_EXCEPTION);
}

// Points a state at a stream for one Compute, and back at its own stream after (a handle of ORT's
// stream must not outlive the Run in a pooled state).
struct StreamScope {
  const RuntimeApi& rt;
  hipdnn_ep_state_t* state;
  StreamScope(const RuntimeApi& r, hipdnn_ep_state_t* s, uint64_t stream) : rt(r), state(s) {
    rt.Check("hipdnn_ep_state_set_stream", rt.hipdnn_ep_state_set_stream(state, stream));
  }
  ~StreamScope() { (void)rt.hipdnn_ep_state_set_stream(state, 0); }
};

uint64_t CompiledProgram::ComputeStream(OrtKernelContext* ctx) {
  void* handle = nullptr;
  if (OrtStatus* st = api_.ort.KernelContext_GetGPUComputeStream(ctx, &handle); st != nullptr) {
    api_.ort.ReleaseStatus(st);
    handle = nullptr;
  }
  const uint64_t stream = reinterpret_cast<uint64_t>(handle);
  const bool own = stream != 0 && OwnStreams::Get().Contains(stream);
  if (!stream_noted_.exchange(true)) {
    // Said once per node: which stream its Runs are ordered on.
    const OrtLogger* logger = nullptr;
    if (OrtStatus* st = api_.ort.KernelContext_GetLogger(ctx, &logger); st != nullptr) {
      api_.ort.ReleaseStatus(st);
      logger = nullptr;
    }
    if (logger != nullptr) {
      char hex[32];
      std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(stream));
      Log(api_.ort, *logger, ORT_LOGGING_LEVEL_INFO,
          "hipdnn-ep: node '" + node_name_ + "' runs on " +
              (own ? "ONNX Runtime's stream " + std::string(hex) + ", created by hipdnn-ep"
                   : stream != 0 ? "the runtime state's own stream: ONNX Runtime's stream " + std::string(hex) +
                                       " was not created by hipdnn-ep"
                                 : std::string("the runtime state's own stream: ONNX Runtime passed none")));
    }
  }
  return own ? stream : 0;
}

void CompiledProgram::Run(OrtKernelContext* ctx) {
  const OrtApi& ort = api_.ort;
  StatePool::Handle state = states_->Acquire();
  const bool device_backend = backend_ != HIPDNN_EP_BACKEND_CPU;
  // GPU backends: the Run's work is ordered on the stream ORT hands this node (0: the state's own).
  const uint64_t stream = device_backend ? ComputeStream(ctx) : 0;
  std::optional<StreamScope> on_stream;
  if (stream != 0) on_stream.emplace(*rt_, state->get(), stream);
  RunAllocations allocs{*rt_, state->get(), {}};

  std::vector<std::vector<int64_t>> dims(args_.size());
  std::vector<hipdnn_ep_tensor_ref_t> inputs(args_.size());
  for (size_t i = 0; i < args_.size(); ++i) {
    const ArgSpec& a = args_[i];
    const void* data = nullptr;
    int32_t dtype = a.dtype;
    bool on_host = true;
    if (a.kernel_input >= 0) {
      const OrtValue* v = nullptr;
      ThrowIfError(ort, ort.KernelContext_GetInput(ctx, static_cast<size_t>(a.kernel_input), &v));
      if (v == nullptr) throw EpError("hipdnn-ep: node '" + node_name_ + "': input '" + a.name + "' is missing");
      TensorData tensor = ReadTensorValue(ort, v);
      dims[i] = std::move(tensor.dims);
      dtype = tensor.dtype;
      data = tensor.data;
      const OrtMemoryDevice* mem = api_.ep.Value_GetMemoryDevice(v);
      on_host = mem == nullptr || api_.ep.MemoryDevice_GetDeviceType(mem) == OrtMemoryInfoDeviceType_CPU;
    } else {
      dims[i] = a.host_dims;
      data = a.host_data;
      if (weights_ && a.host_size > 0) {
        // A weight of a GPU backend (or of the CPU backend under the host-as-device test hook): uploaded
        // once for the device by its weights state, then used in place.
        void* device = nullptr;
        bool uploaded = false;
        CheckRun("uploading a weight",
                 weights_->DeviceCopy(id_, i, data, a.host_size, &device, &uploaded, a.mapped.get()));
        // Held once for the device: the host pages of a mapped weight are not needed again.
        if (uploaded && a.mapped) a.mapped->DropPages(a.host_data, a.host_size);
        data = device;
        on_host = false;
      }
    }
    // dtype, rank and dims are checked once, by the runtime (hipdnn_ep_artifact_run_into)
    size_t bytes = ElementSize(dtype);
    for (int64_t d : dims[i]) bytes *= static_cast<size_t>(d);
    void* ptr = const_cast<void*>(data);
    if (device_backend && on_host && bytes > 0) {
      // Inputs produced by CPU nodes (or kept on the host) are staged.
      CheckRun("staging an input", rt_->hipdnn_ep_malloc(state->get(), bytes, &ptr));
      allocs.ptrs.push_back(ptr);
      rt_->Check("hipdnn_ep_memcpy",
                 rt_->hipdnn_ep_memcpy(state->get(), ptr, data, bytes, HIPDNN_EP_MEMCPY_KIND_HOST_TO_DEVICE));
    }
    inputs[i] = {ptr, dims[i].data(), static_cast<int32_t>(dims[i].size()), dtype};
  }

  // Until the log said whether this node is replayed from a graph: the state's graph figures before the run.
  const bool note = device_backend && !graph_noted_.load(std::memory_order_relaxed);
  uint64_t graph_runs_before = 0;
  if (note) graph_runs_before = GraphRuns(state->get(), nullptr);
  // The program asks for each output once it knows the output's dims; OrtOutputs hands it ORT's buffer.
  OrtOutputs sink{this, ctx, state->get(), &allocs, {}, {}};
  hipdnn_ep_output_allocator_t allocator{sizeof(hipdnn_ep_output_allocator_t), &OrtOutputs::Alloc, &sink};
  std::vector<hipdnn_ep_tensor_ref_t> outputs(outputs_.size(), hipdnn_ep_tensor_ref_t{nullptr, nullptr, -1, 0});
  int32_t rc = rt_->hipdnn_ep_artifact_run_into(artifact_, state->get(), inputs.data(), outputs.data(), &allocator);
  if (rc != HIPDNN_EP_STATUS_OK && !sink.error.empty()) throw EpError(sink.error);
  CheckRun("running the artifact", rc);
  for (const OrtOutputs::Staged& s : sink.staged) {
    rt_->Check("hipdnn_ep_memcpy", rt_->hipdnn_ep_memcpy(state->get(), s.host, s.device, s.bytes,
                                                         HIPDNN_EP_MEMCPY_KIND_DEVICE_TO_HOST));
  }
  allocs.FreeAll();
  // The one wait of a Run, on its stream: ORT reads the outputs once Compute returns, and the
  // runtime's memory rules (blocks freed here reused on other streams, retired scratch and pool
  // blocks, evicted graphs) need the state's work done. All of it is on this stream, so the
  // runtime waits for this stream only, not the whole device (hipdnn_ep_stream_synchronize).
  rt_->Check("hipdnn_ep_stream_synchronize", rt_->hipdnn_ep_stream_synchronize(state->get(), stream));
  if (note) NoteGraph(ctx, state->get(), graph_runs_before);
}

uint64_t CompiledProgram::GraphRuns(hipdnn_ep_state_t* state, std::string* last_uncaptured) const {
  hipdnn_ep_graph_stats_t stats{};
  stats.struct_size = sizeof(stats);
  if (rt_->hipdnn_ep_graph_stats(state, &stats) != HIPDNN_EP_STATUS_OK) return 0;
  if (last_uncaptured != nullptr) *last_uncaptured = stats.last_uncaptured ? stats.last_uncaptured : "";
  return stats.captures + stats.replays;
}

void CompiledProgram::NoteGraph(OrtKernelContext* ctx, hipdnn_ep_state_t* state, uint64_t graph_runs_before) {
  std::string why;
  const uint64_t graph_runs = GraphRuns(state, &why);
  // Said once per node: that it is replayed from a graph, or why it never will be.
  std::string note;
  OrtLoggingLevel level = ORT_LOGGING_LEVEL_INFO;
  if (graph_runs > graph_runs_before) {
    note = "replayed from a captured graph while its input shapes repeat";
  } else if (why.rfind("first run", 0) != 0) {
    note = "runs without a graph: " + why;
    if (why.rfind("not captured", 0) == 0) level = ORT_LOGGING_LEVEL_WARNING;
  } else {
    return;  // not decided yet: the shapes have not repeated
  }
  if (graph_noted_.exchange(true)) return;
  const OrtLogger* logger = nullptr;
  if (OrtStatus* st = api_.ort.KernelContext_GetLogger(ctx, &logger); st != nullptr) {
    api_.ort.ReleaseStatus(st);
    return;
  }
  if (logger != nullptr) Log(api_.ort, *logger, level, "hipdnn-ep: node '" + node_name_ + "' " + note);
}

}  // namespace hipdnn_ep
