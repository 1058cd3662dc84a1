"""Sessions through onnxruntime with the plugin registered, on the real
compiler and runtime: partitioning and fallback, weights, the compile cache,
concurrency, and every error a user can reach."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import hipdnn_ep_compiler
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from conftest import LOG_POINTER, NO_FALLBACK, Env, cpu_session, make_session
from hipdnn_ep._abi_info import REQUIRED_RUNTIME_ABI
from hipdnn_ep_compiler.abi import load_abi
from models import UNSUPPORTED, elementwise, many_initializers, reference, save, unsupported_node, with_weights
from onnx import TensorProto, helper

COMPILER = f"hipdnn-ep-compiler {hipdnn_ep_compiler.__version__}"
# the newest runtime ABI the installed compiler targets, and the one this EP was built for
COMPILER_ABI = f"{load_abi().major}.{load_abi().minor}"
EP_ABI = REQUIRED_RUNTIME_ABI
EP_PIN = rf"'hipdnn-ep-runtime>={EP_ABI[0]}\.{EP_ABI[1]},<{EP_ABI[0] + 1}'"


def _feeds(shape: tuple[int, ...], seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal(shape).astype(np.float32), "y": rng.standard_normal(shape).astype(np.float32)}


def _check(sess, feeds: dict[str, np.ndarray], middle: str = "Mul") -> None:
    np.testing.assert_allclose(sess.run(None, feeds)[0], reference(feeds["x"], feeds["y"], middle),
                               rtol=1e-5, atol=1e-6)


def test_fixed_shape_runs_on_the_ep_without_fallback(tmp_path: Path, ep_devices, env: Env) -> None:
    sess = make_session(elementwise(tmp_path / "m.onnx", [3, 4]), ep_devices, env.options, NO_FALLBACK)
    _check(sess, _feeds((3, 4)))
    assert env.compiled_ops() == [["Add", "Mul", "Relu"]]


def test_dynamic_shape_compiles_once_and_runs_many_shapes(tmp_path: Path, ep_devices, env: Env) -> None:
    model = elementwise(tmp_path / "m.onnx", ["batch", "seq"])
    sess = make_session(model, ep_devices, env.options, NO_FALLBACK)
    cpu = cpu_session(model)
    for shape in [(1, 1), (2, 5), (7, 3), (0, 4), (16, 128)]:
        feeds = _feeds(shape, seed=shape[0])
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
        feeds = {k: v for k, v in _feeds(shape, seed=shape[0]).items() if k in {i.name for i in sess.get_inputs()}}
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
    feeds = _feeds((3, 4))
    for got, want in zip(sess.run(None, feeds), cpu_session(model).run(None, feeds), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert [sorted(ops) for ops in env.compiled_ops()] == [["Add", "Neg", "Relu", "Tanh"]]


def test_unsupported_node_falls_back_to_cpu(tmp_path: Path, ep_devices, env: Env) -> None:
    sess = make_session(elementwise(tmp_path / "m.onnx", ["n", 4], middle=UNSUPPORTED), ep_devices, env.options)
    _check(sess, _feeds((5, 4)), UNSUPPORTED)
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
    with pytest.raises(Exception, match=r"node 'relu_bf16' \(Relu\): 'x' has element type BFLOAT16, which hipdnn-ep"):
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


@pytest.mark.parametrize("n", [16, 512], ids=["inline-weights", "external-weights"])
def test_initializers_reach_the_program(tmp_path: Path, ep_devices, env: Env, n: int) -> None:
    model = with_weights(tmp_path / "w.onnx", n)
    sess = make_session(model, ep_devices, env.options, NO_FALLBACK)
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], cpu_session(model).run(None, {"x": x})[0], rtol=1e-6)
    (compiled,) = env.compiled_models()
    weights = {t.name: t.data_location == TensorProto.EXTERNAL for t in compiled.graph.initializer}
    assert weights == {"w_big": n * 4 > 1024, "w_small": n * 4 > 1024}
    assert {v.name for v in compiled.graph.value_info} == {"m", "s"}


def test_weights_are_passed_by_reference_and_are_not_part_of_the_cache_key(tmp_path: Path, ep_devices,
                                                                          env: Env) -> None:
    """Weights (initializers over 1 KiB) reach the compiler as names, element types and dims only:
    no weight bytes are written for it, and two models that differ only in their weights' values
    share one compiled artifact, each running with its own weights."""
    n = 512  # both initializers are 2 KiB
    models = [with_weights(tmp_path / f"w{seed}.onnx", n, seed) for seed in (1, 2)]
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    outputs = []
    for model in models:
        got = make_session(model, ep_devices, env.options, NO_FALLBACK).run(None, {"x": x})[0]
        np.testing.assert_allclose(got, cpu_session(model).run(None, {"x": x})[0], rtol=1e-6)
        outputs.append(got)
    assert not np.allclose(outputs[0], outputs[1]), "the two models' weights differ"
    assert len(env.compiles()) == 1, "only the weights' values differ: the second session hits the cache"
    assert len(env.cache_entries()) == 1

    copies = [Path(c) for r in env.requests() for c in [r.get("model_copy"), *r.get("model_copies", [])] if c]
    assert copies, "the spy recorded the support and compile requests' models"
    for copy in copies:
        assert sorted(p.name for p in copy.parent.iterdir()) in (["model.onnx"],
                                                                   ["model.onnx", "runtime_abi_manifest.json"])
        assert copy.stat().st_size < n * 4, "the model holds no weight bytes"
        sent = onnx.load(str(copy), load_external_data=False)
        assert {p.key: p.value for p in sent.metadata_props} == {"hipdnn_ep.weights": "host"}
        for t in sent.graph.initializer:
            assert t.data_location == TensorProto.EXTERNAL and not t.raw_data, t.name
    (entry,) = env.cache_entries()
    meta = hipdnn_ep_compiler.read_metadata(next(p for p in entry.rglob("*.so")))
    assert {w["name"]: w["source"] for w in meta["weights"]} == {"w_big": {"kind": "host"},
                                                                   "w_small": {"kind": "host"}}


def test_compile_cache_hit_miss_and_invalidation(tmp_path: Path, ep_devices, env: Env,
                                                 spy_python_other_version: Path) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    feeds = _feeds((2, 4))
    for _ in range(2):
        _check(make_session(model, ep_devices, env.options, NO_FALLBACK), feeds)
    assert len(env.compiles()) == 1, "the second session must hit the cache"

    _check(make_session(elementwise(tmp_path / "o.onnx", ["n", 4], middle="Add"), ep_devices, env.options,
                        NO_FALLBACK), feeds, "Add")
    assert len(env.compiles()) == 2, "another graph is a miss"
    assert len(env.cache_entries()) == 2

    # Another compiler version is another key.
    other = dict(env.options, compiler_python=str(spy_python_other_version))
    _check(make_session(model, ep_devices, other, NO_FALLBACK), feeds)
    assert len(env.compiles()) == 3
    described = [json.loads((e / "entry.json").read_text()) for e in env.cache_entries()]
    assert sorted(d["compiler"] for d in described) == [COMPILER, COMPILER, COMPILER + "+other"]

    # A damaged entry is never used: it is recompiled.
    for entry in env.cache_entries():
        (entry / "entry.json").write_text((entry / "entry.json").read_text().replace('"cpu"', '"cuda"'))
    _check(make_session(model, ep_devices, env.options, NO_FALLBACK), feeds)
    assert len(env.compiles()) == 4


def test_repeated_sessions_of_one_model_share_one_cache_entry(tmp_path: Path, ep_devices, env: Env) -> None:
    """The subgraph the EP writes, and so the cache key, depends on the graph's content only
    (ORT hands initializers over in an order that changes from session to session)."""
    model = many_initializers(tmp_path / "m.onnx")
    x = np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32)
    want = cpu_session(model).run(None, {"x": x})[0]
    for _ in range(6):
        np.testing.assert_allclose(make_session(model, ep_devices, env.options, NO_FALLBACK).run(None, {"x": x})[0],
                                   want, rtol=1e-5)
    assert len(env.compiles()) == 1
    assert len(env.cache_entries()) == 1


def test_runtime_abi_is_part_of_the_cache_key(tmp_path: Path, ep_devices, env: Env, runtime_reporting_abi) -> None:
    """A runtime of a newer minor than the compiler knows: the code is compiled
    anew (the key holds the runtime ABI) for the newest ABI the compiler knows."""
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    feeds = _feeds((2, 4))
    _check(make_session(model, ep_devices, env.options, NO_FALLBACK), feeds)
    newer = dict(env.options, runtime_library=str(runtime_reporting_abi(1, 7)))
    _check(make_session(model, ep_devices, newer, NO_FALLBACK), feeds)
    _check(make_session(model, ep_devices, newer, NO_FALLBACK), feeds)
    import hipdnn_ep_runtime

    runtime_abi = "{}.{}".format(*hipdnn_ep_runtime.abi_version())
    assert [r["abi"] for r in env.compiles()] == [COMPILER_ABI, COMPILER_ABI]
    described = sorted((json.loads((e / "entry.json").read_text()) for e in env.cache_entries()),
                       key=lambda d: d["abi"])
    assert [(d["abi"], d["target_abi"]) for d in described] == [(runtime_abi, COMPILER_ABI), ("1.7", COMPILER_ABI)]


def test_compiles_against_the_installed_runtime_manifest(tmp_path: Path, ep_devices, env: Env) -> None:
    """Each compile request carries the manifest of the runtime that will run the code."""
    import hipdnn_ep_runtime

    _check(make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, env.options, NO_FALLBACK),
           _feeds((2, 4)))
    (request,) = env.compiles()
    assert Path(request["manifest"]).name == "runtime_abi_manifest.json"
    sent = Path(request["model_copy"]).parent / "runtime_abi_manifest.json"
    assert json.loads(sent.read_text()) == hipdnn_ep_runtime.abi_manifest()


def test_a_runtime_manifest_mismatch_is_found_at_compile_time(tmp_path: Path, ep_devices, env: Env) -> None:
    """A runtime whose manifest lacks a function the dynamic-shape code calls: the compile refuses,
    naming it, instead of producing code for the compiler's own idea of the runtime."""
    import hipdnn_ep_runtime

    real = Path(hipdnn_ep_runtime.library_path())
    manifest = hipdnn_ep_runtime.abi_manifest()
    manifest["functions"] = [f for f in manifest["functions"] if f["name"] != "hipdnn_ep_get_host_scratch_base"]
    text = json.dumps(manifest, separators=(",", ":"), ensure_ascii=False)
    c_string = text.replace("\\", "\\\\").replace('"', '\\"')
    src = tmp_path / "shim.c"
    src.write_text(f'const char* hipdnn_ep_abi_manifest(void) {{ return "{c_string}"; }}\n')
    shim = tmp_path / "libruntime_shim_manifest.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(shim), str(src), f"-Wl,-soname,{shim.name}",
                    "-Wl,--no-as-needed", f"-L{real.parent}", f"-l:{real.name}", f"-Wl,-rpath,{real.parent}"],
                   check=True)
    options = dict(env.options, runtime_library=str(shim))
    expected = (r"'hipdnn_ep_get_host_scratch_base', which the runtime ABI manifest "
                rf"\(runtime_abi_manifest\.json, ABI {re.escape(COMPILER_ABI)}\) does not declare")
    with pytest.raises(Exception, match=expected):
        make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, options, NO_FALLBACK)


