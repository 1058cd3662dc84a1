// _core.call_kernel: calls one runtime kernel by name over arrays (a testing
// helper). A CPU state takes host arrays (numpy); a GPU state takes device
// arrays for data (torch, cupy: anything with __dlpack__, zero-copy) and host
// arrays for the parameter tensors the kernels read on the host.
#include <dlfcn.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

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

void call_kernel(PyState& py_state, const std::string& name, nb::list inputs, nb::list outputs,
                 const std::vector<int64_t>& int_attrs, const std::vector<double>& float_attrs,
                 const std::vector<int32_t>& dtypes, bool wait) {
  hipdnn_ep_state_t* state = py_state.get();
  const bool gpu_state = py_state.backend != HIPDNN_EP_BACKEND_CPU;
  // Sized up front so that the dims vectors never move while refs point into them.
  std::vector<std::vector<int64_t>> dims(inputs.size() + outputs.size());
  std::vector<hipdnn_ep_tensor_ref_t> in_refs, out_refs;
  size_t k = 0;
  for (nb::handle obj : inputs) {
    in_refs.push_back(tensor_ref(obj, false, gpu_state, &dims[k], "input " + std::to_string(k)));
    ++k;
  }
  for (nb::handle obj : outputs) {
    if (obj.is_none()) raise_status(HIPDNN_EP_STATUS_INVALID_ARGUMENT, "call_kernel: outputs must be arrays");
    out_refs.push_back(tensor_ref(obj, true, gpu_state, &dims[k], "output " + std::to_string(k - inputs.size())));
    ++k;
  }
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
  KernelFn kernel = find_kernel(name);  // after the arrays are checked
  hipdnn_ep_kernel_args_t args{};
  args.struct_size = sizeof args;
  args.inputs = in_refs.data();
  args.outputs = out_refs.data();
  args.int_attrs = int_attrs.data();
  args.float_attrs = float_attrs.data();
  args.n_inputs = static_cast<int32_t>(in_refs.size());
  args.n_outputs = static_cast<int32_t>(out_refs.size());
  args.n_int_attrs = static_cast<int32_t>(int_attrs.size());
  args.n_float_attrs = static_cast<int32_t>(float_attrs.size());
  if (!gpu_state) {
    check(kernel(state, &args));
    return;
  }
  // Arrays of other libraries are written on their own streams: wait for the
  // device before the kernel reads them and after it wrote, so that the
  // caller sees the result whatever stream it uses next. wait=False: the
  // caller orders the calls (kernels one after another on the state's stream,
  // as a compiled program runs them) and synchronizes.
  int32_t status = HIPDNN_EP_STATUS_OK;
  {
    nb::gil_scoped_release release;
    if (wait) status = hipdnn_ep_synchronize(state);
    if (status == HIPDNN_EP_STATUS_OK) status = kernel(state, &args);
    if (wait && status == HIPDNN_EP_STATUS_OK) status = hipdnn_ep_synchronize(state);
  }
  check(status);
}

}  // namespace

void bind_kernel(nb::module_& m) {
  m.def("call_kernel", &call_kernel, nb::arg("state"), nb::arg("name"), nb::arg("inputs"), nb::arg("outputs"),
        nb::arg("int_attrs") = std::vector<int64_t>{}, nb::arg("float_attrs") = std::vector<double>{},
        nb::arg("dtypes") = std::vector<int32_t>{}, nb::arg("wait") = true,
        "Calls the runtime kernel `name` (from the ABI manifest) over arrays: inputs (None = absent\n"
        "optional tensor) are read, outputs (preallocated, C-contiguous, writable) are written. A cpu\n"
        "State takes numpy arrays; a GPU State takes device arrays (torch, cupy: DLPack, zero-copy) for\n"
        "data and numpy arrays for host parameter tensors, and waits for the device before and after\n"
        "(wait=False: it only launches, after the state's earlier kernels; the caller synchronizes).\n"
        "dtypes (optional): ONNX element type codes of the tensors, inputs then outputs (-1: the array's\n"
        "own), for the types numpy cannot name (BFLOAT16, FLOAT8), passed as uint16/uint8 bit patterns.\n"
        "Raises the mapped exception on a nonzero status.");
}

}  // namespace hipdnn_ep::python
