"""The op registry: an op declared once is imported, supported, checked and lowered from that entry."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_model
from onnx import TensorProto, helper

import hipdnn_ep_compiler as hc
from hipdnn_ep_compiler import UnsupportedError, compile_model
from hipdnn_ep_compiler import ir as hir
from hipdnn_ep_compiler.abi import load_abi
from hipdnn_ep_compiler.lowering import runtime_calls
from hipdnn_ep_compiler.ops import Kernel, OpDef, Param, registry
from hipdnn_ep_compiler.ops.node import replace
from hipdnn_ep_compiler.ops.onnx import BINARY, UNARY
from hipdnn_ep_compiler.support import check_support

DOMAIN = "com.example"


@pytest.fixture
def scratch_registry(monkeypatch):
    """The registry as it is, restored after the test."""
    for name in ("_BY_DOMAIN", "_BY_NAME", "_KERNELS"):
        monkeypatch.setattr(registry, name, dict(getattr(registry, name)))
    return registry


def _double(o) -> None:  # x + x through the binary kernel
    replace(o, BINARY, [o.input(0), o.input(0)], {"op": "ADD"}, [o.dims(0)])


def _model(dtype: int):
    node = helper.make_node("Double", ["x"], ["y"], domain=DOMAIN, name="d")
    model = make_model([node], [("x", dtype, ["n", 3])], [("y", dtype, ["n", 3])], extra_opsets=[(DOMAIN, 1)])
    return model


def test_a_new_op_needs_only_its_entry(scratch_registry, refruntime, tmp_path):
    with pytest.raises(UnsupportedError, match="op Double of domain com.example is not supported"):
        compile_model(_model(TensorProto.FLOAT), tmp_path / "before")
    scratch_registry.register(OpDef("Double", "test_double", _double, (BINARY,), domains=(DOMAIN,)))
    assert hc.supported_ops()[DOMAIN] == ["Double"]
    assert [v.supported for v in check_support(_model(TensorProto.FLOAT))] == [True]
    info = compile_model(_model(TensorProto.FLOAT), tmp_path / "art")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = refruntime.run(info.program, [x])
    np.testing.assert_array_equal(y, 2 * x)
    # the element-type rule comes with the kernel: bool is refused, naming the node and the kernel
    (verdict,) = check_support(_model(TensorProto.BOOL))
    assert not verdict.supported and verdict.reason == "binary ADD does not support element type bool"


def test_registering_an_op_twice_is_refused(scratch_registry):
    entry = OpDef("Double", "test_double", _double, (BINARY,), domains=(DOMAIN,))
    scratch_registry.register(entry)
    with pytest.raises(ValueError, match="op Double of domain com.example is registered twice"):
        scratch_registry.register(entry)
    with pytest.raises(ValueError, match="kernel hipdnn.nope is not registered"):
        scratch_registry.register(OpDef("Other", "other", _double, (Kernel("nope", "kernel_nope"),), domains=(DOMAIN,)))


def test_validate_names_entries_that_disagree_with_the_manifest(scratch_registry):
    abi = load_abi()
    assert runtime_calls.validate(abi) == []
    scratch_registry.register(OpDef("NoSuchUnary", "no_such_unary", _double, (UNARY,), enum_key="NO_SUCH_UNARY"))
    scratch_registry.register_kernel(Kernel("bad_reduce", "kernel_reduce", ("op",), op_enum="reduce_op",
                                            params=(Param("axes", 2),)))
    assert runtime_calls.validate(abi) == [
        "hipdnn.bad_reduce: parameter axes is kernel input 2, but the lowering appends it after the 1 operands "
        "as input 1",
        "NoSuchUnary: enum hipdnn_ep_unary_op has no value NO_SUCH_UNARY",
    ]


@pytest.mark.parametrize("code", sorted(hir.DTYPES))
def test_element_types_come_from_mlir_types(code):
    with hir.new_context():
        t = hir.ir.Type.parse(hir.tensor_type_str(code, [2, "n"]))
        assert hir.type_dtype(t) == code
        assert hir.type_dtype(hir.ir.Type.parse(f"tensor<*x{hir.DTYPES[code][0]}>")) == code


def test_an_element_type_outside_the_table_is_named():
    with hir.new_context(), pytest.raises(ValueError, match="unsupported element type f8E4M3B11FNUZ"):
        hir.type_dtype(hir.ir.Type.parse("tensor<2xf8E4M3B11FNUZ>"))
