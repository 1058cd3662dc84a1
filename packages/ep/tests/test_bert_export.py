"""A BERT spelled as transformers' torch.onnx.export spells it (built here, nothing downloaded), with
either attention-mask subgraph, in float32 and in float16 with float32 inputs and outputs: the EP
claims it whole with CPU fallback off, its outputs match ORT's CPU EP at two shapes of one session,
and the compiler takes it in bounded time (a compile-time regression test)."""

from __future__ import annotations

import time

import hipdnn_ep_compiler
import numpy as np
import onnx
import pytest
from conftest import NO_FALLBACK, cpu_session, make_session
from models import bert_feeds, exported_bert

# Generous for a 2-core CI machine (about 10 s here, shared); the support check and compile of the real
# BERT-base are measured by tools/bench/compile_bench.py.
COMPILE_SECONDS = 60


@pytest.mark.parametrize("float16", [False, True], ids=["float32", "float16"])
@pytest.mark.parametrize("mask", ["legacy", "sdpa"])
def test_exported_bert_is_claimed_whole_and_matches_the_cpu_ep(env, ep_devices, tmp_path, mask, float16):
    path = exported_bert(tmp_path / "bert.onnx", mask=mask, float16=float16)
    model = onnx.load(str(path))
    sess = make_session(path, ep_devices, env.options, NO_FALLBACK, optimize=False)
    compiled = env.compiled_ops()
    assert len(compiled) == 1, "one partition: the whole model"
    assert len(compiled[0]) == len(model.graph.node)
    assert {"ConstantOfShape", "Equal", "Where", "Expand", "GatherElements", "Slice"} <= set(compiled[0])
    if mask == "sdpa":
        assert {"Range", "GreaterOrEqual", "And", "Flatten", "IsNaN"} <= set(compiled[0])
    cpu = cpu_session(path)
    tol = 2e-2 if float16 else 1e-4
    for batch, seq in ((2, 5), (3, 9)):
        feeds = bert_feeds(batch, seq)
        for got, want in zip(sess.run(None, feeds), cpu.run(None, feeds), strict=True):
            assert got.dtype == want.dtype == np.float32
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_exported_bert_compiles_in_bounded_time(tmp_path):
    path = exported_bert(tmp_path / "bert.onnx", mask="sdpa", float16=True)
    start = time.perf_counter()
    hipdnn_ep_compiler.compile_model(str(path), tmp_path / "artifact")
    assert time.perf_counter() - start < COMPILE_SECONDS
