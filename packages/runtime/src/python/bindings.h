// Shared pieces of the nanobind module: status -> exception mapping, dtype
// mapping, the State wrapper, and one bind_* function per concern.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <string>

#include "hipdnn_ep/runtime_abi.h"

namespace hipdnn_ep::python {

namespace nb = nanobind;

// Raises the Python exception that status maps to, with message.
[[noreturn]] void raise_status(int32_t status, const std::string& message);
// Raises for a non-OK status with the runtime's last error message.
inline void check(int32_t status) {
  if (status != HIPDNN_EP_STATUS_OK) raise_status(status, hipdnn_ep_last_error());
}

// ONNX dtype code of an array's element type; raises for unsupported types.
int32_t dtype_code(const nb::dlpack::dtype& dtype);
// numpy dtype name ("float32", ...) of an ONNX dtype code; raises if unknown.
const char* numpy_dtype_name(int32_t code);
// Bytes per element of an ONNX dtype code.
size_t dtype_size(int32_t code);
// The DLPack element type of a numpy dtype name ("float32", ...); raises if unknown.
nb::dlpack::dtype dlpack_dtype(const std::string& numpy_name);

// Python-side owner of a runtime state.
struct PyState {
  hipdnn_ep_state_t* raw = nullptr;
  int32_t backend = HIPDNN_EP_BACKEND_CPU;
  int32_t device = 0;  // the device ordinal
  PyState() = default;
  PyState(const PyState&) = delete;
  PyState& operator=(const PyState&) = delete;
  ~PyState();
  hipdnn_ep_state_t* get() const;  // raises if closed
};

// The hipdnn_ep_backend value of a backend name (cpu, cuda, hip); raises for another name.
int32_t backend_code(const std::string& name);

void bind_errors(nb::module_& m);
void bind_device_memory(nb::module_& m);
nb::class_<PyState> bind_state(nb::module_& m);
void bind_memory(nb::class_<PyState>& state);
void bind_tensor_view(nb::module_& m);
void bind_artifact(nb::module_& m);
void bind_kernel(nb::module_& m);

// Path of the loaded runtime library (the file, resolved by the loader).
std::string runtime_library_path();

}  // namespace hipdnn_ep::python
