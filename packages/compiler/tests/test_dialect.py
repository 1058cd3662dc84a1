"""The onnx and hipdnn op vocabularies (dialect.py): every op of ours is checked against its
declaration, after import, after each pass and on opt's input."""

from __future__ import annotations

import sys

import pytest

from hipdnn_ep_compiler import dialect
from hipdnn_ep_compiler import ir as hir
from hipdnn_ep_compiler.cli import main
from hipdnn_ep_compiler.passes import run_pipeline


def _module(body: str, arg: str = "tensor<4xf32>"):
    return hir.ir.Module.parse(f"func.func @main(%arg0: {arg}) -> {arg} {{\n{body}\n}}", hir.new_context())


GOOD = '''  %0 = "hipdnn.unary"(%arg0) {op = "RELU"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>'''


@pytest.mark.parametrize("body,problem", [
    ('%0 = "hipdnn.nope"(%arg0) : (tensor<4xf32>) -> tensor<4xf32>', "hipdnn.nope: unknown op hipdnn.nope"),
    ('%0 = "onnx.nope"(%arg0) {operand_roles = [0]} : (tensor<4xf32>) -> tensor<4xf32>',
     "onnx.nope: unknown op onnx.nope"),
    ('%0 = "hipdnn.unary"(%arg0) : (tensor<4xf32>) -> tensor<4xf32>', "hipdnn.unary: attribute 'op' is missing"),
    ('%0 = "hipdnn.softmax"(%arg0) {axis = "last"} : (tensor<4xf32>) -> tensor<4xf32>',
     "hipdnn.softmax: attribute 'axis' is \"last\", expected int"),
    ('%0 = "hipdnn.binary"(%arg0) {op = "ADD"} : (tensor<4xf32>) -> tensor<4xf32>',
     "hipdnn.binary: 1 operands, expected 2 to 2"),
    ('%0 = "hipdnn.reduce"(%arg0) {op = "SUM"} : (tensor<4xf32>) -> tensor<4xf32>',
     "hipdnn.reduce: attribute 'axes' is missing"),
    ('%0 = "onnx.relu"(%arg0) : (tensor<4xf32>) -> tensor<4xf32>', "onnx.relu: attribute 'operand_roles' is missing"),
])
def test_ops_that_break_their_declaration_are_named(body, problem):
    module = _module(f"  {body}\n  return %0 : tensor<4xf32>")
    with pytest.raises(ValueError, match="^" + problem.replace("(", r"\(").replace(")", r"\)")):
        dialect.verify(module)


def test_a_declared_op_verifies():
    dialect.verify(_module(GOOD))


def test_the_pipeline_refuses_ir_that_breaks_a_declaration():
    module = _module('''  %0 = "hipdnn.binary"(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>''')
    with pytest.raises(RuntimeError, match="IR fails verification before fuse-qdq: hipdnn.binary: 1 operands"):
        run_pipeline(module)


def test_opt_names_the_op_that_breaks_its_declaration(tmp_path, capsys):
    src = tmp_path / "in.mlir"
    src.write_text('func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n'
                   '  %0 = "hipdnn.unary"(%arg0) : (tensor<4xf32>) -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n')
    assert main(["opt", str(src)]) == 1
    assert "the IR fails verification as read: hipdnn.unary: attribute 'op' is missing" in capsys.readouterr().err


def test_op_access_finds_a_python_module_for_our_namespaces():
    """The bindings import a module per dialect namespace on op access, and retry a failed import
    every time: ours exist, so the import happens once."""
    assert [op.name for op in hir.ops(_module(GOOD))] == ["hipdnn.unary", "func.return"]
    assert "hipdnn_ep_compiler._dialect_modules.hipdnn" in sys.modules
