"""eliminate-dead-ops: IR in, IR out."""

from hipdnn_ep_compiler import ir as hir
from hipdnn_ep_compiler.passes import eliminate_dead_ops


def test_unused_chains_are_erased_used_ops_kept():
    module = hir.ir.Module.parse('''
func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %h1_0 = arith.constant 2 : index
  %0 = "hipdnn.host_tensor"(%h1_0) : (index) -> tensor<1xi64>
  %1 = "hipdnn.alias"(%0) : (tensor<1xi64>) -> tensor<1xi64>
  %2 = "hipdnn.unary"(%arg0) {op = "RELU"} : (tensor<2xf32>) -> tensor<2xf32>
  return %2 : tensor<2xf32>
}''', hir.new_context())
    eliminate_dead_ops.run(module)
    out = str(module)
    assert "hipdnn.host_tensor" not in out and "hipdnn.alias" not in out
    assert "hipdnn.unary" in out
