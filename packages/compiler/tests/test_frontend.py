"""Frontend errors: malformed models, unsupported ops (naming the node), bad opsets."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from conftest import const, make_model, ort_run
from onnx import TensorProto as T
from onnx import helper

from hipdnn_ep_compiler import CompileError, ModelError, UnsupportedError, compile_model, supported_ops
from hipdnn_ep_compiler.frontend import load_model
from hipdnn_ep_compiler.frontend.importer import import_model


def test_missing_file_is_a_model_error(tmp_path):
    with pytest.raises(ModelError, match="not found"):
        load_model(tmp_path / "nope.onnx")


def test_garbage_file_is_a_model_error(tmp_path):
    p = tmp_path / "bad.onnx"
    p.write_bytes(b"\x08\x07garbage that is not protobuf\xff\xff")
    with pytest.raises(ModelError, match="bad.onnx"):
        load_model(p)


def test_model_with_text_that_is_not_utf8_is_a_model_error(tmp_path):
    """A damaged op type ends up in the checker's message; decoding it must not escape as UnicodeDecodeError."""
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", T.FLOAT, [2])], [("y", T.FLOAT, [2])])
    p = tmp_path / "damaged.onnx"
    p.write_bytes(model.SerializeToString().replace(b"Relu", b"R\xb0lu"))
    with pytest.raises(ModelError, match="not valid UTF-8"):
        load_model(p)


def test_dim_name_that_is_not_utf8_is_a_model_error(tmp_path):
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", T.FLOAT, ["QQQQ"])], [("y", T.FLOAT, None)])
    p = tmp_path / "damaged.onnx"
    p.write_bytes(model.SerializeToString().replace(b"QQQQ", b"Q\xb0QQ"))
    with pytest.raises(ModelError, match="not valid UTF-8"):
        compile_model(p, tmp_path / "a")


def test_negative_dim_from_shape_inference_is_a_model_error(tmp_path):
    """Expand to a constant shape with a negative entry: ONNX infers the dim -2; never an internal error."""
    model = make_model([helper.make_node("Expand", ["x", "s"], ["y"], name="e")], [("x", T.FLOAT, ["N", 1])],
                       [("y", T.FLOAT, None)], [const("s", np.array([3, -2], np.int64))])
    with pytest.raises(ModelError, match="node 'e' \\(Expand\\): 'y' has dim -2 after shape inference"):
        compile_model(model, tmp_path / "a")


def test_element_type_code_onnx_does_not_define_is_named_by_number(tmp_path):
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", T.FLOAT, [2])], [("y", T.FLOAT, [2])])
    model.graph.input[0].type.tensor_type.elem_type = 46
    model.graph.output[0].type.tensor_type.elem_type = 46
    with pytest.raises(CompileError, match="46 \\(not an ONNX element type\\)"):
        compile_model(model, tmp_path / "a")


def test_graph_without_outputs_is_a_model_error():
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", T.FLOAT, [2])], [("y", T.FLOAT, [2])])
    del model.graph.output[:]
    with pytest.raises(ModelError, match="no outputs"):
        load_model(model)


def test_old_opset_is_converted(static_model, refruntime, tmp_path):
    """A model before opset 13 is converted by onnx's version converter (Dropout's ratio attribute becomes
    an input the converter adds: inference does not read it, so the input is dropped)."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Dropout", ["r"], ["d"], ratio=0.3),
             helper.make_node("Softmax", ["d"], ["y"], axis=1)]
    model = make_model(nodes, [("x", T.FLOAT, [2, 3, 4])], [("y", T.FLOAT, [2, 3, 4])], opset=9)
    converted, _ = load_model(model)
    assert converted.opset_import[0].version == 13
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    got = refruntime.run(compile_model(model, tmp_path / "a").program, [x])[0]
    np.testing.assert_allclose(got, ort_run(model, {"x": x})[0], rtol=1e-6, atol=1e-6)


def test_old_opset_file_with_shapeless_outputs_is_converted(tmp_path):
    """The EP writes an output whose shape onnxruntime does not know without a shape: the checker reads
    the file (before conversion) and tolerates that, as for a model of a current opset."""
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", T.FLOAT, [2])], [("y", T.FLOAT, [2])],
                       opset=11)
    model.graph.output[0].type.tensor_type.ClearField("shape")
    onnx.save(model, tmp_path / "m.onnx")
    converted, _ = load_model(tmp_path / "m.onnx")
    assert converted.opset_import[0].version == 13


def test_old_opset_the_converter_cannot_convert_is_refused():
    model = make_model([helper.make_node("Split", ["x"], ["y"], split=[2])], [("x", T.FLOAT, [2])],
                       [("y", T.FLOAT, [2])], opset=1)
    with pytest.raises(ModelError, match="opset 1; hipdnn-ep-compiler needs opset 13 or newer, and onnx's "
                                         "version converter could not convert it: .*No Adapter"):
        load_model(model)


def test_old_opset_converted_with_a_new_weight_is_refused():
    """Clip's min/max attributes become float inputs that are not in the model: no caller could feed them."""
    model = make_model([helper.make_node("Clip", ["x"], ["y"], min=-0.5, max=0.5)], [("x", T.FLOAT, [2])],
                       [("y", T.FLOAT, [2])], opset=9)
    with pytest.raises(ModelError, match="opset 9; .*version converter turned an attribute into the constant "
                                         "input '.*', which is not in the model"):
        load_model(model)


