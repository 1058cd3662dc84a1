"""`hipdnn-ep bench` (a benchmark, run here only as a smoke test on the tiny model): the table, the JSON
results for our EP and ORT's CPU EP, and the bytes behind the decode floor."""

from __future__ import annotations

import argparse
import dataclasses
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
    # The EP's runtime allocators' peak (its states' memory, host memory on the cpu backend) beside the
    # resident bytes; ORT's CPU EP has no such figure.
    hipdnn, cpu = data["results"]
    assert hipdnn["runtime_peak_mib"] > 0 and cpu["runtime_peak_mib"] is None
    assert data["resident_weight_bytes"] > data["weight_bytes"] and data["resident_kv_bytes"]["growing"] > 0
    assert "rt peak MiB" in out.stdout and "target: peak device memory <= 1.10 x (weights + KV)" in out.stdout


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


def test_resident_bytes_count_every_weight_and_the_longest_kv_cache(tmp_path):
    spec = lm.SIZES["tiny"]
    folder = lm.write_model(spec, tmp_path / "tiny")
    weights, kv = bench.resident_bytes(bench.Decoder.read(folder), batch=2, positions=12)
    rope = 2 * spec.max_length * spec.head_dim // 2 * 4
    assert weights == spec.weight_bytes() + rope  # the whole embedding table, unlike a decode step
    assert kv == spec.kv_bytes(2, 12)


def test_runtime_peak_is_every_state_of_the_device_in_this_process():
    """The bench's worker reads the peak through the runtime library the EP loaded (one copy per process):
    here, two states of this process; a device without states has no figure."""
    rt = pytest.importorskip("hipdnn_ep_runtime")
    with rt.State() as a, rt.State() as b:
        pa, pb = a.malloc(3 << 20), b.malloc(5 << 20)
        a.free(pa)
        b.free(pb)
        assert bench.runtime_peak_bytes("cpu", 0) >= 8 << 20
    assert bench.runtime_peak_bytes("cpu", 6) is None


def test_memory_ratio_prefers_the_runtime_peak_and_marks_nvidia_smi():
    r = bench.Result("hipdnn", 1, 1, 1, 1, 0, 0, device_mib=600.0, runtime_peak_mib=110.0)
    assert bench.memory_ratio(r, 100 << 20) == "1.10"
    assert bench.memory_ratio(dataclasses.replace(r, runtime_peak_mib=None), 100 << 20) == "6.00*"
    assert bench.memory_ratio(dataclasses.replace(r, runtime_peak_mib=None, device_mib=None), 100 << 20) == "-"


def test_copy_bandwidth_is_measured():
    assert bench.copy_bandwidth(size=1 << 20, repeats=2) > 1e8
    assert np.isfinite(bench.copy_bandwidth(size=1 << 20, repeats=1))


def _bench(folder, tmp_path, *extra):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700, exist_ok=True)
    out = subprocess.run([sys.executable, "-m", "hipdnn_ep.cli", "bench", str(folder), "-l", "4", "-g", "2", "-r",
                          "1", "-w", "1", f"--option=cache_dir={cache}", "--json", str(tmp_path / "r.json"), *extra],
                         capture_output=True, text=True, timeout=300)
    return out, (json.loads((tmp_path / "r.json").read_text()) if out.returncode == 0 else None)


def test_bench_io_binding_with_a_shared_kv_buffer(tmp_path):
    """--io binding on a shared-buffer model: one max_length buffer bound as past and present, static mask."""
    folder = lm.write_model(dataclasses.replace(lm.SIZES["tiny"], shared_kv=True, max_length=16), tmp_path / "m")
    out, data = _bench(folder, tmp_path, "--io", "binding", "--ep", "hipdnn", "--ep", "cpu")
    assert out.returncode == 0, out.stderr
    assert [(r["ep"], r["io"], r["kv"]) for r in data["results"]] == [("hipdnn", "binding", "shared"),
                                                                      ("cpu", "binding", "shared")]
    assert all(r["decode_tok_s"] > 0 for r in data["results"])
    assert "binding" in out.stdout and "shared" in out.stdout


def test_bench_refuses_a_run_longer_than_the_shared_buffer(tmp_path):
    folder = lm.write_model(dataclasses.replace(lm.SIZES["tiny"], shared_kv=True, max_length=5), tmp_path / "m")
    out, _ = _bench(folder, tmp_path, "--io", "binding", "--ep", "cpu")
    assert out.returncode != 0
    assert "exceeds the model's max_length 5" in out.stderr and "shorter -l/-g" in out.stderr


def test_bench_cuda_graph_refuses_a_model_without_a_shared_kv_buffer(tmp_path):
    """ORT's CUDA graph replays one graph for every decode step: a growing KV cache changes the shapes."""
    folder = lm.write_model(lm.SIZES["tiny"], tmp_path / "m")
    out, _ = _bench(folder, tmp_path, "--ep", "cuda-graph")
    assert out.returncode != 0
    assert "needs the same input shapes each step" in out.stderr and "shared KV buffer" in out.stderr