def test_compiler_for_another_abi_major_is_refused(tmp_path: Path, ep_devices, env: Env,
                                                   spy_python_abi2: Path) -> None:
    options = dict(env.options, compiler_python=str(spy_python_abi2))
    expected = (rf"{COMPILER} cannot compile for the runtime's ABI {re.escape(COMPILER_ABI)} \(it targets ABI 2\.0, "
                r"2\.1\)\. "
                r"Fix: install a hipdnn-ep-compiler for runtime ABI major 1")
    with pytest.raises(Exception, match=expected):
        make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, options, NO_FALLBACK)
    assert env.compiles() == []


def test_cache_disabled_compiles_every_session(tmp_path: Path, ep_devices, env: Env) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    options = dict(env.options, cache_enable="0")
    for _ in range(2):
        _check(make_session(model, ep_devices, options, NO_FALLBACK), _feeds((1, 4)))
    assert len(env.compiles()) == 2
    assert not env.cache_dir.exists(), "with the cache disabled no cache folder is created"


def test_two_processes_compiling_at_once_share_one_entry(tmp_path: Path, env: Env) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    script = (
        "import sys, json, numpy as np, onnxruntime as ort, hipdnn_ep\n"
        "so = ort.SessionOptions(); so.add_session_config_entry('session.disable_cpu_ep_fallback', '1')\n"
        f"so.add_provider_for_devices(hipdnn_ep.register(ort), json.loads({json.dumps(json.dumps(env.options))}))\n"
        "s = ort.InferenceSession(sys.argv[1], sess_options=so, enable_fallback=0)\n"
        "x = np.ones((2, 4), np.float32); print(s.run(None, {'x': x, 'y': x})[0].sum())\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(model)], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert [float(o) for o in outs] == [16.0, 16.0]  # relu((1 + 1) * 1) * 8
    assert len(env.cache_entries()) == 1
    assert not list(env.cache_dir.glob(".tmp-*")), "temporary folders are cleaned up"


def test_concurrent_runs_from_two_threads(tmp_path: Path, ep_devices, shared_env: Env) -> None:
    sess = make_session(elementwise(tmp_path / "m.onnx", ["n", 8]), ep_devices, shared_env.options, NO_FALLBACK)
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        try:
            for i in range(50):
                _check(sess, _feeds((1 + (seed + i) % 9, 8), seed=seed * 100 + i))
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
    feeds = _feeds((3, 4))
    _check(a, feeds)
    _check(b, feeds, "Add")
    del a
    _check(b, feeds, "Add")


def test_wrong_dtype_and_rank_are_clear_errors(tmp_path: Path, ep_devices, shared_env: Env) -> None:
    sess = make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, shared_env.options, NO_FALLBACK)
    x = np.ones((2, 4), np.float64)
    with pytest.raises(Exception, match=r"(?i)type.*expected: \(tensor\(float\)\)"):
        sess.run(None, {"x": x, "y": x})
    x = np.ones((2, 4, 1), np.float32)
    with pytest.raises(Exception, match="(?i)rank|dimensions"):
        sess.run(None, {"x": x, "y": x})
    _check(sess, _feeds((2, 4)))