def test_future_opset_refused(static_model):
    static_model.opset_import[0].version = 999
    with pytest.raises(ModelError, match="opset 999"):
        load_model(static_model)


def test_checker_failure_names_the_problem():
    # a node consumes a value nothing produces
    model = make_model([helper.make_node("Relu", ["ghost"], ["out"], name="r")],
                       [("x", T.FLOAT, [2])], [("out", T.FLOAT, [2])])
    with pytest.raises(ModelError, match="checker.*ghost"):
        load_model(model)


def test_shape_inference_failure_is_reported():
    model = make_model([helper.make_node("MatMul", ["x", "y"], ["out"], name="mm")],
                       [("x", T.FLOAT, [2, 3]), ("y", T.FLOAT, [4, 5])], [("out", T.FLOAT, [2, 5])])
    with pytest.raises(ModelError, match="shape inference"):
        load_model(model)


def _bert_mask_expand(declared_rank: int | None, output_rank: int | None = 4) -> onnx.ModelProto:
    """The extended attention mask of a BERT encoder as torch's legacy exporter writes it: the mask
    [batch, seq] expanded to [batch, 1, 1, seq] by a shape computed from the input's Shape."""
    nodes = [
        helper.make_node("Shape", ["ids"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "zero"], ["b"], axis=0, name="g0"),
        helper.make_node("Gather", ["s", "one"], ["q"], axis=0, name="g1"),
        helper.make_node("Unsqueeze", ["b", "ax0"], ["bu"], name="u0"),
        helper.make_node("Unsqueeze", ["q", "ax0"], ["qu"], name="u1"),
        helper.make_node("Concat", ["bu", "ones2", "qu"], ["shape4"], axis=0, name="cat"),
        helper.make_node("Unsqueeze", ["mask", "ax12"], ["m4"], name="u2"),
        helper.make_node("Expand", ["m4", "shape4"], ["me"], name="expand"),
        helper.make_node("Mul", ["me", "big"], ["out"], name="mul"),
    ]
    inits = [const("zero", np.int64(0)), const("one", np.int64(1)), const("ax0", np.array([0], np.int64)),
             const("ax12", np.array([1, 2], np.int64)), const("ones2", np.array([1, 1], np.int64)),
             const("big", np.float32(-10000.0))]
    out_dims = None if output_rank is None else ["batch", 1, 1, "seq"][:output_rank] if output_rank else []
    model = make_model(nodes, [("ids", T.INT64, ["batch", "seq"]), ("mask", T.FLOAT, ["batch", "seq"])],
                       [("out", T.FLOAT, out_dims)], inits)
    if declared_rank is not None:
        # What onnxruntime 1.23's graph API reports for a value it has no shape for (rank 0), as the EP
        # wrote it into the subgraph: a scalar claim that inference contradicts.
        del model.graph.value_info[:]
        model.graph.value_info.append(helper.make_tensor_value_info("me", T.FLOAT, [None] * declared_rank))
    return model


def _assert_mask_dims(out: dict) -> None:
    """The expanded mask's dims: the broadcast of input 0's and input 1's batch, operands in canonical order
    (as the metadata spells every dynamic dim, an expression over d<input>_<axis>), 1, 1, and the same for
    seq; ONNX names beside."""
    assert out["dims"] == ["(selzero (add -1 d0_0) d1_0 d0_0)", 1, 1, "(selzero (add -1 d0_1) d1_1 d0_1)"]
    assert out["dim_names"] == ["batch", None, None, "seq"]


