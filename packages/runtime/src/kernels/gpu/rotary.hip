// RotaryEmbedding on the GPU backends, computed in float whatever the storage dtype, following
// the CPU kernel (kernels/cpu/rotary.cpp) operation for operation where the order of a sum does not matter.
//
// rotary_embedding: one thread per rotated pair.
#include "gpu/gpu_device.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/gpu_kernels.h"
#include "kernels/gpu/rotary.h"
#include "kernels/validate.h"

namespace hipdnn_ep::kernels::gpu {
namespace {

template <typename T>
__global__ void rotary_kernel(const T* x, const int64_t* pos, const T* cos, const T* sin, T* y, int64_t batch,
                              int64_t seq, int64_t heads, int64_t head_size, int64_t rotary_dim, int64_t positions,
                              int64_t width, bool bnsh, bool offset_only, bool interleaved,
                              DataErrorRecord* errors) {
  HIPDNN_EP_GRID_STRIDE(e, batch * seq * heads * head_size) {
    const int64_t i = e % head_size;
    const int64_t vec = e / head_size;  // (b, s, h) or (b, h, s)
    int64_t b, s;
    if (bnsh) {
      s = vec % seq;
      b = vec / (seq * heads);
    } else {
      s = (vec / heads) % seq;
      b = vec / (seq * heads);
    }
    const int64_t position = offset_only ? pos[0] + s : pos[b * seq + s];
    if (position < 0 || position >= positions) {  // zeros written, recorded (gpu_common.h: data checks)
      if (i == 0) report_error(errors, kErrorRotaryPosition, position, positions);
      store(y, e, 0.0f);
      continue;
    }
    const T* xv = x + vec * head_size;
    store(y, e, rotated(xv, i, cos + position * width, sin + position * width, rotary_dim, interleaved));
  }
}

}  // namespace

void rotary_embedding(hipdnn_ep_state_t* state, const hipdnn_ep_kernel_args_t& args) {
  const hipdnn_ep_tensor_ref_t& in = args.inputs[0];
  const int64_t n = element_count(in);
  if (n == 0) return;
  const Dims x = dims_of(in);
  const bool interleaved = args.int_attrs[HIPDNN_EP_KERNEL_ROTARY_EMBEDDING_INT_ATTR_INTERLEAVED] != 0;
  const int64_t num_heads_attr = args.int_attrs[HIPDNN_EP_KERNEL_ROTARY_EMBEDDING_INT_ATTR_NUM_HEADS];
  const Dims cache = dims_of(args.inputs[2]);
  int64_t rotary_dim = args.int_attrs[HIPDNN_EP_KERNEL_ROTARY_EMBEDDING_INT_ATTR_ROTARY_EMBEDDING_DIM];
  if (rotary_dim == 0) rotary_dim = 2 * cache[1];
  const bool bnsh = x.size() == 4;
  const int64_t batch = x[0];
  const int64_t seq = bnsh ? x[2] : x[1];
  const int64_t head_size = bnsh ? x[3] : (num_heads_attr > 0 ? x[2] / num_heads_attr : rotary_dim);
  const int64_t heads = bnsh ? x[1] : x[2] / head_size;
  const bool offset_only = element_count(args.inputs[1]) == 1 && !(batch == 1 && seq == 1 && args.inputs[1].rank == 2);
  DataErrorRecord* errors = gpu_device(state).data_errors();
  const hipStream_t stream = current_stream(state);
  dispatch_float_gpu(in.dtype, "rotary_embedding", [&](auto tag) {
    using T = typename decltype(tag)::type;
    rotary_kernel<<<grid_for(n), kBlock, 0, stream>>>(
        static_cast<const T*>(in.data), static_cast<const int64_t*>(args.inputs[1].data),
        static_cast<const T*>(args.inputs[2].data), static_cast<const T*>(args.inputs[3].data),
        static_cast<T*>(args.outputs[0].data), batch, seq, heads, head_size, rotary_dim, cache[0], cache[1], bnsh,
        offset_only, interleaved, errors);
  });
  check_launch("rotary_embedding");
}

}  // namespace hipdnn_ep::kernels::gpu
