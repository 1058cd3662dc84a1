"""Run cases in a child process, so that a crash or a hang fails one case instead of killing pytest.

`Worker` starts this file as a script and sends it one JSON request per line; the child answers one
JSON line per request (on a private copy of its stdout: anything the libraries print goes to stderr).
A child that dies (a signal, an abort) or does not answer within the timeout is reported as
{"crash": ...} or {"hang": ...} and replaced by a fresh one for the next request.

Requests (every path is a file the caller wrote; feeds are an .npz keyed by input name):
  {"action": "artifact", "model": PATH, "feeds": NPZ, "out": NPZ, "workdir": DIR}
      compile with hipdnn-ep-compiler (once per model file content) and run on the runtime's CPU backend
  {"action": "ep", "model": PATH, "feeds": NPZ, "out": NPZ, "workdir": DIR}
      ONNX Runtime with the hipdnn-ep plugin, CPU fallback off
  {"action": "ort", "model": PATH, "feeds": NPZ, "out": NPZ}
      ONNX Runtime's CPU EP (the reference)
Answers: {"ok": true} with the outputs saved in order as out0, out1, ... in "out"; or {"ok": false,
"stage": "compile"|"session"|"run", "type": exception class, "clear": bool, "message": str}, where
"clear" says the exception is one of our error types (CompileError, HipdnnEpError) or ORT's.
"""

from __future__ import annotations

import hashlib
import json
import os
import selectors
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np


class Worker:
    """One child process at a time; `run` restarts it after a crash or a hang."""

    def __init__(self, timeout: float = 60.0):
        self.timeout = timeout
        self.proc: subprocess.Popen | None = None
        self.stderr = None
        self.restarts = 0

    def _start(self) -> None:
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr)

    def _stderr_tail(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")[-2000:]

    def _stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc.stdin.close()
            self.proc.stdout.close()
            self.stderr.close()
            self.proc = None

    def run(self, request: dict, timeout: float | None = None) -> dict:
        if self.proc is None:
            self._start()
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        ready = sel.select(self.timeout if timeout is None else timeout)
        sel.close()
        line = self.proc.stdout.readline() if ready else b""
        if line:
            return json.loads(line)
        if ready or self.proc.poll() is not None:
            self.proc.wait()
            answer = {"ok": False, "crash": self.proc.returncode, "stderr": self._stderr_tail()}
        else:
            answer = {"ok": False, "hang": self.timeout if timeout is None else timeout, "stderr": self._stderr_tail()}
        self._stop()
        self.restarts += 1
        return answer

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self._stop()


def load_outputs(path: str | Path) -> list[np.ndarray]:
    with np.load(path) as data:
        return [data[f"out{k}"] for k in range(len(data.files))]


# ---------------------------------------------------------------- the child

def _clear(exc: BaseException) -> bool:
    try:
        import hipdnn_ep_compiler as hc
        import hipdnn_ep_runtime as hr
    except ImportError:
        return False
    ort_errors = ()
    try:
        from onnxruntime.capi import onnxruntime_pybind11_state as ortstate

        ort_errors = (ortstate.Fail, ortstate.InvalidArgument, ortstate.InvalidGraph, ortstate.RuntimeException,
                      ortstate.NotImplemented, ortstate.NoSuchFile, ortstate.InvalidProtobuf)
    except ImportError:
        pass
    return isinstance(exc, (hc.CompileError, hr.HipdnnEpError, *ort_errors)) and bool(str(exc).strip())


class _Child:
    def __init__(self) -> None:
        self.compiled: dict[str, object] = {}  # model digest -> artifact path or the compile error answer
        self.state = None
        self.ep_devices = None

    def fail(self, stage: str, exc: BaseException) -> dict:
        return {"ok": False, "stage": stage, "type": type(exc).__name__, "clear": _clear(exc), "message": str(exc)}

    def feeds(self, path: str) -> dict[str, np.ndarray]:
        with np.load(path) as data:
            return {k: data[k] for k in data.files}

    def save(self, outputs, path: str) -> dict:
        np.savez(path, **{f"out{k}": np.asarray(o) for k, o in enumerate(outputs)})
        return {"ok": True}

    def artifact(self, req: dict) -> dict:
        import hipdnn_ep_compiler as hc
        import hipdnn_ep_runtime as hr

        data = Path(req["model"]).read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if digest not in self.compiled:
            out = Path(req["workdir"]) / f"artifact-{digest[:16]}"
            try:
                info = hc.compile_model(req["model"], out)
                self.compiled[digest] = (str(info.path), info.metadata)
            except Exception as exc:  # noqa: BLE001 - every failure is reported, classified by _clear
                self.compiled[digest] = self.fail("compile", exc)
        entry = self.compiled[digest]
        if isinstance(entry, dict):
            return entry
        path, metadata = entry
        feeds = self.feeds(req["feeds"])
        try:
            if self.state is None:
                self.state = hr.State(backend="cpu")
            args = [feeds[i["name"]] for i in metadata["inputs"]]
            weights = hc.load_weights(metadata, req["model"])
            outputs = hr.Artifact(path).run(self.state, list(args) + list(weights))
        except Exception as exc:  # noqa: BLE001
            return self.fail("run", exc)
        return self.save(outputs, req["out"])

    def ep(self, req: dict) -> dict:
        import hipdnn_ep
        import onnxruntime as ort

        if self.ep_devices is None:
            self.ep_devices = hipdnn_ep.register(ort)
        try:
            so = ort.SessionOptions()
            so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
            so.add_provider_for_devices(self.ep_devices, {"cache_dir": str(Path(req["workdir"]) / "ep-cache")})
            sess = ort.InferenceSession(req["model"], sess_options=so)
        except Exception as exc:  # noqa: BLE001
            return self.fail("session", exc)
        return self.run_session(sess, req)

    def ort(self, req: dict) -> dict:
        import onnxruntime as ort

        try:
            sess = ort.InferenceSession(req["model"], providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001
            return self.fail("session", exc)
        return self.run_session(sess, req)

    def run_session(self, sess, req: dict) -> dict:
        """Runs a created session on the request's feeds and saves the outputs."""
        try:
            outputs = sess.run(None, self.feeds(req["feeds"]))
        except Exception as exc:  # noqa: BLE001
            return self.fail("run", exc)
        return self.save(outputs, req["out"])


def _serve() -> None:
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what the libraries print must not mix with the answers
    child = _Child()
    for line in sys.stdin:
        req = json.loads(line)
        answer = getattr(child, req["action"])(req)
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    _serve()
