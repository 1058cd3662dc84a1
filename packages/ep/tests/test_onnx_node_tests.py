"""ONNX's own backend node tests (every case the onnx package ships) through ONNX Runtime, three
ways: ORT's CPU EP alone, this EP strictly (CPU fallback off) and this EP with fallback on.

* strict: among the cases the EP takes whole (the session is created), none may compute a wrong
  result or fail at run time; a case may be refused at session creation, with the EP's message
  naming the nodes it cannot run. No case may crash the process.
* fallback on: every case ORT's CPU EP passes still passes with the EP registered: a node the EP
  cannot run must go to the CPU EP, never break the session.

Cases run in worker processes (tests/support/node_worker.py), many per worker; a crash is
attributed to the case and mode that was running and the worker is restarted after it.
"""

from __future__ import annotations

import collections
import json
import os
import pickle
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from conftest import TESTS

WORKER = TESTS / "support" / "node_worker.py"
WORKERS = max(1, min(4, os.cpu_count() or 1))
# onnxruntime 1.23, the oldest the EP supports (nox -s tests runs this suite on it too): it asks the EP
# about a function op's body before inlining it, without its parent node, so SequenceMap cases fail at
# session creation there (see test_sessions.test_nodes_inside_a_function_body_are_left_to_other_eps);
# and fewer cases run whole on the EP (119 measured), so the share asserted there is lower.
ORT_1_23 = ort.__version__.startswith("1.23.")
KNOWN_ON_ORT_1_23 = ("test_sequence_map_",)


def _value(v):
    """A feed or expected output as onnxruntime takes and returns it."""
    if isinstance(v, onnx.TensorProto):
        return onnx.numpy_helper.to_array(v)
    if isinstance(v, list):
        return [_value(x) for x in v]
    return v


def _cases() -> list[tuple]:
    from onnx.backend.test.loader import load_model_tests

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # onnx's case generators warn about their own overflow cases
        tests = load_model_tests(kind="node")
    out = []
    for t in sorted(tests, key=lambda t: t.name):
        if not t.data_sets:
            continue
        inputs, expected = t.data_sets[0]
        out.append((t.name, t.model.SerializeToString(), [_value(v) for v in inputs],
                    [_value(v) for v in expected], t.rtol, t.atol))
    return out


def _run_worker(cases_file: Path, count: int, options: dict, log: Path) -> dict[tuple[int, str], dict]:
    """Runs the cases of one file to the end, restarting the worker after each crash."""
    results: dict[tuple[int, str], dict] = {}
    start = 0
    while start < count:
        proc = subprocess.Popen([sys.executable, str(WORKER), str(cases_file), str(start), json.dumps(options)],
                                stdout=subprocess.PIPE, stderr=open(log, "a"), text=True)  # noqa: SIM115
        running = None
        for line in proc.stdout:
            if line.startswith("@@start "):
                _, index, mode = line.split()
                running = (int(index), mode)
            elif line.startswith("@@done "):
                outcome = json.loads(line[len("@@done "):])
                results[(outcome["index"], outcome["mode"])] = outcome
                running = None
        proc.wait()
        if running is None:
            break
        results[running] = {"status": "crash", "detail": f"worker exited with {proc.returncode}"}
        start = running[0] + 1
    return results


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, dict]]:
    """{case name: {mode: outcome}} for every case."""
    work = tmp_path_factory.mktemp("node-tests")
    cases = _cases()
    options = {"cache_dir": str(work / "cache")}
    files = []
    for w in range(WORKERS):
        part = cases[w::WORKERS]
        path = work / f"cases-{w}.pickle"
        path.write_bytes(pickle.dumps(part))
        files.append((path, part))
    from concurrent.futures import ThreadPoolExecutor

    started = time.monotonic()
    with ThreadPoolExecutor(WORKERS) as pool:
        parts = list(pool.map(lambda f: (f[1], _run_worker(f[0], len(f[1]), options, work / "workers.log")), files))
    out: dict[str, dict[str, dict]] = collections.defaultdict(dict)
    for part, results in parts:
        for (index, mode), outcome in results.items():
            out[part[index][0]][mode] = outcome
    for name, *_ in cases:
        out.setdefault(name, {})
    out["__seconds__"] = {"wall": {"status": f"{time.monotonic() - started:.0f}"}}
    (work / "outcomes.json").write_text(json.dumps(out, indent=1))  # for a closer look after a failure
    return dict(out)


def _status(outcomes: dict, name: str, mode: str) -> str:
    return outcomes[name].get(mode, {"status": "not run"})["status"]


def _names(outcomes: dict) -> list[str]:
    return sorted(n for n in outcomes if not n.startswith("__"))


