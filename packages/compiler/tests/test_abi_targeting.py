"""Targeting a runtime ABI: older minors, manifests that lack a function."""

from __future__ import annotations

import json

import pytest

from hipdnn_ep_compiler import AbiTargetError, compile_model, read_metadata
from hipdnn_ep_compiler.abi import bundled_manifest_path, load_abi
from hipdnn_ep_compiler.lowering import runtime_calls
from hipdnn_ep_compiler.ops import kernels


def _manifest_without(tmp_path, name: str):
    data = json.loads(bundled_manifest_path().read_text())
    data["functions"] = [f for f in data["functions"] if f["name"] != name]
    p = tmp_path / "manifest.json"
    p.write_text(json.dumps(data))
    return p


def test_abi_1_0_refuses_naming_the_kernel_and_its_minor(static_model, tmp_path):
    expected = (r"'hipdnn_ep_kernel_binary', introduced in ABI 1\.1; the target ABI is 1\.0\. "
                r"Fix: target ABI 1\.1 or newer \(--abi 1\.1, with hipdnn-ep-runtime>=1\.1 installed\)$")
    with pytest.raises(AbiTargetError, match=expected):
        compile_model(static_model, tmp_path / "a", abi="1.0")
    assert not (tmp_path / "a" / "program.so").exists()


def test_unknown_major_and_minor_refused(static_model, tmp_path):
    with pytest.raises(AbiTargetError, match="supports ABI major 1.*Fix: install a hipdnn-ep-compiler for runtime "
                                             r"ABI major 2, or target --abi 1\.\d+"):
        compile_model(static_model, tmp_path / "a", abi="2.0")
    with pytest.raises(AbiTargetError, match=r"cannot target runtime ABI 1\.9.*Fix: install a hipdnn-ep-compiler "
                                             r"that knows ABI 1\.9, or target --abi 1\.\d+"):
        compile_model(static_model, tmp_path / "a", abi="1.9")
    with pytest.raises(AbiTargetError, match="MAJOR.MINOR"):
        compile_model(static_model, tmp_path / "a", abi="latest")


def test_explicit_current_minor_compiles(static_model, tmp_path):
    info = compile_model(static_model, tmp_path / "a", abi="1.1")
    assert info.metadata["abi"] == {"major": 1, "min_minor": 1}


def test_manifest_lacking_host_scratch_fails_dynamic_graph_at_compile_time(
        dynamic_reshape_model, static_model, tmp_path):
    """The original regression: the runtime dropped hipdnn_ep_get_host_scratch_base."""
    manifest = _manifest_without(tmp_path, "hipdnn_ep_get_host_scratch_base")
    with pytest.raises(AbiTargetError, match="'hipdnn_ep_get_host_scratch_base'.*does not declare") as err:
        compile_model(dynamic_reshape_model, tmp_path / "dyn", manifest=manifest)
    minor = json.loads(bundled_manifest_path().read_text())["abi"]["minor"]
    assert f"a released runtime of ABI 1.{minor} has it, so this manifest is not one. Fix: compile against the " \
           "manifest of a released hipdnn-ep-runtime" in str(err.value)
    # a fixed-shape graph does not need it and still compiles against that manifest
    info = compile_model(static_model, tmp_path / "fixed", manifest=manifest)
    assert "hipdnn_ep_get_host_scratch_base" not in info.imports


def test_manifest_older_than_a_needed_function_says_which_runtime_has_it(static_model, tmp_path):
    """An installed runtime's manifest of ABI 1.0 lacks the 1.1 kernels: upgrading it is the fix."""
    data = json.loads(bundled_manifest_path().read_text())
    data["abi"]["minor"] = 0
    data["functions"] = [f for f in data["functions"] if f["since"] == 0]
    p = tmp_path / "manifest-1.0.json"
    p.write_text(json.dumps(data))
    with pytest.raises(AbiTargetError, match=r"'hipdnn_ep_kernel_binary', which the runtime ABI manifest "
                                             r"\(manifest-1\.0\.json, ABI 1\.0\) does not declare: it was introduced "
                                             r"in ABI 1\.1\. Fix: install hipdnn-ep-runtime>=1\.1"):
        compile_model(static_model, tmp_path / "a", manifest=p)