def test_inconsistent_dynamic_dims_are_a_clear_error(tmp_path: Path, ep_devices, shared_env: Env) -> None:
    # ORT does not check that dims with one symbolic name agree; the program does.
    sess = make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, shared_env.options, NO_FALLBACK)
    with pytest.raises(Exception, match=r"running the artifact of node .* dims \[2, 4\] and \[3, 4\] do not broadcast"):
        sess.run(None, {"x": np.ones((2, 4), np.float32), "y": np.ones((3, 4), np.float32)})
    # Broadcastable dims are computed as ONNX defines them.
    feeds = {"x": np.ones((3, 4), np.float32), "y": np.full((1, 4), 2, np.float32)}
    _check(sess, feeds)
    _check(sess, _feeds((2, 4)))


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


def _add_relu(path: Path, dtype: int) -> Path:
    g = helper.make_graph([helper.make_node("Add", ["a", "b"], ["c"], name="add"),
                           helper.make_node("Relu", ["c"], ["d"], name="relu")], "g",
                          [helper.make_tensor_value_info(n, dtype, [4]) for n in ("a", "b")],
                          [helper.make_tensor_value_info("d", dtype, [4])])
    return save(g, path)


@pytest.mark.parametrize("dtype", [TensorProto.DOUBLE], ids=["float64"])  # (int8 Add is supported since ABI 1.3)
def test_nodes_the_compiler_refuses_fall_back_to_cpu(tmp_path: Path, ep_devices, env: Env, dtype: int) -> None:
    """The compiler decides support: what it refuses (here: element types its kernels lack) runs
    on ORT's CPU EP with fallback on, and is named with the compiler's reason with fallback off."""
    model = _add_relu(tmp_path / "m.onnx", dtype)
    np_type = helper.tensor_dtype_to_np_dtype(dtype)
    feeds = {"a": np.array([-3, 1, 2, -1], np_type), "b": np.array([1, 1, -5, 4], np_type)}
    np.testing.assert_array_equal(make_session(model, ep_devices, env.options).run(None, feeds)[0],
                                  np.maximum(feeds["a"] + feeds["b"], 0))
    assert env.compiles() == []
    name = helper.tensor_dtype_to_np_dtype(dtype).name
    with pytest.raises(Exception, match=rf"(?s)fallback is disabled.*node 'add' \(Add\): binary ADD does not support "
                                        rf"element type {name}.*node 'relu' \(Relu\): unary RELU does not support"):
        make_session(model, ep_devices, env.options, NO_FALLBACK)


