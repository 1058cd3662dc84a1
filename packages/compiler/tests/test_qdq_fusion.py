"""fuse-qdq: QDQ Conv, MatMul and Gemm groups compiled as QLinearConv, QLinearMatMul and QGemm, as onnxruntime's
CPU EP fuses them: models from onnxruntime's quantize_static (QDQ format) and built by hand, run on the reference
runtime and compared with onnxruntime's CPU EP (exactly where both fuse); groups that are not exact stay as
imported and stay correct."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from conftest import const, int8_weights, ort_run
from onnx import TensorProto as T
from onnx import helper

from hipdnn_ep_compiler import compile_model, load_weights
from hipdnn_ep_compiler.frontend import load_model
from hipdnn_ep_compiler.frontend.importer import import_model
from hipdnn_ep_compiler.passes import run_pipeline

quantization = pytest.importorskip("onnxruntime.quantization")


def model_of(nodes, inputs, outputs, inits=(), opset=21):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, d) for n, t, d in inputs],
                              [helper.make_tensor_value_info(n, t, d) for n, t, d in outputs], list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def fused_ops(model) -> list[str]:
    """The import-level ops after fuse-qdq."""
    loaded, _ = load_model(model)
    module = run_pipeline(import_model(loaded), until="fuse-qdq")
    return [op.operation.name for op in module.body.operations[0].regions[0].blocks[0].operations]


def compare(model, feeds_list, refruntime, tmp_path, steps=0):
    """Our outputs against onnxruntime's: equal, or within `steps` quantization steps (float outputs: the
    largest difference, divided by the output's scale `steps` is given as (steps, scale))."""
    info = compile_model(model, tmp_path / "art")
    weights = load_weights(info.metadata, model)
    names = [i["name"] for i in info.metadata["inputs"]]
    worst = 0.0
    for feeds in feeds_list:
        got = refruntime.run(info.program, [feeds[n] for n in names] + weights)
        want = ort_run(model, feeds)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            worst = max(worst, float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)), initial=0)))
    if steps == 0:
        assert worst == 0
    else:
        n, scale = steps
        assert worst <= n * scale * 1.0001
    return worst


class _Reader(quantization.CalibrationDataReader if quantization else object):
    def __init__(self, feeds):
        self.it = iter(feeds)

    def get_next(self):
        return next(self.it, None)


def _cnn(rng) -> onnx.ModelProto:
    """Conv(bias) -> Relu -> Conv -> Clip(0, 6) -> Reshape -> MatMul -> Add -> Gemm: float, to quantize."""
    inits = [const("w1", rng.normal(0, 0.3, (16, 3, 3, 3)).astype(np.float32)),
             const("b1", rng.normal(0, 0.1, (16,)).astype(np.float32)),
             const("w2", rng.normal(0, 0.2, (4, 16, 1, 1)).astype(np.float32)),
             const("zero", np.float32(0)), const("six", np.float32(6)),
             const("shape", np.array([2, -1], np.int64)),
             const("m", rng.normal(0, 0.1, (4 * 6 * 6, 16)).astype(np.float32)),
             const("g", rng.normal(0, 0.2, (10, 16)).astype(np.float32)),
             const("c", rng.normal(0, 0.1, (10,)).astype(np.float32))]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"]), helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"]), helper.make_node("Clip", ["c2", "zero", "six"], ["r2"]),
             helper.make_node("Reshape", ["r2", "shape"], ["f"]), helper.make_node("MatMul", ["f", "m"], ["mm"]),
             helper.make_node("Gemm", ["mm", "g", "c"], ["y"], transB=1)]
    return model_of(nodes, [("x", T.FLOAT, [2, 3, 8, 8])], [("y", T.FLOAT, [2, 10])], inits, opset=17)


