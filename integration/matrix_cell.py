"""One cell of the compatibility matrix, run by integration/matrix inside the cell's own virtual
environment (one hipdnn-ep, one hipdnn-ep-compiler, one hipdnn-ep-runtime, onnxruntime).

    python matrix_cell.py run  --out DIR [--backend cpu|cuda] [--runtime-library PATH] [--from-context DIR]
    python matrix_cell.py load --out DIR [--backend ...] PRODUCER_DIR ...

``run`` sends dynamic- and fixed-shape models through onnxruntime with the EP (CPU fallback off, so
the EP must take every node) and compares every output with ORT's CPU EP; feeds a shape a model
refuses and expects a clear refusal; and writes EPContext models (code embedded) into DIR for other
cells to load (the refused model's too). With ``--from-context DIR`` (the offline leg, on a machine
that cannot compile) ``run`` runs instead the EPContext models that the same combination wrote into
DIR on another machine, each against ORT's CPU EP on its original model, and the refused feed on
the refused model's. ``load`` runs the EPContext models other cells wrote. Each test is reported as
``pass``, ``refused`` (a clear hipdnn-ep refusal: the message names what is wrong and the fix) or
``fail`` (a wrong result, an unclear error, a link error or undefined symbol); the result is one
JSON object on the last line of stdout. A crash shows as the process dying, which the matrix
reports. Only the public APIs every released version has are used here.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools" / "models"))
from models import attention_feeds, attention_model, shape_chain_model  # noqa: E402

# The ONNX IR version the models are saved with: one every onnxruntime the EP supports reads (1.23 reads up
# to 11), so that models written here also load on a machine with an older onnxruntime (the offline leg).
IR_VERSION = 10
ABI_TROUBLE = ("undefined symbol", "symbol lookup error", "cannot open shared object", "Segmentation", "core dumped")
CLEAR = ("Fix:", "refused its inputs", "hipdnn-ep")


def classify(message: str) -> str:
    """`refused` for a clear refusal of ours, `fail` for anything else (never a raw linker error)."""
    if any(t in message for t in ABI_TROUBLE):
        return "fail"
    return "refused" if any(t in message for t in CLEAR) else "fail"


def _close(got: list[np.ndarray], want: list[np.ndarray]) -> str:
    """'' when every output matches ORT's CPU EP, else what differs."""
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        if g.shape != w.shape:
            return f"output {k}: shape {g.shape}, ORT's CPU EP gives {w.shape}"
        tol = 1e-4 * max(1.0, float(np.max(np.abs(w))) if w.size else 1.0)
        if not np.allclose(g, w, rtol=1e-4, atol=tol):
            return f"output {k}: max abs difference {float(np.max(np.abs(g - w))):.3g} (tolerance {tol:.3g})"
    return ""


def save(model: onnx.ModelProto, path: Path) -> None:
    """Saves a model with an IR version every supported onnxruntime reads (IR_VERSION at most)."""
    model.ir_version = min(model.ir_version, IR_VERSION)
    onnx.save(model, path)


def restamp(ctx: Path, source: Path) -> None:
    """ORT stamps an EPContext model with the newest IR version it knows, which an older onnxruntime refuses
    although nothing in the model needs it (written by 1.32, refused by 1.30): give it its source's back."""
    written, source_ir = onnx.load(ctx), onnx.load(source, load_external_data=False).ir_version
    if written.ir_version > source_ir:
        written.ir_version = source_ir
        onnx.save(written, ctx)


def _x(batch: int, seq: int) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(batch * 31 + seq).standard_normal((batch, seq, 8)).astype(np.float32)}


def _fixed(model: onnx.ModelProto, dims: dict[str, int]) -> onnx.ModelProto:
    model = onnx.ModelProto.FromString(model.SerializeToString())
    for value in (*model.graph.input, *model.graph.output):
        for d in value.type.tensor_type.shape.dim:
            if d.dim_param in dims:
                d.dim_value = dims[d.dim_param]
    return model


