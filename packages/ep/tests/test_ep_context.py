"""EPContext: compiled models that reload without compiling, their
compatibility verdicts, and the trust rule for the native code they carry."""

from __future__ import annotations

import shutil
from pathlib import Path

import hipdnn_ep_compiler
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from conftest import NO_FALLBACK, Env, make_session
from hipdnn_ep_compiler.abi import load_abi
from models import UNSUPPORTED, elementwise, reference, with_weights

Compat = ort.capi.onnxruntime_pybind11_state.OrtCompiledModelCompatibility


def _compile(model: Path, out: Path, devices, env: Env, embed: bool) -> Path:
    config = dict(NO_FALLBACK, **{"ep.context_enable": "1", "ep.context_file_path": str(out),
                                  "ep.context_embed_mode": "1" if embed else "0"})
    make_session(model, devices, env.options, config)
    assert out.exists()
    return out


def _no_compiler(env: Env, tmp_path: Path) -> dict[str, str]:
    """The options of env with a compiler that cannot start: a session that works proves it never compiled."""
    return dict(env.options, compiler_python=str(tmp_path / "no-compiler-here"))


@pytest.mark.parametrize("embed", [False, True], ids=["file", "embedded"])
def test_round_trip_runs_without_compiling(tmp_path: Path, ep_devices, env: Env, embed: bool) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    ctx = _compile(model, tmp_path / "m_ctx.onnx", ep_devices, env, embed)
    nodes = onnx.load(str(ctx)).graph.node
    assert [(n.op_type, n.domain) for n in nodes] == [("EPContext", "com.microsoft")]
    assert len(env.compiles()) == 1

    for options in (env.options, _no_compiler(env, tmp_path)):
        sess = make_session(ctx, ep_devices, options, NO_FALLBACK)
        for shape in [(1, 4), (6, 4), (3, 4)]:
            rng = np.random.default_rng(shape[0])
            x, y = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
            np.testing.assert_allclose(sess.run(None, {"x": x, "y": y})[0], reference(x, y), rtol=1e-6)
    assert len(env.compiles()) == 1, "an EPContext model must not be compiled again"


def test_round_trip_with_weights_and_a_cpu_partition(tmp_path: Path, ep_devices, env: Env) -> None:
    # Weights stay in the model (the EP is handed them at run time); the unsupported node stays a CPU node.
    model = with_weights(tmp_path / "w.onnx", 512)
    ctx = _compile(model, tmp_path / "w_ctx.onnx", ep_devices, env, embed=False)
    sess = make_session(ctx, ep_devices, _no_compiler(env, tmp_path), NO_FALLBACK)
    x = np.random.default_rng(0).standard_normal(512).astype(np.float32)
    cpu = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], cpu.run(None, {"x": x})[0], rtol=1e-6)

    mixed = elementwise(tmp_path / "c.onnx", ["n", 4], middle=UNSUPPORTED)
    config = {"ep.context_enable": "1", "ep.context_file_path": str(tmp_path / "c_ctx.onnx")}
    make_session(mixed, ep_devices, env.options, config)
    ops = sorted(n.op_type for n in onnx.load(str(tmp_path / "c_ctx.onnx")).graph.node)
    assert ops == ["EPContext", "EPContext", UNSUPPORTED]
    sess = make_session(tmp_path / "c_ctx.onnx", ep_devices, _no_compiler(env, tmp_path))
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_allclose(sess.run(None, {"x": x, "y": x})[0], reference(x, x, UNSUPPORTED), rtol=1e-6)


def test_foreign_code_is_refused_unless_trusted(tmp_path: Path, ep_devices, env: Env) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    ctx = _compile(model, tmp_path / "m_ctx.onnx", ep_devices, env, embed=True)
    # Another installation: another cache dir, hence another install key.
    other = dict(env.options, cache_dir=str(tmp_path / "other-install"))
    with pytest.raises(Exception, match="native code that this installation did not produce.*trust_ep_context_code=1"):
        make_session(ctx, ep_devices, other, NO_FALLBACK)
    sess = make_session(ctx, ep_devices, dict(other, trust_ep_context_code="1"), NO_FALLBACK)
    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(sess.run(None, {"x": x, "y": x})[0], reference(x, x))


