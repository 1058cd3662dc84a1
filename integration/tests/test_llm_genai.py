"""onnxruntime-genai driving hipdnn-ep: a generated Llama-like folder (tools/models/llm_models.py) generates
on our EP with per-step logits matching ONNX Runtime's CPU EP, across prompts of changing length
(one session, dynamic shapes) and with batch 2.

Logits are compared, not tokens: random weights give near-flat distributions. The model's MatMulNBits
use accuracy_level 0 here: at onnxruntime-genai's usual level 4, ORT's CPU kernel quantizes the
activations to int8, which moves logits of unit scale by about 0.1 (our kernel computes in float)."""

from __future__ import annotations

import dataclasses

import llm_models as lm
import numpy as np
import pytest
from llm_genai_check import paired_generators, set_accuracy_level_0

ort = pytest.importorskip("onnxruntime")
MIN_ORT_FOR_GENAI = (1, 31)  # onnxruntime-genai 0.18 needs onnxruntime >= 1.31
if tuple(int(x) for x in ort.__version__.split(".")[:2]) < MIN_ORT_FOR_GENAI:
    pytest.skip(f"onnxruntime-genai needs onnxruntime >= 1.31, this is {ort.__version__}", allow_module_level=True)
og = pytest.importorskip("onnxruntime_genai")
hipdnn_ep = pytest.importorskip("hipdnn_ep", reason="needs the hipdnn-ep wheel")
pytest.importorskip("hipdnn_ep_compiler", reason="needs the hipdnn-ep-compiler wheel")

_registered: list[str] = []  # the library is registered once per process
TOLERANCE = 1e-4  # max |logit difference|; measured about 5e-6 on the tiny model


@pytest.fixture(scope="module", params=[False, True], ids=["separate-kv", "shared-kv"])
def folder(request, tmp_path_factory):
    """The tiny dynamic model with accuracy_level 0 in onnxruntime-genai's folder format; with shared-kv,
    onnxruntime-genai binds past and present to one max_length buffer (past_present_share_buffer)."""
    spec = dataclasses.replace(lm.SIZES["tiny"], shared_kv=request.param)
    path = lm.write_model(spec, tmp_path_factory.mktemp("genai") / "tiny")
    set_accuracy_level_0(path)
    return path


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One compile cache for both folders (their model.onnx is the same graph)."""
    path = tmp_path_factory.mktemp("cache")
    path.chmod(0o700)
    return path


@pytest.fixture(scope="module")
def models(folder, cache):
    """(ours, reference): the folder on hipdnn-ep (CPU backend) and on ORT's CPU EP."""
    name = hipdnn_ep.get_ep_name()
    if not _registered:
        og.register_execution_provider_library(name, hipdnn_ep.get_library_path())
        _registered.append(name)
    config = og.Config(str(folder))
    config.clear_providers()
    config.append_provider(name)
    config.set_provider_option(name, "backend", "cpu")
    config.set_provider_option(name, "cache_dir", str(cache))
    # The library stays registered until the process exits: unregistering it at teardown crashed
    # onnxruntime-genai 0.18 under pytest (not in a plain script) even after every model was freed.
    return og.Model(config), og.Model(str(folder))


def test_logits_match_across_changing_prompt_lengths(models):
    """One session per EP serves prompts of 7, 128, 64, 128 and 7 tokens, then 6 decode steps each, the
    same tokens fed to both (the reference's greedy choice)."""
    rng = np.random.default_rng(0)
    worst = 0.0
    for length in (7, 128, 64, 128, 7):
        prompt = rng.integers(3, lm.SIZES["tiny"].vocab, (1, length)).astype(np.int32)
        ours, ref = paired_generators(models, prompt, 6)
        for _ in range(6):
            got, want = ours.get_logits(), ref.get_logits()
            assert got.shape == want.shape == (1, 1, lm.SIZES["tiny"].vocab)
            worst = max(worst, float(np.abs(got - want).max()))
            token = want.reshape(-1).argmax().astype(np.int32).reshape(1, 1)
            ours.append_tokens(token)
            ref.append_tokens(token)
    assert worst < TOLERANCE


def test_batch_of_two_generates_like_the_cpu_ep(models):
    rng = np.random.default_rng(1)
    prompt = rng.integers(3, lm.SIZES["tiny"].vocab, (2, 12)).astype(np.int32)
    ours, ref = paired_generators(models, prompt, 8)
    while not ref.is_done():
        np.testing.assert_allclose(ours.get_logits(), ref.get_logits(), atol=TOLERANCE, rtol=0)
        ours.generate_next_token()
        ref.generate_next_token()
    assert ours.is_done()
    for row in range(2):
        np.testing.assert_array_equal(ours.get_sequence(row), ref.get_sequence(row))


def test_tokenizer_round_trips_through_generation(models):
    ours, _ = models
    tokenizer = og.Tokenizer(ours)
    prompt = tokenizer.encode("hello world, the quick brown fox")
    params = og.GeneratorParams(ours)
    params.set_search_options(max_length=len(prompt) + 4)
    gen = og.Generator(ours, params)
    gen.append_tokens(prompt)
    while not gen.is_done():
        gen.generate_next_token()
    assert tokenizer.decode(gen.get_sequence(0)).startswith("hello world, the quick brown fox")
