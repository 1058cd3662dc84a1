// CPU kernel of RotaryEmbedding (in float whatever the storage dtype).
#include <cstdint>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/rotary.h"
#include "kernels/tensor_util.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::cpu {
namespace {

template <typename T>
void rotary_typed(const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const Dims x = dims_of(in);
  const bool interleaved = args.int_attrs[HIPDNN_EP_KERNEL_ROTARY_EMBEDDING_INT_ATTR_INTERLEAVED] != 0;
  const int64_t num_heads_attr = args.int_attrs[HIPDNN_EP_KERNEL_ROTARY_EMBEDDING_INT_ATTR_NUM_HEADS];
  const RotaryCache cache = RotaryCache::read<T>(args.inputs[2], args.inputs[3]);
  int64_t rotary_dim = args.int_attrs[HIPDNN_EP_KERNEL_ROTARY_EMBEDDING_INT_ATTR_ROTARY_EMBEDDING_DIM];
  if (rotary_dim == 0) rotary_dim = 2 * cache.width;
  const bool bnsh = x.size() == 4;
  const int64_t batch = x[0];
  const int64_t seq = bnsh ? x[2] : x[1];
  const int64_t head_size = bnsh ? x[3] : (num_heads_attr > 0 ? x[2] / num_heads_attr : rotary_dim);
  const int64_t heads = bnsh ? x[1] : x[2] / head_size;
  const auto* pos = static_cast<const int64_t*>(args.inputs[1].data);
  const bool offset_only = element_count(args.inputs[1]) == 1 && !(batch == 1 && seq == 1 && args.inputs[1].rank == 2);
  const T* src = static_cast<const T*>(in.data);
  T* dst = static_cast<T*>(args.outputs[0].data);
  std::vector<float> v(static_cast<size_t>(head_size));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t s = 0; s < seq; ++s) {
      const int64_t position = offset_only ? pos[0] + s : pos[b * seq + s];
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t base = bnsh ? ((b * heads + h) * seq + s) * head_size : ((b * seq + s) * heads + h) * head_size;
        for (int64_t i = 0; i < head_size; ++i) v[i] = load(src, base + i);
        cache.apply(v.data(), position, rotary_dim, interleaved);
        for (int64_t i = 0; i < head_size; ++i) store(dst, base + i, v[i]);
      }
    }
  }
}

}  // namespace

void rotary_embedding(hipdnn_ep_state_t*, const hipdnn_ep_kernel_args_t& args) {
  if (element_count(args.inputs[0]) == 0) return;
  dispatch_float(args.inputs[0].dtype, "rotary_embedding", [&](auto tag) {
    rotary_typed<typename decltype(tag)::type>(args);
  });
}

}  // namespace hipdnn_ep::kernels::cpu