def test_bench_refuses_to_time_a_model_the_ep_does_not_run_whole(tmp_path):
    """Where the EP's compiler cannot be used, ORT would run every node on its CPU EP with a mere warning and
    the table would show CPU figures under "hipdnn": the bench refuses, unless told --allow-fallback."""
    folder = lm.write_model(lm.SIZES["tiny"], tmp_path / "m")
    broken = tmp_path / "python-without-the-compiler"
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    option = f"--option=compiler_python={broken}"
    out, _ = _bench(folder, tmp_path, "--ep", "hipdnn", option)
    assert out.returncode != 0
    assert "does not run the whole model" in out.stderr and "--allow-fallback" in out.stderr
    out, data = _bench(folder, tmp_path, "--ep", "hipdnn", option, "--allow-fallback")
    assert out.returncode == 0, out.stderr
    assert data["results"][0]["ep"] == "hipdnn" and data["results"][0]["decode_tok_s"] > 0


def _last_logits(folder, io: str, ep: str, generate: int = 3, graph: bool = False) -> np.ndarray:
    decoder = bench.Decoder.read(folder)
    cache = folder.parent / "cache"
    cache.mkdir(mode=0o700, exist_ok=True)
    sess, ep_device = bench._session(decoder, ep, {"cache_dir": str(cache)} if ep == "hipdnn" else {})
    args = argparse.Namespace(batch_size=2, prompt_length=5, generation_length=generate)
    rng, timings = np.random.default_rng(3), ([], [])
    dtype = np.float32
    if io == "numpy":
        return bench._feeds_numpy(decoder, sess, args, dtype, rng, timings, True)
    memory = bench.DeviceMemory(ep, ep_device, {})
    return bench._feeds_bound(decoder, sess, args, dtype, rng, timings, True, memory, decoder.shared_kv, {},
                              graph=graph).numpy()


@pytest.mark.parametrize(("ep", "shared"), [("cpu", True), ("cpu", False), ("hipdnn", True)])
def test_bound_steps_give_the_logits_of_host_steps(tmp_path, ep, shared):
    """The IO-binding loop (KV cache kept in bound buffers; with the shared buffer, a zero-padded static mask)
    computes what plain runs with host arrays compute, step after step, for the same tokens."""
    folder = lm.write_model(dataclasses.replace(lm.SIZES["tiny"], shared_kv=shared, max_length=12), tmp_path / "m")
    want = _last_logits(folder, "numpy", ep)
    got = _last_logits(folder, "binding", ep)
    assert want.shape == got.shape == (2, 1, lm.SIZES["tiny"].vocab)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_graph_steps_feed_inputs_through_buffers_that_keep_their_address(tmp_path):
    """The loop --ep cuda-graph runs (decode inputs copied into buffers made once, run options naming the
    graph) computes what host steps compute; run here on the CPU EP, which ignores the graph id."""
    folder = lm.write_model(dataclasses.replace(lm.SIZES["tiny"], shared_kv=True, max_length=12), tmp_path / "m")
    want = _last_logits(folder, "numpy", "cpu")
    got = _last_logits(folder, "binding", "cpu", graph=True)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_graph_notes_count_replayed_nodes_and_say_why_others_are_not():
    log = "\n".join([
        "[I:onnxruntime:, x] hipdnn-ep: node 'a' replayed from a captured graph while its input shapes repeat",
        "[W:onnxruntime:, x] hipdnn-ep: node 'b' runs without a graph: not captured: gather checks",
        "[W:onnxruntime:, x] hipdnn-ep: node 'c' runs without a graph: not captured: gather checks",
        "unrelated line"])
    assert bench.graph_notes(log) == ("1 node(s) replayed from captured graphs; 2 node(s) without a graph: "
                                      "not captured: gather checks")
    assert bench.graph_notes("nothing here") is None


@pytest.mark.filterwarnings("ignore:Specified provider 'CUDAExecutionProvider' is not in available provider")
def test_an_ort_ep_that_falls_back_to_the_cpu_is_refused(tmp_path):
    """Asked for ORT's CUDA EP where onnxruntime cannot run it, ORT would run the CPU EP with a warning and
    the table would show CPU figures under "cuda": the bench refuses instead."""
    ort = pytest.importorskip("onnxruntime")
    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this onnxruntime has the CUDA EP")
    folder = lm.write_model(lm.SIZES["tiny"], tmp_path / "m")
    with pytest.raises(SystemExit, match="did not run the model on CUDAExecutionProvider"):
        bench._session(bench.Decoder.read(folder), "cuda", {})
