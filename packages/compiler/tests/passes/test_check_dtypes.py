"""check-dtypes: its rules come from the target manifest (edited here, so not expressible as a fixed
filecheck file); what it accepts and refuses with the bundled manifest is in filecheck/check_dtypes.mlir."""

import json

import pytest
from conftest import make_model
from onnx import TensorProto, helper

from hipdnn_ep_compiler import compile_model
from hipdnn_ep_compiler import ir as hir
from hipdnn_ep_compiler.abi import RuntimeAbi, bundled_manifest_path, load_abi
from hipdnn_ep_compiler.errors import UnsupportedError
from hipdnn_ep_compiler.passes import check_dtypes, run_pass


def _gather(indices):
    return f'''
func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<2x{indices}>) -> tensor<2xf32> {{
  %0 = "hipdnn.gather"(%arg0, %arg1) {{axis = 0 : i64, "onnx.node" = "node 'g'"}} : (tensor<4xf32>, tensor<2x{indices}>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}}'''


def _pow(elem):
    return f'''
func.func @main(%arg0: tensor<4x{elem}>) -> tensor<4x{elem}> {{
  %0 = "hipdnn.binary"(%arg0, %arg0) {{op = "POW", "onnx.node" = "node 'p'"}} : (tensor<4x{elem}>, tensor<4x{elem}>) -> tensor<4x{elem}>
  return %0 : tensor<4x{elem}>
}}'''


def _abi_with(edit):
    """The bundled manifest with one kernel entry edited: edit(kernel_json) for the kernel it names."""
    data = json.loads(bundled_manifest_path().read_text())
    name, change = edit
    for f in data["functions"]:
        if f["name"] == name:
            change(f)
    return RuntimeAbi(data)


def _run_with(text, abi):
    module = hir.ir.Module.parse(text, hir.new_context())
    run_pass(module, check_dtypes.NAME, abi)


def test_rules_come_from_the_manifest():
    """A runtime whose manifest says POW takes int8 gets int8 POW; one that drops float16 refuses it."""
    with pytest.raises(UnsupportedError):
        _run_with(_pow("i8"), load_abi())
    grown = _abi_with(("hipdnn_ep_kernel_binary", lambda f: f["dtypes"]["POW"].append("INT8")))
    _run_with(_pow("i8"), grown)
    narrowed = _abi_with(("hipdnn_ep_kernel_binary", lambda f: f["dtypes"].update(POW=["FLOAT32"])))
    with pytest.raises(UnsupportedError, match="^node 'p': binary POW does not support element type float16$"):
        _run_with(_pow("f16"), narrowed)


def test_a_manifest_without_tables_has_no_type_rules():
    def drop(f):
        f.pop("dtypes")
        f.pop("input_dtypes")
    _run_with(_pow("i64"), _abi_with(("hipdnn_ep_kernel_binary", drop)))
    _run_with(_gather("f32"), _abi_with(("hipdnn_ep_kernel_gather", drop)))


def test_manifest_input_rules_name_the_types_they_allow():
    only64 = _abi_with(("hipdnn_ep_kernel_gather", lambda f: f["input_dtypes"].update({"1": ["INT64"]})))
    with pytest.raises(UnsupportedError, match="^node 'g': indices must be int64$"):
        _run_with(_gather("i32"), only64)
    # An input with no label of its own is named by index.
    binary_rule = _abi_with(("hipdnn_ep_kernel_binary", lambda f: f["input_dtypes"].update({"1": ["FLOAT32"]})))
    with pytest.raises(UnsupportedError, match="^node 'p': input 1 must be float32$"):
        _run_with(_pow("f16"), binary_rule)


def test_compile_model_checks_against_the_target_manifest(tmp_path):
    """compile_model(manifest=...) applies that manifest's rules, not the bundled ones."""
    data = json.loads(bundled_manifest_path().read_text())
    for f in data["functions"]:
        if f["name"] == "hipdnn_ep_kernel_unary":
            f["dtypes"]["default"] = ["FLOAT32"]
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps(data))
    model = make_model([helper.make_node("Tanh", ["x"], ["y"])], [("x", TensorProto.FLOAT16, [4])],
                       [("y", TensorProto.FLOAT16, [4])])
    with pytest.raises(UnsupportedError, match="unary TANH does not support element type float16"):
        compile_model(model, tmp_path / "a", manifest=manifest)
