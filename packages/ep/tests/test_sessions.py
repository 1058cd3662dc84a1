"""Sessions through onnxruntime with the plugin registered, on the real
compiler and runtime: partitioning and fallback, concurrency, and the errors of a
session's model, inputs and options (the compile cache: test_compile_cache.py; a broken
runtime or compiler: test_broken_installs.py)."""

from __future__ import annotations

import threading
from pathlib import Path

import hipdnn_ep_compiler
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from conftest import NO_FALLBACK, Env, cpu_session, make_session
from models import UNSUPPORTED, check_elementwise, elementwise, elementwise_feeds, save, unsupported_node
from onnx import TensorProto, helper

COMPILER = f"hipdnn-ep-compiler {hipdnn_ep_compiler.__version__}"


def test_fixed_shape_runs_on_the_ep_without_fallback(tmp_path: Path, ep_devices, env: Env) -> None:
    sess = make_session(elementwise(tmp_path / "m.onnx", [3, 4]), ep_devices, env.options, NO_FALLBACK)
    check_elementwise(sess, elementwise_feeds((3, 4)))
    assert env.compiled_ops() == [["Add", "Mul", "Relu"]]


def test_dynamic_shape_compiles_once_and_runs_many_shapes(tmp_path: Path, ep_devices, env: Env) -> None:
    model = elementwise(tmp_path / "m.onnx", ["batch", "seq"])
    sess = make_session(model, ep_devices, env.options, NO_FALLBACK)
    cpu = cpu_session(model)
    for shape in [(1, 1), (2, 5), (7, 3), (0, 4), (16, 128)]:
        feeds = elementwise_feeds(shape, seed=shape[0])
        (got,) = sess.run(None, feeds)
        assert got.shape == shape
        np.testing.assert_allclose(got, cpu.run(None, feeds)[0], rtol=1e-6)
    assert env.compiled_ops() == [["Add", "Mul", "Relu"]]
    (compiled,) = env.compiled_models()
    dims = [[d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in compiled.graph.input]
    assert dims == [["batch", "seq"], ["batch", "seq"]], "dynamic dims reach the compiler symbolic"


def _shape_read_by_two_gathers(path: Path) -> Path:
    """x[b, s] flattened to [b * s]: one Shape output read by two Gathers."""
    nodes = [helper.make_node("Shape", ["x"], ["shape"], name="shape"),
             helper.make_node("Gather", ["shape", "i0"], ["d0"], name="gather0", axis=0),
             helper.make_node("Gather", ["shape", "i1"], ["d1"], name="gather1", axis=0),
             helper.make_node("Mul", ["d0", "d1"], ["n"], name="mul"),
             helper.make_node("Unsqueeze", ["n", "axis0"], ["flat_shape"], name="unsqueeze"),
             helper.make_node("Reshape", ["x", "flat_shape"], ["y"], name="reshape")]
    inits = [helper.make_tensor("i0", TensorProto.INT64, [], [0]), helper.make_tensor("i1", TensorProto.INT64, [], [1]),
             helper.make_tensor("axis0", TensorProto.INT64, [1], [0])]
    g = helper.make_graph(nodes, "shape_fan_out", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", "s"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["bs"])], inits)
    return save(g, path)


def _activation_read_by_three_nodes(path: Path) -> Path:
    """where(a > 0, sigmoid(a), tanh(a)) with a = relu(x + y): one activation read by Sigmoid, Tanh and Greater."""
    nodes = [helper.make_node("Add", ["x", "y"], ["s"], name="add"),
             helper.make_node("Relu", ["s"], ["a"], name="relu"),
             helper.make_node("Sigmoid", ["a"], ["p"], name="sigmoid"),
             helper.make_node("Tanh", ["a"], ["t"], name="tanh"),
             helper.make_node("Greater", ["a", "zero"], ["c"], name="greater"),
             helper.make_node("Where", ["c", "p", "t"], ["z"], name="where")]
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", "seq"]) for n in ("x", "y", "z")]
    g = helper.make_graph(nodes, "activation_fan_out", vi[:2], vi[2:],
                          [helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])])
    return save(g, path)


@pytest.mark.parametrize("build", [_shape_read_by_two_gathers, _activation_read_by_three_nodes],
                         ids=["shape-read-by-two-gathers", "activation-read-by-three-nodes"])
