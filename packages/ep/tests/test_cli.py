"""The hipdnn-ep command line."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from conftest import Env, make_session
from hipdnn_ep.cli import abi_verdict, default_cache_dir, exports_verdict, main
from models import elementwise


def _options(env: Env) -> list[str]:
    return [a for k, v in env.options.items() for a in ("--option", f"{k}={v}")]


@pytest.mark.parametrize(("have", "verdict"), [((1, 1), "OK"), ((1, 4), "OK"),
                                               ((1, 0), "FAIL: runtime ABI 1.0 is older"),
                                               ((2, 1), "FAIL: runtime ABI 2.1 has another major"),
                                               (None, "FAIL: no runtime ABI found")])
def test_abi_verdict(have, verdict: str) -> None:
    assert abi_verdict(have, (1, 1)).startswith(verdict)


def test_exports_verdict() -> None:
    assert exports_verdict([], (1, 1)).startswith("OK")
    assert exports_verdict(None, (1, 1)).startswith("SKIP")
    line = exports_verdict(["hipdnn_ep_get_host_scratch_base@HIPDNN_EP_1.0"], (1, 1))
    assert line.startswith("FAIL: the runtime library does not export 1 function(s) its own ABI manifest declares: "
                           "[hipdnn_ep_get_host_scratch_base@HIPDNN_EP_1.0]")
    assert line.endswith("Fix: reinstall a released runtime wheel: "
                         "pip install --force-reinstall 'hipdnn-ep-runtime>=1.1,<2'")


def test_doctor_fails_on_a_runtime_lacking_an_export(monkeypatch, capsys) -> None:
    import hipdnn_ep_runtime

    monkeypatch.setattr(hipdnn_ep_runtime, "missing_exports", lambda: ["hipdnn_ep_get_host_scratch_base@HIPDNN_EP_1.0"])
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "runtime exports      FAIL: the runtime library does not export 1 function(s)" in out
    assert "hipdnn_ep_get_host_scratch_base@HIPDNN_EP_1.0" in out


def test_doctor_reports_versions_devices_and_cache() -> None:
    r = subprocess.run([sys.executable, "-m", "hipdnn_ep", "doctor"], capture_output=True, text=True)
    for word in ("hipdnn-ep ", "hipdnn-ep-runtime", "hipdnn-ep-compiler", "onnxruntime", "runtime ABI",
                 "cache dir", "device"):
        assert word in r.stdout
    assert "CPU" in r.stdout
    # The test environment has the runtime wheel of the ABI this EP needs.
    assert "runtime ABI          OK" in r.stdout
    assert "runtime exports      OK" in r.stdout
    assert r.returncode == 0, r.stdout + r.stderr


def test_doctor_cache_dir_follows_the_plugin_under_a_foreign_home(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The plugin replaces a default cache below another user's folder by the per-user temp folder
    (issue 19); doctor reports the folder the plugin uses."""
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    home = tmp_path / "alice"
    home.mkdir()
    for name in ("XDG_CACHE_HOME", "HIPDNN_EP_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert default_cache_dir() == home / ".cache" / "hipdnn-ep"
    os.chown(home, 4321, 4321)
    assert default_cache_dir() == tmp_path / f"hipdnn-ep-cache-{os.geteuid()}"


def test_run_compares_with_the_cpu_ep(tmp_path: Path, env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    assert main(["run", str(model), "--dim", "n=3", "--no-fallback", *_options(env)]) == 0
    out = capsys.readouterr().out
    assert "z: shape (3, 4)" in out and "largest difference: 0" in out


def test_run_with_given_inputs(tmp_path: Path, env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    np.savez(tmp_path / "in.npz", x=np.ones((5, 4), np.float32), y=np.ones((5, 4), np.float32))
    assert main(["run", str(model), "--inputs", str(tmp_path / "in.npz"), *_options(env)]) == 0
    assert "z: shape (5, 4)" in capsys.readouterr().out


def test_compile_writes_an_epcontext_model(tmp_path: Path, env: Env, ep_devices,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    assert main(["compile", str(model), "--embed", *_options(env)]) == 0
    out = Path(capsys.readouterr().out.strip())
    assert out == tmp_path / "m_ctx.onnx" and out.exists()
    sess = make_session(out, ep_devices, env.options, {"session.disable_cpu_ep_fallback": "1"})
    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(sess.run(None, {"x": x, "y": x})[0], np.full((2, 4), 2, np.float32))
    assert len(env.compiles()) == 1


def test_compiled_model_keeps_the_source_ir_version(tmp_path: Path, env: Env, ep_devices,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """ORT writes its newest IR version; an older ORT where the model is deployed would refuse that."""
    import onnx

    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    source = onnx.load(str(model))
    source.ir_version = 8
    onnx.save(source, str(model))
    assert main(["compile", str(model), *_options(env)]) == 0
    out = Path(capsys.readouterr().out.strip())
    assert onnx.load(str(out), load_external_data=False).ir_version == 8
    sess = make_session(out, ep_devices, env.options, {"session.disable_cpu_ep_fallback": "1"})
    x = np.ones((3, 4), np.float32)
    np.testing.assert_allclose(sess.run(None, {"x": x, "y": x})[0], np.full((3, 4), 2, np.float32))


def test_bad_option_syntax() -> None:
    with pytest.raises(SystemExit, match="--option must be KEY=VALUE"):
        main(["run", "m.onnx", "--option", "novalue"])
