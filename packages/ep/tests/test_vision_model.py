"""A small torchvision-like CNN (Conv + BatchNormalization + Relu + MaxPool, a strided and a
depthwise Conv, HardSwish, GlobalAveragePool, Flatten, Gemm) with dynamic batch and spatial dims,
claimed whole by the EP with fallback off and compared with ORT's CPU EP."""

from __future__ import annotations

import numpy as np
import onnx
from conftest import NO_FALLBACK, cpu_session, make_session
from onnx import TensorProto as T
from onnx import helper, numpy_helper

RNG = np.random.default_rng(0)


def _w(name, *shape, scale=0.3):
    return numpy_helper.from_array((RNG.standard_normal(shape) * scale).astype(np.float32), name)


def _bn(prefix, c):
    return [_w(f"{prefix}_s", c), _w(f"{prefix}_b", c),
            _w(f"{prefix}_m", c, scale=0.1),
            numpy_helper.from_array(RNG.uniform(0.5, 1.5, c).astype(np.float32), f"{prefix}_v")]


def small_cnn(path):
    nodes = [
        helper.make_node("Conv", ["x", "c1_w"], ["c1"], pads=[3, 3, 3, 3], strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c1", "bn1_s", "bn1_b", "bn1_m", "bn1_v"], ["b1"], epsilon=1e-5),
        helper.make_node("Relu", ["b1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["p1", "c2_w", "c2_b"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c2", "bn2_s", "bn2_b", "bn2_m", "bn2_v"], ["b2"]),
        helper.make_node("Relu", ["b2"], ["r2"]),
        helper.make_node("Conv", ["r2", "dw_w", "dw_b"], ["dw"], group=16, auto_pad="SAME_UPPER", strides=[2, 2]),
        helper.make_node("HardSwish", ["dw"], ["hs"]),
        helper.make_node("Add", ["hs", "skip"], ["sum"]),
        helper.make_node("GlobalAveragePool", ["sum"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["flat"]),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], transB=1),
    ]
    # the skip branch: a 1x1 strided conv of the pooled features
    nodes.insert(8, helper.make_node("Conv", ["p1", "sk_w"], ["skip"], strides=[2, 2]))
    inits = [_w("c1_w", 16, 3, 7, 7, scale=0.1), *_bn("bn1", 16), _w("c2_w", 16, 16, 3, 3, scale=0.1), _w("c2_b", 16),
             *_bn("bn2", 16), _w("dw_w", 16, 1, 3, 3), _w("dw_b", 16), _w("sk_w", 16, 16, 1, 1),
             _w("fc_w", 10, 16), _w("fc_b", 10)]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", T.FLOAT, ["N", 3, "H", "W"])],
                              [helper.make_tensor_value_info("logits", T.FLOAT, ["N", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # what every supported onnxruntime loads (1.23 stops at IR 11)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return model


def test_small_cnn_is_claimed_whole_and_matches_the_cpu_ep(env, ep_devices, tmp_path):
    path = tmp_path / "cnn.onnx"
    model = small_cnn(path)
    sess = make_session(path, ep_devices, env.options, NO_FALLBACK, optimize=False)
    compiled = env.compiled_ops()
    assert len(compiled) == 1, "one partition: the whole model"
    assert sorted(compiled[0]) == sorted(n.op_type for n in model.graph.node)
    cpu = cpu_session(path)
    for shape in ((2, 3, 64, 64), (1, 3, 45, 57), (3, 3, 33, 32)):
        x = RNG.standard_normal(shape).astype(np.float32)
        got, want = sess.run(None, {"x": x})[0], cpu.run(None, {"x": x})[0]
        assert got.shape == want.shape == (shape[0], 10)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