def test_a_value_read_by_several_nodes_of_a_dynamic_partition(tmp_path: Path, ep_devices, env: Env, build) -> None:
    """A value produced and read by several nodes inside one partition is an intermediate of the
    subgraph the EP writes, never also one of its inputs (onnxruntime 1.23's graph view lists such a
    value among its inputs; the compiler's ONNX checker then refused every node of the partition)."""
    model = build(tmp_path / "fan_out.onnx")
    sess = make_session(model, ep_devices, env.options, NO_FALLBACK)
    cpu = cpu_session(model)
    for shape in [(2, 3), (5, 1), (1, 7)]:
        feeds = {k: v for k, v in elementwise_feeds(shape, seed=shape[0]).items()
                 if k in {i.name for i in sess.get_inputs()}}
        np.testing.assert_allclose(sess.run(None, feeds)[0], cpu.run(None, feeds)[0], rtol=1e-6)
    checked = [onnx.load(p, load_external_data=False) for r in env.requests() for p in r.get("model_copies", [])]
    assert checked, "the partition was checked by the compiler"
    for m in [*checked, *env.compiled_models()]:
        produced = {o for n in m.graph.node for o in n.output}
        assert not produced & {i.name for i in m.graph.input}, "a value the subgraph computes is not its input"
    assert len(env.compiled_models()) == 1, "the whole graph is one partition"


def test_the_compile_takes_the_lowering_of_the_support_check(tmp_path: Path, ep_devices, env: Env) -> None:
    """The EP compiles the very bytes it had checked, against the same manifest and ABI, so the
    compiler lowers the subgraph once per cold session, not twice."""
    for k, dims in enumerate(([5, 3], ["n", 3])):
        make_session(elementwise(tmp_path / f"m{k}.onnx", dims, "Sub"), ep_devices, env.options, NO_FALLBACK)
    assert [c["lowering_kept"] for c in env.compiles()] == [True, True]


def test_independent_branches_compile_as_one_program(tmp_path: Path, ep_devices, env: Env) -> None:
    nodes = [helper.make_node("Relu", ["x"], ["rx"]), helper.make_node("Tanh", ["y"], ["ty"]),
             helper.make_node("Add", ["rx", "ty"], ["s"]), helper.make_node("Neg", ["x"], ["n"])]
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["n", 4]) for n in ("x", "y", "s", "n")]
    model = save(helper.make_graph(nodes, "branches", vi[:2], vi[2:]), tmp_path / "b.onnx")
    sess = make_session(model, ep_devices, env.options, NO_FALLBACK)
    feeds = elementwise_feeds((3, 4))
    for got, want in zip(sess.run(None, feeds), cpu_session(model).run(None, feeds), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert [sorted(ops) for ops in env.compiled_ops()] == [["Add", "Neg", "Relu", "Tanh"]]


def test_unsupported_node_falls_back_to_cpu(tmp_path: Path, ep_devices, env: Env) -> None:
    sess = make_session(elementwise(tmp_path / "m.onnx", ["n", 4], middle=UNSUPPORTED), ep_devices, env.options)
    check_elementwise(sess, elementwise_feeds((5, 4)), UNSUPPORTED)
    # the unsupported node splits the graph: Add before it and Add+Relu after it are two partitions.
    assert sorted(env.compiled_ops()) == [["Add"], ["Add", "Relu"]]


def test_a_path_through_an_unsupported_node_is_not_fused_around(tmp_path: Path, ep_devices, env: Env) -> None:
    # Relu -> Scaler -> Add and Relu -> Add: fusing Relu with Add would make a cycle through the Scaler.
    nodes = [helper.make_node("Relu", ["x"], ["r"]), unsupported_node("r", "c", "unsupported"),
             helper.make_node("Add", ["r", "c"], ["z"])]
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ("x", "z")]
    model = save(helper.make_graph(nodes, "cycle", vi[:1], vi[1:]), tmp_path / "c.onnx")
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    r = np.maximum(x, 0)
    np.testing.assert_allclose(make_session(model, ep_devices, env.options).run(None, {"x": x})[0],
                               r + r, rtol=1e-6)
    assert env.compiled_ops() == [["Relu"], ["Add"]]


