"""The three wheels together: ONNX Runtime with the hipdnn-ep plugin, which compiles with
hipdnn-ep-compiler and runs on hipdnn-ep-runtime, against ORT's CPU EP on dynamic shapes."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from conftest import assert_close
from models import attention_feeds, attention_model, shape_chain_model


@pytest.fixture(scope="module")
def ep_session(tmp_path_factory):
    ort = pytest.importorskip("onnxruntime")
    hipdnn_ep = pytest.importorskip("hipdnn_ep", reason="needs the hipdnn-ep wheel")
    pytest.importorskip("hipdnn_ep_runtime", reason="needs the hipdnn-ep-runtime wheel")
    pytest.importorskip("hipdnn_ep_compiler", reason="needs the hipdnn-ep-compiler wheel")
    cache = tmp_path_factory.mktemp("ep-cache")
    ep_devices = hipdnn_ep.register(ort)

    def make(model_path):
        so = ort.SessionOptions()
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        so.add_provider_for_devices(ep_devices, {"cache_dir": str(cache)})
        return ort.InferenceSession(str(model_path), sess_options=so)

    return make


def _check(ep_session, ort_run, model, tmp_path, feeds_for):
    onnx.save(model, tmp_path / "m.onnx")
    sess = ep_session(tmp_path / "m.onnx")
    for batch, seq in [(1, 1), (2, 9), (3, 32)]:
        feeds = feeds_for(batch, seq)
        assert_close(sess.run(None, feeds), ort_run(model, feeds))


def _x(batch, seq):
    return {"x": np.random.default_rng(batch * 31 + seq).standard_normal((batch, seq, 8)).astype(np.float32)}


def test_dynamic_reshape_chain_through_ort(ep_session, ort_run, tmp_path):
    _check(ep_session, ort_run, shape_chain_model(transpose=False), tmp_path, _x)


def test_dynamic_transpose_chain_through_ort(ep_session, ort_run, tmp_path):
    _check(ep_session, ort_run, shape_chain_model(), tmp_path, _x)


def test_dynamic_encoder_layer_through_ort(ep_session, ort_run, tmp_path):
    _check(ep_session, ort_run, attention_model(), tmp_path, attention_feeds)
