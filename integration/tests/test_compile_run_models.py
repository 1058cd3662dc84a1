"""Whole graphs through compiler and runtime, against onnxruntime's CPU EP: a dynamic
Shape/Gather/Concat/Reshape graph at several sizes, a fixed seq-128 encoder layer, a dynamic
encoder layer compiled with the CLI, external weights, and the runtime's refusal of artifacts whose
imports do not match it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from conftest import assert_close
from models import attention_feeds, attention_model, shape_chain_model

# the compiler's deep-graph generators (its compile-time regression test's)
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "packages" / "compiler" / "tests"))
from support.deep_graphs import add_transpose_chain, slice_chain  # noqa: E402


@pytest.mark.parametrize("batch,seq", [(1, 1), (2, 3), (4, 17), (1, 64)])
def test_dynamic_shape_chain_at_several_sizes(batch, seq, compiler, run_artifact, state, ort_run, tmp_path):
    model = shape_chain_model()
    info = compiler.compile_model(model, tmp_path / "a")
    assert "hipdnn_ep_get_host_scratch_base" in info.imports
    x = np.random.default_rng(batch * 100 + seq).standard_normal((batch, seq, 8)).astype(np.float32)
    got = run_artifact(info.path, model, state, [x])
    assert_close(got, ort_run(model, {"x": x}))


def test_one_artifact_serves_many_sizes_in_one_state(compiler, run_artifact, state, ort_run, tmp_path):
    model = shape_chain_model()
    info = compiler.compile_model(model, tmp_path / "a")
    rng = np.random.default_rng(7)
    for batch, seq in [(3, 5), (1, 2), (6, 9), (3, 5)]:
        x = rng.standard_normal((batch, seq, 8)).astype(np.float32)
        assert_close(run_artifact(info.path, model, state, [x]), ort_run(model, {"x": x}))


def _needs_bounded_shape_reasoning(compiler) -> None:
    """Compilers before 0.4 take time exponential in these graphs' depth (minutes at depth 11)."""
    if tuple(int(x) for x in compiler.__version__.split(".")[:2]) < (0, 4):
        pytest.skip(f"compiler {compiler.__version__} has no bounded shape reasoning (0.4 or newer)")


@pytest.mark.parametrize("dims", [(3, 3), (1, 4), (4, 1)])
def test_deep_add_transpose_chain(dims, compiler, run_artifact, state, ort_run, tmp_path):
    """Add(y, Transpose(y)) 12 times on y[a, b]: the dims broadcast at run time as ONNX says ([1, 4] +
    [4, 1] is [4, 4]) while the compiler's expression for them stays one select."""
    _needs_bounded_shape_reasoning(compiler)
    model = add_transpose_chain(12)
    info = compiler.compile_model(model, tmp_path / "a")
    y = np.random.default_rng(sum(dims)).standard_normal(dims).astype(np.float32) / 64
    assert_close(run_artifact(info.path, model, state, [y]), ort_run(model, {"y0": y}))


@pytest.mark.parametrize("rows", [40, 17, 3])
def test_deep_slice_chain(rows, compiler, run_artifact, state, ort_run, tmp_path):
    """y[1:-1] 16 times: the row count's expression is spelled with named symbols (the metadata's
    `symbols`, from compiler 0.4) and computed once each by the program; empty results included."""
    _needs_bounded_shape_reasoning(compiler)
    model = slice_chain(16)
    info = compiler.compile_model(model, tmp_path / "a")
    y = np.arange(rows * 4, dtype=np.float32).reshape(rows, 4)
    got = run_artifact(info.path, model, state, [y])
    want = ort_run(model, {"y0": y})
    assert got[0].shape == want[0].shape
    assert_close(got, want)


def test_fixed_seq128_encoder_layer(compiler, run_artifact, state, ort_run, tmp_path):
    model = attention_model(batch=1, seq=128)
    info = compiler.compile_model(model, tmp_path / "a")
    assert "hipdnn_ep_get_host_scratch_base" not in info.imports
    feeds = attention_feeds(1, 128)
    got = run_artifact(info.path, model, state, [feeds["x"], feeds["attention_mask"]])
    assert_close(got, ort_run(model, feeds))