def test_a_path_through_a_control_flow_body_is_not_fused_around(tmp_path: Path, ep_devices, env: Env) -> None:
    """Relu -> If (whose branches read the Relu's output from the outer graph) -> Relu: the If's implicit
    input is an edge. Grouping the two Relus made a cycle through the If; ORT refused the fusion and the EP
    then claimed nothing in the graph, silently with fallback on."""
    def branch(name: str, op: str) -> onnx.GraphProto:
        return helper.make_graph([helper.make_node(op, ["r"], [name + "_out"])], name, [],
                                 [helper.make_tensor_value_info(name + "_out", TensorProto.FLOAT, [2, 3])])
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="first"),
             helper.make_node("If", ["cond"], ["i"], name="if", then_branch=branch("then", "Neg"),
                              else_branch=branch("else", "Identity")),
             helper.make_node("Relu", ["i"], ["z"], name="second")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
              helper.make_tensor_value_info("cond", TensorProto.BOOL, [])]
    outputs = [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])]
    model = save(helper.make_graph(nodes, "implicit", inputs, outputs), tmp_path / "if.onnx")
    sess = make_session(model, ep_devices, env.options)
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    for cond in (True, False):
        feeds = {"x": x, "cond": np.array(cond)}
        np.testing.assert_array_equal(sess.run(None, feeds)[0], cpu_session(model).run(None, feeds)[0])
    assert env.compiled_ops() == [["Relu"], ["Relu"]]


def test_disabled_fallback_lists_each_unsupported_node(tmp_path: Path, ep_devices, env: Env) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 4], middle=UNSUPPORTED)
    expected = (rf"(?s)fallback is disabled.*node 'unsupported' \(Scaler\): operator ai.onnx.ml:Scaler "
                rf"is not supported by {COMPILER}")
    with pytest.raises(Exception, match=expected):
        make_session(model, ep_devices, env.options, NO_FALLBACK)
    assert env.compiles() == []


def test_unsupported_dtype_is_listed(tmp_path: Path, ep_devices, env: Env) -> None:
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["z"], name="relu_bf16")], "bf",
                          [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [4])],
                          [helper.make_tensor_value_info("z", TensorProto.BFLOAT16, [4])])
    # BFLOAT16 flows since ABI 1.3 (Cast and data movement); no unary kernel takes it
    with pytest.raises(Exception, match=r"node 'relu_bf16' \(Relu\): unary RELU does not support element type "
                                        r"bfloat16"):
        make_session(save(g, tmp_path / "bf.onnx"), ep_devices, env.options, NO_FALLBACK)


def _loop_model(path: Path) -> Path:
    """v <- Relu(v + x), three times, in a Loop body: nodes the EP can run, inside a subgraph."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond"], ["cond_out"]), helper.make_node("Add", ["v", "x"], ["s"]),
         helper.make_node("Relu", ["s"], ["v_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [4])])
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["v0"], name="relu_in"),
         helper.make_node("Loop", ["trips", "", "v0"], ["z"], name="loop", body=body)], "loop",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [4])],
        initializer=[helper.make_tensor("trips", TensorProto.INT64, [], [3])])
    return save(g, path)


def _sequence_map_model(path: Path) -> Path:
    """SequenceMap over a sequence of [n] tensors with body Relu(e + e): ORT inlines the
    function into a Loop whose body holds nodes the EP can run."""
    body = helper.make_graph(
        [helper.make_node("Add", ["e", "e"], ["s"]), helper.make_node("Relu", ["s"], ["r"])], "body",
        [helper.make_tensor_value_info("e", TensorProto.FLOAT, ["n"])],
        [helper.make_tensor_value_info("r", TensorProto.FLOAT, ["n"])])
    seq = helper.make_tensor_sequence_value_info
    g = helper.make_graph([helper.make_node("SequenceMap", ["xs"], ["ys"], name="map", body=body)], "map",
                          [seq("xs", TensorProto.FLOAT, ["n"])], [seq("ys", TensorProto.FLOAT, ["n"])])
    return save(g, path)


def test_nodes_inside_control_flow_bodies_are_left_to_other_eps(tmp_path: Path, ep_devices, env: Env) -> None:
    """The EP claims nothing inside a Loop/If/Scan body: a fused node there landed in a graph
    that does not import the EP's domain ('No opset import for domain HipdnnEp')."""
    model = _loop_model(tmp_path / "loop.onnx")
    x = np.array([-1.0, 0.5, 2.0, -3.0], np.float32)
    np.testing.assert_allclose(make_session(model, ep_devices, env.options).run(None, {"x": x})[0],
                               cpu_session(model).run(None, {"x": x})[0], rtol=1e-6)
    assert env.compiled_ops() == [["Relu"]], "only the node outside the body is compiled"
    with pytest.raises(Exception, match=r"(?s)fallback is disabled.*node 'loop' \(Loop\): operator Loop"):
        make_session(model, ep_devices, env.options, NO_FALLBACK)