def test_missing_runtime_is_a_clear_error(tmp_path: Path, ep_devices, env: Env) -> None:
    options = dict(env.options, runtime_library=str(tmp_path / "nowhere" / "libhipdnn_ep_runtime.so.1"))
    with pytest.raises(Exception, match=r"(?s)cannot load the hipdnn-ep runtime library.*nowhere.*pip install"):
        make_session(elementwise(tmp_path / "m.onnx", [2, 4]), ep_devices, options, NO_FALLBACK)


@pytest.mark.parametrize(("abi", "problem"), [((2, 0), "its ABI major differs"),
                                              ((1, 0), "its ABI minor is older than needed")])
def test_runtime_of_another_abi_is_refused(tmp_path: Path, ep_devices, env: Env, runtime_reporting_abi,
                                           abi: tuple[int, int], problem: str) -> None:
    options = dict(env.options, runtime_library=str(runtime_reporting_abi(*abi)))
    with pytest.raises(Exception, match=rf"has ABI {abi[0]}\.{abi[1]}, this EP needs ABI {EP_ABI[0]}\.{EP_ABI[1]}"
                                         rf".*{problem}\. Fix: pip install {EP_PIN}"):
        make_session(elementwise(tmp_path / "m.onnx", [2, 4]), ep_devices, options, NO_FALLBACK)
    assert env.compiles() == []


