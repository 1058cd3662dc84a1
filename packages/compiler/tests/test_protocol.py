"""The JSON subprocess protocol."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import onnx

from hipdnn_ep_compiler.abi import bundled_manifest_path, protocol_schema
from hipdnn_ep_compiler.protocol import HOST_GONE_STATUS, PROTOCOL, _checked, handle


def test_capabilities():
    r = handle({"protocol": PROTOCOL, "action": "capabilities"})
    assert r["ok"] and r["protocol"] == PROTOCOL == 3 and r["protocols"] == [1, 2, 3]
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


def test_the_protocol_is_the_declared_one_and_every_answer_conforms(static_model, tmp_path):
    """protocol.toml (packages/abi) declares the protocol; the answers written follow it exactly."""
    assert PROTOCOL == protocol_schema.MAJOR
    onnx.save(static_model, tmp_path / "m.onnx")
    answers = {
        "capabilities": handle({"protocol": PROTOCOL, "action": "capabilities"}),
        "support": handle({"protocol": PROTOCOL, "action": "support", "models": [str(tmp_path / "m.onnx")]}),
        "compile": handle({"protocol": PROTOCOL, "action": "compile", "model": str(tmp_path / "m.onnx"),
                           "output": str(tmp_path / "a")}),
    }
    for action, answer in answers.items():
        assert answer["ok"], answer
        assert protocol_schema.problems(answer, message=f"{action}_response") == [], action
    refused = handle({"protocol": PROTOCOL, "action": "compile", "model": str(tmp_path / "m.onnx"),
                      "output": str(tmp_path / "b"), "abi": "1.0"})
    assert protocol_schema.problems(refused, message="error_response") == []


def test_a_malformed_request_is_a_bad_request_naming_the_field():
    r = handle({"protocol": PROTOCOL, "action": "compile", "model": "m.onnx", "output": "out", "backend": 7})
    assert r["error"] == {"kind": "BadRequest", "message": "malformed compile request: backend: int where the schema "
                          "says string (compile needs string fields: model, output)"}
    r = handle({"protocol": PROTOCOL, "action": "support", "models": ["a.onnx", 3]})
    assert r["error"]["message"] == ("malformed support request: models: list where the schema says list<string> "
                                     "(support needs 'models': a list of model paths)")
    r = handle({"protocol": PROTOCOL, "action": "support", "models": ["a.onnx"], "manifest": None})
    assert "manifest: NoneType where the schema says string" in r["error"]["message"]
    # a member the schema does not declare (a newer minor's, or an older EP's out_dir) is ignored
    r = handle({"protocol": PROTOCOL, "action": "capabilities", "out_dir": "x"})
    assert r["ok"]


def test_an_answer_that_breaks_the_schema_is_an_internal_error():
    r = _checked({"protocol": PROTOCOL, "ok": True, "models": [{"nodes": [{"index": "0"}]}]}, "support")
    assert r["ok"] is False and r["error"]["kind"] == "InternalError"
    assert r["error"]["message"].startswith("the compiler wrote a malformed support response (a bug in "
                                            "hipdnn-ep-compiler): models[0].nodes[0].index: str where the schema "
                                            "says int; models[0].nodes[0].name: missing (required)")
    assert protocol_schema.problems(r, message="error_response") == []


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


def _pipeline_runs(monkeypatch) -> list[str]:
    """Records each run of the pass pipeline (the front half of support and compile)."""
    from hipdnn_ep_compiler import compiler

    runs: list[str] = []
    real = compiler.run_pipeline

    def counted(module, **kw):
        runs.append("run")
        return real(module, **kw)

    monkeypatch.setattr(compiler, "run_pipeline", counted)
    monkeypatch.setattr(compiler, "_kept", type(compiler._kept)())
    return runs


def test_a_compile_after_the_support_query_of_the_same_file_reuses_its_lowering(static_model, tmp_path,
                                                                               monkeypatch):
    runs = _pipeline_runs(monkeypatch)
    onnx.save(static_model, tmp_path / "m.onnx")
    model = str(tmp_path / "m.onnx")
    assert handle({"protocol": 2, "action": "support", "models": [model]})["ok"]
    assert len(runs) == 1
    reused = handle({"protocol": 2, "action": "compile", "model": model, "output": str(tmp_path / "a")})
    assert reused["ok"] and len(runs) == 1, "the compile took the support query's lowering"
    fresh = handle({"protocol": 2, "action": "compile", "model": model, "output": str(tmp_path / "b")})
    assert fresh["ok"] and len(runs) == 2, "a lowering is taken once"
    assert reused["metadata"] == fresh["metadata"]
    assert (tmp_path / "a/program.so").read_bytes() == (tmp_path / "b/program.so").read_bytes()


def test_a_kept_lowering_is_not_taken_for_other_bytes_or_another_target(static_model, tmp_path, monkeypatch):
    runs = _pipeline_runs(monkeypatch)
    model = tmp_path / "m.onnx"
    onnx.save(static_model, model)
    manifest = json.loads(bundled_manifest_path().read_text())
    (tmp_path / "manifest.json").write_text(json.dumps(manifest, indent=1))

    def compile_(out: str, **fields) -> None:
        assert handle({"protocol": 2, "action": "compile", "model": str(model), "output": str(tmp_path / out),
                       **fields})["ok"]

    assert handle({"protocol": 2, "action": "support", "models": [str(model)]})["ok"]
    assert len(runs) == 1
    compile_("a", abi=f"1.{manifest['abi']['minor']}")  # another target: an explicit ABI ...
    compile_("b", manifest=str(tmp_path / "manifest.json"))  # ... another manifest
    assert len(runs) == 3
    static_model.graph.node[0].name = "renamed"  # other bytes at the same path
    onnx.save(static_model, model)
    compile_("c")
    assert len(runs) == 4
    assert handle({"protocol": 2, "action": "support", "models": [str(model)]})["ok"]
    compile_("d")
    assert len(runs) == 5, "the compile of the bytes just checked took their lowering"


def test_serve_imports_the_compile_path_before_the_first_request():
    code = ("import io, sys\nfrom hipdnn_ep_compiler import protocol\n"
            "assert 'torch_mlir.execution_engine' not in sys.modules\n"
            "protocol.serve(stdin=io.StringIO(''), stdout=io.StringIO())\n"
            "print(sorted(m for m in ('torch_mlir.execution_engine', 'torch_mlir.passmanager',"
            " 'hipdnn_ep_compiler.compiler', 'hipdnn_ep_compiler.support') if m in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["['hipdnn_ep_compiler.compiler',", "'hipdnn_ep_compiler.support',",
                                   "'torch_mlir.execution_engine',", "'torch_mlir.passmanager']"]


def test_the_dependencies_exclude_the_ml_dtypes_release_that_imports_slowly():
    from importlib import metadata

    from packaging.requirements import Requirement

    reqs = [Requirement(r) for r in metadata.requires("hipdnn-ep-compiler") or []]
    ml_dtypes = [r for r in reqs if r.name.replace("_", "-") == "ml-dtypes"]
    assert ml_dtypes and not ml_dtypes[0].specifier.contains("0.7.0")
    assert metadata.version("ml_dtypes") != "0.7.0"


# A server whose requests take a minute (a pathological graph), telling when one has begun.
_SLOW_SERVER = ("import pathlib, sys, time\nfrom hipdnn_ep_compiler import protocol\n"
                "def slow(request):\n"
                "    pathlib.Path(sys.argv[1]).write_text('busy')\n"
                "    time.sleep(60)\n"
                "    return {'protocol': 2, 'ok': True}\n"
                "sys.exit(protocol.serve(handler=slow))\n")


def _wait_for(path, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.02)


def _running(pid: int) -> bool:
    """True while `pid` runs (a zombie, ended but not yet reaped by its new parent, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_serve_exits_mid_request_when_nobody_reads_its_answers(tmp_path):
    """The host died (its end of the responses' pipe closed): a request in progress is abandoned."""
    busy = tmp_path / "busy"
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_SERVER, str(busy)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    try:
        proc.stdin.write(b'{"protocol": 2, "action": "capabilities"}\n')
        proc.stdin.flush()
        _wait_for(busy)
        proc.stdout.close()  # stdin stays open: only the closed responses' pipe tells
        start = time.monotonic()
        status = proc.wait(timeout=30)
        assert time.monotonic() - start < 1.0
        assert status == HOST_GONE_STATUS
    finally:
        proc.kill()
        proc.wait()
        proc.stdin.close()


def test_serve_exits_mid_request_when_its_parent_dies(tmp_path):
    """The host died while something else still holds both pipes (here: this test holds the
    responses' pipe): the server notices that it was reparented."""
    busy = tmp_path / "busy"
    host = ("import subprocess, sys, time\n"
            f"p = subprocess.Popen([sys.executable, '-c', {_SLOW_SERVER!r}, {str(busy)!r}], stdin=subprocess.PIPE)\n"
            "print(p.pid, flush=True)\n"
            "p.stdin.write(b'{}\\n')\n"
            "p.stdin.flush()\n"
            "time.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", host], stdout=subprocess.PIPE, text=True)
    server = int(proc.stdout.readline())
    try:
        _wait_for(busy)
        proc.kill()
        proc.wait()
        start = time.monotonic()
        while _running(server):
            assert time.monotonic() - start < 1.0, "the server outlived its parent by more than a second"
            time.sleep(0.01)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(server, signal.SIGKILL)
        proc.stdout.close()