@pytest.mark.skipif(ort.__version__.startswith("1.23."),
                    reason="onnxruntime 1.23 asks about a function op's body (SequenceMap) before inlining it, "
                           "without its parent node: the EP cannot tell it from a model's graph")
def test_nodes_inside_a_function_body_are_left_to_other_eps(tmp_path: Path, ep_devices, env: Env) -> None:
    mapped = _sequence_map_model(tmp_path / "map.onnx")
    xs = [np.array([-1.0, 2.0], np.float32), np.array([3.0, -4.0, 5.0], np.float32)]
    got = make_session(mapped, ep_devices, env.options).run(None, {"xs": xs})[0]
    for g, e in zip(got, xs, strict=True):
        np.testing.assert_allclose(g, np.maximum(e + e, 0), rtol=1e-6)


def test_a_value_of_unknown_shape_from_another_ep_is_not_taken_for_a_scalar(tmp_path: Path, ep_devices,
                                                                             env: Env) -> None:
    """ORT reports rank 0 for a value whose shape it cannot infer (here: ReduceSumSquare with
    run-time axes, run on the CPU EP); the partition after it must not be compiled for a scalar."""
    g = helper.make_graph(
        [helper.make_node("ReduceSumSquare", ["x", "axes"], ["s"], name="rss"),
         helper.make_node("Sqrt", ["s"], ["z"], name="sqrt")], "l2",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 2]),
         helper.make_tensor_value_info("axes", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    model = save(g, tmp_path / "l2.onnx", opset=18)
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    (got,) = make_session(model, ep_devices, env.options).run(None, {"x": x, "axes": np.array([1], np.int64)})
    np.testing.assert_allclose(got, np.sqrt((x * x).sum(axis=1, keepdims=True)), rtol=1e-6)


def test_concurrent_runs_from_two_threads(tmp_path: Path, ep_devices, shared_env: Env) -> None:
    sess = make_session(elementwise(tmp_path / "m.onnx", ["n", 8]), ep_devices, shared_env.options, NO_FALLBACK)
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        try:
            for i in range(50):
                check_elementwise(sess, elementwise_feeds((1 + (seed + i) % 9, 8), seed=seed * 100 + i))
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_two_sessions_in_one_process(tmp_path: Path, ep_devices, shared_env: Env) -> None:
    a = make_session(elementwise(tmp_path / "a.onnx", ["n", 4]), ep_devices, shared_env.options, NO_FALLBACK)
    b = make_session(elementwise(tmp_path / "b.onnx", ["n", 4], middle="Add"), ep_devices, shared_env.options,
                     NO_FALLBACK)
    feeds = elementwise_feeds((3, 4))
    check_elementwise(a, feeds)
    check_elementwise(b, feeds, "Add")
    del a
    check_elementwise(b, feeds, "Add")


def test_wrong_dtype_and_rank_are_clear_errors(tmp_path: Path, ep_devices, shared_env: Env) -> None:
    sess = make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, shared_env.options, NO_FALLBACK)
    x = np.ones((2, 4), np.float64)
    with pytest.raises(Exception, match=r"(?i)type.*expected: \(tensor\(float\)\)"):
        sess.run(None, {"x": x, "y": x})
    x = np.ones((2, 4, 1), np.float32)
    with pytest.raises(Exception, match="(?i)rank|dimensions"):
        sess.run(None, {"x": x, "y": x})
    check_elementwise(sess, elementwise_feeds((2, 4)))


def test_inconsistent_dynamic_dims_are_a_clear_error(tmp_path: Path, ep_devices, shared_env: Env) -> None:
    # ORT does not check that dims with one symbolic name agree; the program does.
    sess = make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, shared_env.options, NO_FALLBACK)
    with pytest.raises(Exception, match=r"running the artifact of node .* dims \[2, 4\] and \[3, 4\] do not broadcast"):
        sess.run(None, {"x": np.ones((2, 4), np.float32), "y": np.ones((3, 4), np.float32)})
    # Broadcastable dims are computed as ONNX defines them.
    feeds = {"x": np.ones((3, 4), np.float32), "y": np.full((1, 4), 2, np.float32)}
    check_elementwise(sess, feeds)
    check_elementwise(sess, elementwise_feeds((2, 4)))


