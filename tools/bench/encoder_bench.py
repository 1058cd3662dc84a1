"""BERT-base-shaped encoder in float16 on the GPU: hipdnn-ep's compiled program (kernels launched one
by one, and replayed from a captured graph) against PyTorch eager and PyTorch's CUDA-graph replay on
the same weights, and ONNX Runtime's CUDA EP when installed (with and without its CUDA graph).

    python tools/bench/encoder_bench.py --make DIR     where the compiler is: compile the fixed (seq 128)
                                                 and the dynamic encoder for the cuda backend
    python tools/bench/encoder_bench.py DIR            on the GPU machine: run, compare, print one table

The encoder: 12 layers, hidden 768, 12 heads, FFN 3072, batch 1, standard ONNX ops only (MatMul,
Add, Slice/Reshape/Transpose for the heads, Softmax with an additive mask from attention_mask,
LayerNormalization, erf-GELU), float16 throughout. The weights (85M parameters, 170 MB) never
travel: `encoder_weights` makes them from a seed with numpy on either machine, and the compiled
program takes them by name as its weight arguments. Every figure is one forward at sequence 128,
averaged over the timed runs after a warm-up, inputs and weights resident on the device.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
from gpu_timing import DeviceProgram, kernel_profile, print_kernel_profile, time_loop, time_torch_graph  # noqa: E402

LAYERS, HIDDEN, HEADS, FFN, SEQ = 12, 768, 12, 3072, 128


def encoder_weights(layers: int = LAYERS, seed: int = 0) -> dict[str, np.ndarray]:
    """Every initializer of the encoder, by name (numpy only, so the GPU machine makes the same ones)."""
    hd = HIDDEN // HEADS
    w: dict[str, np.ndarray] = {
        "scale": np.array(1.0 / np.sqrt(hd), np.float16), "one": np.array(1.0, np.float16),
        "big_neg": np.array(-1e4, np.float16), "sqrt2": np.array(np.sqrt(2.0), np.float16),
        "half": np.array(0.5, np.float16), "ax12": np.array([1, 2], np.int64), "ax_last": np.array([-1], np.int64),
        "i0": np.array([0], np.int64), "i1": np.array([1], np.int64), "step1": np.array([1], np.int64),
        "heads_hd": np.array([HEADS, hd], np.int64), "hid": np.array([HIDDEN], np.int64),
    }
    for k in range(3):
        w[f"st{k}"] = np.array([k * HIDDEN], np.int64)
        w[f"en{k}"] = np.array([(k + 1) * HIDDEN], np.int64)
    rng = np.random.default_rng(seed)

    def dense(k: int, n: int) -> np.ndarray:
        return (rng.standard_normal((k, n), np.float32) / np.sqrt(k)).astype(np.float16)

    for i in range(layers):
        w[f"l{i}.wqkv"], w[f"l{i}.bqkv"] = dense(HIDDEN, 3 * HIDDEN), (0.02 * rng.standard_normal(3 * HIDDEN)).astype(
            np.float16)
        w[f"l{i}.wo"], w[f"l{i}.w1"], w[f"l{i}.w2"] = dense(HIDDEN, HIDDEN), dense(HIDDEN, FFN), dense(FFN, HIDDEN)
        w[f"l{i}.ln1_s"], w[f"l{i}.ln1_b"] = np.ones(HIDDEN, np.float16), np.zeros(HIDDEN, np.float16)
        w[f"l{i}.ln2_s"], w[f"l{i}.ln2_b"] = np.ones(HIDDEN, np.float16), np.zeros(HIDDEN, np.float16)
    return w


def encoder_feeds(seq: int = SEQ, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    mask = np.ones((1, seq), np.int64)
    mask[:, seq - seq // 4:] = 0  # the last quarter is padding
    return {"x": rng.standard_normal((1, seq, HIDDEN), np.float32).astype(np.float16), "attention_mask": mask}


def encoder_model(weights: dict[str, np.ndarray], seq: int | str = "seq", layers: int = LAYERS):
    """The ONNX encoder (opset 17); `seq` an int for the fixed model, a name for the dynamic one."""
    from onnx import TensorProto as T
    from onnx import helper, numpy_helper

    n = helper.make_node
    nodes = [n("Shape", ["x"], ["xs"]), n("Gather", ["xs", "i0"], ["b"], axis=0),
             n("Gather", ["xs", "i1"], ["s"], axis=0),
             n("Concat", ["b", "s", "heads_hd"], ["split_shape"], axis=0),
             n("Concat", ["b", "s", "hid"], ["merge_shape"], axis=0),
             n("Unsqueeze", ["attention_mask", "ax12"], ["m4"]), n("Cast", ["m4"], ["mf"], to=T.FLOAT16),
             n("Sub", ["one", "mf"], ["inv"]), n("Mul", ["inv", "big_neg"], ["bias"])]
    h = "x"
    for i in range(layers):
        p = f"l{i}."
        nodes += [n("MatMul", [h, p + "wqkv"], [p + "qkv0"]), n("Add", [p + "qkv0", p + "bqkv"], [p + "qkv"])]
        for k, part in enumerate("qkv"):
            nodes += [n("Slice", [p + "qkv", f"st{k}", f"en{k}", "ax_last", "step1"], [p + part + "0"]),
                      n("Reshape", [p + part + "0", "split_shape"], [p + part + "1"])]
        nodes += [
            n("Transpose", [p + "q1"], [p + "qt"], perm=[0, 2, 1, 3]),
            n("Transpose", [p + "k1"], [p + "kt"], perm=[0, 2, 3, 1]),
            n("Transpose", [p + "v1"], [p + "vt"], perm=[0, 2, 1, 3]),
            n("MatMul", [p + "qt", p + "kt"], [p + "qk"]), n("Mul", [p + "qk", "scale"], [p + "qks"]),
            n("Add", [p + "qks", "bias"], [p + "scores"]), n("Softmax", [p + "scores"], [p + "probs"], axis=-1),
            n("MatMul", [p + "probs", p + "vt"], [p + "ctx"]),
            n("Transpose", [p + "ctx"], [p + "ctxt"], perm=[0, 2, 1, 3]),
            n("Reshape", [p + "ctxt", "merge_shape"], [p + "ctx2"]), n("MatMul", [p + "ctx2", p + "wo"], [p + "attn"]),
            n("Add", [h, p + "attn"], [p + "res"]),
            n("LayerNormalization", [p + "res", p + "ln1_s", p + "ln1_b"], [p + "ln"], axis=-1),
            n("MatMul", [p + "ln", p + "w1"], [p + "h0"]), n("Div", [p + "h0", "sqrt2"], [p + "h0s"]),
            n("Erf", [p + "h0s"], [p + "e"]), n("Add", [p + "e", "one"], [p + "e1"]),
            n("Mul", [p + "h0", p + "e1"], [p + "g0"]), n("Mul", [p + "g0", "half"], [p + "g"]),
            n("MatMul", [p + "g", p + "w2"], [p + "h2"]), n("Add", [p + "ln", p + "h2"], [p + "res2"]),
            n("LayerNormalization", [p + "res2", p + "ln2_s", p + "ln2_b"],
              ["last_hidden_state" if i == layers - 1 else p + "out"], axis=-1),
        ]
        h = p + "out"
    inits = [numpy_helper.from_array(v, k) for k, v in weights.items()]
    graph = helper.make_graph(nodes, "encoder", [
        helper.make_tensor_value_info("x", T.FLOAT16, [1, seq, HIDDEN]),
        helper.make_tensor_value_info("attention_mask", T.INT64, [1, seq])],
        [helper.make_tensor_value_info("last_hidden_state", T.FLOAT16, [1, seq, HIDDEN])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model


def make(folder: Path) -> int:
    import hipdnn_ep_compiler as hc
    import onnx

    weights = encoder_weights()
    for name, seq in (("encoder_fixed", SEQ), ("encoder_dynamic", "seq")):
        directory = folder / name
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / "model.onnx"
        onnx.save(encoder_model(weights, seq), path, save_as_external_data=True, location="model.weights")
        info = hc.compile_model(path, directory, backend="cuda")
        path.unlink()
        (directory / "model.weights").unlink()
        meta = info.metadata
        print(f"{name}: {len(meta['weights'])} weights, {len(meta['imports'])} imports -> {directory}")
    return 0


# ------------------------------------------------------------------ on the GPU machine

def run_ours(directory: Path, weights, feeds, runs: int, graphs: bool) -> tuple[float, np.ndarray, dict]:
    """ms per forward through hipdnn_ep_artifact_run (inputs and weights resident), with or without
    graph capture and replay; the output; the state's graph figures."""
    import hipdnn_ep_runtime as rt

    with rt.Artifact(directory) as artifact:
        names = [w["name"] for w in artifact.metadata["weights"]]
    arrays = [feeds["x"], feeds["attention_mask"]] + [weights[n] for n in names]
    with rt.State(backend="cuda", graph_capture=graphs) as st:
        program = DeviceProgram(directory, st, arrays)
        result = program.run_once()[0]
        ms = time_loop(program, st.synchronize, runs) * 1e3
        again = program.run_once()[0]  # a replay (when on) gives what the first run gave
        if not np.array_equal(again, result):
            raise AssertionError(f"{directory.name}: the output changed between runs (graphs {graphs})")
        stats = st.graph_stats()
        program.close()
    return ms, result, stats


