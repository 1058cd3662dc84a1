"""The model zoo (tools/zoo): its measuring on a hand-made model (no torch needed), and two of its
smallest exported models end to end (those skip without torch and transformers, saying so)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper

pytest.importorskip("onnxruntime")
pytest.importorskip("hipdnn_ep", reason="needs the hipdnn-ep wheel")
pytest.importorskip("hipdnn_ep_compiler", reason="needs the hipdnn-ep-compiler wheel")

from zoo.measure import Result, run_model  # noqa: E402
from zoo.report import missing_ops, read_json, write_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _if_model(path: Path) -> None:
    """y = Relu(Relu(x) + If(flag){ones}{zeros}): the If (a node with subgraphs) stays on ORT's CPU EP.
    Its branches read nothing of the outer graph, so the three other nodes make one group."""
    n = helper.make_node

    def branch(value: float) -> onnx.GraphProto:
        const = helper.make_tensor("v", T.FLOAT, [2, 3], [value] * 6)
        return helper.make_graph([n("Constant", [], ["b"], value=const)], f"b{value}", [],
                                 [helper.make_tensor_value_info("b", T.FLOAT, [2, 3])])

    nodes = [n("Relu", ["x"], ["a"], name="first"),
             n("If", ["flag"], ["c"], name="choice", then_branch=branch(1.0), else_branch=branch(0.0)),
             n("Add", ["a", "c"], ["d"], name="add"), n("Relu", ["d"], ["y"], name="last")]
    graph = helper.make_graph(nodes, "partly", [helper.make_tensor_value_info("x", T.FLOAT, [2, 3]),
                                                helper.make_tensor_value_info("flag", T.BOOL, [])],
                              [helper.make_tensor_value_info("y", T.FLOAT, [2, 3])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def test_a_partly_claimed_model_is_counted_and_the_refusal_named(tmp_path):
    path = tmp_path / "model.onnx"
    _if_model(path)
    feeds = {"x": np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32), "flag": np.array(True)}
    r = run_model("partly", path, feeds, runs=1, tolerance=1e-4)
    assert not r.error and r.problems() == ["not whole: 3/4 claimed"]
    assert r.claimed == 3 and r.unsupported == {"If": 1}, (r.claimed, r.total, r.unsupported)
    assert r.total == r.claimed + sum(r.unsupported.values())
    assert r.reasons["If"], r.reasons  # the EP's own words, from its session log
    assert r.max_abs == 0.0 and r.max_rel == 0.0
    assert r.ep_create_s > 0 and r.ref_create_s > 0 and r.ep_run_ms > 0 and r.ref_run_ms > 0


def test_missing_ops_sum_over_models_most_models_first(tmp_path):
    results = [Result("a", unsupported={"Conv": 5, "Resize": 1}, reasons={"Conv": "no conv"}),
               Result("b", unsupported={"Conv": 2, "TopK": 9}, reasons={"TopK": "no topk"}),
               Result("c", claimed=3, total=3)]
    assert missing_ops(results) == [
        {"op": "Conv", "nodes": 7, "models": ["a", "b"], "reason": "no conv"},
        {"op": "TopK", "nodes": 9, "models": ["b"], "reason": "no topk"},
        {"op": "Resize", "nodes": 1, "models": ["a"], "reason": ""}]
    write_json(results, "cpu", tmp_path / "r.json")
    assert read_json(tmp_path / "r.json") == (results, "cpu")


def test_a_model_passes_only_whole_and_within_its_tolerance():
    assert Result("ok", claimed=3, total=3, max_rel=1e-6, tolerance=1e-4).problems() == []
    assert Result("unchecked", claimed=3, total=3, max_rel=0.5).problems() == []  # no tolerance: shown only
    assert Result("partly", claimed=2, total=3, max_rel=0.0, tolerance=1e-4).problems() == [
        "not whole: 2/3 claimed"]
    assert Result("empty", max_rel=0.0, tolerance=1e-4).problems() == ["not whole: 0/0 claimed"]
    assert Result("far", claimed=3, total=3, max_rel=2e-3, tolerance=1e-4).problems() == ["max rel 0.002 > 0.0001"]
    assert Result("nan", claimed=3, total=3, max_rel=float("nan"), tolerance=1e-4).problems() == [
        "max rel nan > 0.0001"]
    assert Result("broken", error="RuntimeError: no").problems() == ["RuntimeError: no"]


def test_the_tool_exits_1_naming_each_model_that_fails(tmp_path, capsys):
    from zoo.__main__ import main

    results = [Result("whole", claimed=3, total=3, max_rel=1e-7, tolerance=1e-4),
               Result("partly", claimed=3, total=4, max_rel=0.0, tolerance=1e-4, unsupported={"If": 1}),
               Result("far", claimed=3, total=3, max_rel=0.5, tolerance=1e-4)]
    write_json(results, "cpu", tmp_path / "r.json")
    assert main(["--show", str(tmp_path / "r.json")]) == 1
    out = capsys.readouterr().out
    assert "FAILED partly: not whole: 3/4 claimed" in out and "FAILED far: max rel 0.5 > 0.0001" in out
    assert "FAILED whole" not in out and "zoo: 1 of 3 models whole and within tolerance" in out
    assert "ops left to other EPs, over all models" in " ".join(out.split())  # the title wraps to the table
    write_json(results[:1], "cpu", tmp_path / "ok.json")
    assert main(["--show", str(tmp_path / "ok.json")]) == 0
    out = capsys.readouterr().out
    assert "no node left to other EPs" in out and "zoo: 1 of 1 models whole and within tolerance" in out


def test_a_missing_reference_ep_is_refused_by_name(capsys):
    import onnxruntime as ort

    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this onnxruntime has the CUDA EP")
    from zoo.__main__ import main

    with pytest.raises(SystemExit, match="compares against ORT's CUDAExecutionProvider, which this onnxruntime "
                                         "lacks .*install onnxruntime-gpu"):
        main(["--backend", "cuda", "--models", "bert"])


def test_zoo_table_for_the_smallest_exported_models(tmp_path):
    pytest.importorskip("torch", reason="the zoo exports its models with torch (nox -s zoo installs it)")
    pytest.importorskip("transformers", reason="the zoo's text models come from transformers")
    out = subprocess.run([sys.executable, str(ROOT / "tools/zoo"), "--models", "distilbert", "clip_vision",
                          "--runs", "1", "--cache", str(tmp_path / "cache"), "--json", str(tmp_path / "zoo.json")],
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "distilbert" in out.stdout and "clip_vision" in out.stdout
    models = json.loads((tmp_path / "zoo.json").read_text())["models"]
    assert [m["name"] for m in models] == ["distilbert", "clip_vision"]
    for m in models:
        assert m["total"] > 0 and 0 < m["claimed"] <= m["total"]
        assert m["total"] == m["claimed"] + sum(m["unsupported"].values())
        assert set(m["reasons"]) <= set(m["unsupported"])
        assert m["max_rel"] < 1e-3, m  # whatever the EP claimed computes what ORT's CPU EP computes
