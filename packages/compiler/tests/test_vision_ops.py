"""The vision ops (ops/vision.py) compiled and run on the reference runtime, on fixed shapes and with
dynamic batch and spatial dims, compared with onnxruntime's CPU EP."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import const, make_model, ort_run
from onnx import TensorProto as T
from onnx import helper

from hipdnn_ep_compiler import compile_model, load_weights
from hipdnn_ep_compiler.errors import ModelError, UnsupportedError

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


MAXPOOL_INDICES_CASES = [
    ("2d", ["N", 3, "H", "W"], {"kernel_shape": [2, 2]}),
    ("2d-column-major", ["N", 3, "H", "W"], {"kernel_shape": [3, 2], "strides": [2, 1], "storage_order": 1}),
    ("2d-pads-dilations", ["N", 3, "H", "W"], {"kernel_shape": [3, 3], "pads": [1, 2, 1, 0], "dilations": [2, 1]}),
    ("2d-ceil", ["N", 3, "H", "W"], {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}),
    ("1d", ["N", 3, "W"], {"kernel_shape": [3], "pads": [1, 1]}),
    ("3d-column-major", ["N", 2, 3, "H", "W"], {"kernel_shape": [2, 2, 2], "storage_order": 1}),
]


@pytest.mark.parametrize("outputs", ["both", "indices"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "dynamic"])
@pytest.mark.parametrize("ident,x_dims,attrs", MAXPOOL_INDICES_CASES, ids=[c[0] for c in MAXPOOL_INDICES_CASES])
def test_maxpool_indices_match_onnxruntime(ident, x_dims, attrs, dynamic, outputs, refruntime, tmp_path):
    node = helper.make_node("MaxPool", ["x"], ["out", "idx"], **attrs)  # "indices": Y is not a graph output
    sizes = [(2, 6, 7), (1, 5, 4)] if dynamic else [(2, 6, 7)]
    first = dict(zip("NHW", sizes[0], strict=True))
    decl = [d if not isinstance(d, str) else (d if dynamic else first[d]) for d in x_dims]
    outs = ([("out", F, None)] if outputs == "both" else []) + [("idx", T.INT64, None)]
    model = make_model([node], [("x", F, decl)], outs, opset=12)
    info = compile_model(model, tmp_path / "art")
    rng = np.random.default_rng(3)
    for n, h, wd in sizes:
        env = {"N": n, "H": h, "W": wd}
        x = rng.standard_normal([env[d] if isinstance(d, str) else d for d in x_dims]).astype(np.float32)
        x.reshape(-1)[:4] = 2.0  # a tie: the first maximum's index
        for got, want in zip(refruntime.run(info.program, [x]), ort_run(model, {"x": x}), strict=True):
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_maxpool_indices_of_uint8_match_onnxruntime(refruntime, tmp_path):
    node = helper.make_node("MaxPool", ["x"], ["out", "idx"], kernel_shape=[2, 2], strides=[2, 2])
    model = make_model([node], [("x", T.UINT8, [1, 2, 4, 6])], [("out", T.UINT8, None), ("idx", T.INT64, None)],
                       opset=12)
    info = compile_model(model, tmp_path / "art")
    x = np.random.default_rng(4).integers(0, 256, (1, 2, 4, 6)).astype(np.uint8)
    for got, want in zip(refruntime.run(info.program, [x]), ort_run(model, {"x": x}), strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "dynamic"])
@pytest.mark.parametrize("read,attrs", [("y rm rv", {"momentum": 0.8, "epsilon": 1e-3}), ("y", {}), ("rv", {})],
                         ids=["all", "y-only", "running-var"])
def test_batch_norm_training_mode_matches_onnxruntime(read, attrs, dynamic, refruntime, tmp_path):
    """Training mode: X normalized with its own per-channel statistics; running_mean/running_var blend the
    inputs with them by momentum.  `read`: the outputs the graph reads (training mode has all three)."""
    outs = read.split()
    node = helper.make_node("BatchNormalization", ["x", "s", "bb", "m", "v"], ["y", "rm", "rv"], training_mode=1,
                            **attrs)
    inits = [w("s", 3), w("bb", 3), w("m", 3), const("v", np.linspace(0.5, 2.0, 3, dtype=np.float32))]
    dims = ["N", 3, "H", 5] if dynamic else [2, 3, 4, 5]
    model = make_model([node], [("x", F, dims)], [(o, F, None) for o in outs], inits, opset=15)
    info = compile_model(model, tmp_path / "art")
    weights = load_weights(info.metadata, model)
    for n, h in ((2, 4), (1, 3), (3, 1)) if dynamic else ((2, 4),):
        x = (RNG.standard_normal((n, 3, h, 5)) * 2 + 0.5).astype(np.float32)
        got = refruntime.run(info.program, [x] + weights)
        want = ort_run(model, {"x": x})
        assert len(got) == len(want) == len(outs)
        for g, e in zip(got, want, strict=True):
            assert g.shape == e.shape
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def test_batch_norm_training_mode_of_mixed_element_types_is_refused(tmp_path):
    node = helper.make_node("BatchNormalization", ["x", "s", "bb", "m", "v"], ["y", "rm", "rv"], training_mode=1)
    inits = [w("s", 3, dtype=np.float16), w("bb", 3, dtype=np.float16), w("m", 3), const("v", np.ones(3, np.float32))]
    model = make_model([node], [("x", H, [2, 3, 4])], [("y", H, None), ("rm", F, None), ("rv", F, None)], inits,
                       opset=15)
    with pytest.raises(UnsupportedError, match="training mode needs X, input_mean and input_var of one element type"):
        compile_model(model, tmp_path / "art")


def test_batch_norm_running_statistics_need_training_mode(tmp_path):
    node = helper.make_node("BatchNormalization", ["x", "s", "bb", "m", "v"], ["y", "rm", "rv"], training_mode=0)
    inits = [w("s", 3), w("bb", 3), w("m", 3), const("v", np.ones(3, np.float32))]
    model = make_model([node], [("x", F, [2, 3, 4])], [("y", F, None), ("rm", F, None), ("rv", F, None)], inits,
                       opset=15)
    # onnx's shape inference refuses it first (the rule refuses it too, for a model that gets past it)
    with pytest.raises(ModelError, match="should be 1 when Training_mode = False"):
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


# ---------------------------------------------------------------- ConvTranspose

LP_CASES = [
    case("LpPool", X2, {"kernel_shape": [3, 2]}, ident="LpPool"),
    case("LpPool", X2, {"kernel_shape": [3, 3], "p": 3, "strides": [2, 1], "pads": [1, 1, 1, 0]},
         ident="LpPool-p3-pads"),
    case("LpPool", X2, {"kernel_shape": [2, 3], "p": 1, "auto_pad": "SAME_UPPER"}, ident="LpPool-p1-same"),
    case("LpPool", X2, {"kernel_shape": [2, 2], "dilations": [2, 1]}, ident="LpPool-dilations"),
    case("LpPool", ["N", 4, "W"], {"kernel_shape": [3]}, ident="LpPool-1d"),
    case("LpPool", X2, {"kernel_shape": [2, 2]}, elem=H, ident="LpPool-f16"),
]


@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "dynamic"])
@pytest.mark.parametrize("op,x_dims,attrs,inits,elem,sizes,opset", LP_CASES)
def test_lp_pool_matches_onnxruntime(op, x_dims, attrs, inits, elem, sizes, opset, dynamic, refruntime, tmp_path):
    test_vision_op_matches_onnxruntime(op, x_dims, attrs, inits, elem, sizes, opset, dynamic, refruntime, tmp_path)


def test_lp_pool_ceil_mode_is_refused(tmp_path):
    node = helper.make_node("LpPool", ["x"], ["out"], kernel_shape=[2, 2], ceil_mode=1)
    model = make_model([node], [("x", F, [1, 2, 5, 5])], [("out", F, None)], opset=18)
    with pytest.raises(UnsupportedError, match="LpPool with ceil_mode is not supported"):
        compile_model(model, tmp_path / "art")


CT_CASES = [
    case("ConvTranspose", X2, {}, [w("w", 4, 3, 3, 3), w("b", 3)], ident="ConvTranspose"),
    case("ConvTranspose", X2, {"strides": [2, 2], "pads": [1, 0, 1, 1], "output_padding": [1, 0]},
         [w("w", 4, 2, 3, 3)], ident="ConvTranspose-stride-pads-outpad"),
    case("ConvTranspose", X2, {"group": 2, "dilations": [2, 1], "strides": [1, 3]}, [w("w", 4, 3, 2, 3), w("b", 6)],
         ident="ConvTranspose-group-dilation"),
    case("ConvTranspose", X2, {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, [w("w", 4, 2, 3, 3)],
         ident="ConvTranspose-same-upper"),
    case("ConvTranspose", X2, {"auto_pad": "SAME_LOWER", "strides": [2, 3]}, [w("w", 4, 2, 4, 3)],
         ident="ConvTranspose-same-lower"),
    case("ConvTranspose", X2, {"auto_pad": "SAME_UPPER", "strides": [2, 3]}, [w("w", 4, 2, 3, 2)],
         ident="ConvTranspose-same-kernel-below-stride"),
    case("ConvTranspose", X2, {"auto_pad": "VALID", "strides": [2, 2]}, [w("w", 4, 2, 2, 2)],
         ident="ConvTranspose-valid"),
    case("ConvTranspose", ["N", 4, "W"], {"strides": [3], "pads": [1, 2]}, [w("w", 4, 5, 4), w("b", 5)],
         ident="ConvTranspose-1d"),
    case("ConvTranspose", ["N", 2, "H", "W", 3], {"strides": [2, 1, 2]}, [w("w", 2, 3, 2, 3, 2)],
         ident="ConvTranspose-3d"),
    case("ConvTranspose", X2, {"strides": [2, 2]}, [w("w", 4, 3, 2, 2, dtype=np.float16)], elem=H,
         ident="ConvTranspose-f16"),
]


@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "dynamic"])
@pytest.mark.parametrize("op,x_dims,attrs,inits,elem,sizes,opset", CT_CASES)
def test_conv_transpose_matches_onnxruntime(op, x_dims, attrs, inits, elem, sizes, opset, dynamic, refruntime,
                                            tmp_path):
    test_vision_op_matches_onnxruntime(op, x_dims, attrs, inits, elem, sizes, opset, dynamic, refruntime, tmp_path)


@pytest.mark.parametrize("attrs", [
    {"strides": [3, 2], "output_shape": [10, 8]},
    {"strides": [3, 2], "output_shape": [8, 6], "auto_pad": "SAME_UPPER"},
    {"strides": [2, 2], "output_shape": [8, 7]},
], ids=["output_shape", "output_shape-same-upper", "output_shape-odd"])
def test_conv_transpose_output_shape_matches_onnxruntime(attrs, refruntime, tmp_path):
    node = helper.make_node("ConvTranspose", ["x", "w"], ["out"], **attrs)
    model = make_model([node], [("x", F, [1, 3, 3, 3])], [("out", F, None)], [w("w", 3, 2, 3, 3)], opset=18)
    info = compile_model(model, tmp_path / "art")
    x = RNG.standard_normal((1, 3, 3, 3)).astype(np.float32)
    got = refruntime.run(info.program, [x] + load_weights(info.metadata, model))[0]
    want = ort_run(model, {"x": x})[0]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv_transpose_channel_mismatch_is_refused(tmp_path):
    node = helper.make_node("ConvTranspose", ["x", "w"], ["out"])
    model = make_model([node], [("x", F, [1, 3, 4, 4])], [("out", F, [1, 2, 6, 6])], [w("w", 4, 2, 3, 3)], opset=18)
    with pytest.raises(Exception, match="channels but W's dim 0"):
        compile_model(model, tmp_path / "art")


# ---------------------------------------------------------------- Resize

def _resize_case(ident, attrs, scales=None, sizes=None, roi=None, x=(1, 3, 5, 6), dyn=("N", 3, "H", "W"),
                 runs=((1, 5, 6), (2, 4, 9)), opset=19, elem=F):
    return pytest.param(attrs, scales, sizes, roi, x, dyn, runs, opset, elem, id=ident)


RESIZE_CASES = [
    _resize_case("nearest-up", {"mode": "nearest"}, scales=[1, 1, 2, 3]),
    _resize_case("nearest-down-floor-asym", {"mode": "nearest", "nearest_mode": "floor",
                                             "coordinate_transformation_mode": "asymmetric"}, scales=[1, 1, 0.5, 0.6]),
    _resize_case("nearest-ceil-align", {"mode": "nearest", "nearest_mode": "ceil",
                                        "coordinate_transformation_mode": "align_corners"}, scales=[1, 1, 1.5, 2]),
    _resize_case("nearest-prefer-ceil", {"mode": "nearest", "nearest_mode": "round_prefer_ceil"},
                 scales=[1, 1, 1.5, 0.5]),
    _resize_case("linear-up", {"mode": "linear"}, scales=[1, 1, 2, 2]),
    _resize_case("linear-down-pytorch", {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
                 scales=[1, 1, 0.5, 0.5]),
    _resize_case("linear-align-sizes", {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
                 sizes=[1, 3, 8, 7], dyn=(1, 3, "H", "W"), runs=((1, 5, 6), (1, 3, 4))),
    _resize_case("linear-symmetric", {"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"},
                 scales=[1, 1, 2.5, 1.7]),
    _resize_case("linear-antialias", {"mode": "linear", "antialias": 1}, scales=[1, 1, 0.5, 0.4]),
    _resize_case("cubic-up", {"mode": "cubic"}, scales=[1, 1, 2, 1.5]),
    _resize_case("cubic-exclude-a", {"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1},
                 scales=[1, 1, 0.8, 1.6]),
    _resize_case("cubic-asym", {"mode": "cubic", "coordinate_transformation_mode": "asymmetric"},
                 scales=[1, 1, 2, 2]),
    _resize_case("cubic-antialias", {"mode": "cubic", "antialias": 1}, scales=[1, 1, 0.6, 0.5]),
    _resize_case("crop-and-resize", {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
                                     "extrapolation_value": 10.0},
                 sizes=[1, 3, 7, 5], roi=[0, 0, -0.2, 0.1, 1, 1, 0.8, 1.3], dyn=(1, 3, "H", "W"),
                 runs=((1, 5, 6), (1, 9, 4))),  # not 7 -> 7: onnxruntime then ignores the roi along that axis
    _resize_case("axes-sizes-not-larger", {"mode": "linear", "axes": [2, 3], "keep_aspect_ratio_policy": "not_larger"},
                 sizes=[8, 8], dyn=None),
    _resize_case("axes-scales", {"mode": "nearest", "axes": [-1]}, scales=[2.0]),
    _resize_case("rank3-linear", {"mode": "linear"}, scales=[1, 2, 0.5], x=(2, 5, 6), dyn=("N", "H", "W")),
    _resize_case("rank5-nearest", {"mode": "nearest"}, scales=[1, 1, 2, 1, 2], x=(1, 2, 3, 4, 2),
                 dyn=None),
    _resize_case("f16-linear", {"mode": "linear"}, scales=[1, 1, 2, 2], elem=H),
    _resize_case("opset13-cubic", {"mode": "cubic"}, scales=[1, 1, 1.5, 2], opset=13),
]


def _resize_model(attrs, scales, sizes, roi, x_dims, opset, elem, op="Resize"):
    inits = []
    if True:
        names = ["x", "roi" if roi is not None else "", "scales" if scales is not None else "",
                 "sizes" if sizes is not None else ""]
        if roi is not None:
            inits.append(const("roi", np.array(roi, np.float32)))
        if scales is not None:
            inits.append(const("scales", np.array(scales, np.float32)))
        if sizes is not None:
            inits.append(const("sizes", np.array(sizes, np.int64)))
        while names[-1] == "":
            names.pop()
    node = helper.make_node(op, names, ["out"], **attrs)
    return make_model([node], [("x", elem, list(x_dims))], [("out", elem, None)], inits, opset=opset)


@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "dynamic"])
@pytest.mark.parametrize("attrs,scales,sizes,roi,x,dyn,runs,opset,elem", RESIZE_CASES)
def test_resize_matches_onnxruntime(attrs, scales, sizes, roi, x, dyn, runs, opset, elem, dynamic, refruntime,
                                    tmp_path):
    if dynamic and dyn is None:
        pytest.skip("a static case")
    model = _resize_model(attrs, scales, sizes, roi, dyn if dynamic else x, opset, elem)
    info = compile_model(model, tmp_path / "art")
    weights = load_weights(info.metadata, model)
    shapes = [x]
    if dynamic:
        shapes = []
        for n, h, wd in runs:
            env = {"N": n, "H": h, "W": wd}
            shapes.append([env[d] if isinstance(d, str) else d for d in dyn])
    for shape in shapes:
        xv = RNG.standard_normal(shape).astype(NP[elem])
        got = refruntime.run(info.program, [xv] + weights)[0]
        want = ort_run(model, {"x": xv})[0]
        assert got.shape == want.shape
        tol = 5e-3 if elem == H else 1e-4
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


def test_resize_sizes_from_the_input_shape(refruntime, tmp_path):
    """YOLO/FPN style: sizes = Concat(Shape(x)[:2], Shape(skip)[2:]), dims known only at run time."""
    n = helper.make_node
    nodes = [n("Shape", ["skip"], ["s"]), n("Slice", ["s", "i2", "i4"], ["hw"]), n("Shape", ["x"], ["xs"]),
             n("Slice", ["xs", "i0", "i2"], ["nc"]), n("Concat", ["nc", "hw"], ["sizes"], axis=0),
             n("Resize", ["x", "", "", "sizes"], ["up"], mode="nearest"), n("Add", ["up", "skip"], ["out"])]
    inits = [const(k, np.array([v], np.int64)) for k, v in (("i0", 0), ("i2", 2), ("i4", 4))]
    model = make_model(nodes, [("x", F, ["N", 3, "H", "W"]), ("skip", F, ["N", 3, "H2", "W2"])], [("out", F, None)],
                       inits, opset=19)
    info = compile_model(model, tmp_path / "art")
    for shape, skip_shape in (((1, 3, 4, 5), (1, 3, 8, 10)), ((2, 3, 3, 3), (2, 3, 7, 6))):
        xv = RNG.standard_normal(shape).astype(np.float32)
        sv = RNG.standard_normal(skip_shape).astype(np.float32)
        got = refruntime.run(info.program, [xv, sv] + load_weights(info.metadata, model))[0]
        np.testing.assert_allclose(got, ort_run(model, {"x": xv, "skip": sv})[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("scales,sizes,what", [
    ([1, 1, 0, 2], None, "must be finite and > 0"),
    ([1, 1, 2], None, "scales"),
    (None, None, "sizes"),
    (None, [1, 3, -2, 4], "must be >= 0"),
])
def test_resize_bad_scales_or_sizes_are_refused(scales, sizes, what, tmp_path):
    from hipdnn_ep_compiler.errors import ModelError
    model = _resize_model({"mode": "nearest"}, scales, sizes, None, (1, 3, 4, 4), 19, F)
    with pytest.raises((ModelError, UnsupportedError), match=what):
        compile_model(model, tmp_path / "art")


def test_resize_scales_fed_at_run_time_are_refused(tmp_path):
    node = helper.make_node("Resize", ["x", "", "scales"], ["out"], mode="nearest")
    model = make_model([node], [("x", F, [1, 3, 4, 4]), ("scales", F, [4])], [("out", F, None)], opset=19)
    with pytest.raises(UnsupportedError, match="scales must be a constant"):
        compile_model(model, tmp_path / "art")


def test_resize_sizes_fed_at_run_time_are_checked(refruntime, tmp_path):
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["out"], mode="nearest")
    model = make_model([node], [("x", F, [1, 1, 2, 2]), ("sizes", T.INT64, [4])], [("out", F, None)], opset=19)
    info = compile_model(model, tmp_path / "art")
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    got = refruntime.run(info.program, [x, np.array([1, 1, 3, 5], np.int64)])[0]
    np.testing.assert_allclose(got, ort_run(model, {"x": x, "sizes": np.array([1, 1, 3, 5], np.int64)})[0])
    with pytest.raises(RuntimeError, match="status 1"):
        refruntime.run(info.program, [x, np.array([1, 1, -3, 5], np.int64)])


# ---------------------------------------------------------------- GridSample

@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "dynamic"])
@pytest.mark.parametrize("attrs,spatial,opset", [
    ({}, 2, 16), ({"mode": "nearest", "padding_mode": "border"}, 2, 16),
    ({"mode": "bicubic", "padding_mode": "reflection"}, 2, 16), ({"mode": "bicubic", "align_corners": 1}, 2, 16),
    ({"mode": "linear", "padding_mode": "reflection", "align_corners": 1}, 2, 20),
    ({"mode": "cubic", "padding_mode": "border"}, 2, 20),
    ({"mode": "linear", "padding_mode": "zeros"}, 3, 20), ({"mode": "nearest", "padding_mode": "reflection"}, 3, 20),
], ids=["bilinear-zeros", "nearest-border", "bicubic-reflection", "bicubic-align", "linear-reflection-align",
        "cubic-border", "3d-linear", "3d-nearest-reflection"])
def test_grid_sample_matches_onnxruntime(attrs, spatial, opset, dynamic, refruntime, tmp_path):
    xs = (2, 3, 5, 6) if spatial == 2 else (1, 2, 3, 4, 5)
    gs = (2, 4, 7, 2) if spatial == 2 else (1, 2, 3, 4, 3)
    xd = ["N", xs[1], *(["H", "W"] if spatial == 2 else ["D", 4, 5])] if dynamic else list(xs)
    gd = ["N", *(["Ho", "Wo"] if spatial == 2 else [2, 3, 4]), spatial] if dynamic else list(gs)
    node = helper.make_node("GridSample", ["x", "grid"], ["out"], **attrs)
    model = make_model([node], [("x", F, xd), ("grid", F, gd)], [("out", F, None)], opset=opset)
    info = compile_model(model, tmp_path / "art")
    xv = RNG.standard_normal(xs).astype(np.float32)
    grid = (RNG.uniform(-1.3, 1.3, gs)).astype(np.float32)
    grid.flat[:4] = [-1.0, 1.0, 0.0, 0.5]  # the corners and the centre exactly
    got = refruntime.run(info.program, [xv, grid])[0]
    want = ort_run(model, {"x": xv, "grid": grid})[0]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_grid_sample_grid_of_another_rank_is_refused(tmp_path):
    from hipdnn_ep_compiler.errors import ModelError
    node = helper.make_node("GridSample", ["x", "grid"], ["out"])
    model = make_model([node], [("x", F, [1, 2, 4, 4]), ("grid", F, [1, 3, 3, 3])], [("out", F, [1, 2, 3, 3])],
                       opset=16)
    with pytest.raises((ModelError, UnsupportedError), match="grid"):
        compile_model(model, tmp_path / "art")


@pytest.mark.parametrize("attrs,scales,roi,what", [
    ({"mode": "area"}, [1, 1, 2, 2], None, "mode 'area'"),
    ({"mode": "nearest", "nearest_mode": "simple"}, [1, 1, 2, 2], None, "nearest_mode 'simple'"),
    ({"mode": "linear", "coordinate_transformation_mode": "tf_half_pixel_for_nn"}, [1, 1, 2, 2], None,
     "coordinate_transformation_mode 'tf_half_pixel_for_nn'"),
    ({"mode": "linear", "keep_aspect_ratio_policy": "fit"}, [1, 1, 2, 2], None, "keep_aspect_ratio_policy"),
    ({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"}, [1, 1, 2, 2], None, "needs roi"),
    ({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"}, [1, 1, 2, 2], [0, 0, 1, 1],
     "roi has 4 entries"),
], ids=["mode", "nearest_mode", "coordinate_mode", "policy", "crop-without-roi", "roi-length"])
def test_resize_bad_attributes_are_refused(attrs, scales, roi, what, tmp_path):
    from hipdnn_ep_compiler.errors import ModelError
    model = _resize_model(attrs, scales, None, roi, (1, 3, 4, 4), 19, F)
    with pytest.raises((ModelError, UnsupportedError), match=what):
        compile_model(model, tmp_path / "art")
