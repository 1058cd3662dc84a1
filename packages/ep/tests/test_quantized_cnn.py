"""A small CNN (Conv + Relu + MaxPool, a residual Add, GlobalAveragePool, Flatten, Gemm) quantized by
onnxruntime's `quantize_static` the way users do it, in both formats:
- QDQ (QuantizeLinear/DequantizeLinear pairs around float ops), uint8 activations and int8 weights, per
  tensor and per channel;
- QOperator (QLinearConv, com.microsoft QLinearAdd/QLinearGlobalAveragePool/QGemm), where supported.
The EP claims the QDQ model whole with CPU fallback off; its outputs are compared with ORT's CPU EP on the
same model (which fuses DequantizeLinear -> Conv -> QuantizeLinear into its integer QLinearConv, as the
compiler's fuse-qdq pass does)."""

from __future__ import annotations

import collections

import numpy as np
import onnx
import pytest
from conftest import NO_FALLBACK, cpu_session, make_session
from onnx import TensorProto as T
from onnx import helper, numpy_helper

quantization = pytest.importorskip("onnxruntime.quantization")
RNG = np.random.default_rng(0)


def _w(name, *shape):
    return numpy_helper.from_array((RNG.standard_normal(shape) * 0.2).astype(np.float32), name)


def small_cnn(path):
    inits = [_w("w1", 8, 3, 3, 3), _w("b1", 8), _w("w2", 8, 8, 3, 3), _w("b2", 8), _w("w3", 8, 8, 1, 1),
             _w("b3", 8), _w("fc", 10, 8), _w("fcb", 10)]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"]),
             helper.make_node("Add", ["c3", "p1"], ["a"]), helper.make_node("Relu", ["a"], ["r3"]),
             helper.make_node("GlobalAveragePool", ["r3"], ["g"]), helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", T.FLOAT, ["N", 3, 16, 16])],
                              [helper.make_tensor_value_info("y", T.FLOAT, ["N", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # what every supported onnxruntime loads (1.23 stops at IR 11)
    onnx.save(model, str(path))
    return path


def images(n):
    return RNG.standard_normal((n, 3, 16, 16)).astype(np.float32)


class Calibration(quantization.CalibrationDataReader):
    def __init__(self):
        self.batches = iter([{"x": images(1)} for _ in range(8)])

    def get_next(self):
        return next(self.batches, None)


def quantized(tmp_path, fmt, per_channel):
    """The model quantized with reduce_range (7-bit weights): the outputs are compared exactly with the CPU EP,
    whose u8 x s8 kernels on x86 CPUs without VNNI (AVX2 only) add pairs of products in int16 with saturation
    (vpmaddubsw), so full-range weights move its results off the exact ones there."""
    source = small_cnn(tmp_path / "cnn.onnx")
    out = tmp_path / f"cnn_{fmt}.onnx"
    quantization.quantize_static(str(source), str(out), Calibration(),
                                 quant_format=getattr(quantization.QuantFormat, fmt),
                                 activation_type=quantization.QuantType.QUInt8,
                                 weight_type=quantization.QuantType.QInt8, per_channel=per_channel, reduce_range=True)
    return out


@pytest.mark.parametrize("per_channel", [False, True])
def test_qdq_cnn_is_claimed_whole_and_matches_the_cpu_ep(env, ep_devices, tmp_path, per_channel):
    path = quantized(tmp_path, "QDQ", per_channel)
    model = onnx.load(str(path))
    ops = collections.Counter(n.op_type for n in model.graph.node)
    assert {"QuantizeLinear", "DequantizeLinear", "Conv"} <= set(ops), dict(ops)
    sess = make_session(path, ep_devices, env.options, NO_FALLBACK, optimize=False)
    compiled = env.compiled_ops()
    assert len(compiled) == 1, "one partition: the whole model"
    # every node (onnxruntime duplicates a DequantizeLinear that feeds two nodes, even unoptimized)
    assert set(compiled[0]) == set(ops) and len(compiled[0]) >= len(model.graph.node)
    cpu = cpu_session(path)
    for n in (1, 3, 64):
        x = images(n)
        (got,), (want,) = sess.run(None, {"x": x}), cpu.run(None, {"x": x})
        assert got.dtype == want.dtype == np.float32
        # exact: the compiler's fuse-qdq pass compiles each DQ -> Conv/Gemm -> Q group as the CPU EP's fused
        # integer kernels (QLinearConv, QGemm: int32 accumulation, one float requantization); the groups it
        # leaves float (the Add, GlobalAveragePool) requantize a float result, which could move a value one
        # step (y_scale) where onnxruntime's own QLinear kernels round otherwise: never at these inputs
        np.testing.assert_array_equal(got, want)


def test_qoperator_cnn_is_claimed_whole_and_matches_the_cpu_ep(env, ep_devices, tmp_path):
    path = quantized(tmp_path, "QOperator", per_channel=True)
    model = onnx.load(str(path))
    ops = collections.Counter(n.op_type for n in model.graph.node)
    assert {"QLinearConv", "QLinearAdd", "QLinearGlobalAveragePool", "QGemm"} <= set(ops), dict(ops)
    sess = make_session(path, ep_devices, env.options, NO_FALLBACK, optimize=False)
    compiled = env.compiled_ops()
    assert len(compiled) == 1, "one partition: the whole model"
    assert collections.Counter(compiled[0]) == ops
    cpu = cpu_session(path)
    last = next(n for n in model.graph.node if n.output[0] == "y")  # DequantizeLinear of QGemm's output
    step = next(numpy_helper.to_array(i) for i in model.graph.initializer if i.name == last.input[1])
    for n in (1, 3, 64):
        x = images(n)
        (got,), (want,) = sess.run(None, {"x": x}), cpu.run(None, {"x": x})
        assert got.dtype == want.dtype == np.float32
        # QLinearConv and QGemm are onnxruntime's integer arithmetic; QLinearAdd/QLinearGlobalAveragePool are
        # dequantize -> float -> quantize, which onnxruntime rounds its own way (per CPU instruction set): a
        # requantized value may move one step. Equal here; allowed: two steps of the output's scale
        np.testing.assert_allclose(got, want, rtol=0, atol=2 * step)
