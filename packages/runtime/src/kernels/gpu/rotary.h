// The rotation of a head vector by a rotary cache row, shared by RotaryEmbedding (rotary.hip)
// and GroupQueryAttention's rotated queries and keys (group_query_attention.hip).
#ifndef HIPDNN_EP_KERNELS_GPU_ROTARY_H_
#define HIPDNN_EP_KERNELS_GPU_ROTARY_H_

#include <cstdint>

#include "kernels/gpu/gpu_common.h"

namespace hipdnn_ep::kernels::gpu {

// Element i of a head vector x (its first rotary_dim elements rotated by angle index j):
// pairs (j, j + rotary_dim / 2), or (2j, 2j + 1) when interleaved.
template <typename T, typename C>
__device__ __forceinline__ float rotated(const T* x, int64_t i, const C* cos_row, const C* sin_row, int64_t rotary_dim,
                                         bool interleaved) {
  const float v = load(x, i);
  if (i >= rotary_dim) return v;
  const int64_t half = rotary_dim / 2;
  int64_t j, partner;
  bool first;
  if (interleaved) {
    j = i / 2;
    first = (i & 1) == 0;
    partner = i ^ 1;
  } else {
    first = i < half;
    j = first ? i : i - half;
    partner = first ? i + half : i - half;
  }
  const float c = load(cos_row, j), s = load(sin_row, j), o = load(x, partner);
  return first ? v * c - o * s : v * c + o * s;
}

// Elements [i0, i0 + 8) of head vector x (size d, zeros past it) as rotated() computes them (unrotated
// when !rotate), with every load issued before the arithmetic: no element waits for another's loads.
template <typename T>
__device__ __forceinline__ void rotated8(const T* x, int64_t i0, int64_t d, const T* cos_row, const T* sin_row,
                                         int64_t rotary_dim, bool interleaved, bool rotate, float (&out)[8]) {
  const int64_t half = rotary_dim / 2;
  float v[8], o[8], c[8], sn[8];
  bool first[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const int64_t i = i0 + e;
    const bool rot = rotate && i < rotary_dim && i < d;
    first[e] = interleaved ? (i & 1) == 0 : i < half;
    const int64_t j = interleaved ? i / 2 : (first[e] ? i : i - half);
    const int64_t partner = interleaved ? (i ^ 1) : (first[e] ? i + half : i - half);
    v[e] = i < d ? load(x, i) : 0.0f;
    o[e] = rot ? load(x, partner) : 0.0f;
    c[e] = rot ? load(cos_row, j) : 1.0f;
    sn[e] = rot ? load(sin_row, j) : 0.0f;
  }
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const bool rot = rotate && i0 + e < rotary_dim && i0 + e < d;
    out[e] = !rot ? v[e] : (first[e] ? v[e] * c[e] - o[e] * sn[e] : v[e] * c[e] + o[e] * sn[e]);
  }
}

}  // namespace hipdnn_ep::kernels::gpu

#endif  // HIPDNN_EP_KERNELS_GPU_ROTARY_H_
