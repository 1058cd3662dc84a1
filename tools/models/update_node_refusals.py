"""Regenerates packages/compiler/tests/data/onnx_node_refusals.json: which of ONNX's backend node
tests the compiler refuses, and with which message, on fixed shapes and with every input dim made
symbolic. The compiler and integration suites assert exactly this list, so a case that starts or stops
compiling shows up in review instead of hiding as a skip.

    python tools/models/update_node_refusals.py       (with hipdnn-ep-compiler installed)
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hipdnn_ep_compiler import CompileError, compile_model, supported_ops
from models import make_dynamic, node_test_cases

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "packages/compiler/tests/data/onnx_node_refusals.json"


def refusals(variant: str) -> dict[str, str]:
    found = {}
    for case in node_test_cases(set(supported_ops()["ai.onnx"])):
        model = make_dynamic(case.model) if variant == "dynamic" else case.model
        with tempfile.TemporaryDirectory() as tmp:
            try:
                compile_model(model, Path(tmp) / "artifact")
            except CompileError as exc:
                found[case.name] = str(exc)
    return dict(sorted(found.items()))


def main() -> None:
    data = {variant: refusals(variant) for variant in ("fixed", "dynamic")}
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{OUT}: {len(data['fixed'])} fixed, {len(data['dynamic'])} dynamic refusals")


if __name__ == "__main__":
    main()
