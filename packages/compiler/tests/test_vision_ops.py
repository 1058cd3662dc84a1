"""The vision ops (ops/vision.py) compiled and run on the reference runtime, on fixed shapes and with
dynamic batch and spatial dims, compared with onnxruntime's CPU EP."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import const, make_model, ort_run
from onnx import TensorProto as T
from onnx import helper

from hipdnn_ep_compiler import compile_model, load_weights
from hipdnn_ep_compiler.errors import UnsupportedError

F, H = T.FLOAT, T.FLOAT16
NP = {F: np.float32, H: np.float16}
RNG = np.random.default_rng(1)


def w(name, *shape, dtype=np.float32):
    return const(name, (RNG.standard_normal(shape) * 0.5).astype(dtype))


def case(op, x_dims, attrs=None, inits=(), ident=None, elem=F, sizes=((2, 9, 8), (1, 5, 7)), opset=18):
    """x_dims: the input's dims, "N", "H", "W" dynamic in the dynamic variant; sizes: (N, H, W) runs."""
    return pytest.param(op, x_dims, attrs or {}, list(inits), elem, sizes, opset, id=ident or op)


X2 = ["N", 4, "H", "W"]
CASES = [
    case("Conv", X2, {"pads": [1, 1, 1, 1]}, [w("w", 6, 4, 3, 3), w("b", 6)]),
    case("Conv", X2, {"strides": [2, 1], "dilations": [1, 2], "pads": [0, 1, 2, 0]}, [w("w", 6, 4, 3, 2)],
         ident="Conv-stride-dilation-nobias"),
    case("Conv", X2, {"group": 2, "auto_pad": "SAME_UPPER", "strides": [2, 2]}, [w("w", 4, 2, 3, 3), w("b", 4)],
         ident="Conv-group-same-upper"),
    case("Conv", X2, {"group": 4, "auto_pad": "SAME_LOWER"}, [w("w", 8, 1, 2, 2)], ident="Conv-depthwise-same-lower"),
    case("Conv", X2, {"auto_pad": "VALID"}, [w("w", 3, 4, 1, 1)], ident="Conv-pointwise-valid"),
    case("Conv", ["N", 4, "W"], {"pads": [2, 1], "strides": [3]}, [w("w", 5, 4, 4), w("b", 5)], ident="Conv-1d"),
    case("Conv", ["N", 2, "H", "W", 5], {"pads": [1, 0, 1, 1, 0, 1]}, [w("w", 3, 2, 3, 2, 3)], ident="Conv-3d"),
    case("Conv", X2, {"pads": [1, 1, 1, 1]}, [w("w", 6, 4, 3, 3, dtype=np.float16), w("b", 6, dtype=np.float16)],
         elem=H, ident="Conv-f16"),
    case("MaxPool", X2, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    case("MaxPool", X2, {"kernel_shape": [2, 3], "ceil_mode": 1, "dilations": [2, 1], "strides": [2, 2]},
         ident="MaxPool-ceil-dilation"),
    case("MaxPool", X2, {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]}, ident="MaxPool-same"),
    case("AveragePool", X2, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]}),
    case("AveragePool", X2, {"kernel_shape": [3, 2], "pads": [1, 0, 1, 1], "count_include_pad": 1, "ceil_mode": 1,
                             "strides": [2, 2]}, ident="AveragePool-include-pad-ceil"),
    case("AveragePool", ["N", 4, "W"], {"kernel_shape": [2]}, ident="AveragePool-1d"),
    case("GlobalAveragePool", X2), case("GlobalMaxPool", X2),
    case("GlobalAveragePool", X2, elem=H, ident="GlobalAveragePool-f16"),
    case("BatchNormalization", X2, {"epsilon": 1e-3},
         [w("s", 4), w("bb", 4), w("m", 4), const("v", np.linspace(0.5, 2.0, 4, dtype=np.float32))]),
    case("InstanceNormalization", X2, {"epsilon": 1e-3}, [w("s", 4), w("bb", 4)]),
    case("InstanceNormalization", ["N", 4, "W"], {}, [w("s", 4), w("bb", 4)], elem=F, ident="InstanceNormalization-1d"),
    case("GroupNormalization", X2, {"num_groups": 2, "epsilon": 1e-3}, [w("s", 4), w("bb", 4)], opset=21,
         ident="GroupNormalization-21"),
    case("GroupNormalization", X2, {"num_groups": 2}, [w("s", 2), w("bb", 2)], ident="GroupNormalization-18"),
    case("HardSigmoid", X2, {"alpha": 0.3, "beta": 0.4}), case("HardSwish", X2), case("LeakyRelu", X2, {"alpha": 0.2}),
    case("Elu", X2, {"alpha": 0.7}), case("Selu", X2), case("Celu", X2, {"alpha": 1.5}), case("Softplus", X2),
    case("Mish", X2, elem=H, ident="Mish-f16"), case("Mish", X2), case("ThresholdedRelu", X2, {"alpha": 0.3}),
    case("PRelu", X2, inits=[const("slope", np.array([[[0.1]], [[0.2]], [[-0.3]], [[2.0]]], np.float32))]),
]


