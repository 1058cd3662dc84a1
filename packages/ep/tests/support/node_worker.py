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
    if _onnx_type(want.dtype):  # bfloat16, float8: compared as the float values they hold
        got, want = got.astype(np.float64), want.astype(np.float64)
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


_WHOLE_BYTE_NARROW = (16, 17, 18, 19, 20)  # BFLOAT16, FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ


def _narrow_type(value) -> int:
    """The ONNX element type of a bfloat16 or float8 array (ml_dtypes, as onnx's test data holds them), which
    onnxruntime's numpy binding can neither feed nor return; 0 for anything else."""
    return _onnx_type(value.dtype) if isinstance(value, np.ndarray) else 0


def _onnx_type(dtype: np.dtype) -> int:
    """dtype's ONNX element type where it is one of _WHOLE_BYTE_NARROW, else 0."""
    from onnx import helper

    try:
        t = helper.np_dtype_to_tensor_dtype(dtype)
    except (KeyError, ValueError, TypeError):  # strings, objects
        return 0
    return t if t in _WHOLE_BYTE_NARROW else 0  # int4, float4 and the like would need packing


def _run_narrow(ort, sess, feeds: dict) -> list:
    """A run through OrtValues: narrow-typed feeds go in as their bit patterns with their ONNX type, and
    outputs of a type numpy cannot hold come back from their bytes (the outputs are in host memory)."""
    import ctypes

    from onnx import helper

    def value(v):
        t = _narrow_type(v)
        if t:
            return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(v.view(f"u{v.dtype.itemsize}"), t)
        return ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(v))

    outs = sess.run_with_ort_values(None, {k: value(v) for k, v in feeds.items()})
    got = []
    for o in outs:
        if o.element_type() not in _WHOLE_BYTE_NARROW:
            got.append(o.numpy())
            continue
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(o.element_type()))
        shape = tuple(o.shape())
        raw = ctypes.string_at(o.data_ptr(), int(np.prod(shape, dtype=np.int64)) * dtype.itemsize)
        got.append(np.frombuffer(raw, dtype=dtype).reshape(shape).copy())
    return got


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
        if any(_narrow_type(v) for v in [*feeds.values(), *expected]):
            got = _run_narrow(ort, sess, feeds)
        else:
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
