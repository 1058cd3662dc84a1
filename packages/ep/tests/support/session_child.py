"""One session with this EP, in a process of its own, so that a crash or a hang of the EP is a test
failure and not the end of the test run.

    python session_child.py SPEC_JSON

SPEC: {"model": path, "options": {EP option: value}, "config": {session config: value},
       "reference": path of the model whose outputs are expected (default: "model")}.
Creates the session, feeds every float input with the same seeded values (symbolic dims = 2), and
compares each output with ORT's CPU EP on the reference model.  Prints one JSON line:
{"outcome": "ran"}, {"outcome": "refused", "message": ...} or {"outcome": "wrong", "message": ...};
exits 0 in each case (a signal or a timeout is the caller's to see).
"""

from __future__ import annotations

import json
import sys

import hipdnn_ep
import numpy as np
import onnx
import onnxruntime as ort


def _feeds(model_path: str) -> dict[str, np.ndarray]:
    model = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    rng = np.random.default_rng(0)
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        dims = [d.dim_value if d.HasField("dim_value") else 2 for d in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = rng.standard_normal(dims).astype(np.float32)
    return feeds


def main() -> None:
    spec = json.loads(sys.argv[1])
    reference = spec.get("reference", spec["model"])
    feeds = _feeds(reference)
    want = ort.InferenceSession(reference, providers=["CPUExecutionProvider"]).run(None, feeds)
    try:
        so = ort.SessionOptions()
        for k, v in spec.get("config", {}).items():
            so.add_session_config_entry(k, v)
        devices = hipdnn_ep.register(ort)
        so.add_provider_for_devices(devices, spec.get("options", {}))
        # enable_fallback=0: onnxruntime 1.23 would otherwise retry a refused session on the CPU EP alone.
        got = ort.InferenceSession(spec["model"], sess_options=so, enable_fallback=0).run(None, feeds)
    except Exception as e:  # noqa: BLE001 - every refusal is reported, the caller judges its message
        print(json.dumps({"outcome": "refused", "message": str(e)}))
        return
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        if g.shape != w.shape or not np.allclose(g, w, rtol=1e-4, atol=1e-4):
            print(json.dumps({"outcome": "wrong", "message": f"output {k} differs from ORT's CPU EP"}))
            return
    print(json.dumps({"outcome": "ran"}))


if __name__ == "__main__":
    main()
