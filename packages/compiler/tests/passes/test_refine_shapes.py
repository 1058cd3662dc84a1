"""refine-shapes: IR in, IR out."""

from __future__ import annotations

import pytest

from hipdnn_ep_compiler import ir as hir
from hipdnn_ep_compiler.errors import ModelError, UnsupportedError
from hipdnn_ep_compiler.passes import refine_shapes

SHAPE_CHAIN = '''
func.func @main(%arg0: tensor<?x?x8xf32>) -> tensor<?x?x?xf32> {
  %0 = "hipdnn.shape"(%arg0) {operand_roles = [0 : i64], "onnx.node" = "node 's'"} : (tensor<?x?x8xf32>) -> tensor<3xi64>
  %1 = "hipdnn.constant"() {name = "i", values = ["1"], "hipdnn.dims" = [[]]} : () -> tensor<i64>
  %2 = "hipdnn.gather"(%0, %1) {operand_roles = [0 : i64, 1 : i64], "onnx.axis" = 0 : i64, "onnx.node" = "node 'g'"} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %3 = "hipdnn.constant"() {name = "a", values = ["0"], "hipdnn.dims" = [["1"]]} : () -> tensor<1xi64>
  %4 = "hipdnn.unsqueeze"(%2, %3) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'u'"} : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %5 = "hipdnn.constant"() {name = "m", values = ["-1", "4"], "hipdnn.dims" = [["2"]]} : () -> tensor<2xi64>
  %6 = "hipdnn.concat"(%5, %4) {operand_roles = [0 : i64, 1 : i64], "onnx.axis" = 0 : i64, "onnx.node" = "node 'c'"} : (tensor<2xi64>, tensor<1xi64>) -> tensor<3xi64>
  %7 = "hipdnn.reshape"(%arg0, %6) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'r'"} : (tensor<?x?x8xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  return %7 : tensor<?x?x?xf32>
}
'''


def _run(text: str) -> str:
    module = hir.ir.Module.parse(text, hir.new_context())
    refine_shapes.run(module)
    assert module.operation.verify()
    return str(module)


def test_shape_gather_concat_fold_into_host_values_and_reshape_becomes_alias():
    out = _run(SHAPE_CHAIN)
    # Shape/Gather/Unsqueeze/Concat are host tensors whose values are expressions of input dims
    assert '"hipdnn.host_tensor"() {hipdnn.dims = [["3"]], onnx.node = "node \'s\'", values = ["d0_0", "d0_1", "8"]}' in out
    assert 'values = ["-1", "4", "d0_1"]' in out
    # Reshape: the -1 is inferred symbolically, the shape operand is gone
    assert ('"hipdnn.alias"(%arg0) {hipdnn.dims = [["(mul 2 d0_0)", "4", "d0_1"]]' in out)
    for folded in ("hipdnn.shape", "hipdnn.gather", "hipdnn.concat", "hipdnn.reshape", "hipdnn.unsqueeze"):
        assert f'"{folded}"' not in out


def test_broadcast_and_matmul_dims():
    out = _run('''
func.func @main(%arg0: tensor<?x1x4xf32>, %arg1: tensor<3x4x5xf32>, %arg2: tensor<3x4xf32>) -> tensor<?x3x4xf32> {
  %0 = "hipdnn.add"(%arg0, %arg2) {operand_roles = [0 : i64, 1 : i64]} : (tensor<?x1x4xf32>, tensor<3x4xf32>) -> tensor<?x3x4xf32>
  %1 = "hipdnn.matmul"(%arg0, %arg1) {operand_roles = [0 : i64, 1 : i64]} : (tensor<?x1x4xf32>, tensor<3x4x5xf32>) -> tensor<?x3x1x5xf32>
  return %0 : tensor<?x3x4xf32>
}''')
    assert 'hipdnn.binary"(%arg0, %arg2) {hipdnn.dims = [["d0_0", "3", "4"]]' in out
    assert 'hipdnn.matmul"(%arg0, %arg1) {hipdnn.dims = [["3", "1", "5"]]' in out
    # the batch dim broadcasts d0_0 against 3: valid only when d0_0 is 1 or 3, so it is 3
    assert 'op = "ADD"' in out


def test_slice_normalizes_starts_and_counts_symbolically():
    out = _run('''
func.func @main(%arg0: tensor<?xf32>) -> tensor<?xf32> {
  %0 = "hipdnn.constant"() {name = "s", values = ["-3"], "hipdnn.dims" = [["1"]]} : () -> tensor<1xi64>
  %1 = "hipdnn.constant"() {name = "e", values = ["100"], "hipdnn.dims" = [["1"]]} : () -> tensor<1xi64>
  %2 = "hipdnn.slice"(%arg0, %0, %1) {operand_roles = [0 : i64, 1 : i64, 2 : i64]} : (tensor<?xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xf32>
  return %2 : tensor<?xf32>
}''')
    assert 'starts = ["(min (max (add -3 d0_0) 0) d0_0)"]' in out
    assert "steps = [1]" in out


def test_reshape_target_of_unknown_length_is_refused_naming_node():
    with pytest.raises(UnsupportedError, match="node 'r'.*target shape"):
        _run('''
func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<?xi64>) -> tensor<*xf32> {
  %0 = "hipdnn.reshape"(%arg0, %arg1) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'r'"} : (tensor<4xf32>, tensor<?xi64>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}''')


def test_reshape_target_read_from_a_small_input_resolves_0_and_minus_1_at_run_time():
    out = _run('''
func.func @main(%arg0: tensor<?x6xf32>, %arg1: tensor<2xi64>) -> tensor<?x?xf32> {
  %0 = "hipdnn.reshape"(%arg0, %arg1) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'r'"} : (tensor<?x6xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}''')
    from hipdnn_ep_compiler import symbolic as sym
    module = hir.ir.Module.parse(out, hir.new_context())
    alias = hir.ops(module)[0]
    assert alias.name == "hipdnn.alias" and "check_size" in alias.attributes
    dims = hir.dims_of(alias.results[0])
    for v0, v1, rows, want in [(0, -1, 2, [2, 6]), (-1, 3, 4, [8, 3]), (3, 4, 2, [3, 4])]:
        env = {"v1_0": v0, "v1_1": v1, "d0_0": rows}
        assert [sym.evaluate(d, env) for d in dims] == want


def test_incompatible_static_broadcast_is_a_model_error():
    with pytest.raises(ModelError, match="node 'a'.*3 and 4"):
        _run('''
func.func @main(%arg0: tensor<3xf32>, %arg1: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "hipdnn.add"(%arg0, %arg1) {operand_roles = [0 : i64, 1 : i64], "onnx.node" = "node 'a'"} : (tensor<3xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}''')
