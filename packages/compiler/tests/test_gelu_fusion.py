"""fuse-gelu: GELU spelled out in elementwise ops (torch.onnx.export's erf form, GPT-2's tanh form) compiled as
one unary GELU_ERF / GELU_TANH kernel call, compared with onnxruntime's CPU EP on the unfused graph; chains
that are not exactly GELU (an intermediate read elsewhere or a graph output, a wrong or non-scalar constant)
stay as imported and stay correct."""

from __future__ import annotations

import math
import warnings

import numpy as np
import onnx
import pytest
from conftest import const, make_model, ort_run
from onnx import TensorProto as T
from onnx import helper

from hipdnn_ep_compiler import compile_model, load_weights
from hipdnn_ep_compiler.frontend import load_model
from hipdnn_ep_compiler.frontend.importer import import_model
from hipdnn_ep_compiler.passes import run_pipeline

SQRT2 = math.sqrt(2.0)
BETA = math.sqrt(2.0 / math.pi)
KAPPA = 0.044715
NP = {T.FLOAT: np.float32, T.FLOAT16: np.float16}


class _Consts:
    """Constants of one chain: initializers or Constant nodes, of rank 0 or shape [1]."""

    def __init__(self, how: str, shape: str, elem: int):
        self.how, self.shape, self.np = how, shape, NP[elem]
        self.inits: list[onnx.TensorProto] = []
        self.nodes: list[onnx.NodeProto] = []

    def __call__(self, name: str, value: float) -> str:
        arr = np.asarray(value, self.np)
        if self.shape == "1":
            arr = arr.reshape(1)
        elif self.shape == "vec":
            arr = np.full((8,), value, self.np)
        if self.how == "node":
            self.nodes.append(helper.make_node("Constant", [], [name], value=const(name, arr)))
        else:
            self.inits.append(const(name, arr))
        return name


def erf_chain(variant: str, c: _Consts, sqrt2: float = SQRT2) -> list[onnx.NodeProto]:
    """x -> y as GELU's erf form in one of the orders exporters write."""
    n = helper.make_node
    if variant == "torch":  # torch.onnx.export (opset < 20) of nn.GELU(): as torch 2.x writes it
        return [n("Div", ["x", c("s2", sqrt2)], ["d"]), n("Erf", ["d"], ["e"]),
                n("Add", ["e", c("one", 1.0)], ["a"]), n("Mul", ["x", "a"], ["m"]),
                n("Mul", ["m", c("half", 0.5)], ["y"])]
    # 0.5 first, Mul by 1/sqrt(2), constants as first operands, the product associated the other way
    return [n("Mul", [c("half", 0.5), "x"], ["h"]), n("Mul", [c("r2", 1.0 / sqrt2), "x"], ["d"]),
            n("Erf", ["d"], ["e"]), n("Add", [c("one", 1.0), "e"], ["a"]), n("Mul", ["a", "h"], ["y"])]


def tanh_chain(variant: str, c: _Consts, kappa: float = KAPPA, power: float = 3.0) -> list[onnx.NodeProto]:
    """x -> y as GELU's tanh form."""
    n = helper.make_node
    if variant == "torch":  # torch.onnx.export of nn.GELU(approximate="tanh"): x * (x * x), constants first
        return [n("Mul", ["x", "x"], ["xx"]), n("Mul", ["x", "xx"], ["x3"]), n("Mul", [c("k", kappa), "x3"], ["kx3"]),
                n("Add", ["x", "kx3"], ["s"]), n("Mul", [c("b", BETA), "s"], ["q"]), n("Tanh", ["q"], ["t"]),
                n("Add", [c("one", 1.0), "t"], ["a"]), n("Mul", ["x", "a"], ["m"]),
                n("Mul", [c("half", 0.5), "m"], ["y"])]
    # transformers' NewGELUActivation (GPT-2): 0.5 * x first, torch.pow(x, 3.0), constants second
    return [n("Mul", ["x", c("half", 0.5)], ["h"]), n("Pow", ["x", c("p", power)], ["x3"]),
            n("Mul", ["x3", c("k", kappa)], ["kx3"]), n("Add", ["x", "kx3"], ["s"]),
            n("Mul", ["s", c("b", BETA)], ["q"]), n("Tanh", ["q"], ["t"]), n("Add", ["t", c("one", 1.0)], ["a"]),
            n("Mul", ["h", "a"], ["y"])]


def gelu_model(nodes, c: _Consts, elem=T.FLOAT, dims=("b", "s", 8), outputs=("y",)):
    return make_model(c.nodes + nodes, [("x", elem, list(dims))], [(o, elem, list(dims)) for o in outputs], c.inits)


def fused_ops(model) -> list[str]:
    """The import-level ops after fuse-gelu (constants left out)."""
    loaded, _ = load_model(model)
    module = run_pipeline(import_model(loaded), until="fuse-gelu")
    ops = module.body.operations[0].regions[0].blocks[0].operations
    return [op.operation.name for op in ops if op.operation.name not in ("hipdnn.weight", "hipdnn.constant")]


