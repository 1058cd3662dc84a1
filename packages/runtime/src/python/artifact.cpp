// Artifact: open (ABI-checked), metadata, run with numpy inputs and outputs.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <limits>
#include <vector>

#include "bindings.h"
#include "hipdnn_ep/bounded_json.h"     // packages/abi/include
#include "hipdnn_ep/metadata_schema.h"  // generated from packages/abi/metadata.toml

namespace hipdnn_ep::python {
namespace {

using HostArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

struct PyArtifact {
  hipdnn_ep_artifact_t* raw = nullptr;
  nb::object metadata;
  size_t n_inputs = 0;   // graph inputs + weights
  size_t n_outputs = 0;
  PyArtifact() = default;
  PyArtifact(const PyArtifact&) = delete;
  PyArtifact& operator=(const PyArtifact&) = delete;
  ~PyArtifact() { hipdnn_ep_artifact_close(raw); }
  hipdnn_ep_artifact_t* get() const {
    if (raw == nullptr) raise_status(HIPDNN_EP_STATUS_INVALID_ARGUMENT, "the Artifact is closed");
    return raw;
  }
};

// Device buffers of one run, freed however the run ends.
struct RunBuffers {
  hipdnn_ep_state_t* state;
  std::vector<void*> blocks;
  ~RunBuffers() {
    for (void* p : blocks) hipdnn_ep_free(state, p);
  }
};

// The metadata through the schema's generated reader (hipdnn_ep_artifact_open has checked it already).
bool read_metadata(const std::string& text, metadata::Metadata* fields, std::string* error) {
  nlohmann::json parsed;
  return bounded_json::Parse(text, std::numeric_limits<size_t>::max(), &parsed, error) ==
             bounded_json::Failure::kNone &&
         metadata::Read(parsed, fields, error);
}

nb::list run(PyArtifact& self, PyState& py_state, const std::vector<HostArray>& inputs) {
  hipdnn_ep_artifact_t* artifact = self.get();
  hipdnn_ep_state_t* state = py_state.get();
  if (inputs.size() != self.n_inputs) {
    raise_status(HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                 "Artifact.run: expected " + std::to_string(self.n_inputs) +
                     " arrays (graph inputs, then weights in metadata order), got " + std::to_string(inputs.size()));
  }
  // Inputs go to device memory through hipdnn_ep_memcpy, so GPU states work the same way.
  RunBuffers buffers{state, {}};
  std::vector<std::vector<int64_t>> dims(inputs.size());
  std::vector<hipdnn_ep_tensor_ref_t> refs(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const HostArray& a = inputs[i];
    for (size_t d = 0; d < a.ndim(); ++d) dims[i].push_back(static_cast<int64_t>(a.shape(d)));
    void* device = nullptr;
    if (a.nbytes() > 0) {
      check(hipdnn_ep_malloc(state, a.nbytes(), &device));
      buffers.blocks.push_back(device);
      check(hipdnn_ep_memcpy(state, device, a.data(), a.nbytes(), HIPDNN_EP_MEMCPY_KIND_HOST_TO_DEVICE));
    }
    refs[i] = {device, dims[i].data(), static_cast<int32_t>(a.ndim()), dtype_code(a.dtype())};
  }
  std::vector<hipdnn_ep_tensor_ref_t> outs(self.n_outputs);
  int32_t status;
  {
    nb::gil_scoped_release release;
    status = hipdnn_ep_artifact_run(artifact, state, refs.data(), outs.data());
  }
  check(status);
  for (const hipdnn_ep_tensor_ref_t& o : outs) {
    if (o.data != nullptr) buffers.blocks.push_back(o.data);  // the caller frees outputs
  }
  nb::module_ np = nb::module_::import_("numpy");
  nb::list results;
  for (const hipdnn_ep_tensor_ref_t& o : outs) {
    nb::list shape;
    size_t count = 1;
    for (int32_t d = 0; d < o.rank; ++d) {
      shape.append(o.dims[d]);
      count *= static_cast<size_t>(o.dims[d]);
    }
    nb::object array = np.attr("empty")(nb::tuple(shape), numpy_dtype_name(o.dtype));
    auto host = nb::cast<nb::ndarray<nb::c_contig, nb::device::cpu>>(array);
    check(hipdnn_ep_memcpy(state, host.data(), o.data, count * dtype_size(o.dtype),
                           HIPDNN_EP_MEMCPY_KIND_DEVICE_TO_HOST));
    results.append(array);
  }
  return results;
}

}  // namespace

void bind_artifact(nb::module_& m) {
  nb::class_<PyArtifact>(m, "Artifact", "A compiled artifact, checked against this runtime's ABI, then loaded.")
      .def(
          "__init__",
          [](PyArtifact* self, nb::object path) {
            const std::string path_text =
                nb::cast<std::string>(nb::str(nb::module_::import_("os").attr("fspath")(path)));
            hipdnn_ep_artifact_t* raw = nullptr;
            check(hipdnn_ep_artifact_open(path_text.c_str(), &raw));
            auto* artifact = new (self) PyArtifact();
            artifact->raw = raw;
            const char* text = hipdnn_ep_artifact_metadata(raw);
            metadata::Metadata fields;
            std::string error;
            if (!read_metadata(text, &fields, &error)) {
              hipdnn_ep_artifact_close(raw);
              raise_status(HIPDNN_EP_STATUS_INVALID_ARGUMENT, path_text + ": malformed metadata: " + error);
            }
            artifact->metadata = nb::module_::import_("json").attr("loads")(text);
            artifact->n_inputs = fields.inputs.size() + fields.weights.size();
            artifact->n_outputs = fields.outputs.size();
          },
          nb::arg("path"), "Opens an artifact directory (or its program.so). Raises AbiMismatchError before loading.")
      .def_prop_ro("metadata", [](const PyArtifact& self) { return self.metadata; }, "The embedded metadata (dict).")
      .def("run", &run, nb::arg("state"), nb::arg("inputs"),
           "Runs the program: inputs are the graph inputs then the weights in metadata order; returns the outputs\n"
           "as new numpy arrays (device outputs are copied out and freed).")
      .def("close", [](PyArtifact& self) {
        hipdnn_ep_artifact_close(self.raw);
        self.raw = nullptr;
      })
      .def("__enter__", [](nb::handle self) { return self; })
      .def(
          "__exit__",
          [](PyArtifact& self, nb::handle, nb::handle, nb::handle) {
            hipdnn_ep_artifact_close(self.raw);
            self.raw = nullptr;
          },
          nb::arg("exc_type").none(), nb::arg("exc").none(), nb::arg("traceback").none());
}

}  // namespace hipdnn_ep::python
