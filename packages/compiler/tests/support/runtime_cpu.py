"""Runs an artifact on the C++ runtime's CPU backend (hipdnn_ep_runtime), where it is installed, in a process of
its own: the reference runtime of this test process is loaded with the runtime's SONAME, so the two cannot share
one process."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

_SCRIPT = """
import sys
import numpy as np
import hipdnn_ep_runtime as rt
program, feeds, out = sys.argv[1:4]
data = np.load(feeds)
runs = int(data["runs"])
results = {}
state = rt.State()
with rt.Artifact(program) as artifact:
    for r in range(runs):
        n = int(data[f"n{r}"])
        got = artifact.run(state, [data[f"r{r}_{k}"] for k in range(n)])
        results[f"o{r}"] = np.array(len(got))
        for k, g in enumerate(got):
            results[f"o{r}_{k}"] = g
state.close()
np.savez(out, **results)
"""


def run_on_runtime(program: Path, runs: list[list[np.ndarray]], work: Path) -> list[list[np.ndarray]]:
    """The outputs of each run (its inputs: graph inputs then weights) of `program` on the CPU backend."""
    if importlib.util.find_spec("hipdnn_ep_runtime") is None:
        pytest.skip("hipdnn_ep_runtime (the C++ runtime) is not installed")
    arrays = {"runs": np.array(len(runs))}
    for r, inputs in enumerate(runs):
        arrays[f"n{r}"] = np.array(len(inputs))
        for k, a in enumerate(inputs):
            arrays[f"r{r}_{k}"] = a
    feeds, out = work / "runtime_feeds.npz", work / "runtime_out.npz"
    np.savez(feeds, **arrays)
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, str(program), str(feeds), str(out)], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    data = np.load(out)
    return [[data[f"o{r}_{k}"] for k in range(int(data[f"o{r}"]))] for r in range(len(runs))]