def test_contradictory_value_info_is_not_trusted(tmp_path):
    """Inference is the source of truth: a value_info (or output shape) that contradicts it is dropped,
    not reported as a broken model ('Inferred shape and existing shape differ in rank: (4) vs (0)')."""
    model, _ = load_model(_bert_mask_expand(declared_rank=0))
    shapes = {v.name: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in [*model.graph.value_info, *model.graph.output]}
    assert shapes["me"] == ["batch", 1, 1, "seq"]
    info = compile_model(_bert_mask_expand(declared_rank=0, output_rank=0), tmp_path / "a")
    _assert_mask_dims(info.metadata["outputs"][0])


def test_graph_inputs_and_outputs_without_a_shape_are_inferred_or_refused_by_node(tmp_path):
    """What the EP writes for values onnxruntime 1.23 has no shape for: no shape at all. The checker
    demands one on graph inputs and outputs; an output's is inferred, an input's makes its reader
    unsupported (named), never 'model fails the ONNX checker'."""
    model = _bert_mask_expand(declared_rank=None)
    model.graph.output[0].type.tensor_type.ClearField("shape")
    info = compile_model(model, tmp_path / "a")
    _assert_mask_dims(info.metadata["outputs"][0])
    model.graph.input[1].type.tensor_type.ClearField("shape")  # the mask
    with pytest.raises(CompileError) as err:
        compile_model(model, tmp_path / "b")
    assert "ONNX checker" not in str(err.value)


def test_a_model_wrong_without_its_value_info_is_still_refused():
    model = make_model([helper.make_node("MatMul", ["x", "y"], ["p"], name="mm"),
                        helper.make_node("Relu", ["p"], ["out"], name="relu")],
                       [("x", T.FLOAT, [2, 3]), ("y", T.FLOAT, [4, 5])], [("out", T.FLOAT, [2, 5])])
    model.graph.value_info.append(helper.make_tensor_value_info("p", T.FLOAT, []))
    with pytest.raises(ModelError, match="shape inference failed.*MatMul"):
        load_model(model)


def test_unsupported_op_names_node_and_op(tmp_path):
    model = make_model([helper.make_node("Relu", ["x"], ["r"], name="first"),
                        helper.make_node("MaxRoiPool", ["r", "rois"], ["out"], name="my_pool", pooled_shape=[2, 2])],
                       [("x", T.FLOAT, [1, 1, 4, 4])], [("out", T.FLOAT, None)],
                       [const("rois", np.array([[0, 0, 0, 3, 3]], np.float32))])
    with pytest.raises(UnsupportedError, match=r"node 'my_pool' \(MaxRoiPool\).*MaxRoiPool of domain ai.onnx"):
        compile_model(model, tmp_path / "a")


def test_unsupported_contrib_op_names_domain(tmp_path):
    node = helper.make_node("FusedMatMul", ["x", "x"], ["out"], name="fm", domain="com.microsoft")
    model = make_model([node], [("x", T.FLOAT, [2, 2])], [("out", T.FLOAT, [2, 2])],
                       extra_opsets=[("com.microsoft", 1)])
    with pytest.raises(UnsupportedError, match="com.microsoft::FusedMatMul"):
        compile_model(model, tmp_path / "a")


def test_reshape_with_data_dependent_shape_is_refused(tmp_path):
    # the target is computed by a kernel from tensor data: not known on the host
    model = make_model([helper.make_node("Cast", ["f"], ["s"], to=T.INT64),
                        helper.make_node("Reshape", ["x", "s"], ["out"], name="rs")],
                       [("x", T.FLOAT, [2, 3]), ("f", T.FLOAT, [2])], [("out", T.FLOAT, None)])
    with pytest.raises(UnsupportedError, match="node 'rs'.*target shape"):
        compile_model(model, tmp_path / "a")


def test_unsupported_dtype_is_named(tmp_path):
    model = make_model([helper.make_node("Relu", ["x"], ["out"], name="r")],
                       [("x", T.COMPLEX64, [2])], [("out", T.COMPLEX64, [2])])
    with pytest.raises(UnsupportedError, match="'x'.*COMPLEX64"):
        compile_model(model, tmp_path / "a")


def test_normalization_statistics_outputs_refused(tmp_path):
    # LayerNormalization's Mean/InvStdDev are computed (test_ops_run.py); the RMS norm's are not
    node = helper.make_node("SimplifiedLayerNormalization", ["x", "s"], ["out", "inv"], name="ln")
    model = make_model([node], [("x", T.FLOAT, [2, 4])], [("out", T.FLOAT, None), ("inv", T.FLOAT, [2, 1])],
                       [const("s", np.ones(4, np.float32))])
    with pytest.raises(UnsupportedError, match="node 'ln'.*InvStdDev outputs are not supported"):
        compile_model(model, tmp_path / "a")