def test_runtime_of_the_right_abi_lacking_functions_is_a_broken_install(tmp_path: Path, ep_devices,
                                                                      env: Env) -> None:
    """The ABI the EP needs, but functions the EP calls are missing: reinstalling is the fix, not upgrading."""
    src = tmp_path / "lonely.c"
    src.write_text("#include <stdint.h>\nuint32_t hipdnn_ep_abi_version(void) { return "
                   f"({EP_ABI[0]}u << 16) | {EP_ABI[1]}u; }}\n")
    lib = tmp_path / "libruntime_lonely.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    options = dict(env.options, runtime_library=str(lib))
    abi = rf"{EP_ABI[0]}\.{EP_ABI[1]}"
    with pytest.raises(Exception, match=rf"has ABI {abi}, this EP needs ABI {abi} .*missing functions: "
                                         rf"\[hipdnn_ep_abi_manifest, .*Fix: pip install --force-reinstall {EP_PIN}"):
        make_session(elementwise(tmp_path / "m.onnx", [2, 4]), ep_devices, options, NO_FALLBACK)


def test_missing_compiler(tmp_path: Path, ep_devices, env: Env, broken_compiler, capfd) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    options = dict(env.options, compiler_python=str(tmp_path / "no-python"))
    # With fallback the model still runs (on the CPU EP), and a warning at ORT's default log level
    # says why and how to fix it: a broken install is not a verdict on the model ...
    _check(make_session(model, ep_devices, options), _feeds((2, 4)))
    err = capfd.readouterr().err
    assert re.search(r"(?s)the compiler could not be used, so this graph's nodes run on other EPs: .*cannot start"
                     r".*no-python.*Fix: install hipdnn-ep-compiler", err), err
    # ... also where an interpreter starts but cannot import what the compiler needs.
    broken = dict(env.options, compiler_python=str(broken_compiler("no-numpy")))
    _check(make_session(elementwise(tmp_path / "m2.onnx", ["n", 4]), ep_devices, broken), _feeds((2, 4)))
    err = capfd.readouterr().err
    assert re.search(r"(?s)the compiler could not be used.*No module named 'numpy'.*Fix: install", err), err
    # ... without it, every node is listed with the reason.
    with pytest.raises(Exception, match=r"(?s)node 'add0' \(Add\): the compiler is unavailable.*cannot start"):
        make_session(model, ep_devices, options, NO_FALLBACK)