@pytest.mark.parametrize("per_channel", [True, False])
@pytest.mark.parametrize("activation", ["QUInt8", "QInt8"])
def test_quantize_static_model_matches_onnxruntime(per_channel, activation, refruntime, tmp_path):
    rng = np.random.default_rng(1)
    src, dst = tmp_path / "f.onnx", tmp_path / "q.onnx"
    onnx.save(_cnn(rng), src)
    feeds = [{"x": rng.normal(0, 1, (2, 3, 8, 8)).astype(np.float32)} for _ in range(4)]
    quantization.quantize_static(str(src), str(dst), _Reader(list(feeds)), quant_format=quantization.QuantFormat.QDQ,
                                 per_channel=per_channel, activation_type=getattr(quantization.QuantType, activation),
                                 weight_type=quantization.QuantType.QInt8, reduce_range=True)  # conftest.int8_weights
    model = onnx.load(dst)
    ops = fused_ops(model)
    assert ops.count("onnx.qlinear_conv") == 2 and ops.count("onnx.qlinear_matmul") == 1
    assert "onnx.conv" not in ops and "onnx.matmul" not in ops
    compare(model, feeds, refruntime, tmp_path)


# ---------------------------------------------------------------- hand-built groups

def _conv_group(act=None, y_zp=0, dtype=T.UINT8, bias_scale=None, extra_use=False, clip=(0.0, 6.0)):
    """DQ(x) + DQ(w, per channel) + DQ(bias) -> Conv [-> act] -> Q(y) -> DQ: a float model's output."""
    rng = np.random.default_rng(2)
    lo, np_t = (0, np.uint8) if dtype == T.UINT8 else (-128, np.int8)
    w = int8_weights(rng, (4, 3, 3, 3))
    ws = rng.uniform(0.002, 0.01, (4,)).astype(np.float32)
    xs = np.float32(0.02)
    bs = (xs * ws).astype(np.float32) if bias_scale is None else np.full(4, bias_scale, np.float32)
    inits = [const("xs", xs), const("xz", np_t(lo + 100)), const("w", w), const("ws", ws),
             const("wz", np.zeros(4, np.int8)), const("b", rng.integers(-500, 500, (4,)).astype(np.int32)),
             const("bs", bs), const("ys", np.float32(0.05)), const("yz", np_t(y_zp))]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=0),
             helper.make_node("DequantizeLinear", ["b", "bs"], ["bd"], axis=0),
             helper.make_node("Conv", ["xd", "wd", "bd"], ["c"], pads=[1, 1, 1, 1])]
    last = "c"
    if act == "Relu":
        nodes.append(helper.make_node("Relu", ["c"], ["a"]))
        last = "a"
    elif act == "Clip":
        inits += [const("lo", np.float32(clip[0])), const("hi", np.float32(clip[1]))]
        nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["a"]))
        last = "a"
    nodes += [helper.make_node("QuantizeLinear", [last, "ys", "yz"], ["yq"]),
              helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    outputs = [("y", T.FLOAT, [1, 4, 6, 6])]
    if extra_use:
        outputs.append(("c", T.FLOAT, [1, 4, 6, 6]))
    model = model_of(nodes, [("x", T.FLOAT, [1, 3, 6, 6])], outputs, inits)
    feeds = [{"x": np.random.default_rng(k).normal(0, 1, (1, 3, 6, 6)).astype(np.float32)} for k in range(3)]
    return model, feeds


@pytest.mark.parametrize("dtype", [T.UINT8, T.INT8])
@pytest.mark.parametrize("act", [None, "Relu", "Clip"])
def test_conv_group_fused(act, dtype, refruntime, tmp_path):
    lowest = 0 if dtype == T.UINT8 else -128
    model, feeds = _conv_group(act, y_zp=lowest, dtype=dtype, clip=(0.0, 100.0))
    ops = fused_ops(model)
    assert "onnx.qlinear_conv" in ops and "onnx.conv" not in ops and "onnx.relu" not in ops and "onnx.clip" not in ops
    compare(model, feeds, refruntime, tmp_path)


@pytest.mark.parametrize(("act", "y_zp", "clip"), [("Relu", 10, None), ("Clip", 0, (0.0, 6.0)),
                                                   ("Clip", 0, (0.5, 100.0))])
def test_activation_the_q_does_not_make_redundant_stays(act, y_zp, clip, refruntime, tmp_path):
    # Relu with a zero point above the lowest value, or a Clip inside the Q's range: not fused
    model, feeds = _conv_group(act, y_zp=y_zp, clip=clip or (0.0, 6.0))
    ops = fused_ops(model)
    assert "onnx.conv" in ops and "onnx.qlinear_conv" not in ops
    compare(model, feeds, refruntime, tmp_path, steps=(1, 0.05))


def test_conv_with_another_consumer_stays(refruntime, tmp_path):
    model, feeds = _conv_group(extra_use=True)
    ops = fused_ops(model)
    assert "onnx.conv" in ops and "onnx.qlinear_conv" not in ops
    info = compile_model(model, tmp_path / "art")
    got = refruntime_run(refruntime, info, model, feeds[0])
    want = ort_run(model, feeds[0])
    assert np.max(np.abs(got[0] - want[0])) <= 0.05 * 1.0001
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-5)


