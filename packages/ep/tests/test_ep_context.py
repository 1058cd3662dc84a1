"""EPContext: compiled models that reload without compiling, their
compatibility verdicts, and the trust rule for the native code they carry."""

from __future__ import annotations

import ctypes
import shutil
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from conftest import Env, make_session
from models import elementwise, reference

NO_FALLBACK = {"session.disable_cpu_ep_fallback": "1"}
Compat = ort.capi.onnxruntime_pybind11_state.OrtCompiledModelCompatibility


def _compile(model: Path, out: Path, devices, env: Env, embed: bool) -> Path:
    config = dict(NO_FALLBACK, **{"ep.context_enable": "1", "ep.context_file_path": str(out),
                                  "ep.context_embed_mode": "1" if embed else "0"})
    make_session(model, devices, env.options, config)
    assert out.exists()
    return out


@pytest.mark.parametrize("embed", [False, True], ids=["file", "embedded"])
def test_round_trip_runs_without_compiling(tmp_path: Path, ep_devices, env: Env, embed: bool) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    ctx = _compile(model, tmp_path / "m_ctx.onnx", ep_devices, env, embed)
    nodes = onnx.load(str(ctx)).graph.node
    assert [(n.op_type, n.domain) for n in nodes] == [("EPContext", "com.microsoft")]
    assert len(env.compiles()) == 1

    env.compile_log.unlink()
    sess = make_session(ctx, ep_devices, env.options, NO_FALLBACK)
    for shape in [(1, 4), (6, 4)]:
        rng = np.random.default_rng(shape[0])
        x, y = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
        np.testing.assert_allclose(sess.run(None, {"x": x, "y": y})[0], reference(x, y), rtol=1e-6)
    assert env.compiles() == [], "an EPContext model must not be compiled again"


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


def test_compatibility_info_and_verdicts(tmp_path: Path, ep_devices, env: Env, fake_runtime: Path) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    ctx = _compile(model, tmp_path / "m_ctx.onnx", ep_devices, env, embed=True)
    info = ort.capi.onnxruntime_pybind11_state.get_compatibility_info_from_model(str(ctx), "HipdnnEp")
    assert info == "hipdnn-ep;abi=1.1;backend=cpu;compiler=hipdnn-ep-compiler 0.0.1+fake"
    # Validation uses the default runtime; the double is already loaded under its soname.
    ctypes.CDLL(str(fake_runtime), mode=ctypes.RTLD_GLOBAL)
    verdict = ort.capi.onnxruntime_pybind11_state.get_model_compatibility_for_ep_devices
    assert verdict(ep_devices, info) == Compat.EP_SUPPORTED_OPTIMAL
    assert verdict(ep_devices, info.replace("abi=1.1", "abi=1.0")) == Compat.EP_SUPPORTED_PREFER_RECOMPILATION
    assert verdict(ep_devices, info.replace("abi=1.1", "abi=2.1")) == Compat.EP_UNSUPPORTED
    assert verdict(ep_devices, info.replace("abi=1.1", "abi=1.9")) == Compat.EP_UNSUPPORTED
    assert verdict(ep_devices, "someone-else;v=3") == Compat.EP_NOT_APPLICABLE
