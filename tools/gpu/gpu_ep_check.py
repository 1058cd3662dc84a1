"""End-to-end: EPContext models (compiled ahead of time) run by the EP on the GPU through ONNX
Runtime, compared with ORT's CPU EP on the source models, fixed and dynamic shapes.

    python tools/gpu/gpu_ep_check.py --make DIR   where the compiler is: NAME.onnx + NAME_ctx.onnx pairs
    python tools/gpu/gpu_ep_check.py DIR          on the GPU machine: run and compare them

--make writes the models with IR version 10 (older ORT reads them) and compiles each into an
EPContext model with the artifact embedded (`hipdnn-ep compile --embed`). The check needs the GPU
device that ORT discovered and the EP offered (the runtime can drive it), and the option
trust_ep_context_code=1 (the artifacts were compiled elsewhere). It prints one line per model and
shape (each shape run four times, so that the EP captures it into a graph and replays it, the last
time with new values, with graph_capture on and off), then per-Run latencies against ORT's CPU EP,
and exits 1 on a mismatch. It also checks, from the session's log, that each compiled node ran on
the stream ONNX Runtime created through the EP's factory (OrtSyncStreamImpl), with graph_capture on
and off, and that a gather index out of range found on the device fails the Run with the runtime's
message (the Run's wait on ORT's stream reports it).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from pathlib import Path

import hipdnn_ep
import numpy as np
import onnxruntime as ort

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("models", "gpu")]
import models  # noqa: E402

SHAPES = {"attention_dynamic": [(1, 1), (2, 7), (1, 128), (3, 33)], "attention_seq128": [(1, 128)],
          "three_node": [(1, 64)]}


def make(folder: Path) -> int:
    import subprocess

    import onnx

    folder.mkdir(parents=True, exist_ok=True)
    from gpu_artifacts import embedding_model, three_node_model

    sources = {"attention_dynamic": models.attention_model(hidden=64, heads=4),
               "attention_seq128": models.attention_model(batch=1, seq=128, hidden=64, heads=4),
               "three_node": three_node_model(), "embedding_dynamic": embedding_model()}
    for name, model in sources.items():
        model.ir_version = 10
        onnx.save(model, folder / f"{name}.onnx")
        (folder / f"{name}_ctx.onnx").unlink(missing_ok=True)  # ORT refuses to overwrite one
        subprocess.run([sys.executable, "-m", "hipdnn_ep.cli", "compile", str(folder / f"{name}.onnx"), "--embed",
                        "-o", str(folder / f"{name}_ctx.onnx")], check=True)
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--make"]:
        return make(Path(argv[1]))
    folder = Path(argv[0])
    devices = hipdnn_ep.register(ort)
    gpus = [d for d in devices if d.device.type == ort.OrtHardwareDeviceType.GPU]
    print("EP devices:", [(d.device.type.name, dict(d.ep_metadata)) for d in devices])
    if not gpus:
        print("no GPU device offered by the EP")
        return 1
    failed = not stream_check(folder, gpus)
    failed |= not data_check(folder, gpus)
    for name, shapes in SHAPES.items():
        ctx = folder / f"{name}_ctx.onnx"
        if not ctx.exists():
            continue

        def session(graphs: str, ctx: Path = ctx) -> ort.InferenceSession:
            so = ort.SessionOptions()
            so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
            so.add_provider_for_devices(gpus[:1], {"trust_ep_context_code": "1", "graph_capture": graphs})
            return ort.InferenceSession(str(ctx), sess_options=so)

        sessions = {"hipdnn-ep GPU, graphs": session("1"), "hipdnn-ep GPU, no graphs": session("0")}
        reference = ort.InferenceSession(str(folder / f"{name}.onnx"), providers=["CPUExecutionProvider"])
        for batch, seq in shapes:
            # run 1 plain, run 2 captured, runs 3 and 4 replayed, run 4 with new values
            for k in range(4):
                feeds = feeds_for(name, batch, seq, seed=batch + seq + (100 if k == 3 else 0))
                want = reference.run(None, feeds)[0]
                for label, sess in sessions.items():
                    got = sess.run(None, feeds)[0]
                    err = float(np.max(np.abs(got - want)))
                    ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-4)
                    failed |= not ok
                    if k in (0, 3) or not ok:
                        print(f"{name:20} batch={batch} seq={seq:<4} run {k + 1} {label:26} "
                              f"max|diff|={err:.2e} {'ok' if ok else 'MISMATCH'}")
        feeds = feeds_for(name, *shapes[-1], seed=0)
        for label, sess in (*sessions.items(), ("ORT CPU EP", reference)):
            for _ in range(20):
                sess.run(None, feeds)
            start = time.perf_counter()
            for _ in range(500):
                sess.run(None, feeds)
            print(f"{name:20} {label:26} {(time.perf_counter() - start) / 500 * 1e6:8.1f} us/Run {shapes[-1]}")
    return 1 if failed else 0


STREAM_NOTE = re.compile(r"node '[^']+' runs on (ONNX Runtime's stream 0x[0-9a-f]+, created by hipdnn-ep|[^\n]+)")


def stream_check(folder: Path, gpus: list) -> bool:
    """Each compiled node says once, at info level, which stream it runs on: ORT's, created by our factory."""
    ok = True
    for name in ("three_node", "attention_dynamic"):
        ctx = folder / f"{name}_ctx.onnx"
        if not ctx.exists():
            continue
        for graphs in ("1", "0"):
            so = ort.SessionOptions()
            so.log_severity_level = 1  # info: the stream note
            so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
            so.add_provider_for_devices(gpus[:1], {"trust_ep_context_code": "1", "graph_capture": graphs})
            feeds = feeds_for(name, 2, 7, seed=5)
            want = ort.InferenceSession(str(folder / f"{name}.onnx"), providers=["CPUExecutionProvider"]).run(
                None, feeds)[0]
            with tempfile.TemporaryFile() as log:
                saved = os.dup(2)
                os.dup2(log.fileno(), 2)  # ORT's default log sink is stderr
                try:
                    sess = ort.InferenceSession(str(ctx), sess_options=so)
                    got = [sess.run(None, feeds)[0] for _ in range(3)]  # plain, captured, replayed
                finally:
                    os.dup2(saved, 2)
                    os.close(saved)
                log.seek(0)
                notes = STREAM_NOTE.findall(log.read().decode(errors="replace"))
            match = all(np.allclose(g, want, rtol=1e-4, atol=1e-4) for g in got)
            on_ours = bool(notes) and all(n.endswith("created by hipdnn-ep") for n in notes)
            ok &= match and on_ours
            verdict = "passed" if match and on_ours else "FAILED"
            print(f"{name:20} graph_capture={graphs} stream: {notes or 'no stream note in the log'} "
                  f"results {'match' if match else 'MISMATCH'}: stream check {verdict}")
    return ok


