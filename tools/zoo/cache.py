"""The zoo's cache folder: `<root>/<model>/model.onnx` and the inputs it runs with (`inputs.npz`),
built on first use. A folder is complete once its inputs file exists (written last)."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np


def built(name: str, root: Path) -> tuple[Path, dict[str, np.ndarray]]:
    from .builders import ZOO

    if name not in ZOO:
        raise SystemExit(f"zoo: unknown model '{name}' (choose from {', '.join(ZOO)})")
    folder = root / name
    inputs = folder / "inputs.npz"
    if not inputs.exists():
        shutil.rmtree(folder, ignore_errors=True)  # a build that stopped half-way
        folder.mkdir(parents=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's and transformers' deprecation notes, not ours
            feeds = ZOO[name].build(folder)
        np.savez(inputs, **feeds)
    with np.load(inputs) as data:
        return folder / "model.onnx", {k: data[k] for k in data.files}
