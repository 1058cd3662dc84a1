// _core.call_kernel: calls one runtime kernel by name over arrays (a testing
// helper). A CPU state takes host arrays (numpy); a GPU state takes device
// arrays for data (torch, cupy: anything with __dlpack__, zero-copy) and host
// arrays for the parameter tensors the kernels read on the host.
#include <dlfcn.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <set>
#include <vector>

#include "bindings.h"

namespace hipdnn_ep::python {
namespace {

using KernelFn = int32_t (*)(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t*);

const std::set<std::string>& manifest_kernels() {
  static const std::set<std::string> names = [] {
    std::set<std::string> out;
    nb::object manifest = nb::module_::import_("json").attr("loads")(hipdnn_ep_abi_manifest());
    for (nb::handle fn : manifest["functions"]) {
      if (nb::cast<std::string>(fn["kind"]) == "kernel") out.insert(nb::cast<std::string>(fn["name"]));
    }
    return out;
  }();
  return names;
}

KernelFn find_kernel(const std::string& name) {
  if (manifest_kernels().count(name) == 0) {
    std::string known;
    for (const std::string& k : manifest_kernels()) known += (known.empty() ? "" : ", ") + k;
    raise_status(HIPDNN_EP_STATUS_NOT_FOUND, "'" + name + "' is not a kernel of the ABI manifest (kernels: " + known + ")");
  }
  const std::string library = runtime_library_path();
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_NOLOAD);
  void* symbol = handle != nullptr ? dlsym(handle, name.c_str()) : nullptr;
  if (handle != nullptr) dlclose(handle);  // only dropped the reference RTLD_NOLOAD took
  if (symbol == nullptr) {
    raise_status(HIPDNN_EP_STATUS_NOT_FOUND, "the runtime library " + library + " does not export " + name);
  }
  return reinterpret_cast<KernelFn>(symbol);
}

bool is_host(const nb::ndarray<>& a) {
  return a.device_type() == nb::device::cpu::value || a.device_type() == nb::device::cuda_host::value;
}

bool is_gpu(const nb::ndarray<>& a) {
  return a.device_type() == nb::device::cuda::value || a.device_type() == nb::device::rocm::value ||
         a.device_type() == nb::device::cuda_managed::value;
}

// A tensor_ref over an array (dims stored in *dims); None is an absent optional tensor.
hipdnn_ep_tensor_ref_t tensor_ref(nb::handle obj, bool writable, bool gpu_state, std::vector<int64_t>* dims,
                                  const std::string& what) {
  if (obj.is_none()) return {nullptr, nullptr, -1, 0};
  void* data = nullptr;
  nb::dlpack::dtype dtype;
  bool ok;
  bool placed = false;
  auto fill = [&](auto& a) {
    for (size_t d = 0; d < a.ndim(); ++d) dims->push_back(static_cast<int64_t>(a.shape(d)));
    dtype = a.dtype();
    placed = gpu_state ? (is_host(nb::ndarray<>(a)) || is_gpu(nb::ndarray<>(a))) : is_host(nb::ndarray<>(a));
  };
  if (writable) {
    nb::ndarray<nb::c_contig> a;
    ok = nb::try_cast(obj, a, false);
    if (ok) data = a.data(), fill(a);
  } else {
    nb::ndarray<nb::ro, nb::c_contig> a;
    ok = nb::try_cast(obj, a, false);
    if (ok) data = const_cast<void*>(a.data()), fill(a);
  }
  if (!ok) {
    raise_status(HIPDNN_EP_STATUS_INVALID_ARGUMENT, "call_kernel: " + what + " must be a C-contiguous" +
                                                        (writable ? " writable" : "") + " array (numpy, or a "
                                                        "__dlpack__ array such as torch or cupy)");
  }
  if (!placed) {
    raise_status(HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                 "call_kernel: " + what + (gpu_state ? " is neither host nor GPU memory"
                                                     : " is not host memory; a cpu State takes host (numpy) arrays"));
  }
  return {data, dims->data(), static_cast<int32_t>(dims->size()), dtype_code(dtype)};
}

// One kernel call's arguments, with the storage its tensor refs point into.
struct PreparedCall {
  std::vector<std::vector<int64_t>> dims;  // sized up front: the refs point into these vectors
  std::vector<hipdnn_ep_tensor_ref_t> in_refs, out_refs;
  std::vector<int64_t> int_attrs;
  std::vector<double> float_attrs;
  KernelFn kernel = nullptr;
  hipdnn_ep_kernel_args_t args{};
};

std::unique_ptr<PreparedCall> prepare_call(bool gpu_state, const std::string& name, nb::list inputs,
                                           nb::list outputs, const std::vector<int64_t>& int_attrs,
                                           const std::vector<double>& float_attrs, const std::vector<int32_t>& dtypes) {
  auto call = std::make_unique<PreparedCall>();
  call->dims.resize(inputs.size() + outputs.size());
  size_t k = 0;
  for (nb::handle obj : inputs) {
    call->in_refs.push_back(tensor_ref(obj, false, gpu_state, &call->dims[k], "input " + std::to_string(k)));
    ++k;
  }
  for (nb::handle obj : outputs) {
    if (obj.is_none()) raise_status(HIPDNN_EP_STATUS_INVALID_ARGUMENT, "call_kernel: outputs must be arrays");
    call->out_refs.push_back(
        tensor_ref(obj, true, gpu_state, &call->dims[k], "output " + std::to_string(k - inputs.size())));
    ++k;
  }
  std::vector<hipdnn_ep_tensor_ref_t>& in_refs = call->in_refs;
  std::vector<hipdnn_ep_tensor_ref_t>& out_refs = call->out_refs;
  // dtypes: element types of the tensors (inputs, then outputs) that numpy cannot name (BFLOAT16, FLOAT8),
  // passed as arrays of their bit patterns (uint16/uint8); -1 keeps the array's own type.
  if (dtypes.size() > in_refs.size() + out_refs.size()) {
    raise_status(HIPDNN_EP_STATUS_INVALID_ARGUMENT, "call_kernel: more dtypes than tensors");
  }
  for (size_t i = 0; i < dtypes.size(); ++i) {
    if (dtypes[i] < 0) continue;
    hipdnn_ep_tensor_ref_t& ref = i < in_refs.size() ? in_refs[i] : out_refs[i - in_refs.size()];
    if (ref.data == nullptr && ref.rank < 0) continue;
    size_t bytes = 0;
    switch (dtypes[i]) {
#define HIPDNN_EP_DTYPE_CASE(name, code, size) \
  case code: bytes = size; break;
      HIPDNN_EP_DTYPES(HIPDNN_EP_DTYPE_CASE)
#undef HIPDNN_EP_DTYPE_CASE
      default: raise_status(HIPDNN_EP_STATUS_INVALID_ARGUMENT, "call_kernel: unknown dtype " + std::to_string(dtypes[i]));
    }
    if (bytes != dtype_size(ref.dtype)) {
      raise_status(HIPDNN_EP_STATUS_INVALID_ARGUMENT, "call_kernel: dtypes[" + std::to_string(i) + "] has " +
                                                          std::to_string(bytes) + "-byte elements, its array " +
                                                          std::to_string(dtype_size(ref.dtype)));
    }
    ref.dtype = dtypes[i];
  }
  call->kernel = find_kernel(name);  // after the arrays are checked
  call->int_attrs = int_attrs;
  call->float_attrs = float_attrs;
  hipdnn_ep_kernel_args_t& args = call->args;
  args.struct_size = sizeof args;
  args.inputs = in_refs.data();
  args.outputs = out_refs.data();
  args.int_attrs = call->int_attrs.data();
  args.float_attrs = call->float_attrs.data();
  args.n_inputs = static_cast<int32_t>(in_refs.size());
  args.n_outputs = static_cast<int32_t>(out_refs.size());
  args.n_int_attrs = static_cast<int32_t>(call->int_attrs.size());
  args.n_float_attrs = static_cast<int32_t>(call->float_attrs.size());
  return call;
}

// Runs the calls in order. On a GPU state it waits for the device before the first (arrays of other
// libraries are written on their own streams) and after the last (so that the caller sees the results
// whatever stream it uses next), and launches the calls back to back in between, as a compiled program does.
void run_calls(PyState& py_state, const std::vector<std::unique_ptr<PreparedCall>>& calls) {
  hipdnn_ep_state_t* state = py_state.get();
  if (py_state.backend == HIPDNN_EP_BACKEND_CPU) {
    for (const auto& call : calls) check(call->kernel(state, &call->args));
    return;
  }
  int32_t status;
  {
    nb::gil_scoped_release release;
    status = hipdnn_ep_synchronize(state);
    for (size_t i = 0; i < calls.size() && status == HIPDNN_EP_STATUS_OK; ++i) {
      status = calls[i]->kernel(state, &calls[i]->args);
    }
    if (status == HIPDNN_EP_STATUS_OK) status = hipdnn_ep_synchronize(state);
  }
  check(status);
}

void call_kernel(PyState& py_state, const std::string& name, nb::list inputs, nb::list outputs,
                 const std::vector<int64_t>& int_attrs, const std::vector<double>& float_attrs,
                 const std::vector<int32_t>& dtypes) {
  std::vector<std::unique_ptr<PreparedCall>> calls;
  calls.push_back(prepare_call(py_state.backend != HIPDNN_EP_BACKEND_CPU, name, inputs, outputs, int_attrs,
                               float_attrs, dtypes));
  run_calls(py_state, calls);
}

// calls: (name, inputs, outputs, int_attrs, float_attrs) each.
void call_kernels(PyState& py_state, nb::list calls) {
  std::vector<std::unique_ptr<PreparedCall>> prepared;
  for (nb::handle item : calls) {
    auto t = nb::cast<nb::tuple>(item);
    if (t.size() != 5) {
      raise_status(HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                   "call_kernels: each call is (name, inputs, outputs, int_attrs, float_attrs)");
    }
    prepared.push_back(prepare_call(py_state.backend != HIPDNN_EP_BACKEND_CPU, nb::cast<std::string>(t[0]),
                                    nb::cast<nb::list>(t[1]), nb::cast<nb::list>(t[2]),
                                    nb::cast<std::vector<int64_t>>(t[3]), nb::cast<std::vector<double>>(t[4]), {}));
  }
  run_calls(py_state, prepared);
}

}  // namespace

