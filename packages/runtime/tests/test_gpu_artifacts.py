"""Compiled artifacts (tools/gpu/gpu_artifacts.py, cuda backend) on a GPU state against a cpu state.

The artifacts are compiled ahead of time (the compiler needs MLIR bindings the GPU machine may
lack) into the folder --gpu-artifacts names. Each runs at every shape its feeds.npz holds:
dynamic-shape programs at several (batch, seq), fixed-shape ones at theirs. Tolerance (float32,
different summation orders in GEMMs and reductions, no TF32): rtol 1e-4 and atol 2e-5 times the
largest |value| of the output (sums over K up to 3072 of terms near 10 in the BERT-base layer),
and a relative Frobenius error under 1e-5. Float16 outputs (the float16 LLM decode step): rtol 1e-2,
atol 4e-3 times the largest |value| and a relative Frobenius error under 2e-3 (each product and norm
rounds to half, in another order on the GPU).
"""

from __future__ import annotations

from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
rt = pytest.importorskip("hipdnn_ep_runtime")

pytestmark = pytest.mark.gpu


def _artifacts(config: pytest.Config) -> list[Path]:
    folder = Path(config.getoption("--gpu-artifacts"))
    return sorted(p.parent for p in folder.glob("*/program.so")) if folder.is_dir() else []


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "artifact_dir" in metafunc.fixturenames:
        found = _artifacts(metafunc.config)
        metafunc.parametrize("artifact_dir", found or [None], ids=[p.name for p in found] or ["none"])


def test_artifact_on_gpu_matches_cpu(artifact_dir: Path | None, gpu_backend: str) -> None:
    if artifact_dir is None:
        pytest.skip("no artifacts: run tools/gpu/gpu_artifacts.py (or pass --gpu-artifacts)")
    feeds = np.load(artifact_dir / "feeds.npz")
    weights = [feeds[f"weight/{i}"] for i in range(sum(k.startswith("weight/") for k in feeds.files))]
    with rt.Artifact(artifact_dir) as artifact:
        names = [i["name"] for i in artifact.metadata["inputs"]]
        labels = sorted({k.split("/")[0] for k in feeds.files if not k.startswith("weight/")})
        with rt.State(backend="cpu") as cpu, rt.State(backend=gpu_backend) as gpu:
            # Twice over the shapes: the second pass reuses the grown scratch, pool and cache.
            for label in labels * 2:
                inputs = [feeds[f"{label}/{n}"] for n in names] + weights
                expected = artifact.run(cpu, inputs)
                actual = artifact.run(gpu, inputs)
                assert len(actual) == len(expected)
                for a, e in zip(actual, expected, strict=True):
                    assert a.shape == e.shape and a.dtype == e.dtype, label
                    rtol, atol, norm = (1e-4, 2e-5, 1e-5)
                    if e.dtype == np.float16:
                        rtol, atol, norm = (1e-2, 4e-3, 2e-3)
                        a, e = a.astype(np.float64), e.astype(np.float64)
                    scale = float(np.max(np.abs(e))) if e.size else 0.0
                    np.testing.assert_allclose(a, e, rtol=rtol, atol=max(1e-6, atol * scale),
                                               err_msg=f"{artifact_dir.name} {label}")
                    if e.size:
                        assert np.linalg.norm(a - e) <= norm * np.linalg.norm(e), f"{artifact_dir.name} {label}"
                gpu.synchronize()
        # Leaving the with-block closes both states: a leaked block raises LeakError there.