def test_corrupt_model_is_a_clear_error(tmp_path: Path, ep_devices, env: Env) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07this is not a model")
    with pytest.raises(Exception, match="(?i)protobuf|parse|load|invalid"):
        make_session(bad, ep_devices, env.options)
    model = onnx.load(str(elementwise(tmp_path / "m.onnx", ["n", 4])))
    model.graph.node[1].input[0] = "nowhere"
    onnx.save(model, str(tmp_path / "dangling.onnx"))
    with pytest.raises(Exception, match="nowhere"):
        make_session(tmp_path / "dangling.onnx", ep_devices, env.options)
    assert env.compiles() == []


def _exp_relu(path: Path, dtype: int) -> Path:
    g = helper.make_graph([helper.make_node("Exp", ["a"], ["c"], name="exp"),
                           helper.make_node("Relu", ["c"], ["d"], name="relu")], "g",
                          [helper.make_tensor_value_info("a", dtype, [4])],
                          [helper.make_tensor_value_info("d", dtype, [4])])
    return save(g, path)


# (int8 Add is supported since ABI 1.3, float64 Add since 1.3 too; float64 Exp and Relu are not)
@pytest.mark.parametrize("dtype", [TensorProto.DOUBLE], ids=["float64"])
def test_nodes_the_compiler_refuses_fall_back_to_cpu(tmp_path: Path, ep_devices, env: Env, dtype: int) -> None:
    """The compiler decides support: what it refuses (here: element types its kernels lack) runs
    on ORT's CPU EP with fallback on, and is named with the compiler's reason with fallback off."""
    model = _exp_relu(tmp_path / "m.onnx", dtype)
    np_type = helper.tensor_dtype_to_np_dtype(dtype)
    feeds = {"a": np.array([-3, 1, 2, -1], np_type)}
    np.testing.assert_allclose(make_session(model, ep_devices, env.options).run(None, feeds)[0],
                               np.maximum(np.exp(feeds["a"]), 0), rtol=1e-15)
    assert env.compiles() == []
    name = helper.tensor_dtype_to_np_dtype(dtype).name
    with pytest.raises(Exception, match=rf"(?s)fallback is disabled.*node 'exp' \(Exp\): unary EXP does not support "
                                        rf"element type {name}.*node 'relu' \(Relu\): unary RELU does not support"):
        make_session(model, ep_devices, env.options, NO_FALLBACK)


def test_cpu_backend_runs_without_streams(tmp_path: Path, ep_devices, env: Env, capfd) -> None:
    """Streams are a GPU matter: a CPU-backend node never takes one (no stream note in the session's
    info log), and runs as before."""
    model = elementwise(tmp_path / "m.onnx", [2, 4])
    so = ort.SessionOptions()
    so.log_severity_level = 1  # info: where the stream note of a GPU node goes
    for k, v in NO_FALLBACK.items():
        so.add_session_config_entry(k, v)
    so.add_provider_for_devices(ep_devices, env.options)
    sess = ort.InferenceSession(str(model), sess_options=so, enable_fallback=0)
    check_elementwise(sess, elementwise_feeds((2, 4)))
    err = capfd.readouterr().err
    assert "HipdnnEp" in err, "the info log reaches stderr"
    assert "runs on ONNX Runtime's stream" not in err and "own stream" not in err


def test_unknown_option_is_refused(tmp_path: Path, ep_devices, env: Env) -> None:
    with pytest.raises(Exception, match=r"unknown option\(s\) ep.hipdnnep.cache_dri; the options are: backend"):
        make_session(elementwise(tmp_path / "m.onnx", [2, 4]), ep_devices, dict(env.options, cache_dri="x"))


@pytest.mark.parametrize(("key", "value"), [("backend", "tpu"), ("device_id", "-1"), ("cache_enable", "maybe"),
                                            ("max_states", "0"), ("compile_timeout", "0"),
                                            ("graph_capture", "yes")])
def test_bad_option_values_are_refused(tmp_path: Path, ep_devices, env: Env, key: str, value: str) -> None:
    with pytest.raises(Exception, match=f"option ep.hipdnnep.{key}"):
        make_session(elementwise(tmp_path / "m.onnx", [2, 4]), ep_devices, dict(env.options, **{key: value}))