def profile_ours(directory: Path, weights, feeds, runs: int) -> list[tuple[str, float, float]]:
    """Where one forward's device time goes, kernels launched one by one (gpu_timing.kernel_profile)."""
    import hipdnn_ep_runtime as rt

    with rt.Artifact(directory) as artifact:
        names = [w["name"] for w in artifact.metadata["weights"]]
    arrays = [feeds["x"], feeds["attention_mask"]] + [weights[n] for n in names]
    with rt.State(backend="cuda") as st:
        program = DeviceProgram(directory, st, arrays)

        def step():
            program()
            st.synchronize()

        kernels = kernel_profile(step, runs)
        program.close()
    return kernels


def run_torch(weights, feeds, runs: int) -> tuple[float, float, np.ndarray]:
    import torch

    w = {k: torch.from_numpy(np.array(v, order="C")).cuda() for k, v in weights.items() if v.dtype == np.float16}
    x = torch.from_numpy(feeds["x"]).cuda()
    mask = torch.from_numpy(feeds["attention_mask"]).cuda()
    s, hd = x.shape[1], HIDDEN // HEADS

    def forward():
        bias = (w["one"] - mask[:, None, None, :].half()) * w["big_neg"]
        h = x
        for i in range(LAYERS):
            p = f"l{i}."
            q, k, v = (h @ w[p + "wqkv"] + w[p + "bqkv"]).split(HIDDEN, dim=-1)
            q = q.view(1, s, HEADS, hd).transpose(1, 2)
            k = k.view(1, s, HEADS, hd).permute(0, 2, 3, 1)
            v = v.view(1, s, HEADS, hd).transpose(1, 2)
            probs = torch.softmax((q @ k) * w["scale"] + bias, -1)
            ctx = (probs @ v).transpose(1, 2).reshape(1, s, HIDDEN)
            ln = torch.nn.functional.layer_norm(h + ctx @ w[p + "wo"], (HIDDEN,), w[p + "ln1_s"], w[p + "ln1_b"])
            h0 = ln @ w[p + "w1"]
            g = h0 * (torch.erf(h0 / w["sqrt2"]) + w["one"]) * w["half"]
            h = torch.nn.functional.layer_norm(ln + g @ w[p + "w2"], (HIDDEN,), w[p + "ln2_s"], w[p + "ln2_b"])
        return h

    with torch.no_grad():
        ref = forward().cpu().numpy()
        eager = time_loop(forward, torch.cuda.synchronize, runs) * 1e3
        replay = time_torch_graph(forward, runs) * 1e3
    return eager, replay, ref


