#include "gpu/gpu_device.h"
#include "kernels/backend_table.h"
#include "kernels/gpu/gpu_common.h"
#include "kernels/gpu/gpu_kernels.h"

namespace hipdnn_ep::kernels {

const KernelTable& gpu_kernel_table() {
  static const KernelTable table = [] {
    KernelTable t{};
    t.binary = gpu::binary;
    t.unary = gpu::unary;
    t.cast = gpu::cast;
    t.where = gpu::where;
    t.matmul = gpu::matmul;
    t.gemm = gpu::gemm;
    t.softmax = gpu::softmax;
    t.layer_norm = gpu::layer_norm;
    t.reduce = gpu::reduce;
    t.transpose = gpu::transpose;
    t.concat = gpu::concat;
    t.slice = gpu::slice;
    t.gather = gpu::gather;
    t.expand = gpu::expand;
    return t;
  }();
  return table;
}

namespace gpu {

void check_launch(const char* what) {
  const hipError_t error = hipGetLastError();
  if (error != hipSuccess) fail(HIPDNN_EP_STATUS_INTERNAL, gpu_error_text(std::string("launching ") + what, error));
}

}  // namespace gpu
}  // namespace hipdnn_ep::kernels
