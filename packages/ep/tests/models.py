"""Small ONNX models for the tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# The op the tests use where the compiler must refuse a node and ORT's CPU EP must run it: ai.onnx.ml's
# Scaler (traditional ML, never a kernel of ours) with scale 1 and offset 0, the identity on float.
UNSUPPORTED = "Scaler"
ML_DOMAIN = "ai.onnx.ml"


def unsupported_node(source: str, result: str, name: str) -> onnx.NodeProto:
    """An identity node the compiler does not support (see UNSUPPORTED)."""
    return helper.make_node(UNSUPPORTED, [source], [result], name=name, domain=ML_DOMAIN, offset=[0.0], scale=[1.0])


def _type_unsupported_outputs(model: onnx.ModelProto) -> None:
    """onnx infers no shape for Scaler's output: declare it (the identity's, its input's) in value_info, so that
    ORT knows the shapes after it and the EP can claim the nodes that follow."""
    known = {v.name: v for v in onnx.shape_inference.infer_shapes(model).graph.value_info}
    known.update({v.name: v for v in model.graph.input})
    for node in model.graph.node:
        if node.op_type == UNSUPPORTED and node.domain == ML_DOMAIN and node.input[0] in known:
            declared = onnx.ValueInfoProto()
            declared.CopyFrom(known[node.input[0]])
            declared.name = node.output[0]
            model.graph.value_info.append(declared)
            known[declared.name] = declared


def save(graph: onnx.GraphProto, path: Path, opset: int = 17) -> Path:
    opsets = [helper.make_opsetid("", opset)]
    if any(n.domain == ML_DOMAIN for n in graph.node):
        opsets.append(helper.make_opsetid(ML_DOMAIN, 1))
    model = helper.make_model(graph, opset_imports=opsets)
    _type_unsupported_outputs(model)
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def elementwise(path: Path, dims: list, middle: str = "Mul") -> Path:
    """z = Relu(middle(Add(x, y), y)); middle=UNSUPPORTED (an identity the compiler does not support,
    then Add) makes the EP split the graph."""
    nodes = [helper.make_node("Add", ["x", "y"], ["a"], name="add0")]
    if middle == UNSUPPORTED:
        nodes.append(unsupported_node("a", "b", "unsupported"))
        nodes.append(helper.make_node("Add", ["b", "y"], ["c"], name="add1"))
    else:
        nodes.append(helper.make_node(middle, ["a", "y"], ["c"], name="mid"))
    nodes.append(helper.make_node("Relu", ["c"], ["z"], name="relu0"))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims),
                                        helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, dims)])
    return save(g, path)


def with_weights(path: Path, n: int, seed: int = 1) -> Path:
    """z = Relu(x * w_big + w_small) with x: [n]; w_big > 1 KiB goes external; `seed` picks the weights' values."""
    rng = np.random.default_rng(seed)
    w_big = numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "w_big")
    w_small = numpy_helper.from_array(rng.standard_normal(n).astype(np.float32)[:n], "w_small")
    nodes = [helper.make_node("Mul", ["x", "w_big"], ["m"], name="mul"),
             helper.make_node("Add", ["m", "w_small"], ["s"], name="add"),
             helper.make_node("Relu", ["s"], ["z"], name="relu")]
    g = helper.make_graph(nodes, "w", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [n])],
                          initializer=[w_big, w_small])
    return save(g, path)


def reference(x: np.ndarray, y: np.ndarray, middle: str = "Mul") -> np.ndarray:
    a = x + y
    c = {"Mul": lambda: a * y, "Add": lambda: a + y, UNSUPPORTED: lambda: a + y}[middle]()
    return np.maximum(c, 0)


def elementwise_feeds(shape: tuple[int, ...], seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded x and y of `elementwise`'s model."""
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal(shape).astype(np.float32), "y": rng.standard_normal(shape).astype(np.float32)}


def check_elementwise(sess, feeds: dict[str, np.ndarray], middle: str = "Mul") -> None:
    """A session of `elementwise`'s model computes `reference` on `feeds`."""
    np.testing.assert_allclose(sess.run(None, feeds)[0], reference(feeds["x"], feeds["y"], middle),
                               rtol=1e-5, atol=1e-6)