def test_manifest_lacking_a_kernel_fails_naming_it(static_model, tmp_path):
    manifest = _manifest_without(tmp_path, "hipdnn_ep_kernel_unary")
    with pytest.raises(AbiTargetError, match="'hipdnn_ep_kernel_unary'"):
        compile_model(static_model, tmp_path / "a", manifest=manifest)


def test_imports_record_manifest_hashes_and_min_minor(dynamic_reshape_model, tmp_path):
    abi = load_abi()
    meta = read_metadata(compile_model(dynamic_reshape_model, tmp_path / "a").path)
    for imp in meta["imports"]:
        assert imp["hash"] == abi.functions[imp["name"]].hash
    assert meta["abi"]["min_minor"] == max(abi.functions[i["name"]].since for i in meta["imports"])


def test_kernel_table_agrees_with_bundled_manifest_and_detects_drift():
    abi = load_abi()
    assert runtime_calls.validate(abi) == []
    data = json.loads(bundled_manifest_path().read_text())
    for f in data["functions"]:
        if f["name"] == "hipdnn_ep_kernel_gemm":
            f["float_attrs"] = ["beta", "alpha"]
    from hipdnn_ep_compiler.abi import RuntimeAbi
    problems = runtime_calls.validate(RuntimeAbi(data))
    assert any("hipdnn_ep_kernel_gemm" in p for p in problems)


def test_every_emittable_function_is_callable_by_artifacts():
    abi = load_abi()
    names = [abi.name(s) for s in runtime_calls.SERVICE_CALLS]
    names += [abi.name(k.kernel) for k in kernels().values()]
    data = {f["name"]: f for f in json.loads(bundled_manifest_path().read_text())["functions"]}
    for n in names:
        assert "artifact" in data[n]["callers"], n
        assert data[n]["status"] == "active", n


def test_kernel_table_detects_a_parameter_input_that_no_longer_takes_int64():
    """The lowering passes reduce axes as int64: a manifest that stops accepting it is caught at import."""
    from hipdnn_ep_compiler.abi import RuntimeAbi
    data = json.loads(bundled_manifest_path().read_text())
    for f in data["functions"]:
        if f["name"] == "hipdnn_ep_kernel_reduce":
            f["input_dtypes"]["1"] = ["INT32"]
    problems = runtime_calls.validate(RuntimeAbi(data))
    assert sorted(problems) == [f"hipdnn.{op}: kernel hipdnn_ep_kernel_reduce input 1 does not accept the int64 "
                                "the lowering passes" for op in ("reduce", "reduce_axes", "reduce_axes_counted")]


def test_manifest_naming_an_unknown_dtype_is_refused():
    from hipdnn_ep_compiler import CompileError
    from hipdnn_ep_compiler.abi import RuntimeAbi
    data = json.loads(bundled_manifest_path().read_text())
    for f in data["functions"]:
        if f["name"] == "hipdnn_ep_kernel_matmul":
            f["dtypes"]["default"] = ["FLOAT128"]
    with pytest.raises(CompileError, match="not a valid runtime ABI manifest.*FLOAT128"):
        RuntimeAbi(data)


def _manifest_with_pool_base_without_size(tmp_path, major: int):
    """get_pool_base(state, needed_size, out) became get_pool_base(state, out): the second historical break."""
    data = json.loads(bundled_manifest_path().read_text())
    data["abi"]["major"] = major
    for f in data["functions"]:
        if f["name"] == "hipdnn_ep_get_pool_base":
            f["params"] = [p for p in f["params"] if p["name"] != "needed_size"]
            f["signature"] = "int32_t hipdnn_ep_get_pool_base(hipdnn_ep_state_t*, void**)"
            f["hash"] = "0123456789abcdef"
    p = tmp_path / f"manifest{major}.json"
    p.write_text(json.dumps(data))
    return p


def test_signature_change_within_the_major_is_refused_naming_the_function(dynamic_reshape_model, tmp_path):
    from hipdnn_ep_compiler import CompileError
    manifest = _manifest_with_pool_base_without_size(tmp_path, 1)
    with pytest.raises(AbiTargetError) as err:
        compile_model(dynamic_reshape_model, tmp_path / "a", manifest=manifest)
    message = str(err.value)
    assert isinstance(err.value, CompileError)
    assert ("runtime function 'hipdnn_ep_get_pool_base' is 'int32_t hipdnn_ep_get_pool_base(hipdnn_ep_state_t*, "
            "void**)' in the target manifest") in message
    assert ("this compiler calls it as 'int32_t hipdnn_ep_get_pool_base(hipdnn_ep_state_t*, uint64_t, void**)'"
            in message)
    assert "Fix: " in message and "does not parse" not in message
    assert not (tmp_path / "a" / "program.so").exists()


