"""The JSON subprocess protocol."""

from __future__ import annotations

import json
import subprocess
import sys

import onnx

from hipdnn_ep_compiler.abi import bundled_manifest_path
from hipdnn_ep_compiler.protocol import PROTOCOL, handle


def test_capabilities():
    r = handle({"protocol": PROTOCOL, "action": "capabilities"})
    assert r["ok"] and r["protocol"] == PROTOCOL == 2 and r["protocols"] == [1, 2]
    minor = json.loads(bundled_manifest_path().read_text())["abi"]["minor"]
    assert r["abi"] == {"major": 1, "minors": list(range(minor + 1))}
    assert "MatMul" in r["ops"]["ai.onnx"] and r["backends"] == ["cpu", "cuda", "hip"]


def test_compile_ok_and_compile_error(static_model, tmp_path):
    onnx.save(static_model, tmp_path / "m.onnx")
    r = handle({"protocol": 1, "action": "compile", "model": str(tmp_path / "m.onnx"), "output": str(tmp_path / "a")})
    assert r["ok"] and r["metadata"]["abi"]["min_minor"] == 3  # its outputs come from hipdnn_ep_output_alloc (1.3)
    r = handle({"protocol": 1, "action": "compile", "model": str(tmp_path / "m.onnx"), "output": str(tmp_path / "b"),
                "abi": "1.0"})
    assert not r["ok"] and r["error"]["kind"] == "AbiTargetError" and "hipdnn_ep_kernel_binary" in r["error"]["message"]


def test_bad_requests():
    assert handle([1])["error"]["kind"] == "BadRequest"
    assert "unsupported protocol" in handle({"protocol": 7, "action": "compile"})["error"]["message"]
    assert "unknown action" in handle({"protocol": 1, "action": "run"})["error"]["message"]
    assert "model, output" in handle({"protocol": 1, "action": "compile"})["error"]["message"]


def test_subprocess_round_trip(static_model, tmp_path):
    onnx.save(static_model, tmp_path / "m.onnx")
    req = {"protocol": 1, "action": "compile", "model": str(tmp_path / "m.onnx"), "output": str(tmp_path / "a")}
    proc = subprocess.run([sys.executable, "-m", "hipdnn_ep_compiler.protocol"], input=json.dumps(req),
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["artifact"] == str(tmp_path / "a")
    proc = subprocess.run([sys.executable, "-m", "hipdnn_ep_compiler.protocol"], input="{not json",
                          capture_output=True, text=True)
    assert proc.returncode == 2 and json.loads(proc.stdout)["ok"] is False


def test_serve_answers_one_line_per_request_until_stdin_closes(static_model, tmp_path):
    onnx.save(static_model, tmp_path / "m.onnx")
    requests = [{"protocol": 2, "action": "capabilities"}, "{not json",
                {"protocol": 2, "action": "support", "models": [str(tmp_path / "m.onnx")]},
                {"protocol": 2, "action": "compile", "model": str(tmp_path / "m.onnx"), "output": str(tmp_path / "a")}]
    text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in requests)
    proc = subprocess.run([sys.executable, "-m", "hipdnn_ep_compiler.protocol", "--serve"], input=text,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    caps, bad, support, compiled = (json.loads(line) for line in proc.stdout.splitlines())
    assert caps["ok"] and caps["install_files"]
    assert bad["error"]["kind"] == "BadRequest"
    assert [n["supported"] for n in support["models"][0]["nodes"]] == [True, True]
    assert compiled["ok"] and compiled["artifact"] == str(tmp_path / "a")