def run(model, x, refruntime, tmp_path):
    info = compile_model(model, tmp_path / "art")
    return info, refruntime.run(info.program, [x] + load_weights(info.metadata, model))


def check(model, refruntime, tmp_path, fused: str | None, rtol=1e-5, atol=1e-6):
    """Compile and run `model` on two shapes, compare with onnxruntime; `fused`: the GELU expected (one kernel
    call), None where the chain must stay as imported."""
    rng = np.random.default_rng(0)
    ops = fused_ops(model)
    if fused is None:
        assert "onnx.gelu" not in ops
    else:
        assert ops == ["onnx.gelu", "func.return"]
    info = compile_model(model, tmp_path / "art")
    weights = load_weights(info.metadata, model)
    for shape in ((2, 3, 8), (1, 5, 8)):
        x = (3 * rng.standard_normal(shape)).astype(np.float32)
        got = refruntime.run(info.program, [x] + weights)
        want = ort_run(model, {"x": x})
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    if fused is not None:
        assert len(info.metadata["kernel_nodes"]) == 1
        assert info.metadata["weights"] == []  # the chain's constants go with it
    else:
        assert len(info.metadata["kernel_nodes"]) > 1
    return info


@pytest.mark.parametrize("shape", ["scalar", "1"])
@pytest.mark.parametrize("how", ["init", "node"])
@pytest.mark.parametrize("variant", ["torch", "half_first"])
def test_erf_chain_is_one_gelu_erf(variant, how, shape, refruntime, tmp_path):
    c = _Consts(how, shape, T.FLOAT)
    model = gelu_model(erf_chain(variant, c), c)
    info = check(model, refruntime, tmp_path, "erf")
    assert info.metadata["kernel_nodes"] == ["node #4 (Mul -> 'y')" if how == "init" else "node #7 (Mul -> 'y')"]


@pytest.mark.parametrize("shape", ["scalar", "1"])
@pytest.mark.parametrize("how", ["init", "node"])
@pytest.mark.parametrize("variant", ["torch", "gpt2"])
def test_tanh_chain_is_one_gelu_tanh(variant, how, shape, refruntime, tmp_path):
    c = _Consts(how, shape, T.FLOAT)
    check(gelu_model(tanh_chain(variant, c), c), refruntime, tmp_path, "tanh")


def test_pow_of_an_integer_exponent(refruntime, tmp_path):
    c = _Consts("init", "scalar", T.FLOAT)
    nodes = tanh_chain("gpt2", c)
    c.inits = [t for t in c.inits if t.name != "p"] + [const("p", np.int64(3))]
    check(gelu_model(nodes, c), refruntime, tmp_path, "tanh")


def test_fused_ops_read_the_gelu_node():
    c = _Consts("init", "scalar", T.FLOAT)
    loaded, _ = load_model(gelu_model(tanh_chain("torch", c), c))
    text = str(run_pipeline(import_model(loaded), until="fuse-gelu"))
    assert '"onnx.gelu"(%arg0) {onnx.approximate = "tanh", onnx.node = "node #8 (Mul -> \'y\')"' in text


@pytest.mark.parametrize("chain,kind", [(erf_chain, "erf"), (tanh_chain, "tanh")])
@pytest.mark.parametrize("variant", [0, 1])
def test_float16_chains(chain, kind, variant, refruntime, tmp_path):
    """float16 constants (sqrt(2) and the rest rounded to float16) fuse; the result is GELU of x to float16's
    precision (the reference: onnxruntime on the same chain in float32)."""
    c16, c32 = _Consts("init", "scalar", T.FLOAT16), _Consts("init", "scalar", T.FLOAT)
    name = ("torch", "half_first" if chain is erf_chain else "gpt2")[variant]
    model = gelu_model(chain(name, c16), c16, elem=T.FLOAT16)
    assert fused_ops(model) == ["onnx.gelu", "func.return"]
    ref = gelu_model(chain(name, c32), c32)
    rng = np.random.default_rng(1)
    x = (3 * rng.standard_normal((2, 3, 8))).astype(np.float16)
    info, (got,) = run(model, x, refruntime, tmp_path)
    assert got.dtype == np.float16 and len(info.metadata["kernel_nodes"]) == 1
    (want,) = ort_run(ref, {"x": x.astype(np.float32)})
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=2e-3, atol=2e-3)


# ---------------------------------------------------------------- chains that must not fuse


@pytest.mark.parametrize("chain", [erf_chain, tanh_chain])
@pytest.mark.parametrize("extra", ["output", "reader"])
def test_an_intermediate_read_elsewhere_is_not_fused(chain, extra, refruntime, tmp_path):
    c = _Consts("init", "scalar", T.FLOAT)
    nodes = chain("torch", c)
    inner = "e" if chain is erf_chain else "t"  # the Erf / Tanh result
    if extra == "output":
        model = gelu_model(nodes, c, outputs=("y", inner))
    else:
        nodes.append(helper.make_node("Add", [inner, "x"], ["z"]))
        model = gelu_model(nodes, c, outputs=("y", "z"))
    check(model, refruntime, tmp_path, None)