def refruntime_run(refruntime, info, model, feeds):
    weights = load_weights(info.metadata, model)
    return refruntime.run(info.program, [feeds[i["name"]] for i in info.metadata["inputs"]] + weights)


def ort_run_unfused(model, feeds):
    """onnxruntime's CPU EP without graph optimizations: the model's float computation, no QDQ fusion."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)


def test_bias_of_another_scale_stays(refruntime, tmp_path):
    # a bias whose scale is not x_scale * w_scale: onnxruntime's fusion adds its integers to the accumulator
    # all the same (changing the result); here the group stays float, as the model computes it
    model, feeds = _conv_group(bias_scale=0.001)
    ops = fused_ops(model)
    assert "onnx.conv" in ops and "onnx.qlinear_conv" not in ops
    info = compile_model(model, tmp_path / "art")
    for f in feeds:
        got = refruntime_run(refruntime, info, model, f)
        want = ort_run_unfused(model, f)
        assert np.max(np.abs(got[0] - want[0])) <= 0.05 * 1.0001


def test_requantization_rounds_as_onnxruntime(refruntime, tmp_path):
    # the multiplier x_scale * w_scale / y_scale is about 1/128: the int32 product lands on rounding ties,
    # where the float computation (DQ, MatMul, Q) rounds differently from onnxruntime's fused QLinearMatMul
    rng = np.random.default_rng(3)
    inits = [const("as", np.float32(0.1)), const("az", np.uint8(120)),
             const("b", rng.integers(-100, 100, (64, 32)).astype(np.int8)), const("bs", np.float32(0.3)),
             const("bz", np.int8(0)), const("ys", np.float32(0.06 * 64)), const("yz", np.uint8(128))]
    nodes = [helper.make_node("QuantizeLinear", ["x", "as", "az"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "as", "az"], ["xd"]),
             helper.make_node("DequantizeLinear", ["b", "bs", "bz"], ["bd"]),
             helper.make_node("MatMul", ["xd", "bd"], ["m"]),
             helper.make_node("QuantizeLinear", ["m", "ys", "yz"], ["y"])]
    model = model_of(nodes, [("x", T.FLOAT, [16, 64])], [("y", T.UINT8, [16, 32])], inits)
    feeds = [{"x": np.random.default_rng(k).normal(0, 3, (16, 64)).astype(np.float32)} for k in range(3)]
    assert "onnx.qlinear_matmul" in fused_ops(model)
    compare(model, feeds, refruntime, tmp_path)


def _matmul_group(shared=False, per_column=True, b_dtype=T.INT8):
    rng = np.random.default_rng(3)
    n = 6
    b_np = np.int8 if b_dtype == T.INT8 else np.uint8
    b = rng.integers(-100, 100, (5, n)).astype(np.int8) if b_dtype == T.INT8 else \
        rng.integers(0, 255, (5, n)).astype(np.uint8)
    bs = rng.uniform(0.01, 0.03, (n,) if per_column else ()).astype(np.float32)
    bz = np.zeros((n,) if per_column else (), b_np) + (0 if b_dtype == T.INT8 else 128)
    inits = [const("as", np.float32(0.03)), const("az", np.uint8(120)), const("b", b), const("bs", bs),
             const("bz", bz.astype(b_np)), const("ys", np.float32(0.04)), const("yz", np.uint8(128))]
    nodes = [helper.make_node("QuantizeLinear", ["x", "as", "az"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "as", "az"], ["xd"]),
             helper.make_node("DequantizeLinear", ["b", "bs", "bz"], ["bd"], axis=1),
             helper.make_node("MatMul", ["xd", "bd"], ["m"]),
             helper.make_node("QuantizeLinear", ["m", "ys", "yz"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    outputs = [("y", T.FLOAT, ["n", 3, n])]
    if shared:  # the x and B DQs also feed a second MatMul group
        nodes += [helper.make_node("MatMul", ["xd", "bd"], ["m2"]),
                  helper.make_node("QuantizeLinear", ["m2", "ys", "yz"], ["yq2"]),
                  helper.make_node("DequantizeLinear", ["yq2", "ys", "yz"], ["y2"])]
        outputs.append(("y2", T.FLOAT, ["n", 3, n]))
    model = model_of(nodes, [("x", T.FLOAT, ["n", 3, 5])], outputs, inits)
    feeds = [{"x": np.random.default_rng(k).normal(0, 1.5, (2, 3, 5)).astype(np.float32)} for k in range(3)]
    return model, feeds


@pytest.mark.parametrize(("per_column", "b_dtype"), [(True, T.INT8), (False, T.INT8), (True, T.UINT8)])
def test_matmul_group_fused(per_column, b_dtype, refruntime, tmp_path):
    model, feeds = _matmul_group(per_column=per_column, b_dtype=b_dtype)
    ops = fused_ops(model)
    assert ops.count("onnx.qlinear_matmul") == 1 and "onnx.matmul" not in ops
    compare(model, feeds, refruntime, tmp_path)


def test_shared_dequantize_feeds_two_fused_groups(refruntime, tmp_path):
    # onnxruntime duplicates a DQ with several consumers (EnsureUniqueDQForNodeUnit): both groups fuse
    model, feeds = _matmul_group(shared=True)
    ops = fused_ops(model)
    assert ops.count("onnx.qlinear_matmul") == 2 and "onnx.matmul" not in ops and "onnx.dequantize_linear" in ops
    compare(model, feeds, refruntime, tmp_path)


def _qdq_gemm(trans_b: int, bias: bool, seed: int, with_q: bool):
    """DQ(A) + DQ(B per output column) [+ DQ(C int32)] -> Gemm [-> Q -> DQ]: the model and its feeds."""
    rng = np.random.default_rng(seed)
    b = rng.integers(-100, 100, (7, 5) if trans_b else (5, 7)).astype(np.int8)
    bs = rng.uniform(0.01, 0.03, (7,)).astype(np.float32)
    xs = np.float32(0.03)
    inits = [const("as", xs), const("az", np.uint8(120)), const("b", b), const("bs", bs),
             const("bz", np.zeros(7, np.int8)), const("c", rng.integers(-300, 300, (7,)).astype(np.int32)),
             const("cs", (xs * bs).astype(np.float32))]
    nodes = [helper.make_node("QuantizeLinear", ["x", "as", "az"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "as", "az"], ["xd"]),
             helper.make_node("DequantizeLinear", ["b", "bs", "bz"], ["bd"], axis=0 if trans_b else 1),
             helper.make_node("DequantizeLinear", ["c", "cs"], ["cd"], axis=0),
             helper.make_node("Gemm", ["xd", "bd"] + (["cd"] if bias else []), ["m" if with_q else "y"],
                              transB=trans_b)]
    if with_q:
        inits += [const("ys", np.float32(0.05)), const("yz", np.uint8(128))]
        nodes += [helper.make_node("QuantizeLinear", ["m", "ys", "yz"], ["yq"]),
                  helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    model = model_of(nodes, [("x", T.FLOAT, [4, 5])], [("y", T.FLOAT, [4, 7])], inits)
    return model, [{"x": np.random.default_rng(k).normal(0, 1.5, (4, 5)).astype(np.float32)} for k in range(3)]


@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("bias", [True, False])
def test_gemm_group_fused_as_qgemm(trans_b, bias, refruntime, tmp_path):
    model, feeds = _qdq_gemm(trans_b, bias, 4, with_q=True)
    ops = fused_ops(model)
    assert "onnx.qgemm" in ops and "onnx.gemm" not in ops
    compare(model, feeds, refruntime, tmp_path)


def test_gemm_with_beta_stays(refruntime, tmp_path):
    rng = np.random.default_rng(5)
    b = rng.integers(-100, 100, (5, 7)).astype(np.int8)
    inits = [const("as", np.float32(0.03)), const("az", np.uint8(120)), const("b", b), const("bs", np.float32(0.02)),
             const("ys", np.float32(0.05)), const("yz", np.uint8(128)), const("c", np.arange(7, dtype=np.int32)),
             const("cs", np.float32(0.0006))]
    nodes = [helper.make_node("QuantizeLinear", ["x", "as", "az"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "as", "az"], ["xd"]),
             helper.make_node("DequantizeLinear", ["b", "bs"], ["bd"]),
             helper.make_node("DequantizeLinear", ["c", "cs"], ["cd"]),
             helper.make_node("Gemm", ["xd", "bd", "cd"], ["m"], beta=0.5),
             helper.make_node("QuantizeLinear", ["m", "ys", "yz"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    model = model_of(nodes, [("x", T.FLOAT, [4, 5])], [("y", T.FLOAT, [4, 7])], inits)
    feeds = [{"x": np.random.default_rng(k).normal(0, 1.5, (4, 5)).astype(np.float32)} for k in range(2)]
    ops = fused_ops(model)
    assert "onnx.gemm" in ops and "onnx.qgemm" not in ops
    compare(model, feeds, refruntime, tmp_path, steps=(1, 0.05))


@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("bias", [True, False])
def test_gemm_without_a_q_is_qgemm_of_a_float_output(trans_b, bias, refruntime, tmp_path):
    # onnxruntime's Gemm selector needs no Q: DQ(A) + DQ(B) [+ DQ(C)] -> Gemm is QGemm without y_scale
    model, feeds = _qdq_gemm(trans_b, bias, 6, with_q=False)
    ops = fused_ops(model)
    assert "onnx.qgemm" in ops and "onnx.gemm" not in ops
    compare(model, feeds, refruntime, tmp_path)


def test_gemm_before_a_relu_the_q_does_not_make_redundant_stays(refruntime, tmp_path):
    # onnxruntime takes the Relu into the Gemm's group, which then fuses with no Q (its zero point is not 0)
    rng = np.random.default_rng(7)
    inits = [const("as", np.float32(0.03)), const("az", np.uint8(120)),
             const("b", rng.integers(-100, 100, (5, 7)).astype(np.int8)), const("bs", np.float32(0.02)),
             const("ys", np.float32(0.05)), const("yz", np.uint8(20))]
    nodes = [helper.make_node("QuantizeLinear", ["x", "as", "az"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "as", "az"], ["xd"]),
             helper.make_node("DequantizeLinear", ["b", "bs"], ["bd"]),
             helper.make_node("Gemm", ["xd", "bd"], ["m"]), helper.make_node("Relu", ["m"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "ys", "yz"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    model = model_of(nodes, [("x", T.FLOAT, [4, 5])], [("y", T.FLOAT, [4, 7])], inits)
    feeds = [{"x": np.random.default_rng(k).normal(0, 1.5, (4, 5)).astype(np.float32)} for k in range(2)]
    ops = fused_ops(model)
    assert "onnx.gemm" in ops and "onnx.qgemm" not in ops
    compare(model, feeds, refruntime, tmp_path, steps=(1, 0.05))
