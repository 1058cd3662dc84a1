"""Weights of a GPU backend's session: the EP keeps them (a mapping of the model's external data file, or a
copy of anything else) instead of having ONNX Runtime load every initializer and copy it into device memory
while it creates the session.

No GPU is needed: with HIPDNN_EP_TEST_HOST_AS_DEVICE=1 the CPU backend offers its memory to ONNX Runtime as a
GPU memory device, so ORT places the fused nodes' inputs as it does for a GPU backend (through the EP's
allocator and data transfer). The hook is read when the library is registered, so each case runs in a
process of its own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from conftest import NO_FALLBACK, Env
from onnx import TensorProto, helper, numpy_helper

N = 8 << 20  # elements of the big weight: 32 MiB of float32

CHILD = r"""
import json, sys, time
from pathlib import Path
import numpy as np, onnxruntime as ort, hipdnn_ep

def rss_kib():
    for line in Path('/proc/self/status').read_text().splitlines():
        if line.startswith('VmRSS:'):
            return int(line.split()[1])

model, options = sys.argv[1], json.loads(sys.argv[2])
so = ort.SessionOptions()
so.add_session_config_entry('session.disable_cpu_ep_fallback', '1')
so.add_provider_for_devices(hipdnn_ep.register(ort), options)
before = rss_kib()
s = ort.InferenceSession(model, sess_options=so, enable_fallback=0)
grown = rss_kib() - before
x = np.random.default_rng(0).standard_normal(int(sys.argv[3])).astype(np.float32)
ref = ort.InferenceSession(model, providers=['CPUExecutionProvider'])
outs = [s.run(None, {'x': x})[0] for _ in range(2)]
expected = ref.run(None, {'x': x})[0]
print(json.dumps({'providers': s.get_providers(), 'grown_kib': grown,
                  'max_error': max(float(np.abs(o - expected).max()) for o in outs)}))
"""


def _weights_model(path: Path, external: bool) -> Path:
    """z = Relu(x * w_big + w_small), x: [N]; w_big (32 MiB) in model.onnx.data when `external`."""
    rng = np.random.default_rng(3)
    w_big = numpy_helper.from_array(rng.standard_normal(N).astype(np.float32), "w_big")
    w_small = numpy_helper.from_array(rng.standard_normal(N).astype(np.float32), "w_small")
    nodes = [helper.make_node("Mul", ["x", "w_big"], ["m"], name="mul"),
             helper.make_node("Add", ["m", "w_small"], ["s"], name="add"),
             helper.make_node("Relu", ["s"], ["z"], name="relu")]
    g = helper.make_graph(nodes, "w", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [N])],
                          initializer=[w_big, w_small])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    if external:
        onnx.save(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                  location=path.name + ".data", size_threshold=1024)
    else:
        onnx.save(model, str(path))
    return path


def _run(model: Path, env: Env, host_as_device: bool, **options: str) -> dict:
    environ = dict(os.environ)
    environ.pop("HIPDNN_EP_TEST_HOST_AS_DEVICE", None)
    if host_as_device:
        environ["HIPDNN_EP_TEST_HOST_AS_DEVICE"] = "1"
    proc = subprocess.run([sys.executable, "-c", CHILD, str(model), json.dumps({**env.options, **options}), str(N)],
                          capture_output=True, text=True, timeout=300, env=environ)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_external_weights_are_not_loaded_while_a_device_session_is_created(tmp_path: Path, env: Env) -> None:
    assert NO_FALLBACK  # the child disables fallback itself: every node runs on the EP
    weight_kib = 2 * N * 4 // 1024
    model = _weights_model(tmp_path / "ext.onnx", external=True)
    result = _run(model, env, host_as_device=True)
    assert result["providers"][0] == "HipdnnEp"
    assert result["max_error"] < 1e-5
    # Before the EP kept them, ORT loaded each initializer and copied it into the EP's (device) memory:
    # the process grew by the weights' size while the session was created.
    assert result["grown_kib"] < weight_kib // 4, result


def test_inline_weights_of_a_device_session_are_copied_and_correct(tmp_path: Path, env: Env) -> None:
    model = _weights_model(tmp_path / "inline.onnx", external=False)
    result = _run(model, env, host_as_device=True)
    assert result["providers"][0] == "HipdnnEp"
    assert result["max_error"] < 1e-5


def test_the_cpu_backend_reads_ort_s_mapping_in_place(tmp_path: Path, env: Env) -> None:
    weight_kib = 2 * N * 4 // 1024
    model = _weights_model(tmp_path / "ext.onnx", external=True)
    result = _run(model, env, host_as_device=False)
    assert result["providers"][0] == "HipdnnEp"
    assert result["max_error"] < 1e-5
    assert result["grown_kib"] < weight_kib // 4, result


CHANGED_CHILD = r"""
import json, os, sys
import numpy as np, onnxruntime as ort, hipdnn_ep

