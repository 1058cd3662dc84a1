"""Sessions through onnxruntime with the plugin registered, on the test
doubles of the compiler and the runtime."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from conftest import Env, make_session
from models import elementwise, reference, with_weights

NO_FALLBACK = {"session.disable_cpu_ep_fallback": "1"}


def _feeds(shape: tuple[int, ...], seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal(shape).astype(np.float32), "y": rng.standard_normal(shape).astype(np.float32)}


def test_fixed_shape_runs_on_the_ep_without_fallback(tmp_path: Path, ep_devices, env: Env) -> None:
    model = elementwise(tmp_path / "m.onnx", [3, 4])
    sess = make_session(model, ep_devices, env.options, NO_FALLBACK)
    feeds = _feeds((3, 4))
    (z,) = sess.run(None, feeds)
    np.testing.assert_allclose(z, reference(feeds["x"], feeds["y"]), rtol=1e-6)
    assert len(env.compiles()) == 1


def test_dynamic_shape_compiles_once_and_runs_many_shapes(tmp_path: Path, ep_devices, env: Env) -> None:
    model = elementwise(tmp_path / "m.onnx", ["batch", "seq"])
    sess = make_session(model, ep_devices, env.options, NO_FALLBACK)
    cpu = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    for shape in [(1, 1), (2, 5), (7, 3), (0, 4), (16, 128)]:
        feeds = _feeds(shape, seed=shape[0])
        (got,) = sess.run(None, feeds)
        (want,) = cpu.run(None, feeds)
        assert got.shape == shape
        np.testing.assert_allclose(got, want, rtol=1e-6)
    compiles = [json.loads(line) for line in env.compiles()]
    assert len(compiles) == 1
    assert compiles[0]["nodes"] == ["Add", "Mul", "Relu"]


def test_unsupported_node_falls_back_to_cpu(tmp_path: Path, ep_devices, env: Env) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 4], middle="Sigmoid")
    sess = make_session(model, ep_devices, env.options)
    feeds = _feeds((5, 4))
    (z,) = sess.run(None, feeds)
    np.testing.assert_allclose(z, reference(feeds["x"], feeds["y"], "Sigmoid"), rtol=1e-5)
    # Sigmoid splits the graph: Add before it and Add+Relu after it are two partitions.
    parts = sorted(json.loads(line)["nodes"] for line in env.compiles())
    assert parts == [["Add"], ["Add", "Relu"]]


def test_disabled_fallback_lists_each_unsupported_node(tmp_path: Path, ep_devices, env: Env) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 4], middle="Sigmoid")
    expected = r"(?s)fallback is disabled.*node 'sig' \(Sigmoid\): operator Sigmoid is not supported"
    with pytest.raises(Exception, match=expected):
        make_session(model, ep_devices, env.options, NO_FALLBACK)
    assert env.compiles() == []


@pytest.mark.parametrize("n", [16, 512], ids=["inline-weights", "external-weights"])
def test_initializers_reach_the_program(tmp_path: Path, ep_devices, env: Env, n: int) -> None:
    model = with_weights(tmp_path / "w.onnx", n)
    sess = make_session(model, ep_devices, env.options, NO_FALLBACK)
    cpu = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], cpu.run(None, {"x": x})[0], rtol=1e-6)
    (log,) = [json.loads(line) for line in env.compiles()]
    assert sorted(log["weights"]) == ["w_big", "w_small"]
    assert sorted(log["external"]) == ([] if n * 4 <= 1024 else ["w_big", "w_small"])
    assert set(log["value_info"]) == {"m", "s"}


def test_compile_cache_hit_miss_and_invalidation(tmp_path: Path, ep_devices, env: Env) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    feeds = _feeds((2, 4))
    for _ in range(2):
        make_session(model, ep_devices, env.options, NO_FALLBACK).run(None, feeds)
    assert len(env.compiles()) == 1, "the second session must hit the cache"

    other = elementwise(tmp_path / "o.onnx", ["n", 4], middle="Add")
    make_session(other, ep_devices, env.options, NO_FALLBACK).run(None, feeds)
    assert len(env.compiles()) == 2, "another graph is a miss"

    # A damaged entry is never used: it is recompiled.
    for entry in env.cache_dir.glob("*/entry.json"):
        entry.write_text(entry.read_text().replace("0.0.1+fake", "0.0.0"))
    sess = make_session(model, ep_devices, env.options, NO_FALLBACK)
    np.testing.assert_allclose(sess.run(None, feeds)[0], reference(feeds["x"], feeds["y"]), rtol=1e-6)
    assert len(env.compiles()) == 3


def test_cache_disabled_compiles_every_session(tmp_path: Path, ep_devices, env: Env) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    options = dict(env.options, cache_enable="0")
    for _ in range(2):
        make_session(model, ep_devices, options, NO_FALLBACK).run(None, _feeds((1, 4)))
    assert len(env.compiles()) == 2
    assert not any(p.name != "install.key" and not p.name.startswith(".tmp-") for p in env.cache_dir.iterdir())


def test_two_processes_compiling_at_once_share_one_entry(tmp_path: Path, env: Env) -> None:
    import subprocess
    import sys

    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    script = (
        "import sys, json, numpy as np, onnxruntime as ort, hipdnn_ep\n"
        "so = ort.SessionOptions(); so.add_session_config_entry('session.disable_cpu_ep_fallback', '1')\n"
        f"so.add_provider_for_devices(hipdnn_ep.register(ort), json.loads({json.dumps(json.dumps(env.options))}))\n"
        "s = ort.InferenceSession(sys.argv[1], sess_options=so)\n"
        "x = np.ones((2, 4), np.float32); print(s.run(None, {'x': x, 'y': x})[0].sum())\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(model)], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert [float(o) for o in outs] == [16.0, 16.0]  # relu((1 + 1) * 1) * 8
    entries = [p for p in env.cache_dir.iterdir() if not p.name.startswith(".") and p.is_dir()]
    assert len(entries) == 1
    assert not list(env.cache_dir.glob(".tmp-*")), "temporary folders are cleaned up"


def test_concurrent_runs_from_two_threads(tmp_path: Path, ep_devices, env: Env) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 8])
    sess = make_session(model, ep_devices, env.options, NO_FALLBACK)
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        try:
            for i in range(50):
                feeds = _feeds((1 + (seed + i) % 9, 8), seed=seed * 100 + i)
                np.testing.assert_allclose(sess.run(None, feeds)[0], reference(feeds["x"], feeds["y"]), rtol=1e-6)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_two_sessions_in_one_process(tmp_path: Path, ep_devices, env: Env) -> None:
    a = make_session(elementwise(tmp_path / "a.onnx", ["n", 4]), ep_devices, env.options, NO_FALLBACK)
    b = make_session(elementwise(tmp_path / "b.onnx", ["n", 4], middle="Add"), ep_devices, env.options, NO_FALLBACK)
    feeds = _feeds((3, 4))
    np.testing.assert_allclose(a.run(None, feeds)[0], reference(feeds["x"], feeds["y"]), rtol=1e-6)
    np.testing.assert_allclose(b.run(None, feeds)[0], np.maximum(2 * feeds["y"] + feeds["x"], 0), rtol=1e-6)
    del a
    np.testing.assert_allclose(b.run(None, feeds)[0], np.maximum(2 * feeds["y"] + feeds["x"], 0), rtol=1e-6)


def test_wrong_dtype_and_rank_are_clear_errors(tmp_path: Path, ep_devices, env: Env) -> None:
    sess = make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, env.options, NO_FALLBACK)
    x = np.ones((2, 4), np.float64)
    with pytest.raises(Exception, match="(?i)type"):
        sess.run(None, {"x": x, "y": x})
    x = np.ones((2, 4, 1), np.float32)
    with pytest.raises(Exception, match="(?i)rank|dimensions"):
        sess.run(None, {"x": x, "y": x})
    ok = _feeds((2, 4))
    np.testing.assert_allclose(sess.run(None, ok)[0], reference(ok["x"], ok["y"]), rtol=1e-6)


def test_corrupt_model_is_a_clear_error(tmp_path: Path, ep_devices, env: Env) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07this is not a model")
    with pytest.raises(Exception, match="(?i)protobuf|parse|load|invalid"):
        make_session(bad, ep_devices, env.options)


def test_missing_runtime_is_a_clear_error(tmp_path: Path, ep_devices, env: Env) -> None:
    options = dict(env.options, runtime_library=str(tmp_path / "nowhere" / "libhipdnn_ep_runtime.so.1"))
    with pytest.raises(Exception, match=r"(?s)cannot load the hipdnn-ep runtime library.*nowhere.*pip install"):
        make_session(elementwise(tmp_path / "m.onnx", [2, 4]), ep_devices, options, NO_FALLBACK)


def test_runtime_of_another_abi_major_is_refused(tmp_path: Path, ep_devices, env: Env,
                                                 fake_runtime_abi2: Path) -> None:
    options = dict(env.options, runtime_library=str(fake_runtime_abi2))
    with pytest.raises(Exception, match=r"has ABI 2\.0, this EP needs ABI 1\.1.*major differs"):
        make_session(elementwise(tmp_path / "m.onnx", [2, 4]), ep_devices, options, NO_FALLBACK)


def test_missing_compiler(tmp_path: Path, ep_devices, env: Env) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    options = dict(env.options, compiler_python=str(tmp_path / "no-python"))
    # With fallback the model still runs (on the CPU EP) ...
    feeds = _feeds((2, 4))
    np.testing.assert_allclose(make_session(model, ep_devices, options).run(None, feeds)[0],
                               reference(feeds["x"], feeds["y"]), rtol=1e-6)
    # ... without it, every node is listed with the reason.
    with pytest.raises(Exception, match=r"(?s)node 'add0' \(Add\): the compiler is unavailable.*cannot start"):
        make_session(model, ep_devices, options, NO_FALLBACK)


def test_compiler_error_reaches_the_user(tmp_path: Path, ep_devices, env: Env) -> None:
    from models import save
    from onnx import TensorProto, helper

    # The double only compiles float weights: a double weight makes it fail with its own message.
    w = helper.make_tensor("w", TensorProto.DOUBLE, [4], [1.0, 2.0, 3.0, 4.0])
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["z"])], "b",
                          [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [4])],
                          [helper.make_tensor_value_info("z", TensorProto.DOUBLE, [4])], initializer=[w])
    model = save(g, tmp_path / "d.onnx")
    with pytest.raises(Exception, match=r"compiler .* reported an error: ValueError: fake compiler: initializer w"):
        make_session(model, ep_devices, env.options)


def test_unknown_option_is_refused(tmp_path: Path, ep_devices, env: Env) -> None:
    with pytest.raises(Exception, match=r"unknown option\(s\) ep.hipdnnep.cache_dri; the options are: backend"):
        make_session(elementwise(tmp_path / "m.onnx", [2, 4]), ep_devices, dict(env.options, cache_dri="x"))


@pytest.mark.parametrize(("key", "value"), [("backend", "tpu"), ("device_id", "-1"), ("cache_enable", "maybe"),
                                            ("max_states", "0")])
def test_bad_option_values_are_refused(tmp_path: Path, ep_devices, env: Env, key: str, value: str) -> None:
    with pytest.raises(Exception, match=f"option ep.hipdnnep.{key}"):
        make_session(elementwise(tmp_path / "m.onnx", [2, 4]), ep_devices, dict(env.options, **{key: value}))