def _cli():
    exe = shutil.which("hipdnn-ep-compile")
    return [exe] if exe else [sys.executable, "-m", "hipdnn_ep_compiler"]


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_dynamic_encoder_layer_via_cli(backend, compiler, runtime, run_artifact, state, ort_run, tmp_path):
    model = attention_model()
    on_disk = onnx.ModelProto.FromString(model.SerializeToString())  # saving moves the data out of the proto
    onnx.save_model(on_disk, tmp_path / "enc.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
                    location="enc.bin", size_threshold=256)
    proc = subprocess.run([*_cli(), str(tmp_path / "enc.onnx"), "-o", str(tmp_path / "art"), "--backend", backend],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    inspect = subprocess.run([*_cli(), "inspect", str(tmp_path / "art")], capture_output=True, text=True)
    assert inspect.returncode == 0, inspect.stderr
    assert "hipdnn_ep_get_host_scratch_base" in inspect.stdout and f"backend:  {backend}" in inspect.stdout
    meta = runtime.Artifact(str(tmp_path / "art")).metadata
    assert any(w["source"]["kind"] == "external" for w in meta["weights"])
    if backend != "cpu":
        return  # the host program is backend-neutral; running it needs that backend's runtime
    for batch, seq in [(1, 1), (2, 9), (3, 32)]:
        feeds = attention_feeds(batch, seq, seed=seq)
        got = run_artifact(tmp_path / "art", tmp_path / "enc.onnx", state, [feeds["x"], feeds["attention_mask"]])
        assert_close(got, ort_run(model, feeds))


def test_runtime_refuses_artifact_whose_import_hash_differs(compiler, runtime, static_model_path, tmp_path):
    info = compiler.compile_model(static_model_path, tmp_path / "a")
    so = info.program
    data = bytearray(so.read_bytes())
    imp = info.metadata["imports"][0]
    start = data.find(imp["hash"].encode())
    assert start > 0
    forged = ("0" if imp["hash"][0] != "0" else "1") + imp["hash"][1:]
    data[start:start + len(forged)] = forged.encode()
    so.write_bytes(bytes(data))
    with pytest.raises(runtime.AbiMismatchError, match=imp["name"]):
        runtime.Artifact(str(tmp_path / "a"))


def test_compiler_metadata_agrees_with_runtime_manifest(compiler, runtime, static_model_path, tmp_path):
    """Every import hash the compiler writes is the hash the installed runtime reports."""
    info = compiler.compile_model(static_model_path, tmp_path / "a")
    manifest = runtime.abi_manifest()
    by_name = {f["name"]: f for f in manifest["functions"]}
    for imp in info.metadata["imports"]:
        assert by_name[imp["name"]]["hash"] == imp["hash"]
        assert by_name[imp["name"]]["since"] == imp["since"]  # lets a refusal say which minor adds it
    major, minor = runtime.abi_version()
    assert info.metadata["abi"]["major"] == major and info.metadata["abi"]["min_minor"] <= minor


@pytest.fixture
def static_model_path(tmp_path):
    from onnx import TensorProto as T
    from onnx import helper
    nodes = [helper.make_node("Add", ["x", "x"], ["y"]), helper.make_node("Relu", ["y"], ["out"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, [4])],
                              [helper.make_tensor_value_info("out", T.FLOAT, [4])])
    path = tmp_path / "static.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_compile_against_the_installed_runtimes_manifest(compiler, runtime, run_artifact, state, ort_run, tmp_path):
    """AOT for the runtime at hand: its shipped manifest JSON is a valid compiler manifest."""
    from pathlib import Path
    manifest = Path(runtime.__file__).parent / "abi_manifest.json"
    model = shape_chain_model()
    proc = subprocess.run([*_cli(), "-", "-o", str(tmp_path / "a")], capture_output=True, text=True)
    assert proc.returncode != 0  # no model: a usage/compile error, not a crash
    onnx.save(model, tmp_path / "m.onnx")
    proc = subprocess.run([*_cli(), str(tmp_path / "m.onnx"), "-o", str(tmp_path / "a"), "--manifest", str(manifest)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    x = np.ones((2, 3, 8), np.float32)
    assert_close(run_artifact(tmp_path / "a", model, state, [x]), ort_run(model, {"x": x}))
