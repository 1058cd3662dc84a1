// The logistic function, shared by the CPU and GPU backends (host and device function): Sigmoid, the
// SiLU of SILU_MUL and of the gated int4 GEMV. Both branches only exponentiate non-positive numbers, so
// nothing overflows.
#ifndef HIPDNN_EP_KERNELS_SIGMOID_H_
#define HIPDNN_EP_KERNELS_SIGMOID_H_

#include <cmath>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define HIPDNN_EP_SIGMOID_HD __host__ __device__
#else
#define HIPDNN_EP_SIGMOID_HD
#endif

namespace hipdnn_ep::kernels {

// exp of float or double: the device overloads in device code, std::exp on the host.
template <typename C>
HIPDNN_EP_SIGMOID_HD inline C exp_of(C x) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return exp(x);
#else
  return std::exp(x);
#endif
}

template <typename C>
HIPDNN_EP_SIGMOID_HD inline C sigmoid(C x) {
  if (x >= C(0)) return C(1) / (C(1) + exp_of(-x));
  const C e = exp_of(x);
  return e / (C(1) + e);
}

}  // namespace hipdnn_ep::kernels

#endif  // HIPDNN_EP_KERNELS_SIGMOID_H_
