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
    # one spelling of a dim: d<input>_<axis> (what the checks and sizes use); ONNX names only label it
    assert meta["inputs"] == [{"name": "x", "dtype": 1, "dims": ["d0_0", "d0_1", 8],
                               "dim_names": ["batch", "seq", None]}]
    assert meta["outputs"][0]["dims"] == ["d0_0", "d0_1", 8]
    assert meta["outputs"][0]["dim_names"] == ["batch", "seq", None]
    assert meta["weights"] == [{"name": "w", "dtype": 1, "dims": [8, 8], "source": {"kind": "inline"}}]
    assert len(meta["graph_hash"]) == 64
    # the node of each kernel call, in call order (the runtime names a failing call's node)
    assert meta["kernel_nodes"] == ["node 'mm' (MatMul)", "node 'relu' (Relu)", "node 'sm' (Softmax)"]


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


def _held_by_host(model: onnx.ModelProto, declared: bool = True) -> onnx.ModelProto:
    """`model` as hipdnn-ep writes a subgraph: its initializers described as external data that no file
    holds (the host passes them at run time), and, when `declared`, the model property saying so."""
    for t in model.graph.initializer:
        t.ClearField("raw_data")
        t.data_location = onnx.TensorProto.EXTERNAL
        t.external_data.add(key="location", value="hipdnn-ep-host-memory")
    if declared:
        onnx.helper.set_model_props(model, {"hipdnn_ep.weights": "host"})
    return model


def test_weights_held_by_the_host_compile_without_any_data(tmp_path, refruntime):
    """A model whose weights the host holds has no data for them, in it or in a file: the compiler
    needs only their names, element types and dims, and the program takes them as arguments."""
    from conftest import const, make_model
    from onnx import TensorProto as T
    from onnx import helper
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    model = _held_by_host(make_model([helper.make_node("MatMul", ["x", "w"], ["out"])], [("x", T.FLOAT, ["n", 3])],
                                     [("out", T.FLOAT, ["n", 4])], [const("w", w)]))
    onnx.save(model, tmp_path / "m.onnx")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]
    info = compile_model(tmp_path / "m.onnx", tmp_path / "a")
    assert info.metadata["weights"] == [{"name": "w", "dtype": 1, "dims": [3, 4], "source": {"kind": "host"}}]
    with pytest.raises(ArtifactError, match="'w' is held by the program's host"):
        load_weights(info.path, tmp_path / "m.onnx")
    x = np.ones((2, 3), np.float32)
    for weights in (w, 2 * w):  # the values are the host's, bound at run time
        np.testing.assert_allclose(refruntime.run(info.program, [x, weights])[0], x @ weights)


def test_missing_external_data_of_an_ordinary_model_is_still_an_error(tmp_path):
    """Only a model that declares its weights held by the host may lack the file its external data names."""
    from conftest import const, make_model
    from onnx import TensorProto as T
    from onnx import helper

    from hipdnn_ep_compiler import ModelError
    model = _held_by_host(make_model([helper.make_node("MatMul", ["x", "w"], ["out"])], [("x", T.FLOAT, [2, 3])],
                                     [("out", T.FLOAT, [2, 4])], [const("w", np.ones((3, 4), np.float32))]),
                          declared=False)
    onnx.save(model, tmp_path / "m.onnx")
    with pytest.raises(ModelError, match="fails the ONNX checker: .*hipdnn-ep-host-memory"):
        compile_model(tmp_path / "m.onnx", tmp_path / "a")


def test_dynamic_shape_graph_runs_at_several_sizes(dynamic_reshape_model, tmp_path, refruntime):
    info = compile_model(dynamic_reshape_model, tmp_path / "a")
    weights = load_weights(info.metadata, dynamic_reshape_model)
    rng = np.random.default_rng(2)
    for b, s in [(1, 1), (2, 17), (4, 3)]:
        x = rng.standard_normal((b, s, 8)).astype(np.float32)
        got = refruntime.run(info.program, [x] + weights)[0]
        np.testing.assert_allclose(got, ort_run(dynamic_reshape_model, {"x": x})[0], rtol=1e-5, atol=1e-6)


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


def test_the_artifact_format_is_the_manifests(dynamic_reshape_model, tmp_path):
    """File name, section and metadata format come from the bundled manifest's [artifact] table."""
    import json

    from hipdnn_ep_compiler import artifact
    from hipdnn_ep_compiler.abi import bundled_manifest_path

    declared = json.loads(bundled_manifest_path().read_text())["artifact"]
    assert (artifact.PROGRAM, artifact.SECTION, artifact.FORMAT, artifact.OLDEST_FORMAT) == (
        declared["file"], declared["section"], declared["format"], declared["oldest_format"])
    info = compile_model(dynamic_reshape_model, tmp_path / "a")
    assert info.program.name == declared["file"] and info.metadata["format"] == declared["format"]
    sections = subprocess.run(["readelf", "-S", "-W", str(info.program)], capture_output=True, text=True).stdout
    assert declared["section"] in sections


