"""Fixtures for the cross-package suite: compile with hipdnn-ep-compiler, run on hipdnn-ep-runtime,
compare with onnxruntime's CPU EP.  Every test here skips cleanly when a wheel is missing."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
import pytest


@pytest.fixture(scope="session")
def runtime():
    """The hipdnn_ep_runtime module (skips the test when the runtime wheel is not installed)."""
    return pytest.importorskip("hipdnn_ep_runtime", reason="needs the hipdnn-ep-runtime wheel")


@pytest.fixture(scope="session")
def compiler():
    """The hipdnn_ep_compiler module (skips the test when the compiler wheel is not installed)."""
    return pytest.importorskip("hipdnn_ep_compiler", reason="needs the hipdnn-ep-compiler wheel")


@pytest.fixture
def state(runtime):
    """A CPU state; closing it checks that the artifact freed everything it did not return."""
    with runtime.State(backend="cpu") as st:
        yield st


@pytest.fixture(scope="session")
def ort_run() -> Callable[[onnx.ModelProto, dict], list[np.ndarray]]:
    ort = pytest.importorskip("onnxruntime")

    def run(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        return sess.run(None, feeds)

    return run


@pytest.fixture(scope="session")
def run_artifact(runtime, compiler):
    """run(artifact_dir, model, state, feeds_in_input_order) -> outputs, weights loaded from the model."""

    def run(artifact_dir, model, state, feeds: list[np.ndarray], base_dir=None) -> list[np.ndarray]:
        artifact = runtime.Artifact(str(artifact_dir))
        weights = compiler.load_weights(artifact.metadata, model, base_dir=base_dir)
        return artifact.run(state, list(feeds) + list(weights))

    return run


def assert_close(got: list[np.ndarray], want: list[np.ndarray], tol: float = 1e-4) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        w = np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        tol_here = max(tol, 2e-3) if g.dtype == np.float16 else tol
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol_here, atol=tol_here)


@pytest.fixture(scope="session")
def close() -> Callable:
    return assert_close


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hipdnn-ep fuzz")
    group.addoption("--fuzz-seed", type=int, default=20261203,
                    help="seed of tests/test_fuzz.py and tests/test_fuzz_ep_files.py (a failure message names "
                         "the seed and case to replay)")
    group.addoption("--fuzz-models", type=int, default=80,
                    help="mutated models tests/test_fuzz.py builds (each also gets several bad feeds)")
    group.addoption("--fuzz-ep-cases", type=int, default=16,
                    help="sessions tests/test_fuzz_ep_files.py creates, each on a mutated EPContext model or cache")
