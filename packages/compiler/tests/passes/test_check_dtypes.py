"""check-dtypes: IR in, IR out (or a refusal naming the node)."""

import pytest

from hipdnn_ep_compiler import ir as hir
from hipdnn_ep_compiler.errors import UnsupportedError
from hipdnn_ep_compiler.passes import check_dtypes


def _run(text):
    module = hir.ir.Module.parse(text, hir.new_context())
    check_dtypes.run(module)
    return str(module)


def test_supported_types_pass_unchanged():
    text = '''
func.func @main(%arg0: tensor<4xi64>, %arg1: tensor<4xf16>) -> (tensor<4xi64>, tensor<4xf16>) {
  %0 = "hipdnn.binary"(%arg0, %arg0) {op = "ADD", "hipdnn.dims" = [["4"]]} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %1 = "hipdnn.unary"(%arg1) {op = "TANH", "hipdnn.dims" = [["4"]]} : (tensor<4xf16>) -> tensor<4xf16>
  return %0, %1 : tensor<4xi64>, tensor<4xf16>
}'''
    assert _run(text) == str(hir.ir.Module.parse(text, hir.new_context()))


@pytest.mark.parametrize("op,types,message", [
    ("POW", ("i64", "i64"), "binary POW does not support element type int64"),
    ("ADD", ("i8", "i8"), "binary ADD does not support element type int8"),
    ("ADD", ("f32", "i64"), r"mixed element types \(float32, int64\)"),
])
def test_kernel_rules_refuse_naming_the_node(op, types, message):
    a, b = types
    with pytest.raises(UnsupportedError, match=f"node 'n'.*{message}"):
        _run(f'''
func.func @main(%arg0: tensor<4x{a}>, %arg1: tensor<4x{b}>) -> tensor<4x{a}> {{
  %0 = "hipdnn.binary"(%arg0, %arg1) {{op = "{op}", "onnx.node" = "node 'n'"}} : (tensor<4x{a}>, tensor<4x{b}>) -> tensor<4x{a}>
  return %0 : tensor<4x{a}>
}}''')


def test_integer_softmax_refused():
    with pytest.raises(UnsupportedError, match="softmax does not support element type int32"):
        _run('''
func.func @main(%arg0: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "hipdnn.softmax"(%arg0) {axis = 0 : i64} : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}''')
