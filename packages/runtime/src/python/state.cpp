// State: construction from keyword options, close / context manager, streams.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <optional>

#include "bindings.h"

namespace hipdnn_ep::python {

int32_t backend_code(const std::string& name) {
  if (name == "cpu") return HIPDNN_EP_BACKEND_CPU;
  if (name == "cuda") return HIPDNN_EP_BACKEND_CUDA;
  if (name == "hip") return HIPDNN_EP_BACKEND_HIP;
  raise_status(HIPDNN_EP_STATUS_INVALID_ARGUMENT, "unknown backend '" + name + "' (expected cpu, cuda or hip)");
}

namespace {

void close_state(PyState& self, bool raise_on_leak) {
  if (self.raw == nullptr) return;
  const int32_t status = hipdnn_ep_state_destroy(self.raw);
  self.raw = nullptr;  // destroyed even when it reports a leak
  if (raise_on_leak) check(status);
}

}  // namespace

PyState::~PyState() {
  if (raw != nullptr) hipdnn_ep_state_destroy(raw);
}

hipdnn_ep_state_t* PyState::get() const {
  if (raw == nullptr) raise_status(HIPDNN_EP_STATUS_INVALID_ARGUMENT, "the State is closed");
  return raw;
}

nb::class_<PyState> bind_state(nb::module_& m) {
  nb::class_<PyState> cls(m, "State",
                          "A runtime state: one device, its caching allocator, host scratch and pool.\n\n"
                          "Memory calls may come from several threads; a state runs one program at a time.");
  cls.def(
         "__init__",
         [](PyState* self, const std::string& backend, int32_t device, std::optional<uint64_t> memory_limit,
            uint64_t alignment, bool graph_capture, int32_t graph_cache_size) {
           hipdnn_ep_state_options_t options;
           hipdnn_ep_state_options_init(&options);
           options.struct_size = sizeof(options);  // the graph fields below are set too
           options.backend = backend_code(backend);
           options.device_ordinal = device;
           options.memory_limit_bytes = memory_limit.value_or(0);
           options.alignment = alignment;
           options.graph_capture = graph_capture ? 1 : 0;
           options.graph_cache_size = graph_cache_size;
           hipdnn_ep_state_t* raw = nullptr;
           check(hipdnn_ep_state_create(&options, &raw));
           auto* state = new (self) PyState();
           state->raw = raw;
           state->backend = options.backend;
           state->device = options.device_ordinal;
         },
         nb::arg("backend") = "cpu", nb::arg("device") = 0, nb::arg("memory_limit") = nb::none(),
         nb::arg("alignment") = 256, nb::arg("graph_capture") = true, nb::arg("graph_cache_size") = 0)
      .def("close", [](PyState& self) { close_state(self, true); },
           "Destroys the state; raises LeakError (listing live blocks) if allocations were still live.")
      .def_prop_ro("closed", [](const PyState& self) { return self.raw == nullptr; })
      .def_prop_ro("backend", [](const PyState& self) {
        return self.backend == HIPDNN_EP_BACKEND_CPU ? "cpu" : self.backend == HIPDNN_EP_BACKEND_CUDA ? "cuda" : "hip";
      })
      .def("__enter__", [](nb::handle self) { return self; })
      .def(
          "__exit__",
          [](PyState& self, nb::handle exc_type, nb::handle, nb::handle) {
            // Do not let a leak report hide the exception already propagating.
            close_state(self, exc_type.is_none());
          },
          nb::arg("exc_type").none(), nb::arg("exc").none(), nb::arg("traceback").none())
      .def("_handle", [](const PyState& self) { return reinterpret_cast<uintptr_t>(self.get()); },
           "The hipdnn_ep_state_t* as an integer, for calling the C ABI directly (ctypes); owned by the State.")
      .def("set_stream", [](PyState& self, uint64_t stream) { check(hipdnn_ep_state_set_stream(self.get(), stream)); },
           nb::arg("stream"), "Orders later allocations, frees and copies on this stream id (0: default).")
      .def(
          "graph_stats",
          [](PyState& self) {
            hipdnn_ep_graph_stats_t s{};
            s.struct_size = sizeof(s);
            check(hipdnn_ep_graph_stats(self.get(), &s));
            nb::dict d;
            d["captures"] = s.captures;
            d["replays"] = s.replays;
            d["uncaptured_runs"] = s.uncaptured_runs;
            d["graphs_cached"] = s.graphs_cached;
            d["evictions"] = s.evictions;
            d["last_uncaptured"] = std::string(s.last_uncaptured ? s.last_uncaptured : "");
            return d;
          },
          "Graph capture and replay on this state (GPU backends): captures, replays, uncaptured_runs, "
          "graphs_cached, evictions, and last_uncaptured (why the last run without a graph had none).")
      .def(
          "synchronize", [](PyState& self) { check(hipdnn_ep_synchronize(self.get())); },
          "Waits for all work; freed blocks become reusable on every stream; retired scratch/pool blocks are freed.");
  return cls;
}

}  // namespace hipdnn_ep::python