def test_import_produces_onnx_level_ops(dynamic_reshape_model):
    model, _ = load_model(dynamic_reshape_model)
    text = str(import_model(model))
    assert '"onnx.matmul"(%arg0, %0) {onnx.node = "node \'mm\' (MatMul)", operand_roles = [0, 1]}' in text
    assert '"onnx.reshape"' in text and '"hipdnn.reshape"' not in text
    assert '"hipdnn.weight"() {name = "w"}' in text
    assert "tensor<?x?x8xf32>" in text
    assert '"hipdnn.constant"()' in text  # small int64 initializers are host values


def test_external_data_is_not_loaded(tmp_path, static_model):
    onnx.save_model(static_model, tmp_path / "m.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    model, base = load_model(tmp_path / "m.onnx")
    assert base == tmp_path
    assert model.graph.initializer[0].data_location == onnx.TensorProto.EXTERNAL


def test_supported_ops_lists_required_ops():
    ops = supported_ops()
    for op in ("Add", "MatMul", "Gemm", "Softmax", "LayerNormalization", "Reshape", "Shape", "Where", "Gelu"):
        assert op in ops["ai.onnx"]
    assert "Gelu" in ops["com.microsoft"]


def test_shape_inference_gets_large_weights_as_typed_inputs_and_gives_the_same_model(monkeypatch):
    """ONNX shape inference copies every initializer in and out: large ones go in as typed inputs (their
    values decide no shape), small ones (a Reshape target) as they are; the model comes back as inference
    of the whole model gives it, weights included, and the caller's model is left as it was."""
    from hipdnn_ep_compiler.frontend import loader

    w = const("w", np.arange(8 * 1024, dtype=np.float32).reshape(8, 1024))
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Reshape", ["m", "target"], ["r"]),
             helper.make_node("Relu", ["r"], ["y"])]
    model = make_model(nodes, [("x", T.FLOAT, ["batch", 8])], [("y", T.FLOAT, None)],
                       [w, const("target", np.array([-1, 32, 32], np.int64))])
    given = model.SerializeToString()
    seen = []
    infer = onnx.shape_inference.infer_shapes
    monkeypatch.setattr(onnx.shape_inference, "infer_shapes",
                        lambda m, *a, **k: seen.append([t.name for t in m.graph.initializer]) or infer(m, *a, **k))
    loaded, _ = load_model(model)
    assert seen == [["target"]]
    assert model.SerializeToString() == given
    whole = infer(model, strict_mode=True, data_prop=True)
    assert loaded.SerializeToString(deterministic=True) == whole.SerializeToString(deterministic=True)
    assert [d.dim_value for d in loaded.graph.output[0].type.tensor_type.shape.dim][1:] == [32, 32]  # read "target"
    assert loader.INFERENCE_DATA_LIMIT < 8 * 1024



def test_an_output_declared_with_other_dims_gets_the_computed_ones(tmp_path):
    """Declared output shapes are hints (onnxruntime warns where a run differs): onnx's inference knows no
    com.microsoft op, so a wrong declared shape reaches the compiler, and the artifact declares what the
    program computes. It declared [2, 17], and the runtime refused every run of the model."""
    from hipdnn_ep_compiler.artifact import read_metadata

    node = helper.make_node("FastGelu", ["x"], ["y"], domain="com.microsoft")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", T.FLOAT, [2, 18])],
                              [helper.make_tensor_value_info("y", T.FLOAT, [2, "h"])])
    graph.output[0].type.tensor_type.shape.dim[1].dim_value = 17
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    compile_model(model, tmp_path / "a")
    assert read_metadata(tmp_path / "a")["outputs"][0]["dims"] == [2, 18]


def test_a_pool_under_ceil_mode_declares_the_size_it_computes(tmp_path):
    """onnx's inference sizes AveragePool under ceil_mode by an older rule than the spec's (a last window
    starting in the right padding is dropped): 5 where the program and onnxruntime compute 4. The artifact
    declared onnx's 5, so the runtime refused every run."""
    from hipdnn_ep_compiler.artifact import read_metadata

    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 2], pads=[1, 0, 1, 1],
                            count_include_pad=1, ceil_mode=1, strides=[2, 2])
    model = make_model([node], [("x", T.FLOAT, [2, 4, 9, 8])], [("y", T.FLOAT, None)], [], opset=18)
    compile_model(model, tmp_path / "a")
    want = ort_run(model, {"x": np.zeros((2, 4, 9, 8), np.float32)})[0].shape
    assert read_metadata(tmp_path / "a")["outputs"][0]["dims"] == list(want) == [2, 4, 5, 4]
