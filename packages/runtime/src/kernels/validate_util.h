// Shared helpers of the argument checks (validate.cpp and validate_<family>.cpp):
// the checked view of one call's args, dtype rules and the small parameter
// tensors. Internal to validation; the validators themselves are declared in
// validate.h, one per kernel of the manifest.
#ifndef HIPDNN_EP_KERNELS_VALIDATE_UTIL_H_
#define HIPDNN_EP_KERNELS_VALIDATE_UTIL_H_

#include <cstdint>
#include <limits>
#include <string>

#include "hipdnn_ep/runtime_abi.h"
#include "kernel_dtypes.h"  // generated from the manifest's dtypes tables
#include "kernels/tensor_util.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::validation {

namespace dt = hipdnn_ep::kernel_dtypes;

std::string input_name(int32_t i);
std::string output_name(int32_t i);

// Pointers, counts and tensor refs of one call; accessors for the rest.
class Call {
 public:
  // Checks the struct, its attribute counts (exactly the manifest's) and the
  // input/output counts (in [min, max]); every tensor is checked with
  // inputs at index >= first_optional_input allowed to be absent.
  Call(const hipdnn_ep_kernel_args_t* args, int32_t n_int_attrs, int32_t n_float_attrs, int32_t min_inputs,
       int32_t max_inputs, int32_t n_outputs, int32_t first_optional_input = std::numeric_limits<int32_t>::max());

  const hipdnn_ep_kernel_args_t& args() const { return *args_; }
  int32_t n_inputs() const { return args_->n_inputs; }
  const hipdnn_ep_tensor_ref_t& in(int32_t i) const { return args_->inputs[i]; }
  const hipdnn_ep_tensor_ref_t& out(int32_t i) const { return args_->outputs[i]; }
  bool has_input(int32_t i) const { return i < args_->n_inputs && is_present(args_->inputs[i]); }
  int64_t int_attr(int32_t i) const { return args_->int_attrs[i]; }
  double float_attr(int32_t i) const { return args_->float_attrs[i]; }

  void expect_dtype(const hipdnn_ep_tensor_ref_t& t, const std::string& name, int32_t dtype) const {
    if (t.dtype != dtype) fail_invalid(name + " has dtype " + dtype_name(t.dtype) + ", expected " + dtype_name(dtype));
  }
  void expect_out(int32_t dtype, const Dims& dims) const {
    expect_dtype(out(0), output_name(0), dtype);
    if (dims_of(out(0)) != dims) {
      fail_invalid("output 0 has dims " + format_dims(dims_of(out(0))) + ", expected " + format_dims(dims));
    }
  }

 private:
  const hipdnn_ep_kernel_args_t* args_;
};

// "INT32 or INT64": the dtypes of a mask, in code order.
std::string mask_names(dt::Mask mask);

// Input 0 against the kernel's rule; `what` names the kernel (and op) in the message.
void require_dtype(dt::Mask mask, const std::string& what, int32_t dtype);

// A later input that has a type of its own (cond, indices, axes...).
void require_input_dtype(const hipdnn_ep_tensor_ref_t& t, const std::string& name, dt::Mask mask);

// An attribute that names an axis of a rank-`rank` tensor.
int64_t axis_attr(const Call& call, int32_t index, size_t rank);

// A rank-1 INT64 parameter tensor (axes, perm, starts, steps); returns its values.
// `mask` is the input's manifest rule (only INT64: see the static_asserts in validate.cpp).
Dims int64_vector(const hipdnn_ep_tensor_ref_t& t, const std::string& name, dt::Mask mask);

void expect_dims(const hipdnn_ep_tensor_ref_t& t, const std::string& name, const Dims& dims);

// X [N, C, spatial...] with 1 to 3 spatial dims.
Dims spatial_input(const hipdnn_ep_tensor_ref_t& x, const char* what);

// conv and conv_integer take W [M, C / group, kernel...]; conv_transpose takes W [C, M / group, kernel...].
enum class ConvWeights { kForward, kTransposed };

// W against X [N, C, spatial...]: the same rank, and a group that divides the channels as `layout` needs.
void check_conv_weights(const Dims& x, const Dims& w, int64_t group, ConvWeights layout);

// The geometry input `name` (strides, pads, dilations: 3 INT64 entries per spatial dim of X), the output
// dims y = [N, maps, ...] and, per spatial dim, kernel (W's), stride and dilation >= 1; pads >= 0 for
// kForward (kTransposed bounds-checks every output position, so any pad is safe).
void check_conv_geometry(const hipdnn_ep_tensor_ref_t& geometry, const std::string& name, dt::Mask mask,
                         const Dims& x, const Dims& w, const Dims& y, int64_t maps, ConvWeights layout);

}  // namespace hipdnn_ep::kernels::validation

#endif  // HIPDNN_EP_KERNELS_VALIDATE_UTIL_H_
