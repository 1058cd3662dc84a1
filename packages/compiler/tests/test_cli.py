"""hipdnn-ep-compile: compile and inspect."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import onnx
import pytest

from hipdnn_ep_compiler.cli import main


def test_compile_then_inspect_prints_abi_and_imports(dynamic_reshape_model, tmp_path, capsys):
    onnx.save(dynamic_reshape_model, tmp_path / "m.onnx")
    assert main([str(tmp_path / "m.onnx"), "-o", str(tmp_path / "art"), "--backend", "cuda"]) == 0
    assert "program.so" in capsys.readouterr().out
    assert main(["inspect", str(tmp_path / "art")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"abi:      1\.3 ", out), out  # outputs come from hipdnn_ep_output_alloc (1.3)
    assert "backend:  cuda" in out
    assert "hipdnn_ep_get_host_scratch_base" in out and "hipdnn_ep_kernel_matmul" in out
    assert "x  dtype=1  dims=[d0_0 (batch), d0_1 (seq), 8]" in out


def test_inspect_lists_the_named_symbols(tmp_path, capsys):
    from support.deep_graphs import slice_chain
    onnx.save(slice_chain(8), tmp_path / "m.onnx")
    assert main([str(tmp_path / "m.onnx"), "-o", str(tmp_path / "art")]) == 0
    capsys.readouterr()
    assert main(["inspect", str(tmp_path / "art")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^symbols:\n  s\d+ = \(", out, re.M), out


def test_inspect_json(static_model, tmp_path, capsys):
    onnx.save(static_model, tmp_path / "m.onnx")
    assert main([str(tmp_path / "m.onnx"), "-o", str(tmp_path / "art")]) == 0
    capsys.readouterr()
    assert main(["inspect", "--json", str(tmp_path / "art")]) == 0
    meta = json.loads(capsys.readouterr().out)
    assert meta["abi"]["major"] == 1 and meta["backend"] == "cpu"


def test_errors_exit_1_with_message(static_model, tmp_path, capsys):
    onnx.save(static_model, tmp_path / "m.onnx")
    assert main([str(tmp_path / "m.onnx"), "-o", str(tmp_path / "art"), "--abi", "1.0"]) == 1
    assert "error:" in capsys.readouterr().err
    assert main(["inspect", str(tmp_path / "nothing")]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_bad_backend_is_a_usage_error(tmp_path):
    with pytest.raises(SystemExit) as exc:
        main(["m.onnx", "-o", str(tmp_path), "--backend", "tpu"])
    assert exc.value.code == 2


def test_console_module_entry(static_model, tmp_path):
    onnx.save(static_model, tmp_path / "m.onnx")
    cmd = [sys.executable, "-m", "hipdnn_ep_compiler", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "a")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "a" / "program.so").exists()


def test_manifest_option_names_missing_function(dynamic_reshape_model, tmp_path, capsys):
    from hipdnn_ep_compiler.abi import bundled_manifest_path
    data = json.loads(bundled_manifest_path().read_text())
    data["functions"] = [f for f in data["functions"] if f["name"] != "hipdnn_ep_get_host_scratch_base"]
    (tmp_path / "old.json").write_text(json.dumps(data))
    onnx.save(dynamic_reshape_model, tmp_path / "m.onnx")
    assert main([str(tmp_path / "m.onnx"), "-o", str(tmp_path / "a"), "--manifest", str(tmp_path / "old.json")]) == 1
    assert "hipdnn_ep_get_host_scratch_base" in capsys.readouterr().err


def test_inspect_into_a_closed_pipe_exits_quietly(static_model, tmp_path):
    """`hipdnn-ep-compile inspect A | head` must not end in a BrokenPipeError traceback."""
    import os

    onnx.save(static_model, tmp_path / "m.onnx")
    assert main([str(tmp_path / "m.onnx"), "-o", str(tmp_path / "a")]) == 0
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write: every write fails with EPIPE
    try:
        proc = subprocess.run([sys.executable, "-m", "hipdnn_ep_compiler", "inspect", str(tmp_path / "a")],
                              stdout=write_end, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(write_end)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


def test_opt_runs_upstream_passes_and_prints_the_module(tmp_path, capsys):
    src = tmp_path / "in.mlir"
    src.write_text('''
func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "onnx.relu"(%arg0) {operand_roles = [0 : i64], "onnx.node" = "node 'r'"} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}''')
    assert main(["opt", str(src), "--pass-pipeline=builtin.module(refine-shapes,canonicalize)"]) == 0
    assert '"hipdnn.unary"(%arg0)' in capsys.readouterr().out


def test_opt_imports_an_onnx_model(static_model, tmp_path, capsys):
    onnx.save(static_model, tmp_path / "m.onnx")
    assert main(["opt", str(tmp_path / "m.onnx")]) == 0
    out = capsys.readouterr().out
    assert '"onnx.add"(%arg0, %0)' in out and '"onnx.tanh"' in out


@pytest.mark.parametrize("pipeline,message", [
    ("no-such-pass", "unknown pass 'no-such-pass': neither one of this compiler's (fuse-qdq, fuse-gelu, "
                     "fuse-silu-mul, fuse-gated-matmul-nbits, fuse-attention, fuse-linear-bias, "
                     "fuse-skip-layer-norm, refine-shapes, "),
    ("lower-to-llvm,refine-shapes", "lower-to-llvm must be the last pass of the pipeline"),
])
def test_opt_refuses_a_bad_pipeline_naming_it(pipeline, message, tmp_path, capsys):
    src = tmp_path / "in.mlir"
    src.write_text("func.func @main() {\n  return\n}\n")
    assert main(["opt", str(src), f"--pass-pipeline={pipeline}"]) == 1
    assert message in capsys.readouterr().err


def test_opt_names_input_that_does_not_parse(tmp_path, capsys):
    src = tmp_path / "in.mlir"
    src.write_text("func.func @main( {")
    assert main(["opt", str(src)]) == 1
    assert "hipdnn-ep-compile: error: the input does not parse" in capsys.readouterr().err