@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "dynamic"])
@pytest.mark.parametrize("op,x_dims,attrs,inits,elem,sizes,opset", CASES)
def test_vision_op_matches_onnxruntime(op, x_dims, attrs, inits, elem, sizes, opset, dynamic, refruntime, tmp_path):
    names = ["x"] + [t.name for t in inits]
    node = helper.make_node(op, names, ["out"], **attrs)
    runs = sizes if dynamic else sizes[:1]
    first = dict(zip("NHW", sizes[0], strict=True))
    decl = [d if not isinstance(d, str) else (d if dynamic else first[d]) for d in x_dims]
    model = make_model([node], [("x", elem, decl)], [("out", elem, None)], inits, opset=opset)
    info = compile_model(model, tmp_path / "art")
    weights = load_weights(info.metadata, model)
    for n, h, wd in runs:
        env = {"N": n, "H": h, "W": wd}
        shape = [env[d] if isinstance(d, str) else d for d in x_dims]
        x = RNG.standard_normal(shape).astype(NP[elem])
        got = refruntime.run(info.program, [x] + weights)[0]
        want = ort_run(model, {"x": x})[0]
        assert got.shape == want.shape and got.dtype == want.dtype
        tol = 5e-3 if elem == H else 1e-5
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


def test_maxpool_indices_are_refused(tmp_path):
    node = helper.make_node("MaxPool", ["x"], ["out", "idx"], kernel_shape=[2, 2])
    model = make_model([node], [("x", F, [1, 2, 4, 4])], [("out", F, None), ("idx", T.INT64, None)], opset=18)
    with pytest.raises(UnsupportedError, match="the Indices outputs are not supported"):
        compile_model(model, tmp_path / "art")


def test_conv_on_a_too_small_input_is_refused_at_run_time(refruntime, tmp_path):
    node = helper.make_node("Conv", ["x", "w"], ["out"])
    model = make_model([node], [("x", F, [1, 1, "H", 4])], [("out", F, None)], [w("w", 1, 1, 3, 3)], opset=18)
    info = compile_model(model, tmp_path / "art")
    weights = load_weights(info.metadata, model)
    assert refruntime.run(info.program, [np.zeros((1, 1, 3, 4), np.float32)] + weights)[0].shape == (1, 1, 1, 2)
    with pytest.raises(RuntimeError, match="status 1"):
        refruntime.run(info.program, [np.zeros((1, 1, 2, 4), np.float32)] + weights)
    assert any(c["text"] == "spatial dim 0 is {1} with its pads, smaller than the kernel's extent {0}"
               for c in info.metadata["checks"])