def data_check(folder: Path, gpus: list) -> bool:
    """A gather index out of range, found on the device, fails the Run at its wait on ORT's stream
    (with the runtime's message), captured or not; the next Run with good ids is right again."""
    ctx = folder / "embedding_dynamic_ctx.onnx"
    if not ctx.exists():
        return True
    reference = ort.InferenceSession(str(folder / "embedding_dynamic.onnx"), providers=["CPUExecutionProvider"])
    good = {"ids": np.random.default_rng(3).integers(0, 50, (2, 9), dtype=np.int64)}
    bad = {"ids": good["ids"].copy()}
    bad["ids"][1, 4] = 50  # the table has 50 rows
    want = reference.run(None, good)[0]
    ok = True
    for graphs in ("1", "0"):
        so = ort.SessionOptions()
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        so.add_provider_for_devices(gpus[:1], {"trust_ep_context_code": "1", "graph_capture": graphs})
        sess = ort.InferenceSession(str(ctx), sess_options=so)
        before = all(np.allclose(sess.run(None, good)[0], want, rtol=1e-5, atol=1e-6) for _ in range(3))
        try:
            sess.run(None, bad)
            error = "no error"
        except Exception as e:  # noqa: BLE001 - onnxruntime raises its own exception types
            error = str(e)
        refused = "hipdnn_ep_kernel_gather: index 50 at position" in error
        after = np.allclose(sess.run(None, good)[0], want, rtol=1e-5, atol=1e-6)
        ok &= before and refused and after
        said = error[error.find("hipdnn_ep_kernel_gather"):][:70] if refused else "NOT REFUSED: " + error[:200]
        verdict = "passed" if before and refused and after else "FAILED"
        print(f"embedding_dynamic    graph_capture={graphs} good ids {'match' if before else 'MISMATCH'}; "
              f"bad id: {said}; good again {'match' if after else 'MISMATCH'}: data check {verdict}")
    return ok


def feeds_for(name: str, batch: int, seq: int, seed: int) -> dict[str, np.ndarray]:
    if name == "three_node":
        return {"x": np.random.default_rng(seed).standard_normal((1, 64)).astype(np.float32)}
    return models.attention_feeds(batch, seq, hidden=64, seed=seed)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