def matmul_chain(path: Path, widths: list[int]) -> Path:
    """x: [batch, seq, widths[0]] through one MatMul per further width (weights seeded):
    activations grow with batch * seq, so a memory limit admits small shapes only."""
    rng = np.random.default_rng(2)
    weights, nodes, prev = [], [], "x"
    for i, (k, n) in enumerate(zip(widths, widths[1:], strict=False)):
        weights.append(numpy_helper.from_array((rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32), f"w{i}"))
        out = "y" if i == len(widths) - 2 else f"h{i}"
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [out], name=f"matmul{i}"))
        prev = out
    g = helper.make_graph(nodes, "chain",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", widths[0]])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", widths[-1]])],
                          initializer=weights)
    return save(g, path)


def many_initializers(path: Path, count: int = 16) -> Path:
    """z = ((x + b0) + b1) ... with `count` small initializers: ORT hands them to the EP in
    an order that changes between sessions, which the subgraph the EP writes must not show."""
    rng = np.random.default_rng(4)
    weights, nodes, prev = [], [], "x"
    for i in range(count):
        weights.append(numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), f"b{i}"))
        out = "z" if i == count - 1 else f"s{i}"
        nodes.append(helper.make_node("Add", [prev, f"b{i}"], [out], name=f"add{i}"))
        prev = out
    g = helper.make_graph(nodes, "inits", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["n", 4])], initializer=weights)
    return save(g, path)


