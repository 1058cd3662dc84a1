#include "kernels/backend_table.h"
#include "kernels/cpu/cpu_kernels.h"

namespace hipdnn_ep::kernels {

const KernelTable& cpu_kernel_table() {
  static const KernelTable table = [] {
    KernelTable t{};
    t.binary = cpu::binary;
    t.unary = cpu::unary;
    t.cast = cpu::cast;
    t.where = cpu::where;
    t.matmul = cpu::matmul;
    t.gemm = cpu::gemm;
    t.softmax = cpu::softmax;
    t.layer_norm = cpu::layer_norm;
    t.reduce = cpu::reduce;
    t.transpose = cpu::transpose;
    t.concat = cpu::concat;
    t.slice = cpu::slice;
    t.gather = cpu::gather;
    t.expand = cpu::expand;
    return t;
  }();
  return table;
}

}  // namespace hipdnn_ep::kernels