def test_the_erf_product_read_elsewhere_is_not_fused(refruntime, tmp_path):
    c = _Consts("init", "scalar", T.FLOAT)
    model = gelu_model(erf_chain("torch", c), c, outputs=("y", "m"))  # x * (1 + erf) is a graph output too
    check(model, refruntime, tmp_path, None)


@pytest.mark.parametrize("case", ["sqrt2_is_1.5", "half_is_0.4", "one_is_2", "kappa", "power_2", "vector"])
def test_a_chain_of_other_constants_is_not_fused(case, refruntime, tmp_path):
    c = _Consts("init", "vec" if case == "vector" else "scalar", T.FLOAT)
    if case == "sqrt2_is_1.5":
        nodes = erf_chain("torch", c, sqrt2=1.5)
    elif case == "kappa":
        nodes = tanh_chain("gpt2", c, kappa=0.045)
    elif case == "power_2":
        nodes = tanh_chain("gpt2", c, power=2.0)
    else:
        nodes = erf_chain("torch", c)
        wrong = {"half_is_0.4": ("half", 0.4), "one_is_2": ("one", 2.0)}.get(case)
        if wrong:
            c.inits = [t for t in c.inits if t.name != wrong[0]] + [const(wrong[0], np.float32(wrong[1]))]
    # a [8] constant of 0.5s (sqrt(2)s...) is GELU's value too, but not a scalar: it stays as imported
    check(gelu_model(nodes, c), refruntime, tmp_path, None)


def test_a_constant_almost_sqrt2_within_float32_tolerance_fuses(refruntime, tmp_path):
    c = _Consts("init", "scalar", T.FLOAT)
    check(gelu_model(erf_chain("torch", c, sqrt2=SQRT2 * (1 + 3e-7)), c), refruntime, tmp_path, "erf")
    c = _Consts("init", "scalar", T.FLOAT)
    assert "onnx.gelu" not in fused_ops(gelu_model(erf_chain("torch", c, sqrt2=SQRT2 * (1 + 1e-5)), c))


def test_a_float16_constant_off_by_two_steps_is_not_fused():
    """float16's nearest value to sqrt(2) fuses (the float16 tests); two float16 steps above it does not."""
    c = _Consts("init", "scalar", T.FLOAT16)
    s2 = float(np.float16(SQRT2)) + 2 * 2.0 ** -10
    assert "onnx.gelu" not in fused_ops(gelu_model(erf_chain("torch", c, sqrt2=s2), c, elem=T.FLOAT16))


def test_a_rank_1_constant_on_a_scalar_x_is_not_fused(refruntime, tmp_path):
    """A [1] constant broadcasts a rank-0 x to [1]: GELU of x would have x's shape."""
    c = _Consts("init", "1", T.FLOAT)
    model = gelu_model(erf_chain("torch", c), c, dims=())
    model.graph.output[0].type.tensor_type.shape.dim.add().dim_value = 1
    assert "onnx.gelu" not in fused_ops(model)
    x = np.array(0.7, np.float32)
    _, (got,) = run(model, x, refruntime, tmp_path)
    (want,) = ort_run(model, {"x": x})
    assert got.shape == (1,)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_float64_chains_are_not_fused():
    c = _Consts("init", "scalar", T.FLOAT)
    c.np = np.float64
    assert "onnx.gelu" not in fused_ops(gelu_model(erf_chain("torch", c), c, elem=T.DOUBLE))


# ---------------------------------------------------------------- a real export


@pytest.mark.exports
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_a_torch_export(approximate, refruntime, tmp_path):
    """torch.onnx.export (the TorchScript exporter, opset 17) of Linear -> GELU: one MatMul, Add and GELU."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(approximate=approximate))
    path = tmp_path / "m.onnx"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the TorchScript exporter is deprecated (torch 2.9 on)
            torch.onnx.export(net, (torch.randn(2, 3, 8),), str(path), opset_version=17, dynamo=False,
                              input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "b", 1: "s"}})
    except Exception as exc:  # noqa: BLE001 - a torch without the TorchScript exporter (or its dependencies)
        pytest.skip(f"torch.onnx.export (dynamo=False) is not available: {exc}")
    model = onnx.load(path)
    assert "Erf" in [n.op_type for n in model.graph.node] or approximate == "tanh"
    ops = fused_ops(model)
    assert ops.count("onnx.gelu") == 1 and not {"onnx.erf", "onnx.tanh", "onnx.div"} & set(ops)
    rng = np.random.default_rng(2)
    x = (3 * rng.standard_normal((2, 5, 8))).astype(np.float32)
    info, (got,) = run(model, x, refruntime, tmp_path)
    (want,) = ort_run(model, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
