"""tools/bench/llm_session_bench.py (a benchmark, run here only as a smoke test on the tiny model): one table with
ORT's CPU EP, a cold and a warm hipdnn-ep session, and the compiler's stages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("hipdnn_ep", reason="needs the hipdnn-ep wheel")
pytest.importorskip("hipdnn_ep_compiler", reason="needs the hipdnn-ep-compiler wheel")

TOOL = Path(__file__).resolve().parents[2] / "tools" / "bench" / "llm_session_bench.py"


def test_session_bench_smoke(tmp_path):
    out = subprocess.run([sys.executable, str(TOOL), "--size", "tiny", "--work", str(tmp_path), "--repeat", "1",
                          "--phases", "--json", str(tmp_path / "r.json")], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if line.startswith("| tiny |")]
    assert [row.split("|")[3].strip() for row in rows] == ["ort-cpu", "cold", "warm"]
    assert all("HipdnnEp" in row for row in rows[1:]), "the EP claims the model"
    assert "| LLVM codegen |" in out.stdout
    data = json.loads((tmp_path / "r.json").read_text())["tiny"]
    assert data["weight_bytes"] > 0
    cold = data["runs"]["cold"][0]
    assert cold["compiler_peak_kib"] > 0 and cold["cpu_seconds"] > 0