def _summary(outcomes: dict) -> str:
    names = _names(outcomes)
    rows = []
    for mode in ("cpu", "strict", "fallback"):
        counts = collections.Counter(_status(outcomes, n, mode) for n in names)
        rows.append(f"  {mode:<9}" + "".join(f"{k}={counts[k]:<6}" for k in
                                             ("pass", "wrong", "run_error", "refused", "session_error", "crash")))
    cpu_pass = [n for n in names if _status(outcomes, n, "cpu") == "pass"]
    kept = sum(_status(outcomes, n, "fallback") == "pass" for n in cpu_pass)
    claimed = sum(_status(outcomes, n, "strict") not in ("refused", "session_error") for n in names)
    return (f"ONNX node tests: {len(names)} cases in {outcomes['__seconds__']['wall']['status']} s "
            f"({WORKERS} workers)\n" + "\n".join(rows) +
            f"\n  strict: the EP takes {claimed} cases whole\n"
            f"  fallback on: {kept} of the {len(cpu_pass)} cases ORT's CPU EP passes still pass")


def _listing(outcomes: dict, names: list[str], mode: str) -> str:
    return "\n".join(f"{n}: {_status(outcomes, n, mode)}: {outcomes[n].get(mode, {}).get('detail', '')}"
                     for n in names[:40])


@pytest.mark.slow
def test_enough_cases_ran(outcomes, capsys) -> None:
    with capsys.disabled():
        print("\n" + _summary(outcomes))
    names = _names(outcomes)
    assert len(names) > 1000
    assert sum(_status(outcomes, n, "cpu") == "pass" for n in names) > 1000
    whole = 100 if ORT_1_23 else 200
    assert sum(_status(outcomes, n, "strict") == "pass" for n in names) > whole, "the EP takes a good share whole"


@pytest.mark.slow
def test_strict_claimed_cases_are_right(outcomes) -> None:
    """Fallback off: a case the EP takes computes the expected result; the others are refused at
    session creation by the EP, naming what it cannot run (or ORT itself cannot load them)."""
    names = _names(outcomes)
    bad = [n for n in names if _status(outcomes, n, "strict") in ("wrong", "run_error", "crash", "not run")]
    bad += [n for n in names if _status(outcomes, n, "strict") == "session_error"
            and _status(outcomes, n, "cpu") == "pass"]
    assert not bad, f"{len(bad)} cases:\n" + _listing(outcomes, bad, "strict")


@pytest.mark.slow
def test_fallback_keeps_every_case_the_cpu_ep_passes(outcomes) -> None:
    names = _names(outcomes)
    lost = [n for n in names if _status(outcomes, n, "cpu") == "pass" and _status(outcomes, n, "fallback") != "pass"]
    if ORT_1_23:
        lost = [n for n in lost if not n.startswith(KNOWN_ON_ORT_1_23)]
    assert not lost, f"{len(lost)} cases:\n" + _listing(outcomes, lost, "fallback")


def test_node_test_values_round_trip() -> None:
    """The harness compares what it should (sequences, optionals, exact types)."""
    sys.path.insert(0, str(WORKER.parent))
    try:
        from node_worker import _same
    finally:
        sys.path.pop(0)
    assert _same(np.ones(3, np.float32), np.ones(3, np.float32), 1e-3, 1e-7) == ""
    assert "values differ" in _same(np.ones(3, np.float32), np.zeros(3, np.float32), 1e-3, 1e-7)
    assert "element type" in _same(np.ones(3, np.float64), np.ones(3, np.float32), 1e-3, 1e-7)
    assert "shape" in _same(np.ones(2, np.float32), np.ones(3, np.float32), 1e-3, 1e-7)
    assert _same([np.ones(2)], [np.ones(2)], 1e-3, 1e-7) == ""
    assert "sequence" in _same(np.ones(2), [np.ones(2)], 1e-3, 1e-7)


def test_bfloat16_and_float8_cases_run_through_ort_values() -> None:
    """onnxruntime's numpy binding neither feeds nor returns bfloat16/float8: the harness feeds their bit
    patterns with their ONNX type and reads outputs from their bytes, and compares their values."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    sys.path.insert(0, str(WORKER.parent))
    try:
        from node_worker import _narrow_type, _run_narrow, _same
    finally:
        sys.path.pop(0)
    from onnx import TensorProto, helper

    e4m3 = np.array([1.0, -2.0, 448.0, np.nan], ml_dtypes.float8_e4m3fn)
    assert _narrow_type(e4m3) == TensorProto.FLOAT8E4M3FN and _narrow_type(np.ones(2, np.float32)) == 0
    assert _narrow_type(np.ones(2, ml_dtypes.float8_e5m2)) == TensorProto.FLOAT8E5M2  # numpy kind 'f', not 'V'
    assert _narrow_type(np.ones(2, ml_dtypes.int4)) == 0  # sub-byte types would need packing
    assert _same(e4m3, e4m3.copy(), 0, 0) == ""
    assert "values differ" in _same(e4m3, np.array([1.0, -2.0, 256.0, np.nan], ml_dtypes.float8_e4m3fn), 0, 0)
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"]), helper.make_node("Cast", ["x"], ["z"],
                                                                                           to=TensorProto.FLOAT)],
                              "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT8E4M3FN, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT8E4M3FN, [4]),
                               helper.make_tensor_value_info("z", TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    y, z = _run_narrow(ort, sess, {"x": e4m3})
    assert y.dtype == e4m3.dtype and _same(y, e4m3, 0, 0) == ""
    np.testing.assert_array_equal(z, e4m3.astype(np.float32))
