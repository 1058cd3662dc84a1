"""Runs ONNX backend node test cases in one process, three ways each, and reports every outcome.

    python node_worker.py CASES.pickle START OPTIONS_JSON

CASES.pickle holds a list of (name, model bytes, inputs, expected outputs, rtol, atol); cases
from index START on are run. Each case runs on ORT's CPU EP alone ("cpu"), on this EP with CPU
fallback disabled ("strict") and with it enabled ("fallback"). Before each run the worker prints
`@@start <index> <mode>`, after it `@@done <json>`, so the parent can tell which case and mode a
crash of this process happened in, and start a new worker after it.
"""

from __future__ import annotations

import json
import pickle
import sys

import numpy as np

MODES = ("cpu", "strict", "fallback")
REFUSAL = "cannot run on HipdnnEp"


def _same(got, want, rtol: float, atol: float) -> str:
    """"" when `got` matches `want` (tensors, sequences of tensors, None for empty optionals)."""
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return f"a sequence of {len(want)} expected, got {type(got).__name__}"
        for g, w in zip(got, want, strict=True):
            why = _same(g, w, rtol, atol)
            if why:
                return why
        return ""
    if want is None:
        return "" if got is None else "an empty optional expected"
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, expected {list(want.shape)}"
    if want.dtype.kind in "OSU":
        return "" if np.array_equal(got, want) else "values differ"
    if got.dtype != want.dtype:
        return f"element type {got.dtype}, expected {want.dtype}"
    if want.dtype == np.float16:  # one float16 ulp near 1 (computing in float32 rounds differently)
        atol = max(atol, 2.0**-10)
    try:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    except AssertionError:
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        return f"values differ (max |diff| {np.nanmax(diff) if diff.size else 0:.3g})"
    return ""


def _feed(value):
    """onnxruntime takes arrays (not numpy scalars) and lists of arrays."""
    if isinstance(value, list):
        return [_feed(v) for v in value]
    return np.asarray(value) if isinstance(value, np.generic) else value


def _run(ort, devices, options: dict, mode: str, name: str, model: bytes, inputs: list, expected: list,
         rtol: float, atol: float) -> dict:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    if mode == "cpu":
        providers = ["CPUExecutionProvider"]
    else:
        providers = None
        if mode == "strict":
            so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        so.add_provider_for_devices(devices, options)
    try:
        sess = ort.InferenceSession(model, sess_options=so, providers=providers)
    except Exception as exc:  # noqa: BLE001 - every failure is an outcome to report
        return {"status": "refused" if REFUSAL in str(exc) else "session_error", "detail": str(exc)[:400]}
    feeds = {i.name: _feed(v) for i, v in zip(sess.get_inputs(), inputs, strict=False)}
    try:
        got = sess.run(None, feeds)
    except Exception as exc:  # noqa: BLE001
        return {"status": "run_error", "detail": str(exc)[:400]}
    if len(got) != len(expected):
        return {"status": "wrong", "detail": f"{len(got)} outputs, expected {len(expected)}"}
    for k, (g, w) in enumerate(zip(got, expected, strict=True)):
        why = _same(g, w, rtol, atol)
        if why:
            return {"status": "wrong", "detail": f"output {k}: {why}"}
    return {"status": "pass"}


def main() -> int:
    cases_file, start, options_json = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    import hipdnn_ep
    import onnxruntime as ort

    ort.set_default_logger_severity(3)
    devices = hipdnn_ep.register(ort)
    options = json.loads(options_json)
    with open(cases_file, "rb") as f:
        cases = pickle.load(f)
    for index in range(start, len(cases)):
        name, model, inputs, expected, rtol, atol = cases[index]
        for mode in MODES:
            print(f"@@start {index} {mode}", flush=True)
            outcome = _run(ort, devices, options, mode, name, model, inputs, expected, rtol, atol)
            print("@@done " + json.dumps(dict(outcome, index=index, mode=mode)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