@pytest.mark.parametrize(("kind", "message"), [
    ("garbage", r"answered without a valid JSON response.*stdout:\nthis is not JSON"),
    ("crash", r"exited with code .* without a valid JSON response.*stderr:\nSegmentation fault in the compiler"),
    ("not-ok", r"reported an error: no error message"),
    ("other-protocol", r"answered in compiler protocol 4, but this EP speaks protocol 3\. Install a "
                       r"hipdnn-ep-compiler that speaks it"),
    # a compiler before 0.4.1, which cannot read weights held by reference (protocol 3)
    ("refuses-protocol", r"reported an error: BadRequest: unsupported protocol 3; this compiler speaks 1, 2 "
                         r"\(upgrade the older of hipdnn-ep and hipdnn-ep-compiler\)"),
    # answers that break packages/abi/protocol.toml, refused naming the field
    ("retyped-field", r"answered a capabilities request with a malformed capabilities_response \(field "
                      r"'compiler_version': expected a string; packages/abi/protocol.toml declares it\): install "
                      r"matching hipdnn-ep and hipdnn-ep-compiler versions"),
    ("missing-field", r"malformed capabilities_response \(field 'build_id': missing \(required\)"),
    ("oversized-value", r"malformed capabilities_response \(field 'abi.major': expected an integer"),
    ("malformed-error", r"reported an error: an error the compiler did not word \(malformed error_response: field "
                        r"'error.kind': expected a string\)"),
])
def test_misbehaving_compiler_is_a_clear_error(tmp_path: Path, ep_devices, env: Env, broken_compiler,
                                               kind: str, message: str) -> None:
    options = dict(env.options, compiler_python=str(broken_compiler(kind)))
    with pytest.raises(Exception, match=rf"(?s){message}"):
        make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, options, NO_FALLBACK)


