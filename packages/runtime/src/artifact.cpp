// hipdnn_ep_artifact_*: open (check the embedded metadata, then load),
// metadata, run (validate inputs against the metadata, call the program) and
// close.
#include "artifact.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <atomic>
#include <cctype>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "artifact_check.h"
#include "elf_section.h"
#include "error.h"
#include "kernels/tensor_util.h"
#include "shape_checks.h"
#include "state.h"

namespace hipdnn_ep {
namespace {

// The artifact format, declared once in the manifest's [artifact] table.
constexpr const char* kMetadataSection = HIPDNN_EP_ARTIFACT_SECTION;
constexpr const char* kProgramFile = HIPDNN_EP_ARTIFACT_FILE;

// The metadata's format is one this runtime reads (HIPDNN_EP_ARTIFACT_OLDEST_FORMAT to
// HIPDNN_EP_ARTIFACT_FORMAT); anything else is refused before its other fields are trusted.
int32_t check_format(const std::string& path, const json::Value& metadata) {
  const json::Value* format = json::find(metadata, "format");
  const std::string range = std::to_string(HIPDNN_EP_ARTIFACT_OLDEST_FORMAT) + " to " +
                            std::to_string(HIPDNN_EP_ARTIFACT_FORMAT);
  if (format == nullptr || !json::is_integer(*format)) {
    return set_error(HIPDNN_EP_STATUS_ABI_MISMATCH,
                     path + ": the artifact metadata states no format (this runtime reads formats " + range +
                         "); compile the model again with a hipdnn-ep-compiler for this runtime");
  }
  const int64_t f = json::as_int(*format);
  if (f < HIPDNN_EP_ARTIFACT_OLDEST_FORMAT || f > HIPDNN_EP_ARTIFACT_FORMAT) {
    const bool newer = f > HIPDNN_EP_ARTIFACT_FORMAT;
    return set_error(HIPDNN_EP_STATUS_ABI_MISMATCH,
                     path + ": artifact metadata format " + std::to_string(f) + " is " + (newer ? "newer" : "older") +
                         " than this runtime reads (formats " + range + ", runtime ABI " +
                         std::to_string(HIPDNN_EP_ABI_MAJOR) + "." + std::to_string(HIPDNN_EP_ABI_MINOR) + "); " +
                         (newer ? "upgrade hipdnn-ep-runtime, or compile the model again with a hipdnn-ep-compiler "
                                  "that targets this runtime"
                                : "compile the model again with a current hipdnn-ep-compiler"));
  }
  return HIPDNN_EP_STATUS_OK;
}

std::string lower_case(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

const char* dtype_name(int32_t dtype) {
  switch (dtype) {  // lower-case names of the manifest's dtypes (HIPDNN_EP_DTYPES, generated)
#define HIPDNN_EP_DTYPE_CASE(name, code, bytes) \
  case code: {                                 \
    static const std::string lower = lower_case(#name); \
    return lower.c_str();                      \
  }
    HIPDNN_EP_DTYPES(HIPDNN_EP_DTYPE_CASE)
#undef HIPDNN_EP_DTYPE_CASE
    default: return "unknown";
  }
}

// A spec's dims as the metadata spells them (a dynamic one by its expression, e.g. d0_1), so that a
// message names a dim the way the artifact, its checks and `inspect` do.
std::string describe_dims(const TensorSpec& spec) {
  std::string out = "[";
  for (size_t i = 0; i < spec.dim_text.size(); ++i) out += (i ? ", " : "") + spec.dim_text[i];
  return out + "]";
}

// The spec of a tensor of the metadata (read through the schema's generated reader). A dim is an int
// (static) or its expression (known at run time); a negative int is malformed.
template <class Tensor>  // metadata::Inputs, metadata::Weights or metadata::Outputs
bool to_spec(const Tensor& tensor, std::vector<TensorSpec>* out) {
  TensorSpec spec{tensor.name, static_cast<int32_t>(tensor.dtype), {}, {}};
  for (const metadata::Size& d : tensor.dims) {
    if (d.is_int && d.value < 0) return false;
    spec.dims.push_back(d.is_int ? d.value : -1);
    spec.dim_text.push_back(d.text);
  }
  out->push_back(std::move(spec));
  return true;
}

// "node '...' (Op): " for the kernel call of index `call` when the metadata lists the node of each
// kernel call (kernel_nodes, compilers from 0.4); empty otherwise.
std::string failed_node(const std::vector<std::string>& nodes, int64_t call) {
  if (call < 0 || call >= static_cast<int64_t>(nodes.size())) return "";
  const std::string& node = nodes[static_cast<size_t>(call)];
  return node.empty() ? "" : node + ": ";
}

std::string program_path(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return path + "/" + kProgramFile;
  return path;
}

int32_t check_tensor(const char* api, const char* what, size_t index, const TensorSpec& spec,
                     const hipdnn_ep_tensor_ref_t& t, int32_t status) {
  const std::string where =
      std::string(api) + ": " + what + " " + std::to_string(index) + " '" + spec.name + "': ";
  HIPDNN_EP_REQUIRE(t.dtype == spec.dtype, status,
                    where + "dtype " + std::to_string(t.dtype) + " (" + dtype_name(t.dtype) +
                        ") differs from the artifact's " + std::to_string(spec.dtype) + " (" +
                        dtype_name(spec.dtype) + ")");
  HIPDNN_EP_REQUIRE(t.rank == static_cast<int32_t>(spec.dims.size()), status,
                    where + "rank " + std::to_string(t.rank) + " differs from the artifact's " +
                        std::to_string(spec.dims.size()) + " " + describe_dims(spec));
  HIPDNN_EP_REQUIRE(t.rank == 0 || t.dims != nullptr, status, where + "dims is NULL");
  int64_t elements = 1;
  for (int32_t d = 0; d < t.rank; ++d) {
    HIPDNN_EP_REQUIRE(t.dims[d] >= 0, status, where + "dim " + std::to_string(d) + " is negative");
    HIPDNN_EP_REQUIRE(spec.dims[d] < 0 || spec.dims[d] == t.dims[d], status,
                      where + "dim " + std::to_string(d) + " is " + std::to_string(t.dims[d]) +
                          " but the artifact was compiled for " + describe_dims(spec));
    elements *= t.dims[d];
  }
  HIPDNN_EP_REQUIRE(elements == 0 || t.data != nullptr, status, where + "data is NULL");
  return HIPDNN_EP_STATUS_OK;
}

// Ends a run however it ends: clears the state's `running` flag and forgets the host's allocator
// and the outputs it provided.
struct RunGuard {
  hipdnn_ep_state_t* state;
  ~RunGuard() {
    if (state->output_allocator != nullptr) {
      std::lock_guard<std::mutex> lock(state->memory_mutex);
      state->output_allocator = nullptr;
      state->host_outputs.clear();
    }
    state->run_artifact = nullptr;
    state->run_inputs = nullptr;
    state->run_weights_known = false;
    state->run_weights.clear();
    state->running.store(false);
  }
};

// Asks the host's allocator for output index (dims, rank and dtype already in *output).
int32_t host_output(hipdnn_ep_state_t* state, int32_t index, hipdnn_ep_tensor_ref_t* output, uint64_t size) {
  const hipdnn_ep_output_allocator_t* a = state->output_allocator;
  void* data = nullptr;
  if (int32_t status = a->alloc(a->context, index, output, size, &data); status != HIPDNN_EP_STATUS_OK) {
    return set_error(status, "the host's output allocator failed for output " + std::to_string(index) +
                                 " (status " + std::to_string(status) + ")");
  }
  HIPDNN_EP_REQUIRE(data != nullptr || kernels::tensor_bytes(*output) == 0, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "the host's output allocator returned NULL for output " + std::to_string(index) + " of " +
                        std::to_string(size) + " bytes");
  output->data = data;
  std::lock_guard<std::mutex> lock(state->memory_mutex);
  state->host_outputs.push_back(data);
  return HIPDNN_EP_STATUS_OK;
}

}  // namespace
}  // namespace hipdnn_ep

using hipdnn_ep::set_error;

extern "C" int32_t hipdnn_ep_artifact_open(const char* path, hipdnn_ep_artifact_t** out_artifact) {
  HIPDNN_EP_REQUIRE(path != nullptr && out_artifact != nullptr, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_artifact_open: path and out_artifact must not be NULL");
  *out_artifact = nullptr;
  auto artifact = std::make_unique<hipdnn_ep_artifact>();
  artifact->path = hipdnn_ep::program_path(path);
  // 1. The metadata, read from the file without loading it.
  if (int32_t status = hipdnn_ep::read_elf_section(artifact->path, hipdnn_ep::kMetadataSection,
                                                   &artifact->metadata_text);
      status != HIPDNN_EP_STATUS_OK) {
    return status;
  }
  std::string parse_error;
  HIPDNN_EP_REQUIRE(hipdnn_ep::json::parse(artifact->metadata_text, hipdnn_ep::json::kMaxMetadataBytes,
                                            &artifact->metadata, &parse_error) &&
                        artifact->metadata.is_object(),
                    HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    artifact->path + ": the " + hipdnn_ep::kMetadataSection + " section is not a JSON object" +
                        (parse_error.empty() ? "" : " (" + parse_error + ")"));
  // 2. The format and the ABI check, still before any of its code can run.
  if (int32_t status = hipdnn_ep::check_format(artifact->path, artifact->metadata); status != HIPDNN_EP_STATUS_OK) {
    return status;
  }
  if (int32_t status =
          hipdnn_ep::check_artifact_abi(artifact->path, artifact->metadata, hipdnn_ep::runtime_manifest());
      status != HIPDNN_EP_STATUS_OK) {
    return status;
  }
  // 3. Every import resolved in this library by name and version node, as dlopen will.
  if (int32_t status =
          hipdnn_ep::check_artifact_exports(artifact->path, artifact->metadata, hipdnn_ep::runtime_manifest());
      status != HIPDNN_EP_STATUS_OK) {
    return status;
  }
  // Every field through the schema's generated reader (packages/abi/metadata.toml), which names the field.
  hipdnn_ep::metadata::Metadata fields;
  std::string schema_error;
  HIPDNN_EP_REQUIRE(hipdnn_ep::metadata::Read(artifact->metadata, &fields, &schema_error),
                    HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    artifact->path + ": malformed metadata: " + schema_error +
                        " (the artifact metadata schema " + std::to_string(hipdnn_ep::metadata::kMajor) + "." +
                        std::to_string(hipdnn_ep::metadata::kMinor) + ")");
  bool specs_read = true;
  for (const auto& t : fields.inputs) specs_read = specs_read && hipdnn_ep::to_spec(t, &artifact->inputs);
  artifact->n_graph_inputs = artifact->inputs.size();
  for (const auto& t : fields.weights) specs_read = specs_read && hipdnn_ep::to_spec(t, &artifact->inputs);
  for (const auto& t : fields.outputs) specs_read = specs_read && hipdnn_ep::to_spec(t, &artifact->outputs);
  HIPDNN_EP_REQUIRE(specs_read, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    artifact->path + ": malformed metadata: a dim of an input, weight or output is negative");
  for (const auto& imp : fields.imports) {
    if (imp.name == "hipdnn_ep_output_alloc") artifact->writes_in_place = true;
  }
  if (fields.kernel_nodes) artifact->kernel_nodes = std::move(*fields.kernel_nodes);
  artifact->checks = std::move(fields.checks);
  if (fields.symbols) artifact->symbols = std::move(*fields.symbols);
  // 4. Only now load the code.
  artifact->handle = dlopen(artifact->path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (artifact->handle == nullptr) {
    const char* why = dlerror();
    return set_error(HIPDNN_EP_STATUS_INTERNAL,
                     "hipdnn_ep_artifact_open: loading " + artifact->path + " failed: " + (why ? why : "?"));
  }
  artifact->entry = reinterpret_cast<hipdnn_ep_program_run_fn>(dlsym(artifact->handle, HIPDNN_EP_PROGRAM_ENTRY));
  if (artifact->entry == nullptr) {
    dlclose(artifact->handle);
    return set_error(HIPDNN_EP_STATUS_NOT_FOUND,
                     artifact->path + " does not export the program entry " HIPDNN_EP_PROGRAM_ENTRY);
  }
  static std::atomic<uint64_t> next_serial{1};
  artifact->serial = next_serial.fetch_add(1);
  *out_artifact = artifact.release();
  return HIPDNN_EP_STATUS_OK;
}

extern "C" const char* hipdnn_ep_artifact_metadata(const hipdnn_ep_artifact_t* artifact) {
  return artifact == nullptr ? nullptr : artifact->metadata_text.c_str();
}

namespace hipdnn_ep {
namespace {

int32_t run(const char* api, hipdnn_ep_artifact_t* artifact, hipdnn_ep_state_t* state,
            const hipdnn_ep_tensor_ref_t* inputs, hipdnn_ep_tensor_ref_t* outputs,
            const hipdnn_ep_output_allocator_t* allocator) {
  HIPDNN_EP_REQUIRE(artifact != nullptr && state != nullptr, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    std::string(api) + ": artifact and state must not be NULL");
  HIPDNN_EP_REQUIRE(inputs != nullptr || artifact->inputs.empty(), HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    std::string(api) + ": inputs is NULL");
  HIPDNN_EP_REQUIRE(outputs != nullptr || artifact->outputs.empty(), HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    std::string(api) + ": outputs is NULL");
  if (allocator != nullptr) {
    HIPDNN_EP_REQUIRE(struct_covers(allocator->struct_size, offsetof(hipdnn_ep_output_allocator_t, context),
                                    sizeof(void*)) && allocator->alloc != nullptr,
                      HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                      std::string(api) + ": allocator->struct_size is " + std::to_string(allocator->struct_size) +
                          " or alloc is NULL; set struct_size = sizeof(hipdnn_ep_output_allocator_t) and alloc");
  }
  // The one place the inputs are validated (the program trusts them).
  for (size_t i = 0; i < artifact->inputs.size(); ++i) {
    if (int32_t status = check_tensor(api, "input", i, artifact->inputs[i], inputs[i], HIPDNN_EP_STATUS_INVALID_ARGUMENT);
        status != HIPDNN_EP_STATUS_OK) {
      return status;
    }
  }
  bool idle = false;
  HIPDNN_EP_REQUIRE(state->running.compare_exchange_strong(idle, true), HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    std::string(api) + ": the state is already running a program "
                                       "(a state runs one program at a time; use one state per thread)");
  RunGuard guard{state};
  state->run_artifact = artifact;
  state->run_inputs = inputs;
  if (allocator != nullptr && artifact->writes_in_place) {
    std::lock_guard<std::mutex> lock(state->memory_mutex);
    state->output_allocator = allocator;
  }
  for (size_t i = 0; i < artifact->outputs.size(); ++i) outputs[i] = hipdnn_ep_tensor_ref_t{nullptr, nullptr, -1, 0};
#if defined(HIPDNN_EP_WITH_CUDA) || defined(HIPDNN_EP_WITH_HIP)
  if (state->backend != HIPDNN_EP_BACKEND_CPU) {
    int32_t status = HIPDNN_EP_STATUS_OK;
    if (graph_run(artifact, state, inputs, outputs, &status)) return status;
    // run without a graph: the program's outputs start unset again
    for (size_t i = 0; i < artifact->outputs.size(); ++i) outputs[i] = hipdnn_ep_tensor_ref_t{nullptr, nullptr, -1, 0};
  }
#endif
  set_error(HIPDNN_EP_STATUS_OK, "");  // so that a failure below reports this run's cause, not an older one
  state->program_error.clear();
  state->kernel_calls = 0;
  state->failed_kernel = -1;
  if (int32_t status = artifact->entry(state, inputs, outputs); status != HIPDNN_EP_STATUS_OK) {
    std::string why = hipdnn_ep_last_error();
    if (state->backend != HIPDNN_EP_BACKEND_CPU && state->device->synchronize() == HIPDNN_EP_STATUS_OK &&
        state->device->take_data_error() != HIPDNN_EP_STATUS_OK) {
      // A kernel that ran before the failure found bad data (recorded on the device, gpu/gpu_device.h): that
      // came first, as the CPU backend would say, and a later run's wait must not report it.
      status = HIPDNN_EP_STATUS_INVALID_ARGUMENT;
      why = hipdnn_ep_last_error();
      state->program_error.clear();
      state->failed_kernel = -1;  // the failing call is not known (the data error names its kernel)
    }
    if (!state->program_error.empty() && status == HIPDNN_EP_STATUS_INVALID_ARGUMENT) {
      // The program said which of its checks refused the inputs (ABI 1.2 artifacts).
      return set_error(status, "program " + artifact->path + " refused its inputs: " + state->program_error);
    }
    if (why.empty() && status == HIPDNN_EP_STATUS_INVALID_ARGUMENT) {
      // No runtime call failed: the program's own shape checks refused the inputs.
      why = first_failed_check(artifact->checks, artifact->symbols, state, inputs, artifact->inputs.size());
      if (why.empty()) why = "the inputs fail a shape check of the compiled model";
      return set_error(status, "program " + artifact->path + " refused its inputs: " + why);
    }
    return set_error(status, "program " + artifact->path + " failed with status " + std::to_string(status) + ": " +
                                 failed_node(artifact->kernel_nodes, state->failed_kernel) + why);
  }
  for (size_t i = 0; i < artifact->outputs.size(); ++i) {
    if (int32_t status = check_tensor(api, "output", i, artifact->outputs[i], outputs[i], HIPDNN_EP_STATUS_INTERNAL);
        status != HIPDNN_EP_STATUS_OK) {
      // The caller gets no outputs from a failed run: free what the program allocated for them (hipdnn_ep_free
      // leaves the host's memory alone), keeping this failure's message.
      const std::string why = hipdnn_ep_last_error();
      for (size_t k = 0; k < artifact->outputs.size(); ++k) {
        bool freed = false;  // two outputs may share a block: free each once
        for (size_t j = 0; j < k; ++j) freed = freed || outputs[j].data == outputs[k].data;
        if (outputs[k].data != nullptr && !freed) hipdnn_ep_free(state, outputs[k].data);
      }
      for (size_t k = 0; k < artifact->outputs.size(); ++k) outputs[k] = hipdnn_ep_tensor_ref_t{nullptr, nullptr, -1, 0};
      return set_error(status, why);
    }
  }
#if defined(HIPDNN_EP_WITH_CUDA) || defined(HIPDNN_EP_WITH_HIP)
  if (state->backend != HIPDNN_EP_BACKEND_CPU) {
    graph_note_run(state, inputs, artifact->n_graph_inputs, outputs, artifact->outputs.size());
  }
#endif
  if (allocator == nullptr || artifact->writes_in_place) return HIPDNN_EP_STATUS_OK;
  // A program compiled before ABI 1.3 allocated its outputs itself: move them into the host's memory.
  const int32_t kind = state->backend == HIPDNN_EP_BACKEND_CPU ? HIPDNN_EP_MEMCPY_KIND_HOST_TO_HOST
                                                               : HIPDNN_EP_MEMCPY_KIND_DEVICE_TO_DEVICE;
  {
    std::lock_guard<std::mutex> lock(state->memory_mutex);
    state->output_allocator = allocator;
  }
  int32_t status = HIPDNN_EP_STATUS_OK;
  for (size_t i = 0; i < artifact->outputs.size(); ++i) {
    void* own = outputs[i].data;
    const uint64_t size = kernels::tensor_bytes(outputs[i]);
    if (status == HIPDNN_EP_STATUS_OK) status = host_output(state, static_cast<int32_t>(i), &outputs[i], size);
    if (status == HIPDNN_EP_STATUS_OK && size > 0) {
      status = hipdnn_ep_memcpy(state, outputs[i].data, own, size, kind);
    }
    hipdnn_ep_free(state, own);
  }
  return status;
}

}  // namespace
}  // namespace hipdnn_ep

extern "C" int32_t hipdnn_ep_artifact_run(hipdnn_ep_artifact_t* artifact, hipdnn_ep_state_t* state,
                                          const hipdnn_ep_tensor_ref_t* inputs, hipdnn_ep_tensor_ref_t* outputs) {
  return hipdnn_ep::run("hipdnn_ep_artifact_run", artifact, state, inputs, outputs, nullptr);
}

extern "C" int32_t hipdnn_ep_artifact_run_into(hipdnn_ep_artifact_t* artifact, hipdnn_ep_state_t* state,
                                               const hipdnn_ep_tensor_ref_t* inputs, hipdnn_ep_tensor_ref_t* outputs,
                                               const hipdnn_ep_output_allocator_t* allocator) {
  return hipdnn_ep::run("hipdnn_ep_artifact_run_into", artifact, state, inputs, outputs, allocator);
}

extern "C" int32_t hipdnn_ep_output_alloc(hipdnn_ep_state_t* state, hipdnn_ep_tensor_ref_t* outputs, int32_t index,
                                          uint64_t size) {
  HIPDNN_EP_REQUIRE(state != nullptr && outputs != nullptr && index >= 0, HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_output_alloc: state and outputs must not be NULL, index not negative");
  hipdnn_ep_tensor_ref_t* output = &outputs[index];
  HIPDNN_EP_REQUIRE(output->rank >= 0 && (output->rank == 0 || output->dims != nullptr),
                    HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                    "hipdnn_ep_output_alloc: output " + std::to_string(index) + " has no dims yet");
#if defined(HIPDNN_EP_WITH_CUDA) || defined(HIPDNN_EP_WITH_HIP)
  if (state->capture != nullptr) return hipdnn_ep::graph_output_alloc(state, outputs, index, size);
#endif
  if (state->output_allocator != nullptr) return hipdnn_ep::host_output(state, index, output, size);
  return hipdnn_ep_malloc(state, size, &output->data);
}

extern "C" void hipdnn_ep_set_error_message(hipdnn_ep_state_t* state, const char* text, const int64_t* values,
                                            int32_t n_values) {
  if (state == nullptr || text == nullptr) return;
  std::string out;
  for (const char* c = text; *c != '\0'; ++c) {
    if ((c[0] == '{' && c[1] == '{') || (c[0] == '}' && c[1] == '}')) {
      out += *c++;
      continue;
    }
    if (*c == '{') {
      char* end = nullptr;
      const long k = std::strtol(c + 1, &end, 10);
      if (end != c + 1 && *end == '}' && k >= 0 && k < n_values && values != nullptr) {
        out += std::to_string(values[k]);
        c = end;
        continue;
      }
    }
    out += *c;
  }
  state->program_error = std::move(out);
}

extern "C" void hipdnn_ep_artifact_close(hipdnn_ep_artifact_t* artifact) {
  if (artifact == nullptr) return;
  if (artifact->handle != nullptr) dlclose(artifact->handle);
  delete artifact;
}
