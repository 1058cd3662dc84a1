"""Model builders shared by the compiler tests: an attention-like block with dynamic or fixed dims."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper


def attention_block(batch="batch", seq="seq", hidden=16, heads=2, opset=17, seed=0) -> onnx.ModelProto:
    """x[batch, seq, hidden], mask[batch, seq] -> LayerNorm(x + MHA(x)) followed by a Gelu MLP.

    Head splitting uses Shape/Gather/Concat/Reshape, the mask path Unsqueeze/Cast/Sub/Mul, so
    dynamic batch and seq exercise the host-scalar folding end to end.
    """
    rng = np.random.default_rng(seed)
    hd = hidden // heads

    def w(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32), name)

    def i64(name, vals):
        return numpy_helper.from_array(np.array(vals, np.int64), name)

    inits = [w("wq", hidden, hidden), w("wk", hidden, hidden), w("wv", hidden, hidden), w("wo", hidden, hidden),
             w("bo", hidden), w("w1", hidden, 2 * hidden), w("w2", 2 * hidden, hidden),
             numpy_helper.from_array(np.ones(hidden, np.float32), "ln_s"),
             numpy_helper.from_array(np.zeros(hidden, np.float32), "ln_b"),
             numpy_helper.from_array(np.array(np.sqrt(hd), np.float32), "scale"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one"),
             numpy_helper.from_array(np.array(-10000.0, np.float32), "neg"),
             i64("i0", 0), i64("i1", 1), i64("ax0", [0]), i64("ax12", [1, 2]),
             i64("heads_hd", [heads, hd]), i64("hidden_c", [hidden])]
    n = helper.make_node
    nodes = [
        n("Shape", ["x"], ["xs"]), n("Gather", ["xs", "i0"], ["b"], axis=0), n("Gather", ["xs", "i1"], ["s"], axis=0),
        n("Unsqueeze", ["b", "ax0"], ["b1"]), n("Unsqueeze", ["s", "ax0"], ["s1"]),
        n("Concat", ["b1", "s1", "heads_hd"], ["split_shape"], axis=0),
        n("Concat", ["b1", "s1", "hidden_c"], ["merge_shape"], axis=0),
    ]
    for p in ("q", "k", "v"):
        nodes += [n("MatMul", ["x", "w" + p], [p + "0"]), n("Reshape", [p + "0", "split_shape"], [p + "1"])]
    nodes += [
        n("Transpose", ["q1"], ["qt"], perm=[0, 2, 1, 3]), n("Transpose", ["k1"], ["kt"], perm=[0, 2, 3, 1]),
        n("Transpose", ["v1"], ["vt"], perm=[0, 2, 1, 3]),
        n("MatMul", ["qt", "kt"], ["qk"]), n("Div", ["qk", "scale"], ["qks"]),
        n("Unsqueeze", ["mask", "ax12"], ["m4"]), n("Cast", ["m4"], ["mf"], to=T.FLOAT),
        n("Sub", ["one", "mf"], ["inv"]), n("Mul", ["inv", "neg"], ["bias"]),
        n("Add", ["qks", "bias"], ["scores"]), n("Softmax", ["scores"], ["probs"], axis=-1),
        n("MatMul", ["probs", "vt"], ["ctx"]), n("Transpose", ["ctx"], ["ctxt"], perm=[0, 2, 1, 3]),
        n("Reshape", ["ctxt", "merge_shape"], ["ctx2"]), n("MatMul", ["ctx2", "wo"], ["o0"]),
        n("Add", ["o0", "bo"], ["o1"]),
        n("Add", ["x", "o1"], ["res"]), n("LayerNormalization", ["res", "ln_s", "ln_b"], ["ln"], axis=-1, epsilon=1e-5),
        n("MatMul", ["ln", "w1"], ["h0"]), n("Gelu", ["h0"], ["h1"]) if opset >= 20 else n("Erf", ["h0"], ["h1"]),
        n("MatMul", ["h1", "w2"], ["h2"]), n("Add", ["ln", "h2"], ["out"]),
    ]
    graph = helper.make_graph(nodes, "attention", [
        helper.make_tensor_value_info("x", T.FLOAT, [batch, seq, hidden]),
        helper.make_tensor_value_info("mask", T.INT64, [batch, seq])],
        [helper.make_tensor_value_info("out", T.FLOAT, [batch, seq, hidden])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
