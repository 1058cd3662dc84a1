"""Paths and names the matrix's jobs share."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
THIRD_PARTY = ROOT / "third_party"  # git-ignored; tools/release/fetch_third_party.sh fills it
sys.path.insert(0, str(ROOT / "tools" / "release"))
import release  # noqa: E402, F401  (used by the jobs)

NAMES = {"runtime": "hipdnn-ep-runtime", "compiler": "hipdnn-ep-compiler", "ep": "hipdnn-ep"}
# What each wheel is built from: its content key is the git tree of these paths.
BUILT_FROM = {"runtime": ["packages/runtime", "packages/abi", "tools/release/fetch_third_party.sh"],
              "compiler": ["packages/compiler"],
              "ep": ["packages/ep", "packages/abi", "tools/release/fetch_third_party.sh"]}
TEST_DEPS = ["onnxruntime>=1.23", "onnx>=1.16", "numpy>=1.26"]
INTEGRATION = Path(__file__).resolve().parents[1]
CELL = INTEGRATION / "matrix_cell.py"
EXAMPLE = ROOT / "examples/custom_kernels"
EXAMPLE_CELL = INTEGRATION / "example_cell.py"
