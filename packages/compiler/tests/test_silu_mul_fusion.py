"""fuse-silu-mul: a gated MLP's SiLU(gate) * up, as onnxruntime-genai's model builder writes it (Sigmoid, Mul,
Mul), compiled as one binary SILU_MUL kernel call and compared with onnxruntime's CPU EP on the unfused graph;
chains that are not exactly that (an intermediate read elsewhere or a graph output, the Sigmoid of another
value, integers, a target runtime ABI before 1.3) stay as imported and stay correct."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_model, ort_run
from onnx import TensorProto as T
from onnx import helper

from hipdnn_ep_compiler import compile_model
from hipdnn_ep_compiler.frontend import load_model
from hipdnn_ep_compiler.frontend.importer import import_model
from hipdnn_ep_compiler.passes import run_pipeline

NP = {T.FLOAT: np.float32, T.FLOAT16: np.float16, T.DOUBLE: np.float64}
n = helper.make_node


def chain(order: str = "builder") -> list:
    """gate, up -> y = gate * sigmoid(gate) * up, the operands of both Muls in the order given."""
    if order == "builder":  # onnxruntime-genai's builder: Mul(gate, sig), then Mul(silu, up)
        return [n("Sigmoid", ["gate"], ["sig"]), n("Mul", ["gate", "sig"], ["silu"]), n("Mul", ["silu", "up"], ["y"])]
    return [n("Sigmoid", ["gate"], ["sig"]), n("Mul", ["sig", "gate"], ["silu"]), n("Mul", ["up", "silu"], ["y"])]


def model(nodes, elem=T.FLOAT, up_dims=("b", "s", 16), outputs=(("y", ("b", "s", 16)),)):
    return make_model(nodes, [("gate", elem, ["b", "s", 16]), ("up", elem, list(up_dims))],
                      [(name, elem, list(dims)) for name, dims in outputs])


def ops_after_fusion(m) -> list[str]:
    loaded, _ = load_model(m)
    module = run_pipeline(import_model(loaded), until="fuse-silu-mul")
    return [op.operation.name for op in module.body.operations[0].regions[0].blocks[0].operations]


def check(m, refruntime, tmp_path, fused: bool, elem=T.FLOAT, up_shape=None):
    """Compile and run `m` on two shapes against onnxruntime; `fused`: one kernel call expected."""
    ops = ops_after_fusion(m)
    assert ("onnx.silu_mul" in ops) == fused
    info = compile_model(m, tmp_path / "art")
    assert (len(info.metadata["kernel_nodes"]) == 1) == fused
    rng = np.random.default_rng(0)
    dtype = NP[elem]
    for b, s in ((2, 3), (1, 5)):
        gate = (6 * rng.standard_normal((b, s, 16))).astype(dtype)
        up = rng.standard_normal(up_shape or (b, s, 16)).astype(dtype)
        got = refruntime.run(info.program, [gate, up])
        want = ort_run(m, {"gate": gate, "up": up})
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            tol = 2e-3 if dtype == np.float16 else 1e-5
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol)
    return info


@pytest.mark.parametrize("order", ["builder", "swapped"])
@pytest.mark.parametrize("elem", [T.FLOAT, T.FLOAT16, T.DOUBLE])
def test_the_chain_is_one_silu_mul(order, elem, refruntime, tmp_path):
    info = check(model(chain(order), elem), refruntime, tmp_path, fused=True, elem=elem)
    assert "onnx.sigmoid" not in ops_after_fusion(model(chain(order), elem))
    assert info.metadata["abi"]["min_minor"] == 3


def test_up_broadcast_over_the_gate(refruntime, tmp_path):
    check(model(chain(), up_dims=(16,)), refruntime, tmp_path, fused=True, up_shape=(16,))


@pytest.mark.parametrize("read", ["sig", "silu"])
def test_an_intermediate_read_elsewhere_is_not_fused(read, refruntime, tmp_path):
    m = model(chain(), outputs=(("y", ("b", "s", 16)), (read, ("b", "s", 16))))
    check(m, refruntime, tmp_path, fused=False)


def test_the_sigmoid_of_another_value_is_not_fused(refruntime, tmp_path):
    nodes = [n("Sigmoid", ["up"], ["sig"]), n("Mul", ["gate", "sig"], ["silu"]), n("Mul", ["silu", "up"], ["y"])]
    check(model(nodes), refruntime, tmp_path, fused=False)


def test_integers_are_not_fused():
    nodes = [n("Cast", ["gate"], ["gi"], to=T.INT32), n("Cast", ["up"], ["ui"], to=T.INT32),
             n("Mul", ["gi", "gi"], ["silu"]), n("Mul", ["silu", "ui"], ["y"])]
    assert "onnx.silu_mul" not in ops_after_fusion(
        make_model(nodes, [("gate", T.FLOAT, [4]), ("up", T.FLOAT, [4])], [("y", T.INT32, [4])]))


def test_a_target_abi_without_silu_mul_keeps_the_chain(refruntime, tmp_path):
    # SILU_MUL is ABI 1.3's: compiled for 1.2, the chain stays as imported (and needs nothing newer)
    info = compile_model(model(chain()), tmp_path / "a12", abi="1.2")
    assert info.metadata["abi"]["min_minor"] <= 2
    assert len(info.metadata["kernel_nodes"]) == 3
