"""Runs one zoo model on ORT's reference EP and on hipdnn-ep (CPU fallback on, so a partly supported
model still runs) and measures what the EP claimed, how far its outputs are, and how long it took.

Claimed nodes come from ORT's own record of which EP each node went to (the graph ORT hands the EPs,
after its basic optimizations); the reasons for the rest from the EP's session log, which lists each
node it leaves to other EPs with the compiler's refusal."""

from __future__ import annotations

import os
import re
import statistics
import tempfile
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REFERENCE = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}
EP_NAME = "HipdnnEp"
# the EP's "nodes left to other EPs" log: one line per node, "  - node 'NAME' (OP): REASON"
REFUSAL = re.compile(r"^\s*- node '(?P<name>.*)' \((?P<op>[^)]*)\): (?P<reason>.*)$")
DTYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
          "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": np.bool_}


@dataclass
class Result:
    name: str
    note: str = ""
    claimed: int = 0
    total: int = 0
    unsupported: dict[str, int] = field(default_factory=dict)  # op type -> nodes left to other EPs
    reasons: dict[str, str] = field(default_factory=dict)  # op type -> the first refusal's reason
    max_abs: float | None = None
    max_rel: float | None = None  # max |EP - ref| / max |ref|, over the outputs
    ref_create_s: float | None = None
    ep_create_s: float | None = None
    ref_run_ms: float | None = None
    ep_run_ms: float | None = None
    error: str = ""
    tolerance: float | None = None  # the largest max_rel that passes; None: the error is shown, not checked

    def problems(self) -> list[str]:
        """Why the model fails the zoo's check (empty: it passes): it did not run, the EP did not claim every
        node, or its outputs are further from ORT's than its tolerance (NaN included)."""
        if self.error:
            return [self.error]
        found = []
        if not self.total or self.claimed != self.total:
            found.append(f"not whole: {self.claimed}/{self.total} claimed")
        if self.tolerance is not None and not (self.max_rel is not None and self.max_rel <= self.tolerance):
            rel = "-" if self.max_rel is None else f"{self.max_rel:.2g}"
            found.append(f"max rel {rel} > {self.tolerance:.2g}")
        return found


@contextmanager
def _stderr_to(path: Path):
    """Sends file descriptor 2 (where ORT and the EP log) to `path` for the block."""
    saved = os.dup(2)
    with open(path, "wb") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _feeds(session, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The stored inputs cast to what the session declares (an fp16 model takes fp16 images)."""
    return {i.name: inputs[i.name].astype(DTYPES.get(i.type, inputs[i.name].dtype)) for i in session.get_inputs()}


def _timed_runs(session, feeds: dict, runs: int) -> tuple[list[np.ndarray], float]:
    """Outputs of a warm-up run and the median of `runs` timed runs, in milliseconds."""
    outputs = session.run(None, feeds)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    return outputs, statistics.median(times)


def _errors(got: list[np.ndarray], want: list[np.ndarray]) -> tuple[float, float]:
    worst_abs = worst_rel = 0.0
    for g, w in zip(got, want, strict=True):
        if g.shape != w.shape:
            raise ValueError(f"an output has shape {g.shape} on the EP, {w.shape} on the reference")
        if not g.size:
            continue
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        diff = float(np.max(np.abs(g64 - w64)))
        worst_abs = max(worst_abs, diff)
        worst_rel = max(worst_rel, diff / max(float(np.max(np.abs(w64))), 1e-30))
    return worst_abs, worst_rel


def _claims(session, log: str, result: Result) -> None:
    ops: Counter[str] = Counter()
    by_name: dict[str, str] = {}
    for subgraph in session.get_provider_graph_assignment_info():
        for node in subgraph.get_nodes():
            result.total += 1
            if subgraph.ep_name == EP_NAME:
                result.claimed += 1
            else:
                op = f"{node.domain}.{node.op_type}" if node.domain not in ("", "ai.onnx") else node.op_type
                ops[op] += 1
                by_name[node.name] = op
    result.unsupported = dict(ops.most_common())
    for line in log.splitlines():
        m = REFUSAL.match(line)
        if m and m["name"] in by_name:
            result.reasons.setdefault(by_name[m["name"]], m["reason"])


def run_model(name: str, path: Path, inputs: dict[str, np.ndarray], backend: str = "cpu", runs: int = 5,
              note: str = "", tolerance: float | None = None) -> Result:
    import hipdnn_ep
    import onnxruntime as ort

    result = Result(name, note, tolerance=tolerance)
    start = time.perf_counter()
    ref = ort.InferenceSession(str(path), providers=[REFERENCE[backend]])
    result.ref_create_s = time.perf_counter() - start
    feeds = _feeds(ref, inputs)
    want, result.ref_run_ms = _timed_runs(ref, feeds, runs)

    so = ort.SessionOptions()
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    so.log_severity_level = 1  # INFO: the EP logs the nodes it leaves to other EPs, with the reason
    # cache off: every session compiles, so the creation time is a first-time user's
    so.add_provider_for_devices(hipdnn_ep.register(ort), {"backend": backend, "cache_enable": "0"})
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "session.log"
        try:
            with _stderr_to(log):
                start = time.perf_counter()
                session = ort.InferenceSession(str(path), sess_options=so)
                result.ep_create_s = time.perf_counter() - start
        finally:
            text = log.read_text(errors="replace")
    _claims(session, text, result)
    got, result.ep_run_ms = _timed_runs(session, feeds, runs)
    result.max_abs, result.max_rel = _errors(got, want)
    return result