@pytest.mark.parametrize(("kind", "dims", "message"), [
    ("malformed-support", ["n", 11], r"answered a support request with a malformed support_response \(field "
                                     r"'models\[0\].nodes\[0\].index': expected an integer"),
    ("malformed-compile", ["n", 13], r"answered a compile request with a malformed compile_response \(field "
                                     r"'artifact': expected a string; packages/abi/protocol.toml declares it\)"),
])
def test_a_malformed_support_or_compile_answer_is_refused_naming_the_field(tmp_path: Path, ep_devices, env: Env,
                                                                          broken_compiler, kind: str, dims: list,
                                                                          message: str) -> None:
    """The real compiler, but its support (or compile) answer breaks protocol.toml; a graph of its own, so
    that no support verdict or artifact of another test answers for it."""
    options = dict(env.options, compiler_python=str(broken_compiler(kind)))
    with pytest.raises(Exception, match=rf"(?s){message}"):
        make_session(elementwise(tmp_path / "m.onnx", dims, "Sub"), ep_devices, options, NO_FALLBACK)


def _server_pids(env: Env) -> list[int]:
    """The process id of the compiler that answered each compile request (from the spy's copies)."""
    return [int(Path(r["model_copy"]).parent.name.split("-")[1]) for r in env.compiles()]


def test_one_compiler_process_serves_every_session_and_is_restarted_when_it_dies(tmp_path: Path, ep_devices,
                                                                                   env: Env) -> None:
    for k, middle in enumerate(("Mul", "Add")):
        _check(make_session(elementwise(tmp_path / f"m{k}.onnx", ["n", 4], middle), ep_devices, env.options,
                            NO_FALLBACK), _feeds((2, 4)), middle)
    first, second = _server_pids(env)
    assert first == second, "the second session's compile went to the same compiler process"
    os.kill(first, signal.SIGKILL)
    _check(make_session(elementwise(tmp_path / "m2.onnx", [3, 4]), ep_devices, env.options, NO_FALLBACK),
           _feeds((3, 4)))
    assert _server_pids(env)[-1] != first, "a new compiler process took over"


def test_a_compiler_that_dies_during_a_request_is_replaced_once_and_announced(tmp_path: Path, ep_devices, env: Env,
                                                                              capfd) -> None:
    _check(make_session(elementwise(tmp_path / "m0.onnx", ["n", 7]), ep_devices, env.options, NO_FALLBACK),
           _feeds((2, 7)))
    first = _server_pids(env)[-1]
    crash = LOG_POINTER.with_name("crash")
    crash.touch()
    try:  # the running process dies on the request, and so does the one started to retry it
        with pytest.raises(Exception, match=rf"(?s)exited with code {128 + signal.SIGSEGV} without a valid JSON "
                                            r"response.*It was the second compiler process to end during this "
                                            rf"request \(the first one \(pid {first}\) was killed by signal "
                                            rf"{signal.SIGSEGV} during a request\)"):
            make_session(elementwise(tmp_path / "m1.onnx", ["n", 7], "Sub"), ep_devices, env.options, NO_FALLBACK)
    finally:
        crash.unlink()
    _check(make_session(elementwise(tmp_path / "m2.onnx", ["n", 7], "Add"), ep_devices, env.options, NO_FALLBACK),
           _feeds((2, 7)), "Add")
    assert _server_pids(env)[-1] != first
    err = capfd.readouterr().err
    assert re.search(rf"the compiler process \(pid {first}\) was killed by signal {signal.SIGSEGV} during a "
                     r"request; a new one \(pid \d+\) takes over", err), err
    assert re.search(rf"the compiler process \(pid \d+\) was killed by signal {signal.SIGSEGV} during a "
                     r"request; a new one \(pid \d+\) takes over", err.split("takes over", 1)[1]), err


def test_compile_timeout_stops_a_hung_compiler(tmp_path: Path, ep_devices, env: Env, broken_compiler) -> None:
    options = dict(env.options, compiler_python=str(broken_compiler("hang")), compile_timeout="1")
    start = time.monotonic()
    with pytest.raises(Exception, match=r"did not answer within 1 s and was stopped\. Raise the EP option "
                                        r"compile_timeout"):
        make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, options, NO_FALLBACK)
    assert time.monotonic() - start < 30


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
    _check(sess, _feeds((2, 4)))
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