model, data, how, options = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
so = ort.SessionOptions()
so.add_session_config_entry('session.disable_cpu_ep_fallback', '1')
so.add_provider_for_devices(hipdnn_ep.register(ort), options)
s = ort.InferenceSession(model, sess_options=so, enable_fallback=0)
size = os.path.getsize(data)
if how == 'truncated':
    os.truncate(data, size // 2)
else:  # rewritten in place, same size
    with open(data, 'r+b') as f:
        f.write(b'\x7f' * 4096)
    os.utime(data, ns=(os.stat(data).st_atime_ns, os.stat(data).st_mtime_ns + 1_000_000_000))
x = np.ones(int(sys.argv[5]), np.float32)
try:
    s.run(None, {'x': x})
    print(json.dumps({'error': None}))
except Exception as e:
    print(json.dumps({'error': str(e)}))
"""


@pytest.mark.parametrize("how", ["truncated", "rewritten"])
def test_a_data_file_changed_after_the_session_was_created_is_refused(tmp_path: Path, env: Env, how: str) -> None:
    # The weights stay a mapping of the file until the first run uploads them: a page past a truncated end
    # would kill the process with SIGBUS, and rewritten bytes are not the model's weights. The run fails
    # with a message instead, and the process lives.
    model = _weights_model(tmp_path / "ext.onnx", external=True)
    environ = dict(os.environ, HIPDNN_EP_TEST_HOST_AS_DEVICE="1")
    proc = subprocess.run([sys.executable, "-c", CHANGED_CHILD, str(model), str(tmp_path / "ext.onnx.data"), how,
                           json.dumps(env.options), str(N)], capture_output=True, text=True, timeout=300,
                          env=environ)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    error = json.loads(proc.stdout.strip().splitlines()[-1])["error"]
    assert error is not None and "changed on disk after the session was created" in error, error
    assert "Create the session again" in error


CONTEXT_CHILD = r"""
import json, sys
import numpy as np, onnxruntime as ort, hipdnn_ep

model, ctx, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
devices = hipdnn_ep.register(ort)

def session(path, config):
    so = ort.SessionOptions()
    for k, v in config.items():
        so.add_session_config_entry(k, v)
    so.add_provider_for_devices(devices, options)
    return ort.InferenceSession(path, sess_options=so, enable_fallback=0)

session(model, {'session.disable_cpu_ep_fallback': '1', 'ep.context_enable': '1', 'ep.context_file_path': ctx})
s = session(ctx, {'session.disable_cpu_ep_fallback': '1'})
x = np.random.default_rng(0).standard_normal(int(sys.argv[4])).astype(np.float32)
ref = ort.InferenceSession(model, providers=['CPUExecutionProvider'])
print(json.dumps({'max_error': float(np.abs(s.run(None, {'x': x})[0] - ref.run(None, {'x': x})[0]).max())}))
"""


def test_an_epcontext_model_of_a_device_session_keeps_its_weights(tmp_path: Path, env: Env) -> None:
    # ORT writes into an EPContext model the initializers of the fused nodes' inputs only: the session that
    # writes it keeps them there; the session that loads it has the EP keep them.
    model = _weights_model(tmp_path / "ext.onnx", external=True)
    environ = dict(os.environ, HIPDNN_EP_TEST_HOST_AS_DEVICE="1")
    proc = subprocess.run([sys.executable, "-c", CONTEXT_CHILD, str(model), str(tmp_path / "ext_ctx.onnx"),
                           json.dumps(env.options), str(N)], capture_output=True, text=True, timeout=300,
                          env=environ)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1])["max_error"] < 1e-5


@pytest.mark.skipif(shutil.which("nvidia-smi") is None, reason="needs an NVIDIA GPU (the cuda backend)")
@pytest.mark.parametrize("external", [True, False], ids=["external", "inline"])
def test_weights_of_a_cuda_session(tmp_path: Path, env: Env, external: bool) -> None:
    """The real device path: the weights uploaded by the first run (once, for the device) and used by the
    second, against ORT's CPU EP. (The session's memory is not asserted here: creating it also opens the
    device, whose context is hundreds of MB of the process; tools/bench/llm_session_bench.py measures it.)"""
    model = _weights_model(tmp_path / "w.onnx", external=external)
    result = _run(model, env, host_as_device=False, backend="cuda")
    assert result["providers"][0] == "HipdnnEp"
    assert result["max_error"] < 1e-5