void bind_kernel(nb::module_& m) {
  m.def("call_kernel", &call_kernel, nb::arg("state"), nb::arg("name"), nb::arg("inputs"), nb::arg("outputs"),
        nb::arg("int_attrs") = std::vector<int64_t>{}, nb::arg("float_attrs") = std::vector<double>{},
        nb::arg("dtypes") = std::vector<int32_t>{},
        "Calls the runtime kernel `name` (from the ABI manifest) over arrays: inputs (None = absent\n"
        "optional tensor) are read, outputs (preallocated, C-contiguous, writable) are written. A cpu\n"
        "State takes numpy arrays; a GPU State takes device arrays (torch, cupy: DLPack, zero-copy) for\n"
        "data and numpy arrays for host parameter tensors, and waits for the device before and after.\n"
        "dtypes (optional): ONNX element type codes of the tensors, inputs then outputs (-1: the array's\n"
        "own), for the types numpy cannot name (BFLOAT16, FLOAT8), passed as uint16/uint8 bit patterns.\n"
        "Raises the mapped exception on a nonzero status.");
  m.def("call_kernels", &call_kernels, nb::arg("state"), nb::arg("calls"),
        "Calls kernels one after another, as call_kernel does each, but on a GPU state launched back to\n"
        "back with no wait between them (as a compiled program runs them): calls is a list of\n"
        "(name, inputs, outputs, int_attrs, float_attrs).");
}

}  // namespace hipdnn_ep::python
