// The rotation of a head vector by a rotary cos/sin cache, shared by RotaryEmbedding (rotary.cpp)
// and GroupQueryAttention's rotated queries and keys (group_query_attention.cpp).
#ifndef HIPDNN_EP_KERNELS_CPU_ROTARY_H_
#define HIPDNN_EP_KERNELS_CPU_ROTARY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/tensor_util.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::cpu {

// A tensor of dtype T read as float into a dense vector.
template <typename T>
std::vector<float> to_float_vector(const hipdnn_ep_tensor_ref_t& t) {
  const int64_t n = element_count(t);
  std::vector<float> out(static_cast<size_t>(n));
  const T* src = static_cast<const T*>(t.data);
  for (int64_t i = 0; i < n; ++i) out[i] = load(src, i);
  return out;
}

// Rotates the first rotary_dim values of one head vector in place: pairs
// (i, i + rotary_dim/2), or (2i, 2i+1) when interleaved.
inline void rotate(float* v, const float* cos, const float* sin, int64_t rotary_dim, bool interleaved) {
  const int64_t half = rotary_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const int64_t i1 = interleaved ? 2 * i : i;
    const int64_t i2 = interleaved ? 2 * i + 1 : i + half;
    const float x1 = v[i1], x2 = v[i2];
    v[i1] = x1 * cos[i] - x2 * sin[i];
    v[i2] = x2 * cos[i] + x1 * sin[i];
  }
}

// A [max_position, rotary_dim / 2] cos/sin cache in float, with its bound.
struct RotaryCache {
  std::vector<float> cos, sin;
  int64_t positions = 0, width = 0;

  template <typename T>
  static RotaryCache read(const hipdnn_ep_tensor_ref_t& c, const hipdnn_ep_tensor_ref_t& s) {
    return RotaryCache{to_float_vector<T>(c), to_float_vector<T>(s), c.dims[0], c.dims[1]};
  }

  void apply(float* v, int64_t position, int64_t rotary_dim, bool interleaved) const {
    if (position < 0 || position >= positions) {
      fail_invalid("position " + std::to_string(position) + " is outside the rotary cache's " +
                   std::to_string(positions) + " positions");
    }
    rotate(v, cos.data() + position * width, sin.data() + position * width, rotary_dim, interleaved);
  }
};

}  // namespace hipdnn_ep::kernels::cpu

#endif  // HIPDNN_EP_KERNELS_CPU_ROTARY_H_