def test_major_bump_signature_change_is_refused_naming_the_function(dynamic_reshape_model, tmp_path):
    manifest = _manifest_with_pool_base_without_size(tmp_path, 2)
    with pytest.raises(AbiTargetError) as err:
        compile_model(dynamic_reshape_model, tmp_path / "a", manifest=manifest)
    message = str(err.value)
    minor = json.loads(bundled_manifest_path().read_text())["abi"]["minor"]
    assert f"runtime ABI 2.{minor}" in message and "ABI major 1" in message
    assert "hipdnn_ep_get_pool_base" in message
    assert "Fix: install a hipdnn-ep-compiler that supports runtime ABI major 2" in message


def _manifest_1_2(tmp_path, *, matmul_int32: bool = False, add_since_2: bool = False):
    """The bundled manifest grown to ABI 1.2 the way the bump rules ask: matmul accepting INT32 from 1.2
    (an element type added after its kernel), or (artificially) ADD of binary_op dated 1.2."""
    data = json.loads(bundled_manifest_path().read_text())
    data["abi"]["minor"] = 2
    data["version_nodes"]["2"] = "HIPDNN_EP_1.2"
    for f in data["functions"]:
        if f["name"] == "hipdnn_ep_kernel_matmul" and matmul_int32:
            f["dtypes"]["default"].append("INT32")
            f["dtype_since"] = {"default": {"INT32": 2}}
    for e in data["enums"]:
        if e["name"] == "hipdnn_ep_binary_op" and add_since_2:
            e["value_since"] = {"ADD": 2}
    p = tmp_path / "manifest-1.2.json"
    p.write_text(json.dumps(data))
    return p


def _int32_matmul():
    from conftest import make_model
    from onnx import TensorProto, helper
    return make_model([helper.make_node("MatMul", ["a", "b"], ["c"], name="mm")],
                      [("a", TensorProto.INT32, [2, 3]), ("b", TensorProto.INT32, [3, 4])],
                      [("c", TensorProto.INT32, [2, 4])])


def test_an_element_type_added_in_1_2_raises_min_minor(tmp_path, static_model):
    manifest = _manifest_1_2(tmp_path, matmul_int32=True)
    meta = compile_model(_int32_matmul(), tmp_path / "int32", manifest=manifest).metadata
    assert meta["abi"] == {"major": 1, "min_minor": 2}, "a 1.1 runtime rejects INT32 matmul at Run"
    assert all(i["since"] <= 1 for i in meta["imports"]), "no function needs 1.2: the dtype does"
    # a graph that does not use the new type still runs on 1.1
    assert compile_model(static_model, tmp_path / "f", manifest=manifest).metadata["abi"]["min_minor"] == 1


def test_an_element_type_newer_than_the_target_is_refused(tmp_path):
    manifest = _manifest_1_2(tmp_path, matmul_int32=True)
    with pytest.raises(AbiTargetError) as err:
        compile_model(_int32_matmul(), tmp_path / "a", manifest=manifest, abi="1.1")
    message = str(err.value)
    assert message.startswith("node 'mm' (MatMul): hipdnn_ep_kernel_matmul accepts element type int32 in input 0 "
                              "only from runtime ABI 1.2; the target ABI is 1.1")
    assert "Fix: target ABI 1.2 or newer" in message
    assert not (tmp_path / "a" / "program.so").exists()


def test_an_enum_value_newer_than_the_target(tmp_path, static_model):
    manifest = _manifest_1_2(tmp_path, add_since_2=True)
    assert compile_model(static_model, tmp_path / "a", manifest=manifest).metadata["abi"]["min_minor"] == 2
    with pytest.raises(AbiTargetError, match=r"needs ADD of hipdnn_ep_binary_op, introduced in runtime ABI 1\.2"):
        compile_model(static_model, tmp_path / "b", manifest=manifest, abi="1.1")