def exported_bert(path: Path, layers: int = 2, hidden: int = 32, heads: int = 2, vocab: int = 64,
                  max_pos: int = 512, float16: bool = False, mask: str = "legacy", seed: int = 0) -> Path:
    """A small BERT spelled as torch.onnx.export spells transformers' BertModel (opset 17, dynamic batch
    and sequence): embedding Gathers (position ids from Range, token types from ConstantOfShape),
    LayerNormalization, MatMul/Add, heads split by Shape/Gather/Unsqueeze/Concat/Reshape, Softmax,
    Erf-GELU, a Tanh pooler. Position ids are sliced from a buffer and token types gathered from one
    (Expand to torch's expand shape via ConstantOfShape/Equal/Where, GatherElements). The attention
    mask is the legacy extended mask (Unsqueeze, Cast, Sub from 1, Mul by the dtype's minimum) or,
    mask="sdpa", transformers' sdpa mask (Range grids, GreaterOrEqual, And, the padding mask read by
    Flatten/Gather, Expand to [batch, 1, seq, seq], Where to 0/-inf, IsNaN/Where after Softmax).
    float16: weights and math in float16, inputs and outputs kept (Casts at the edges), as
    onnxruntime's convert_float_to_float16(keep_io_types=True) leaves them."""
    rng = np.random.default_rng(seed)
    ft = TensorProto.FLOAT16 if float16 else TensorProto.FLOAT
    npt = np.float16 if float16 else np.float32
    nodes, inits = [], []
    head = hidden // heads

    def const(name, value, dtype=None):
        arr = np.asarray(value, dtype=dtype if dtype is not None else npt)
        inits.append(numpy_helper.from_array(arr, name))
        return name

    def node(op, ins, name, **attrs):
        nodes.append(helper.make_node(op, ins, [name], name=f"/{name}", **attrs))
        return name

    def weight(name, *shape):
        return const(name, rng.normal(0, 0.2, shape))

    def layer_norm(x, name):
        return node("LayerNormalization", [x, const(f"{name}.g", 1 + rng.normal(0, 0.1, hidden)),
                                           const(f"{name}.b", rng.normal(0, 0.1, hidden))], name, axis=-1,
                    epsilon=1e-12)

    def linear(x, name, k, n):
        return node("Add", [node("MatMul", [x, weight(f"{name}.w", k, n)], f"{name}/MatMul"),
                            weight(f"{name}.bias", n)], f"{name}/Add")

    i64 = np.int64
    const("zero", 0, i64), const("one", 1, i64), const("ax0", [0], i64), const("ax1", [1], i64)
    const("ax2", [2], i64)
    shape = node("Shape", ["input_ids"], "ids_shape")
    batch = node("Gather", [shape, "zero"], "batch", axis=0)
    seq = node("Gather", [shape, "one"], "seq", axis=0)
    # embeddings as the export spells the buffered ids: positions sliced from a [1, max_pos] buffer,
    # token types gathered from a zero buffer expanded to torch's expand(batch, -1) (Where(Equal(shape,
    # -1), 1, shape)), then expanded to the ids' shape
    def torch_expand(x, dims, name):
        parts = [d if d == "minus1" else node("Unsqueeze", [d, "ax0"], f"{name}/u{k}") for k, d in enumerate(dims)]
        target = node("Reshape", [node("Concat", parts, f"{name}/concat", axis=0), "minus1"], f"{name}/shape")
        ones = node("ConstantOfShape", [node("Shape", [target], f"{name}/shape_of")], f"{name}/ones",
                    value=numpy_helper.from_array(np.ones(1, i64)))
        minus = node("Mul", [ones, "minus1"], f"{name}/minus")
        fixed = node("Where", [node("Equal", [target, minus], f"{name}/is_minus"), ones, target], f"{name}/fixed")
        return node("Expand", [x, fixed], name)

    const("minus1", [-1], i64)
    pos = node("Slice", [const("pos_buffer", np.arange(max_pos)[None], i64), "ax0",
                         node("Unsqueeze", [seq, "ax0"], "seq_u"), "ax1", "ax1"], "position_ids")
    pos_batch = node("Gather", [node("Shape", [pos], "pos_shape"), "zero"], "pos_batch", axis=0)
    buffered = torch_expand(const("type_buffer", np.zeros((1, max_pos)), i64), [pos_batch, "minus1"], "type_buf")
    types = node("GatherElements", [buffered, pos], "type_gathered", axis=1)
    types = torch_expand(types, [batch, seq], "token_type_ids")
    emb = node("Add", [node("Gather", [weight("word", vocab, hidden), "input_ids"], "emb_word"),
                       node("Gather", [weight("type", 2, hidden), types], "emb_type")], "emb_sum")
    emb = node("Add", [emb, node("Gather", [weight("pos", max_pos, hidden), pos], "emb_pos")], "emb_all")
    h = layer_norm(emb, "emb_ln")
    # the attention mask, broadcast over heads and queries
    if mask == "legacy":
        m = node("Unsqueeze", [node("Unsqueeze", ["attention_mask", "ax1"], "mask_u1"), "ax2"], "mask_u2")
        m = node("Cast", [m], "mask_cast", to=ft)
        inv = node("Sub", [const("one_f", 1.0), m], "mask_inv")
        bias = node("Mul", [inv, const("mask_min", np.finfo(npt).min)], "mask_bias")
    else:  # transformers' sdpa_mask: index functions over Range grids, And-ed, expanded, then Where
        pad = node("Cast", ["attention_mask"], "pad_bool", to=TensorProto.BOOL)  # [B, S]
        b_idx = node("Unsqueeze", [node("Range", ["zero", batch, "one"], "b_range"), const("ax123", [1, 2, 3], i64)],
                     "b_idx")  # [B, 1, 1, 1]
        q_idx = node("Unsqueeze", [node("Range", ["zero", seq, "one"], "q_range"), const("ax013", [0, 1, 3], i64)],
                     "q_idx")  # [1, 1, S, 1]
        kv_idx = node("Unsqueeze", [node("Range", ["zero", seq, "one"], "kv_range"),
                                    const("ax012", [0, 1, 2], i64)], "kv_idx")  # [1, 1, 1, S]
        always = node("ConstantOfShape", [const("scalar", np.zeros(0), i64)], "always",
                      value=numpy_helper.from_array(np.ones(1, np.bool_)))
        valid_q = node("And", [always, node("GreaterOrEqual", [q_idx, "zero"], "q_ge")], "valid_q")
        flat = node("Flatten", [pad], "pad_flat", axis=2)  # [B * S, 1]
        rows = node("Add", [kv_idx, node("Mul", [b_idx, node("Unsqueeze", [seq, "ax0"], "s_vec")], "b_off")],
                    "rows")  # [B, 1, 1, S]
        picked = node("Gather", [flat, rows], "pad_picked", axis=0)  # [B, 1, 1, S, 1]
        picked = node("Reshape", [node("Reshape", [picked, "minus1"], "pad_flat2"),
                                  node("Shape", [rows], "rows_shape")], "pad_mask")
        both = node("And", [valid_q, picked], "mask_and")  # [B, 1, S, S]
        full = torch_expand(both, [batch, "minus1", seq, seq], "mask_full")
        bias = node("Where", [full, const("zero_f", 0.0), const("mask_min", -np.inf)], "mask_bias")
    heads_shape = node("Concat", [node("Unsqueeze", [batch, "ax0"], "hb"), node("Unsqueeze", [seq, "ax0"], "hs"),
                                  const("nh_hd", [heads, head], i64)], "heads_shape", axis=0)
    merged_shape = node("Concat", ["hb", "hs", const("hid", [hidden], i64)], "merged_shape", axis=0)
    for n in range(layers):
        p = f"l{n}"

        def split(x, perm, p=p):
            return node("Transpose", [node("Reshape", [x, heads_shape], f"{x}/Reshape")], f"{x}/Transpose",
                        perm=perm)
        q = split(linear(h, f"{p}.q", hidden, hidden), [0, 2, 1, 3])
        k = split(linear(h, f"{p}.k", hidden, hidden), [0, 2, 3, 1])
        v = split(linear(h, f"{p}.v", hidden, hidden), [0, 2, 1, 3])
        s = node("Div", [node("MatMul", [q, k], f"{p}/scores"), const(f"{p}.scale", np.sqrt(head))], f"{p}/scaled")
        probs = node("Softmax", [node("Add", [s, bias], f"{p}/masked")], f"{p}/probs", axis=-1)
        if mask != "legacy":  # a row with every key masked is NaN: the export zeroes it
            probs = node("Where", [node("IsNaN", [probs], f"{p}/isnan"), const(f"{p}.zero", 0.0), probs],
                         f"{p}/probs_clean")
        ctx = node("Transpose", [node("MatMul", [probs, v], f"{p}/ctx")], f"{p}/ctx_t", perm=[0, 2, 1, 3])
        ctx = node("Reshape", [ctx, merged_shape], f"{p}/ctx_merged")
        h = layer_norm(node("Add", [linear(ctx, f"{p}.o", hidden, hidden), h], f"{p}/res1"), f"{p}.ln1")
        ff = linear(h, f"{p}.ff1", hidden, 4 * hidden)
        erf = node("Erf", [node("Div", [ff, const(f"{p}.sqrt2", np.sqrt(2.0))], f"{p}/gelu_div")], f"{p}/gelu_erf")
        gelu = node("Mul", [node("Mul", [ff, node("Add", [erf, const(f"{p}.one", 1.0)], f"{p}/gelu_add")],
                                 f"{p}/gelu_mul"), const(f"{p}.half", 0.5)], f"{p}/gelu")
        h = layer_norm(node("Add", [linear(gelu, f"{p}.ff2", 4 * hidden, hidden), h], f"{p}/res2"), f"{p}.ln2")
    first = node("Gather", [h, "zero"], "first_token", axis=1)
    pooled = node("Tanh", [linear(first, "pool", hidden, hidden)], "pooled")
    outs = [h, pooled]
    if float16:
        outs = [node("Cast", [h], "hidden_f32", to=TensorProto.FLOAT), node("Cast", [pooled], "pooled_f32",
                                                                               to=TensorProto.FLOAT)]
    nodes.append(helper.make_node("Identity", [outs[0]], ["last_hidden_state"], name="/out0"))
    nodes.append(helper.make_node("Identity", [outs[1]], ["pooler_output"], name="/out1"))
    graph = helper.make_graph(
        nodes, "bert", [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
                        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden]),
         helper.make_tensor_value_info("pooler_output", TensorProto.FLOAT, ["batch", hidden])], initializer=inits)
    return save(graph, path)


def bert_feeds(batch: int, seq: int, vocab: int = 64, seed: int = 0) -> dict[str, np.ndarray]:
    """Token ids, and a mask whose last row pads its final positions (never a row without tokens)."""
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), np.int64)
    mask[-1, max(1, seq - 2):] = 0
    return {"input_ids": rng.integers(0, vocab, (batch, seq)).astype(np.int64), "attention_mask": mask}
