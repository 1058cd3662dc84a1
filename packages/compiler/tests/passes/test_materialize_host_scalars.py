"""materialize-host-scalars: IR in, IR out."""

import re

from hipdnn_ep_compiler import ir as hir
from hipdnn_ep_compiler.passes import materialize_host_scalars

DYNAMIC = '''
func.func @main(%arg0: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<2xi64>) {
  %0 = "hipdnn.unary"(%arg0) {op = "RELU"} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %t1_2 = arith.constant 0 : index
  %t1_3 = tensor.dim %arg0, %t1_2 : tensor<?x4xf32>
  %t1_4 = arith.constant 4 : index
  "hipdnn.tie_dims"(%0, %t1_3, %t1_4) : (tensor<?x4xf32>, index, index) -> ()
  %1 = "hipdnn.unary"(%0) {op = "EXP"} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %t2_2 = arith.constant 0 : index
  %t2_3 = tensor.dim %arg0, %t2_2 : tensor<?x4xf32>
  %t2_4 = arith.constant 4 : index
  "hipdnn.tie_dims"(%1, %t2_3, %t2_4) : (tensor<?x4xf32>, index, index) -> ()
  %h3_c0 = arith.constant 0 : index
  %h3_0 = tensor.dim %arg0, %h3_c0 : tensor<?x4xf32>
  %h3_1 = arith.constant 4 : index
  %2 = "hipdnn.host_tensor"(%h3_0, %h3_1) : (index, index) -> tensor<2xi64>
  return %1, %2 : tensor<?x4xf32>, tensor<2xi64>
}'''

STATIC = '''
func.func @main(%arg0: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = "hipdnn.unary"(%arg0) {op = "RELU"} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}'''


def _run(text):
    module = hir.ir.Module.parse(text, hir.new_context())
    materialize_host_scalars.run(module)
    assert module.operation.verify()
    return str(module)


def test_dynamic_dims_get_shared_scratch_slots_and_used_host_values_are_materialized():
    out = _run(DYNAMIC)
    assert out.count("hipdnn.dims_slot = [0]") == 2  # identical dims arrays share one slot range
    assert re.search(r"\"hipdnn.materialize\"\(%\w+, %\w+\) {hipdnn.dims_slot = \[-1\], hipdnn.values_slot = 2 : i64}", out)
    assert "hipdnn.host_scratch_slots = 4" in out
    assert "hipdnn.host_tensor" not in out


def test_static_graph_uses_no_host_scratch():
    out = _run(STATIC)
    assert "hipdnn.dims_slot = [-1]" in out
    assert "host_scratch_slots" not in out
