"""Graph inputs the EP must not take for something else: an initializer that is also a graph input
(ONNX IR >= 4) is only that input's default, and an input declared without a shape is not a scalar.
Each is compared with onnxruntime's CPU EP, with CPU fallback on and off."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from conftest import NO_FALLBACK, Env, cpu_session, make_session
from models import save
from onnx import TensorProto, helper, numpy_helper


@dataclass(frozen=True)
class Overridable:
    """One node reading an int64 initializer that a caller may override by feeding it."""

    node: tuple  # (op_type, inputs, attributes)
    data: dict[str, tuple]  # data input name -> (element type, dims, value)
    defaults: dict[str, list[int]]  # initializer -> its value (the default)
    fed: dict[str, list[int]]  # another value for each
    # With fallback off: the reason the compiler gives when the node needs the value at compile time.
    refused: str = ""
    extra_consts: dict[str, list[int]] = field(default_factory=dict)  # true constants

    def model(self, path: Path) -> Path:
        op, ins, attrs = self.node
        inits = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in {**self.defaults,
                                                                                 **self.extra_consts}.items()]
        inputs = [helper.make_tensor_value_info(n, t, d)
                  for n, (t, d, _) in self.data.items()]
        inputs += [helper.make_tensor_value_info(n, TensorProto.INT64, [len(v)]) for n, v in self.defaults.items()]
        g = helper.make_graph([helper.make_node(op, ins, ["y"], name="n", **attrs)], "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT if op != "Mul" else
                                                             TensorProto.INT64, None)], initializer=inits)
        return save(g, path)

    def feeds(self, override: bool) -> dict[str, np.ndarray]:
        out = {n: np.array(v, dtype=np.float32 if t == TensorProto.FLOAT else np.int64)
               for n, (t, _, v) in self.data.items()}
        if override:
            out.update({n: np.array(v, np.int64) for n, v in self.fed.items()})
        return out


X = {"x": (TensorProto.FLOAT, [3, 4], np.arange(12, dtype=np.float32).reshape(3, 4).tolist())}
CASES = {
    "reshape-target": Overridable(("Reshape", ["x", "s"], {}), X, {"s": [2, 6]}, {"s": [6, 2]}),
    "expand-shape": Overridable(("Expand", ["x", "s"], {}), {"x": (TensorProto.FLOAT, [3, 1], [[1.0], [2.0], [3.0]])},
                                {"s": [3, 2]}, {"s": [3, 5]}),
    "slice-ends": Overridable(("Slice", ["x", "st", "e"], {}), X, {"e": [2]}, {"e": [3]}, extra_consts={"st": [0]}),
    "gather-indices": Overridable(("Gather", ["x", "i"], {}), X, {"i": [0, 1]}, {"i": [2, 2]}),
    "unsqueeze-axes": Overridable(("Unsqueeze", ["x", "a"], {}), X, {"a": [0]}, {"a": [2]}),
    "reduce-axes": Overridable(("ReduceSum", ["x", "a"], {"keepdims": 0}), X, {"a": [0]}, {"a": [-1]}),
    "int64-mul": Overridable(("Mul", ["xi", "k"], {}), {"xi": (TensorProto.INT64, [3], [1, 2, 3])},
                             {"k": [2, 3, 4]}, {"k": [5, 6, 7]}),
}


@pytest.mark.parametrize("fallback", [True, False], ids=["fallback", "no-fallback"])
@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_an_initializer_that_is_a_graph_input_is_its_default_only(case: str, fallback: bool, tmp_path: Path,
                                                                    ep_devices, env: Env) -> None:
    """The fed value is used, and the initializer only when nothing is fed; a node that needs the value at
    compile time is left to another EP (or, with fallback off, the session is refused saying why)."""
    c = CASES[case]
    model = c.model(tmp_path / "m.onnx")
    config = None if fallback else NO_FALLBACK
    if c.refused and not fallback:
        with pytest.raises(Exception, match=rf"node 'n' \({c.node[0]}\): {c.refused}"):
            make_session(model, ep_devices, env.options, config, optimize=False)
        return
    sess = make_session(model, ep_devices, env.options, config, optimize=False)
    cpu = cpu_session(model)
    for override in (False, True):
        feeds = c.feeds(override)
        (want,) = cpu.run(None, feeds)
        (got,) = sess.run(None, feeds)
        assert got.shape == want.shape, f"override={override}"
        np.testing.assert_array_equal(got, want)
    if not c.refused:
        assert env.compiled_models(), "the node ran on the EP"
        for compiled in env.compiled_models():
            assert not {t.name for t in compiled.graph.initializer} & set(c.defaults), \
                "an overridable initializer must reach the compiler as a graph input, not as a constant"


def _shapeless_input_model(path: Path) -> Path:
    """y = Relu(x) + s: x declared without a shape (any rank), s a scalar."""
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"], name="relu"),
                           helper.make_node("Add", ["r", "s"], ["y"], name="add")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("s", TensorProto.FLOAT, [])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return save(g, path)


def test_an_input_without_a_shape_is_not_compiled_as_a_scalar(tmp_path: Path, ep_devices, env: Env) -> None:
    """Compiled for rank 0, every Run failed, even with fallback on: the nodes reading the input are left to
    another EP, and with fallback off the session is refused saying why."""
    model = _shapeless_input_model(tmp_path / "m.onnx")
    sess = make_session(model, ep_devices, env.options)
    cpu = cpu_session(model)
    for shape in [(2, 3), (4,), (2, 1, 3)]:
        feeds = {"x": np.linspace(-1, 1, int(np.prod(shape)), dtype=np.float32).reshape(shape),
                 "s": np.array(0.5, np.float32)}
        np.testing.assert_array_equal(sess.run(None, feeds)[0], cpu.run(None, feeds)[0])
    with pytest.raises(Exception, match=r"node 'relu' \(Relu\): its rank is unknown \(no shape is declared or "
                                        r"inferred\); hipdnn-ep compiles for a known rank"):
        make_session(model, ep_devices, env.options, NO_FALLBACK)


def test_a_scalar_input_is_still_compiled(tmp_path: Path, ep_devices, env: Env) -> None:
    """A scalar input (declared shape []) is no input of unknown rank: where onnxruntime tells the two apart
    (after 1.23), the node reading it runs on the EP."""
    g = helper.make_graph([helper.make_node("Add", ["x", "s"], ["y"], name="add")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
                           helper.make_tensor_value_info("s", TensorProto.FLOAT, [])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    model = save(g, tmp_path / "m.onnx")
    feeds = {"x": np.array([1, 2, 3], np.float32), "s": np.array(0.5, np.float32)}
    if tuple(int(p) for p in ort.__version__.split(".")[:2]) <= (1, 23):
        np.testing.assert_array_equal(make_session(model, ep_devices, env.options).run(None, feeds)[0],
                                      cpu_session(model).run(None, feeds)[0])
        pytest.skip(f"onnxruntime {ort.__version__} reports a scalar and a shapeless input alike (rank 0)")
    got = make_session(model, ep_devices, env.options, NO_FALLBACK).run(None, feeds)[0]
    np.testing.assert_array_equal(got, [1.5, 2.5, 3.5])
