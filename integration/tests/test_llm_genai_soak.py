"""tools/gpu/llm_genai_soak.py, run here on the CPU backend and the tiny model: onnxruntime-genai generating on
hipdnn-ep over prompts of different lengths (one session, dynamic shapes), logits checked finite, memory read
after each prompt, and its refusals."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import llm_models as lm
import pytest
from llm_genai_soak import prompt_steps

ort = pytest.importorskip("onnxruntime")
if tuple(int(x) for x in ort.__version__.split(".")[:2]) < (1, 31):
    pytest.skip(f"onnxruntime-genai needs onnxruntime >= 1.31, this is {ort.__version__}", allow_module_level=True)
pytest.importorskip("onnxruntime_genai")
pytest.importorskip("hipdnn_ep", reason="needs the hipdnn-ep wheel")
pytest.importorskip("hipdnn_ep_compiler", reason="needs the hipdnn-ep-compiler wheel")

SOAK = Path(__file__).resolve().parents[2] / "tools" / "gpu" / "llm_genai_soak.py"


def _soak(folder: Path, cache: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SOAK), str(folder), "--cache-dir", str(cache), *extra],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    spec = dataclasses.replace(lm.SIZES["tiny"], shared_kv=True)
    return lm.write_model(spec, tmp_path_factory.mktemp("soak") / "tiny")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    path = tmp_path_factory.mktemp("cache")
    path.chmod(0o700)
    return path


def test_steps_split_evenly_over_the_prompts():
    assert prompt_steps([5, 9, 2], 10) == [4, 3, 3]
    assert sum(prompt_steps([1] * 7, 5000)) == 5000


def test_the_soak_runs_every_step_over_prompts_of_changing_length(folder, cache):
    out = _soak(folder, cache, "--steps", "60", "--prompts", "9,3,17", "--check-every", "8")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ok: 60 of 60 decode steps over 3 prompts, no errors" in out.stdout
    assert out.stdout.count(" steps, ") == 3 and "teardown done" in out.stdout


def test_a_max_length_past_the_context_is_refused(folder, cache):
    out = _soak(folder, cache, "--steps", "10", "--prompts", "4", "--max-length", str(10**6))
    assert out.returncode == 2
    assert "is past the model's context length" in out.stdout


def test_a_generator_that_ends_early_fails_the_soak(folder, cache):
    """A max_length too short for a prompt's steps: the generator stops early, which the soak reports."""
    out = _soak(folder, cache, "--steps", "20", "--prompts", "12", "--max-length", "16")
    assert out.returncode == 1
    assert "generator done after" in out.stdout and "FAIL" in out.stdout