def test_tampered_artifact_is_refused(tmp_path: Path, ep_devices, env: Env) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    ctx = _compile(model, tmp_path / "m_ctx.onnx", ep_devices, env, embed=False)
    (so,) = tmp_path.glob("m_ctx_*.hipdnn/*.so")
    so.write_bytes(so.read_bytes() + b"\0")
    with pytest.raises(Exception, match="did not produce"):
        make_session(ctx, ep_devices, env.options, NO_FALLBACK)


def test_missing_artifact_file_is_a_clear_error(tmp_path: Path, ep_devices, env: Env) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    ctx = _compile(model, tmp_path / "m_ctx.onnx", ep_devices, env, embed=False)
    for folder in tmp_path.glob("m_ctx_*.hipdnn"):
        shutil.rmtree(folder)
    with pytest.raises(Exception, match="artifact of EPContext node .* is missing"):
        make_session(ctx, ep_devices, env.options, NO_FALLBACK)


# onnxruntime 1.23 (the oldest the EP supports) has no Python binding to read a model's compatibility info.
# the newest runtime ABI the installed compiler targets (the installed runtime's, in these tests)
COMPILER_ABI = f"{load_abi().major}.{load_abi().minor}"

needs_compatibility_api = pytest.mark.skipif(
    not hasattr(ort.capi.onnxruntime_pybind11_state, "get_compatibility_info_from_model"),
    reason=f"onnxruntime {ort.__version__} has no get_compatibility_info_from_model binding")


@needs_compatibility_api
def test_compatibility_info_and_verdicts(tmp_path: Path, ep_devices, env: Env) -> None:
    """Verdicts of the installed runtime (ABI 1.m, which the compiler targets too) on code for other ABIs."""
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    ctx = _compile(model, tmp_path / "m_ctx.onnx", ep_devices, env, embed=True)
    info = ort.capi.onnxruntime_pybind11_state.get_compatibility_info_from_model(str(ctx), "HipdnnEp")
    abi = f"abi={COMPILER_ABI}"
    assert info == f"hipdnn-ep;{abi};backend=cpu;compiler=hipdnn-ep-compiler {hipdnn_ep_compiler.__version__}"
    verdict = ort.capi.onnxruntime_pybind11_state.get_model_compatibility_for_ep_devices
    assert verdict(ep_devices, info) == Compat.EP_SUPPORTED_OPTIMAL
    assert verdict(ep_devices, info.replace(abi, "abi=1.0")) == Compat.EP_SUPPORTED_PREFER_RECOMPILATION
    assert verdict(ep_devices, info.replace(abi, "abi=2.1")) == Compat.EP_UNSUPPORTED
    assert verdict(ep_devices, info.replace(abi, "abi=1.9")) == Compat.EP_UNSUPPORTED
    assert verdict(ep_devices, info.replace(abi, "abi=x")) == Compat.EP_UNSUPPORTED
    assert verdict(ep_devices, "someone-else;v=3") == Compat.EP_NOT_APPLICABLE


@needs_compatibility_api
def test_code_for_an_older_runtime_states_the_abi_it_needs(tmp_path: Path, ep_devices, env: Env,
                                                           runtime_reporting_abi) -> None:
    """Compiled while a runtime of ABI 1.7 was loaded, the code targets the newest ABI the compiler
    knows: the model says so, and a runtime of that ABI runs it optimally."""
    options = dict(env.options, runtime_library=str(runtime_reporting_abi(1, 7)))
    out = tmp_path / "m_ctx.onnx"
    make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, options,
                 dict(NO_FALLBACK, **{"ep.context_enable": "1", "ep.context_file_path": str(out)}))
    info = ort.capi.onnxruntime_pybind11_state.get_compatibility_info_from_model(str(out), "HipdnnEp")
    assert info.startswith(f"hipdnn-ep;abi={COMPILER_ABI};")
    assert ort.capi.onnxruntime_pybind11_state.get_model_compatibility_for_ep_devices(ep_devices, info) == \
        Compat.EP_SUPPORTED_OPTIMAL
