"""The memory_limit option: it bounds the device memory of every runtime state
of a session; a Run that needs more fails with a clear out-of-memory error,
and the session stays usable and leaks nothing. Outputs live in ORT's buffers,
so what the limit bounds is the program's intermediates (and staged inputs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from conftest import NO_FALLBACK, Env, cpu_session, make_session
from models import matmul_chain, save
from onnx import TensorProto, helper

MiB = 1 << 20
WIDTH = 256


def _x(batch: int, seq: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((batch, seq, WIDTH)).astype(np.float32)


def _matches_cpu(sess, reference, x: np.ndarray) -> None:
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], reference.run(None, {"x": x})[0], rtol=1e-4, atol=1e-4)


@pytest.fixture
def matmul(tmp_path: Path) -> Path:
    return matmul_chain(tmp_path / "matmul.onnx", [WIDTH, WIDTH, WIDTH])  # one intermediate, as big as y


def test_run_over_the_limit_is_a_clear_error_and_the_session_stays_usable(matmul: Path, ep_devices,
                                                                          shared_env: Env) -> None:
    sess = make_session(matmul, ep_devices, {**shared_env.options, "memory_limit": "1MiB"}, NO_FALLBACK)
    reference = cpu_session(matmul)
    _matches_cpu(sess, reference, _x(2, 16))  # 32 KiB of intermediate
    with pytest.raises(ort.capi.onnxruntime_pybind11_state.RuntimeException) as failure:
        sess.run(None, {"x": _x(64, 512)})  # 32 MiB of intermediate
    message = str(failure.value)
    assert "HipdnnEp is out of memory" in message
    assert f"requested {64 * 512 * WIDTH * 4} bytes, available " in message
    assert f"Raise the EP option memory_limit (now {MiB} bytes per runtime state)" in message
    # The failed run gave back what it took: shapes that fit keep running, up to the limit.
    _matches_cpu(sess, reference, _x(2, 16, seed=1))
    _matches_cpu(sess, reference, _x(1, 768, seed=2))  # 768 KiB of intermediate


def test_the_limit_is_what_refused_the_run(matmul: Path, ep_devices, shared_env: Env) -> None:
    for limit in ("0", "64MiB"):
        sess = make_session(matmul, ep_devices, {**shared_env.options, "memory_limit": limit}, NO_FALLBACK)
        _matches_cpu(sess, cpu_session(matmul), _x(64, 512))


@pytest.mark.parametrize(("value", "limit"), [("65536", 65536), ("65536B", 65536), ("64KiB", 65536),
                                              ("64kib", 65536), ("1MiB", MiB), ("1mib", MiB)])
def test_limit_values_with_units(matmul: Path, ep_devices, shared_env: Env, value: str, limit: int) -> None:
    sess = make_session(matmul, ep_devices, {**shared_env.options, "memory_limit": value}, NO_FALLBACK)
    with pytest.raises(ort.capi.onnxruntime_pybind11_state.RuntimeException, match=f"now {limit} bytes"):
        sess.run(None, {"x": _x(64, 512)})


@pytest.mark.parametrize("value", ["", "-1", "12x", "1.5GiB", "GiB", "1 GiB", "0x100", "2GB",
                                   "99999999999999999999", "16777216TiB"])
def test_bad_limit_refuses_the_session(matmul: Path, ep_devices, shared_env: Env, value: str) -> None:
    # InvalidArgument; onnxruntime 1.23 reports the EP's refusal to create itself as a RuntimeError
    with pytest.raises((ort.capi.onnxruntime_pybind11_state.InvalidArgument, RuntimeError)) as failure:
        make_session(matmul, ep_devices, {**shared_env.options, "memory_limit": value}, NO_FALLBACK)
    assert f"option ep.hipdnnep.memory_limit must be a byte count (e.g. 1073741824, 512MiB or 2GiB; 0: no limit), " \
           f"got '{value}'" in str(failure.value)


def test_device_exhaustion_without_a_limit_is_a_clear_error(tmp_path: Path, ep_devices, shared_env: Env) -> None:
    """Expand to a shape given at run time: 16 PiB is more than any device has."""
    g = helper.make_graph([helper.make_node("Expand", ["x", "shape"], ["e"], name="expand"),
                           helper.make_node("Relu", ["e"], ["y"], name="relu")], "expand",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, WIDTH]),
                           helper.make_tensor_value_info("shape", TensorProto.INT64, [3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    sess = make_session(save(g, tmp_path / "expand.onnx"), ep_devices, shared_env.options, NO_FALLBACK)
    x = np.arange(WIDTH, dtype=np.float32)[None]
    huge = np.array([1 << 22, 1 << 22, WIDTH], np.int64)
    with pytest.raises(ort.capi.onnxruntime_pybind11_state.RuntimeException) as failure:
        sess.run(None, {"x": x, "shape": huge})
    message = str(failure.value)
    assert "HipdnnEp is out of memory" in message and f"requested {1 << 54} bytes" in message
    assert "The device cannot provide that much memory" in message and "memory_limit" in message
    y = sess.run(None, {"x": x, "shape": np.array([2, 3, WIDTH], np.int64)})[0]
    np.testing.assert_array_equal(y, np.broadcast_to(x, (2, 3, WIDTH)))


def test_a_run_failing_half_way_leaks_nothing(tmp_path: Path, shared_env: Env) -> None:
    """The intermediates of (1, 1024) (1 MiB and 4 MiB, one pool of 5 MiB) do not fit in 3 MiB:
    the run fails after the program took its host scratch. Teardown (in a child process, whose stderr
    carries a runtime state's leak report) must be silent."""
    model = matmul_chain(tmp_path / "chain.onnx", [WIDTH, WIDTH, 4 * WIDTH, WIDTH])
    options = {**shared_env.options, "memory_limit": "3MiB"}
    script = (
        "import sys, json, numpy as np, onnxruntime as ort, hipdnn_ep\n"
        "so = ort.SessionOptions(); so.add_session_config_entry('session.disable_cpu_ep_fallback', '1')\n"
        f"so.add_provider_for_devices(hipdnn_ep.register(ort), json.loads({json.dumps(json.dumps(options))}))\n"
        "s = ort.InferenceSession(sys.argv[1], sess_options=so, enable_fallback=0)\n"
        "ref = ort.InferenceSession(sys.argv[1], providers=['CPUExecutionProvider'])\n"
        "def check(shape):\n"
        "    x = np.ones(shape, np.float32)\n"
        "    np.testing.assert_allclose(s.run(None, {'x': x})[0], ref.run(None, {'x': x})[0], rtol=1e-4, atol=1e-4)\n"
        "check((1, 4, 256))\n"
        "try:\n"
        "    s.run(None, {'x': np.ones((1, 1024, 256), np.float32)})\n"
        "    print('no error')\n"
        "except Exception as e:\n"
        "    print('error:', e)\n"
        "check((2, 8, 256))\n"
        "del s\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, str(model)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "HipdnnEp is out of memory" in proc.stdout
    assert f"requested {5 * MiB} bytes" in proc.stdout
    assert "still live" not in proc.stderr and "hipdnn_ep_state_destroy" not in proc.stderr, proc.stderr
