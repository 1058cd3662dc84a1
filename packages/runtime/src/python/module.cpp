// NB_MODULE: stitches the bindings together; ABI queries and exceptions.
#include <dlfcn.h>

#include <nanobind/stl/string.h>

#include <utility>

#include "bindings.h"

namespace hipdnn_ep::python {
namespace {

// Exception classes, created once at import; index = status code.
PyObject* exception_types[HIPDNN_EP_STATUS_BACKEND_UNAVAILABLE + 1] = {};
PyObject* base_exception = nullptr;

}  // namespace

void raise_status(int32_t status, const std::string& message) {
  PyObject* type = base_exception;
  if (status >= 0 && status <= HIPDNN_EP_STATUS_BACKEND_UNAVAILABLE && exception_types[status] != nullptr) {
    type = exception_types[status];
  }
  PyErr_SetString(type, message.c_str());
  throw nb::python_error();
}

void bind_errors(nb::module_& m) {
  base_exception = PyErr_NewExceptionWithDoc("hipdnn_ep_runtime.HipdnnEpError",
                                             "A runtime call failed; the message says why.", PyExc_RuntimeError,
                                             nullptr);
  m.attr("HipdnnEpError") = nb::handle(base_exception);
  const std::pair<int32_t, const char*> mapped[] = {
      {HIPDNN_EP_STATUS_INVALID_ARGUMENT, "InvalidArgumentError"},
      {HIPDNN_EP_STATUS_OUT_OF_MEMORY, "OutOfMemoryError"},
      {HIPDNN_EP_STATUS_NOT_FOUND, "NotFoundError"},
      {HIPDNN_EP_STATUS_LEAK_DETECTED, "LeakError"},
      {HIPDNN_EP_STATUS_ABI_MISMATCH, "AbiMismatchError"},
      {HIPDNN_EP_STATUS_BACKEND_UNAVAILABLE, "BackendUnavailableError"},
  };
  for (const auto& [status, name] : mapped) {
    const std::string qualified = std::string("hipdnn_ep_runtime.") + name;
    exception_types[status] = PyErr_NewException(qualified.c_str(), base_exception, nullptr);
    m.attr(name) = nb::handle(exception_types[status]);
  }
}

std::string runtime_library_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&hipdnn_ep_abi_version), &info) == 0 || info.dli_fname == nullptr) {
    raise_status(HIPDNN_EP_STATUS_NOT_FOUND, "cannot locate the loaded runtime library");
  }
  return info.dli_fname;
}

}  // namespace hipdnn_ep::python

NB_MODULE(_core, m) {
  namespace py = hipdnn_ep::python;
  namespace nb = nanobind;
  m.doc() = "hipdnn-ep runtime bindings (import hipdnn_ep_runtime instead).";
  py::bind_errors(m);
  m.def(
      "abi_version",
      [] {
        const uint32_t v = hipdnn_ep_abi_version();
        return nb::make_tuple(v >> 16, v & 0xffff);
      },
      "The runtime library's ABI version as (major, minor).");
  m.def(
      "abi_manifest", [] { return nb::module_::import_("json").attr("loads")(hipdnn_ep_abi_manifest()); },
      "The runtime library's ABI manifest (every function with its signature hash), parsed.");
  m.def("_library_path", &py::runtime_library_path, "Path of the loaded runtime shared library.");
  m.def(
      "built_backends",
      [] {
        nb::list backends;
        backends.append("cpu");
#if defined(HIPDNN_EP_WITH_CUDA)
        backends.append("cuda");
#endif
#if defined(HIPDNN_EP_WITH_HIP)
        backends.append("hip");
#endif
        return backends;
      },
      "The backends this runtime was built with (HIPDNN_EP_BACKENDS); a GPU one still needs a usable GPU.");
  py::bind_device_memory(m);
  py::bind_tensor_view(m);
  auto state = py::bind_state(m);
  py::bind_memory(state);
  py::bind_artifact(m);
  py::bind_kernel(m);
}
