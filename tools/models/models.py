"""Test models shared by the integration suite, the demo and the tools: ONNX's backend node tests
selected by op, a fixed-to-dynamic rewrite, a Shape/Gather/Concat/Reshape chain and an encoder layer
(dynamic or fixed shapes)."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper


def node_test_cases(supported: set[str]) -> list:
    """ONNX backend node tests whose ops are all in `supported` (plus Constant)."""
    from onnx.backend.test.loader import load_model_tests

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # onnx's generators warn about their own overflow cases
        tests = load_model_tests(kind="node")
    ops = supported | {"Constant"}
    return [t for t in tests
            if t.data_sets and all(n.op_type in ops and n.domain in ("", "ai.onnx") for n in t.model.graph.node)]


def make_dynamic(model: onnx.ModelProto) -> onnx.ModelProto:
    """The same model with every graph input and output dim symbolic (one name per input axis)."""
    dyn = onnx.ModelProto()
    dyn.CopyFrom(model)
    for vi in list(dyn.graph.input):
        for k, d in enumerate(vi.type.tensor_type.shape.dim):
            d.Clear()
            d.dim_param = f"{vi.name}_d{k}"
    for vi in dyn.graph.output:
        for d in vi.type.tensor_type.shape.dim:
            d.Clear()
    del dyn.graph.value_info[:]
    return dyn


def tensor_data(value) -> np.ndarray:
    return numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else np.asarray(value)


def shape_chain_model(hidden: int = 8, seed: int = 0, transpose: bool = True) -> onnx.ModelProto:
    """x[batch, seq, hidden] -> MatMul -> Reshape to [batch, seq, 2, hidden/2] with the target built by
    Shape/Gather/Concat -> Transpose (optional) -> Reshape back to [batch*seq, hidden] -> Softmax."""
    rng = np.random.default_rng(seed)
    n = helper.make_node
    inits = [numpy_helper.from_array(rng.standard_normal((hidden, hidden)).astype(np.float32), "w"),
             numpy_helper.from_array(np.array([0, 1], np.int64), "idx01"),
             numpy_helper.from_array(np.array([2, hidden // 2], np.int64), "split"),
             numpy_helper.from_array(np.array([-1, hidden], np.int64), "flat")]
    nodes = [n("MatMul", ["x", "w"], ["y"]), n("Shape", ["x"], ["s"]), n("Gather", ["s", "idx01"], ["bs"], axis=0),
             n("Concat", ["bs", "split"], ["target"], axis=0), n("Reshape", ["y", "target"], ["y4"]),
             n("Transpose", ["y4"], ["yt"], perm=[0, 2, 1, 3]) if transpose else n("Identity", ["y4"], ["yt"]),
             n("Reshape", ["yt", "flat"], ["y2"]),
             n("Softmax", ["y2"], ["out"], axis=-1)]
    graph = helper.make_graph(nodes, "shape_chain",
                              [helper.make_tensor_value_info("x", T.FLOAT, ["batch", "seq", hidden])],
                              [helper.make_tensor_value_info("out", T.FLOAT, ["rows", hidden])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def attention_model(batch="batch", seq="seq", hidden=32, heads=4, seed=0) -> onnx.ModelProto:
    """One encoder layer: QKV from a single Gemm-free MatMul sliced three ways, heads split with shape
    arithmetic, additive mask from attention_mask (Cast/Sub/Mul/Unsqueeze), softmax, output projection,
    residual + LayerNormalization, erf-Gelu MLP."""
    rng = np.random.default_rng(seed)
    hd = hidden // heads
    n = helper.make_node

    def w(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name)

    def i64(name, vals):
        return numpy_helper.from_array(np.array(vals, np.int64), name)

    inits = [w("wqkv", hidden, 3 * hidden), w("bqkv", 3 * hidden), w("wo", hidden, hidden),
             w("w1", hidden, 4 * hidden), w("w2", 4 * hidden, hidden),
             numpy_helper.from_array(np.ones(hidden, np.float32), "ln_s"),
             numpy_helper.from_array(np.zeros(hidden, np.float32), "ln_b"),
             numpy_helper.from_array(np.array(1.0 / np.sqrt(hd), np.float32), "scale"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one"),
             numpy_helper.from_array(np.array(-1e4, np.float32), "big_neg"),
             i64("ax_last", [-1]), i64("ax12", [1, 2]), i64("i0", [0]), i64("i1", [1]),
             i64("heads_hd", [heads, hd]), i64("hid", [hidden]), i64("step1", [1])]
    nodes = [
        n("Shape", ["x"], ["xs"]), n("Gather", ["xs", "i0"], ["b"], axis=0), n("Gather", ["xs", "i1"], ["s"], axis=0),
        n("Concat", ["b", "s", "heads_hd"], ["split_shape"], axis=0),
        n("Concat", ["b", "s", "hid"], ["merge_shape"], axis=0),
        n("MatMul", ["x", "wqkv"], ["qkv0"]), n("Add", ["qkv0", "bqkv"], ["qkv"]),
    ]
    for k, p in enumerate("qkv"):
        nodes += [
            n("Slice", ["qkv", f"st_{p}", f"en_{p}", "ax_last", "step1"], [p + "0"]),
            n("Reshape", [p + "0", "split_shape"], [p + "1"]),
        ]
        inits += [i64(f"st_{p}", [k * hidden]), i64(f"en_{p}", [(k + 1) * hidden])]
    nodes += [
        n("Transpose", ["q1"], ["qt"], perm=[0, 2, 1, 3]), n("Transpose", ["k1"], ["kt"], perm=[0, 2, 3, 1]),
        n("Transpose", ["v1"], ["vt"], perm=[0, 2, 1, 3]),
        n("MatMul", ["qt", "kt"], ["qk"]), n("Mul", ["qk", "scale"], ["qks"]),
        n("Unsqueeze", ["attention_mask", "ax12"], ["m4"]), n("Cast", ["m4"], ["mf"], to=T.FLOAT),
        n("Sub", ["one", "mf"], ["inv"]), n("Mul", ["inv", "big_neg"], ["bias"]),
        n("Add", ["qks", "bias"], ["scores"]), n("Softmax", ["scores"], ["probs"], axis=-1),
        n("MatMul", ["probs", "vt"], ["ctx"]), n("Transpose", ["ctx"], ["ctxt"], perm=[0, 2, 1, 3]),
        n("Reshape", ["ctxt", "merge_shape"], ["ctx2"]), n("MatMul", ["ctx2", "wo"], ["attn"]),
        n("Add", ["x", "attn"], ["res"]), n("LayerNormalization", ["res", "ln_s", "ln_b"], ["ln"], axis=-1),
        n("MatMul", ["ln", "w1"], ["h0"]), n("Div", ["h0", "sqrt2"], ["h0s"]), n("Erf", ["h0s"], ["e"]),
        n("Add", ["e", "one"], ["e1"]), n("Mul", ["h0", "e1"], ["g0"]), n("Mul", ["g0", "half"], ["g"]),
        n("MatMul", ["g", "w2"], ["h2"]), n("Add", ["ln", "h2"], ["last_hidden_state"]),
    ]
    inits += [numpy_helper.from_array(np.array(np.sqrt(2.0), np.float32), "sqrt2"),
              numpy_helper.from_array(np.array(0.5, np.float32), "half")]
    graph = helper.make_graph(nodes, "attention", [
        helper.make_tensor_value_info("x", T.FLOAT, [batch, seq, hidden]),
        helper.make_tensor_value_info("attention_mask", T.INT64, [batch, seq])],
        [helper.make_tensor_value_info("last_hidden_state", T.FLOAT, [batch, seq, hidden])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def attention_feeds(batch: int, seq: int, hidden: int = 32, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), np.int64)
    mask[:, (seq + 1) // 2:] = 0
    mask[:, 0] = 1
    return {"x": rng.standard_normal((batch, seq, hidden)).astype(np.float32), "attention_mask": mask}