def _reshape_4x2() -> onnx.ModelProto:
    """x[N] -> Reshape to a constant [4, 2] -> Relu: a feed of 6 elements must be refused, 8 runs."""
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Reshape", ["x", "s"], ["r"], name="r"),
                           helper.make_node("Relu", ["r"], ["y"], name="relu")], "reshape",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["?", "?"])],
                          [helper.make_tensor("s", TensorProto.INT64, [2], [4, 2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


# name -> (model, the feeds to run it with); shapes are (batch, seq)
def _models() -> dict[str, tuple[str, onnx.ModelProto, list[dict[str, np.ndarray]]]]:
    shapes = [(1, 1), (2, 9), (3, 32)]
    return {
        "dynamic_encoder": ("dynamic", attention_model(), [attention_feeds(b, s) for b, s in shapes]),
        "dynamic_shape_chain": ("dynamic", shape_chain_model(), [_x(b, s) for b, s in shapes]),
        "fixed_encoder": ("fixed", attention_model(2, 16), [attention_feeds(2, 16)]),
        "fixed_shape_chain": ("fixed", _fixed(shape_chain_model(), {"batch": 2, "seq": 5, "rows": 10}),
                              [_x(2, 5)]),
    }


class Cell:
    def __init__(self, out: Path, backend: str, runtime_library: str | None):
        import hipdnn_ep
        import onnxruntime as ort

        self.ort = ort
        self.out = out
        self.out.mkdir(parents=True, exist_ok=True)
        self.options = {"backend": backend, "cache_dir": str(out / "cache")}
        if runtime_library:
            self.options["runtime_library"] = runtime_library
        devices = hipdnn_ep.register(ort)
        if backend != "cpu":  # the GPU the factory offers (with a GPU runtime it offers the CPU too)
            devices = [d for d in devices if d.device.type == ort.OrtHardwareDeviceType.GPU] or devices
        self.devices = devices
        self.results: dict[str, dict] = {}

    def session(self, model_path: Path, config: dict[str, str] | None = None, **options: str):
        so = self.ort.SessionOptions()
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        for k, v in (config or {}).items():
            so.add_session_config_entry(k, v)
        so.add_provider_for_devices(self.devices, {**self.options, **options})
        return self.ort.InferenceSession(str(model_path), sess_options=so)

    def reference(self, model_path: Path, feeds: dict) -> list[np.ndarray]:
        sess = self.ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
        return sess.run(None, feeds)

    def record(self, name: str, fn) -> None:
        try:
            problem = fn()
            self.results[name] = {"outcome": "fail" if problem else "pass", "message": problem or ""}
        except Exception as exc:  # noqa: BLE001 - every error is a result to classify
            message = f"{type(exc).__name__}: {exc}"
            self.results[name] = {"outcome": classify(message), "message": message[-1500:]}
            if self.results[name]["outcome"] == "fail":
                self.results[name]["traceback"] = traceback.format_exc()[-3000:]

    def check_model(self, path: Path, feeds_list: list[dict], **options: str) -> str:
        sess = self.session(path, **options)
        for feeds in feeds_list:
            problem = _close(sess.run(None, feeds), self.reference(path, feeds))
            if problem:
                return problem
        return ""

    def run(self) -> None:
        for name, (kind, model, feeds_list) in _models().items():
            path = self.out / f"{name}.onnx"
            save(model, path)
            self.record(f"{kind}:{name}", lambda p=path, f=feeds_list: self.check_model(p, f))
            ctx = self.out / f"{name}_ctx.onnx"
            self.record(f"epcontext-write:{name}", lambda p=path, c=ctx, f=feeds_list: self.write_context(p, c, f))
        path = self.out / "refusal.onnx"
        save(_reshape_4x2(), path)
        self.record("dynamic:refuses_a_bad_feed", lambda: self.refuses(path))
        ctx = self.out / "refusal_ctx.onnx"
        self.record("epcontext-write:refusal", lambda: self.write_context(path, ctx, []))

    def run_contexts(self, written: Path) -> None:
        """`run` from EPContext models the same combination wrote elsewhere (`written`)."""
        for name, (kind, _, feeds_list) in _models().items():
            ctx, original = written / f"{name}_ctx.onnx", written / f"{name}.onnx"
            self.record(f"{kind}:{name}", lambda c=ctx, o=original, f=feeds_list: self.check_context(c, o, f))
        self.record("dynamic:refuses_a_bad_feed",
                    lambda: self.refuses(written / "refusal_ctx.onnx", written / "refusal.onnx",
                                         trust_ep_context_code="1"))

    def write_context(self, model: Path, ctx: Path, feeds_list: list[dict]) -> str:
        config = {"ep.context_enable": "1", "ep.context_embed_mode": "1", "ep.context_file_path": str(ctx)}
        self.session(model, config)
        if not ctx.exists():
            return f"no EPContext model written to {ctx.name}"
        restamp(ctx, model)
        return ""

    def refuses(self, path: Path, original: Path | None = None, **options: str) -> str:
        sess = self.session(path, **options)
        try:
            sess.run(None, {"x": np.arange(6, dtype=np.float32)})
        except Exception as exc:  # noqa: BLE001
            message = str(exc)
            if "refused its inputs" not in message or "has 8" not in message:
                return f"unclear refusal of a 6-element feed: {message[-600:]}"
        else:
            return "a 6-element feed reshaped to [4, 2] was accepted"
        return _close(sess.run(None, {"x": np.arange(8, dtype=np.float32) - 3}),
                      self.reference(original or path, {"x": np.arange(8, dtype=np.float32) - 3}))

    def load(self, producers: list[Path]) -> None:
        models = _models()
        for producer in producers:
            for name, (_, _, feeds_list) in models.items():
                ctx = producer / f"{name}_ctx.onnx"
                if not ctx.exists():
                    continue
                original = producer / f"{name}.onnx"
                self.record(f"epcontext-load:{producer.name}:{name}",
                            lambda c=ctx, o=original, f=feeds_list: self.check_context(c, o, f))

    def check_context(self, ctx: Path, original: Path, feeds_list: list[dict]) -> str:
        if not ctx.exists():
            return f"no EPContext model {ctx.name} in {ctx.parent}"
        sess = self.session(ctx, trust_ep_context_code="1")
        for feeds in feeds_list:
            problem = _close(sess.run(None, feeds), self.reference(original, feeds))
            if problem:
                return problem
        return ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=("run", "load"))
    ap.add_argument("producers", nargs="*", type=Path, help="load: folders other cells wrote with run")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--runtime-library", help="the EP's runtime_library option (a replayed runtime)")
    ap.add_argument("--from-context", type=Path, help="run: the EPContext models this combination wrote elsewhere")
    args = ap.parse_intermixed_args(argv)
    try:
        cell = Cell(args.out, args.backend, args.runtime_library)
    except Exception as exc:  # noqa: BLE001 - registration itself may be what is refused
        message = f"{type(exc).__name__}: {exc}"
        print(json.dumps({"setup": {"outcome": classify(message), "message": message[-1500:]}}))
        return 0
    if args.action == "run" and args.from_context:
        cell.run_contexts(args.from_context)
    elif args.action == "run":
        cell.run()
    else:
        cell.load(args.producers)
    print(json.dumps(cell.results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