def run_ort_cuda(weights, feeds, runs: int, seq: int | str, cuda_graph: bool) -> tuple[float, np.ndarray] | str:
    """ms per forward of ONNX Runtime's CUDA EP with IO binding (inputs and output on the device),
    on the dynamic (`seq` a name) or fixed model, optionally with its own CUDA graph replay."""
    try:
        import onnx  # noqa: F401
        import onnxruntime as ort
    except ImportError as e:
        return f"not installed ({e.name})"
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        return f"onnxruntime {ort.__version__} has no CUDAExecutionProvider"
    model = encoder_model(weights, seq)
    options = {"enable_cuda_graph": "1"} if cuda_graph else {}
    try:
        sess = ort.InferenceSession(model.SerializeToString(), providers=[("CUDAExecutionProvider", options)])
        binding = sess.io_binding()
        for k, v in feeds.items():
            binding.bind_ortvalue_input(k, ort.OrtValue.ortvalue_from_numpy(v, "cuda", 0))
        out = ort.OrtValue.ortvalue_from_shape_and_type([1, SEQ, HIDDEN], np.float16, "cuda", 0)
        binding.bind_ortvalue_output("last_hidden_state", out)
        sess.run_with_iobinding(binding)  # (with a CUDA graph: captured here)
        sess.run_with_iobinding(binding)
        result = out.numpy()
        return time_loop(lambda: sess.run_with_iobinding(binding), lambda: None, runs) * 1e3, result
    except Exception as e:  # noqa: BLE001 - a peer that cannot run this configuration is a row, not a failure
        return f"failed: {str(e).splitlines()[0][:150]}"


