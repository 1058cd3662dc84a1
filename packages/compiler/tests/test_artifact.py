"""The artifact: links with -z defs, imports exactly what the object references, metadata reads back."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import onnx
import pytest
from conftest import ort_run

from hipdnn_ep_compiler import ArtifactError, compile_model, load_weights, read_metadata
from hipdnn_ep_compiler.abi import load_abi
from hipdnn_ep_compiler.link import stub_sources

pytestmark = pytest.mark.skipif(shutil.which("nm") is None or shutil.which("cc") is None, reason="needs cc and nm")


def _undefined_runtime_symbols(so) -> dict[str, str]:
    out = subprocess.run(["nm", "-D", "--undefined-only", str(so)], capture_output=True, text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        name = line.split()[-1]
        if name.startswith("hipdnn_ep_"):
            base, _, version = name.partition("@")
            syms[base] = version.lstrip("@")
    return syms


@pytest.mark.parametrize("fixture", ["static_model", "dynamic_reshape_model"])
def test_imports_equal_undefined_symbols_with_versions(fixture, request, tmp_path):
    info = compile_model(request.getfixturevalue(fixture), tmp_path / "a")
    syms = _undefined_runtime_symbols(info.program)
    assert sorted(syms) == sorted(info.imports)
    abi = load_abi()
    for name, version in syms.items():
        assert version == abi.version_nodes[abi.functions[name].since]


def test_dynamic_graph_imports_host_scratch_and_fixed_does_not(static_model, dynamic_reshape_model, tmp_path):
    fixed = compile_model(static_model, tmp_path / "f")
    dyn = compile_model(dynamic_reshape_model, tmp_path / "d")
    assert "hipdnn_ep_get_host_scratch_base" in dyn.imports
    assert "hipdnn_ep_get_host_scratch_base" not in fixed.imports
    assert fixed.metadata["memory_plan"]["host_scratch_bytes"] == 0


def test_artifact_needs_runtime_soname_and_exports_program_entry(static_model, tmp_path):
    info = compile_model(static_model, tmp_path / "a")
    dyn = subprocess.run(["readelf", "-d", str(info.program)], capture_output=True, text=True).stdout
    assert f"[{load_abi().soname}]" in dyn
    defined = subprocess.run(["nm", "-D", "--defined-only", str(info.program)], capture_output=True, text=True).stdout
    assert " T hipdnn_ep_program_run" in defined


def test_metadata_round_trip_and_content(dynamic_reshape_model, tmp_path):
    info = compile_model(dynamic_reshape_model, tmp_path / "a", backend="hip")
    assert sorted(p.name for p in info.path.iterdir()) == ["program.so"]
    meta = read_metadata(info.path)
    assert meta == info.metadata
    assert meta["format"] == 1 and meta["backend"] == "hip"
    assert meta["compiler"]["name"] == "hipdnn-ep-compiler"
    assert meta["inputs"] == [{"name": "x", "dtype": 1, "dims": ["batch", "seq", 8]}]
    assert meta["outputs"][0]["dims"] == ["batch", "seq", 8]
    assert meta["weights"] == [{"name": "w", "dtype": 1, "dims": [8, 8], "source": {"kind": "inline"}}]
    assert len(meta["graph_hash"]) == 64


def test_weights_are_referenced_not_embedded(tmp_path):
    rng = np.random.default_rng(1)
    big = rng.standard_normal((256, 256)).astype(np.float32)
    from conftest import const, make_model
    from onnx import TensorProto as T
    from onnx import helper
    model = make_model([helper.make_node("MatMul", ["x", "w"], ["out"])], [("x", T.FLOAT, [1, 256])],
                       [("out", T.FLOAT, [1, 256])], [const("w", big)])
    info = compile_model(model, tmp_path / "a")
    assert info.program.stat().st_size < big.nbytes / 2
    assert big[:8].tobytes() not in info.program.read_bytes()


def test_external_weights_by_location_and_mmapped_for_runs(tmp_path, refruntime):
    from conftest import const, make_model
    from onnx import TensorProto as T
    from onnx import helper
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    model = make_model([helper.make_node("MatMul", ["x", "w"], ["out"])], [("x", T.FLOAT, ["n", 3])],
                       [("out", T.FLOAT, ["n", 4])], [const("w", w)])
    onnx.save_model(model, tmp_path / "m.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
                    location="m.bin", size_threshold=0)
    info = compile_model(tmp_path / "m.onnx", tmp_path / "a")
    src = info.metadata["weights"][0]["source"]
    assert src == {"kind": "external", "location": "m.bin", "offset": 0, "length": 48}
    weights = load_weights(info.path, tmp_path / "m.onnx")
    assert isinstance(weights[0], np.memmap)
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(refruntime.run(info.program, [x] + weights)[0], x @ w)


def test_dynamic_shape_graph_runs_at_several_sizes(dynamic_reshape_model, tmp_path, refruntime):
    info = compile_model(dynamic_reshape_model, tmp_path / "a")
    weights = load_weights(info.metadata, dynamic_reshape_model)
    rng = np.random.default_rng(2)
    for b, s in [(1, 1), (2, 17), (4, 3)]:
        x = rng.standard_normal((b, s, 8)).astype(np.float32)
        got = refruntime.run(info.program, [x] + weights)[0]
        np.testing.assert_allclose(got, ort_run(dynamic_reshape_model, {"x": x})[0], rtol=1e-5, atol=1e-6)


def test_program_rejects_wrong_rank_dtype_and_static_dim(static_model, tmp_path, refruntime):
    info = compile_model(static_model, tmp_path / "a")
    weights = load_weights(info.metadata, static_model)
    status = str(load_abi().enums["hipdnn_ep_status"]["INVALID_ARGUMENT"])
    for bad in (np.ones((2, 3, 1), np.float32), np.ones((2, 3), np.float16), np.ones((2, 4), np.float32)):
        with pytest.raises(RuntimeError, match=f"status {status}"):
            refruntime.run(info.program, [bad] + weights)


def test_stub_version_script_has_one_node_per_minor_up_to_target():
    c, script = stub_sources(load_abi())
    assert "HIPDNN_EP_1.0 {" in script and "} HIPDNN_EP_1.0;" in script
    c10, script10 = stub_sources(load_abi(target="1.0"))
    assert "HIPDNN_EP_1.1" not in script10
    assert "hipdnn_ep_kernel_binary" not in c10 and "hipdnn_ep_malloc" in c10


def test_read_metadata_errors(tmp_path, static_model):
    with pytest.raises(ArtifactError, match="cannot read"):
        read_metadata(tmp_path / "missing")
    (tmp_path / "notelf").write_bytes(b"hello")
    with pytest.raises(ArtifactError, match="not an ELF"):
        read_metadata(tmp_path / "notelf")
    plain = tmp_path / "plain.so"
    subprocess.run(["cc", "-shared", "-o", str(plain), "-x", "c", "-"], input="int f(void){return 0;}",
                   text=True, check=True)
    with pytest.raises(ArtifactError, match="no .hipdnn_ep_meta section"):
        read_metadata(plain)
    truncated = tmp_path / "trunc.so"
    truncated.write_bytes(plain.read_bytes()[:200])
    with pytest.raises(ArtifactError):
        read_metadata(truncated)