@pytest.mark.parametrize("theirs", [{"format": 99, "oldest_format": 99}, {"file": "code.so"}])
def test_refuses_a_runtime_that_reads_other_artifact_formats(dynamic_reshape_model, tmp_path, theirs):
    import json

    from hipdnn_ep_compiler import AbiTargetError
    from hipdnn_ep_compiler.abi import bundled_manifest_path

    data = json.loads(bundled_manifest_path().read_text())
    data["artifact"].update(theirs)
    (tmp_path / "m.json").write_text(json.dumps(data))
    with pytest.raises(AbiTargetError, match=r"reads artifact metadata formats .* this compiler writes format"):
        compile_model(dynamic_reshape_model, tmp_path / "a", manifest=tmp_path / "m.json")
    del data["artifact"]  # a runtime older than the declaration reads format 1 program.so
    (tmp_path / "old.json").write_text(json.dumps(data))
    assert compile_model(dynamic_reshape_model, tmp_path / "b", manifest=tmp_path / "old.json").metadata["format"] == 1


def test_read_metadata_refuses_formats_it_does_not_read(dynamic_reshape_model, tmp_path):
    info = compile_model(dynamic_reshape_model, tmp_path / "a")
    raw = info.program.read_bytes()
    assert raw.count(b'"format":1,') == 1
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "program.so").write_bytes(raw.replace(b'"format":1,', b'"format":9,'))
    with pytest.raises(ArtifactError, match="metadata format 9 is not one this compiler reads"):
        read_metadata(tmp_path / "b")


@pytest.mark.parametrize("fixture", ["static_model", "dynamic_reshape_model"])
def test_written_metadata_follows_the_declared_schema(fixture, request, tmp_path):
    """Every field the compiler writes is declared in packages/abi/metadata.toml, with its type."""
    from hipdnn_ep_compiler.abi import metadata_schema

    info = compile_model(request.getfixturevalue(fixture), tmp_path / "a")
    assert metadata_schema.problems(info.metadata) == []
    assert metadata_schema.problems(read_metadata(info.path)) == []


def test_compile_refuses_to_write_an_undeclared_metadata_field(static_model, tmp_path, monkeypatch):
    from hipdnn_ep_compiler import compiler

    built = compiler.build_metadata
    monkeypatch.setattr(compiler, "build_metadata", lambda *a: {**built(*a), "notes": "x", "graph_hash": 7})
    with pytest.raises(ArtifactError, match=r"notes: not a declared field; graph_hash: int where the schema "
                                            r"says string.*declare the field in packages/abi/metadata.toml"):
        compile_model(static_model, tmp_path / "a")
    assert not (tmp_path / "a" / "program.so").exists()


def test_read_metadata_refuses_a_retyped_field_and_names_it(dynamic_reshape_model, tmp_path):
    info = compile_model(dynamic_reshape_model, tmp_path / "a")
    raw = info.program.read_bytes()
    digest = info.metadata["graph_hash"].encode()
    (tmp_path / "b").mkdir()
    # same length: the section keeps its size; a newer minor's unknown field would be accepted, a retyped one not
    retyped = b'"graph_hash":' + b"1" * (len(digest) + 2)
    (tmp_path / "b" / "program.so").write_bytes(raw.replace(b'"graph_hash":"' + digest + b'"', retyped))
    with pytest.raises(ArtifactError, match=r"does not follow the artifact metadata schema 1\.0: graph_hash: int "
                                            r"where the schema says string"):
        read_metadata(tmp_path / "b")


def test_version_script_with_a_minor_that_added_no_function_links(tmp_path):
    """The one version-script writer of the compiler side (import stub, test doubles) handles a minor
    that added only types or an [artifact] change, as ABI 1.3 did; a hand-written copy did not."""
    from hipdnn_ep_compiler.link import version_script

    script = version_script({0: "T_1.0", 1: "T_1.1", 2: "T_1.2"}, {0: ["t_a"], 2: ["t_b"]}, 2)
    (tmp_path / "t.map").write_text(script)
    (tmp_path / "t.c").write_text("void t_a(void) {}\nvoid t_b(void) {}\nvoid t_hidden(void) {}\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "t.so"), str(tmp_path / "t.c"),
                    f"-Wl,--version-script,{tmp_path / 't.map'}"], check=True)
    out = subprocess.run(["nm", "-D", "--defined-only", str(tmp_path / "t.so")], capture_output=True, text=True,
                         check=True).stdout
    assert "t_a@@T_1.0" in out and "t_b@@T_1.2" in out and "T_1.1" in out and "t_hidden" not in out


def test_compile_adds_the_metadata_global_only_for_the_object(dynamic_reshape_model, tmp_path):
    """A lowering kept for the compile after a support query stays as lowered: the metadata global the
    compile adds to the program for its object is gone afterwards, and compiling twice gives one object."""
    from hipdnn_ep_compiler import compiler

    path = tmp_path / "m.onnx"
    onnx.save(dynamic_reshape_model, path)
    key = compiler.lowering_key(path, None, None)
    kept = compiler.lower_model(path, load_abi(), key, keep=True)
    before = str(kept.lowered.module)
    compile_model(path, tmp_path / "a")  # takes the kept lowering
    assert str(kept.lowered.module) == before and "__hipdnn_ep_meta" not in before
    compile_model(path, tmp_path / "b")
    assert (tmp_path / "a" / "program.so").read_bytes() == (tmp_path / "b" / "program.so").read_bytes()