def floor_ms(seq: int = SEQ) -> tuple[float, float]:
    """The encoder's floor on the H200: (one read of the weights at 4.25 TB/s, the matrix work at
    780 TFLOP/s), in ms; the larger of the two bounds a forward from below."""
    weights = sum(v.nbytes for v in encoder_weights().values())
    per_layer = 2 * seq * HIDDEN * (3 * HIDDEN + HIDDEN + 2 * FFN) + 2 * 2 * seq * seq * HIDDEN
    return weights / 4.25e12 * 1e3, LAYERS * per_layer / 780e12 * 1e3


def bench(folder: Path, runs: int, profile: bool = False) -> int:
    weights, feeds = encoder_weights(), encoder_feeds()
    eager, replay, ref = run_torch(weights, feeds, runs)
    scale = float(np.max(np.abs(ref)))
    rows = [("PyTorch eager (fp16)", eager, "reference"), ("PyTorch, one CUDA graph replayed", replay, "")]
    status = 0
    for name in ("encoder_fixed", "encoder_dynamic"):
        if not (folder / name / "program.so").exists():
            rows.append((f"hipdnn-ep {name}", None, f"no {folder / name}"))
            continue
        for graphs in (False, True):
            ms, out, stats = run_ours(folder / name, weights, feeds, runs, graphs)
            diff = float(np.max(np.abs(out.astype(np.float32) - ref.astype(np.float32))))
            ok = diff <= 0.05 * scale
            status |= 0 if ok else 1
            how = f"graph replay ({stats['replays']} replays)" if graphs else "kernels launched"
            rows.append((f"hipdnn-ep {name.split('_')[1]}, {how}", ms,
                         f"max|diff| vs torch {diff:.2e} (max|out| {scale:.1f}){'' if ok else ' MISMATCH'}"))
    ort_cases = (("dynamic", "seq", False), ("fixed", SEQ, False), ("fixed, its CUDA graph", SEQ, True))
    for label, seq, cuda_graph in ort_cases:
        ort_result = run_ort_cuda(weights, feeds, runs, seq, cuda_graph)
        if isinstance(ort_result, str):
            rows.append((f"onnxruntime CUDA EP ({label})", None, ort_result))
            continue
        ms, out = ort_result
        diff = float(np.max(np.abs(out.astype(np.float32) - ref.astype(np.float32))))
        rows.append((f"onnxruntime CUDA EP ({label}, io binding)", ms, f"max|diff| vs torch {diff:.2e}"))
    bytes_ms, flops_ms = floor_ms()
    print(f"BERT-base-shaped encoder: {LAYERS} layers, hidden {HIDDEN}, seq {SEQ}, batch 1, float16; ms per forward")
    print(f"floor: weights once {bytes_ms:.3f} ms (4.25 TB/s), matrix work {flops_ms:.3f} ms (780 TFLOP/s)")
    floor = max(bytes_ms, flops_ms)
    print(f"{'':48} {'ms':>8} {'vs eager':>9} {'vs graph':>9} {'x floor':>8}  note")
    for label, ms, note in rows:
        if ms is None:
            print(f"{label:48} {'-':>8} {'':>9} {'':>9} {'':>8}  {note}")
        else:
            print(f"{label:48} {ms:8.3f} {eager / ms:8.2f}x {replay / ms:8.2f}x {ms / floor:7.1f}x  {note}")
    if profile and (folder / "encoder_fixed" / "program.so").exists():
        print_kernel_profile("encoder_fixed, kernels launched one by one",
                             profile_ours(folder / "encoder_fixed", weights, feeds, 10))
    return status


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path)
    p.add_argument("--make", action="store_true", help="compile the encoders into FOLDER (needs the compiler)")
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--profile", action="store_true", help="also print the device time of each kernel of a forward")
    args = p.parse_args(argv)
    return make(args.folder) if args.make else bench(args.folder, args.runs, args.profile)


if __name__ == "__main__":
    raise SystemExit(main())
