"""`hipdnn-ep bench` (a benchmark, run here only as a smoke test on the tiny model): the table, the JSON
results for our EP and ORT's CPU EP, and the bytes behind the decode floor."""

from __future__ import annotations

import json
import subprocess
import sys

import llm_models as lm
import numpy as np
import pytest

pytest.importorskip("onnxruntime")
bench = pytest.importorskip("hipdnn_ep.bench", reason="needs the hipdnn-ep wheel")
pytest.importorskip("hipdnn_ep_compiler", reason="needs the hipdnn-ep-compiler wheel")


def test_bench_smoke(tmp_path):
    folder = lm.write_model(lm.SIZES["tiny"], tmp_path / "tiny")
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    out = subprocess.run([sys.executable, "-m", "hipdnn_ep.cli", "bench", str(folder), "-l", "4", "-g", "2", "-r",
                          "1", "-w", "0", "--ep", "hipdnn", "--ep", "cpu", f"--option=cache_dir={cache}",
                          "--json", str(tmp_path / "r.json")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "decode floor" in out.stdout and "hipdnn" in out.stdout
    data = json.loads((tmp_path / "r.json").read_text())
    assert [r["ep"] for r in data["results"]] == ["hipdnn", "cpu"]
    for r in data["results"]:
        assert r["prefill_tok_s"] > 0 and r["decode_tok_s"] > 0 and r["decode_ms"] > 0
    assert data["floor_ms"] > 0 and data["copy_bytes_per_s"] > 1e8


def test_a_gpu_backend_gets_the_gpu_device_only():
    """ORT is handed one EP device: the backend's own, else the CPU one (not every device the EP offers)."""
    from types import SimpleNamespace

    cpu, gpu = (SimpleNamespace(name=b, ep_metadata={"backend": b, "device_id": "0"}) for b in ("cpu", "cuda"))
    assert bench.devices_for_backend([gpu, cpu], "cuda") == [gpu]
    assert bench.devices_for_backend([gpu, cpu], "cpu") == [cpu]
    assert bench.devices_for_backend([cpu], "cuda") == [cpu]


def test_decode_bytes_count_weights_once_and_one_embedding_row(tmp_path):
    spec = lm.SIZES["tiny"]
    folder = lm.write_model(spec, tmp_path / "tiny")
    weights, kv = bench.decode_bytes(bench.Decoder.read(folder), batch=2, context=10)
    item = 4
    embedding = spec.vocab * spec.hidden * item
    rope = 2 * spec.max_length * spec.head_dim // 2 * item
    assert weights == spec.weight_bytes() - embedding + 2 * spec.hidden * item + rope
    assert kv == spec.kv_bytes(2, 10)


def test_copy_bandwidth_is_measured():
    assert bench.copy_bandwidth(size=1 << 20, repeats=2) > 1e8
    assert np.isfinite(bench.copy_bandwidth(size=1 << 20, repeats=1))
