"""Times ResNet-sized convolutions on the runtime's CPU backend (the conv kernel called directly)
against onnxruntime's CPU EP running the same Conv node, on the same machine and thread count.

    python tools/bench/conv_bench.py [--threads N] [--repeat R]

Each row: the layer, its GFLOP, the median time of R runs on each side and the max difference.
"""

from __future__ import annotations

import argparse
import time

import hipdnn_ep_runtime as rt
import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

# (name, N, C, H, W, M, kernel, stride, pad): ResNet-50 layers at batch 1, and its stem at batch 8
LAYERS = [
    ("stem 7x7/2", 1, 3, 224, 224, 64, 7, 2, 3),
    ("stem 7x7/2 batch 8", 8, 3, 224, 224, 64, 7, 2, 3),
    ("conv2 3x3", 1, 64, 56, 56, 64, 3, 1, 1),
    ("conv2 1x1 expand", 1, 64, 56, 56, 256, 1, 1, 0),
    ("conv4 3x3", 1, 256, 14, 14, 256, 3, 1, 1),
    ("conv5 3x3", 1, 512, 7, 7, 512, 3, 1, 1),
]


def _median_time(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads (the kernel uses one)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    state = rt.State(backend="cpu")
    rng = np.random.default_rng(0)
    print(f"{'layer':24} {'GFLOP':>6} {'runtime ms':>11} {'ORT ms':>8} {'ratio':>6} {'max diff':>9}")
    for name, n, c, h, w, m, k, s, p in LAYERS:
        x = rng.standard_normal((n, c, h, w)).astype(np.float32)
        wt = (rng.standard_normal((m, c, k, k)) * 0.05).astype(np.float32)
        b = rng.standard_normal(m).astype(np.float32)
        oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        geo = np.array([s, s, p, p, 1, 1], np.int64)
        y = np.empty((n, m, oh, ow), np.float32)

        def ours(x=x, wt=wt, b=b, geo=geo, y=y):
            rt._core.call_kernel(state, "hipdnn_ep_kernel_conv", [x, wt, b, geo], [y], [1], [])

        node = helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[p] * 4, strides=[s, s])
        graph = helper.make_graph([node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, y.shape)],
                                  [numpy_helper.from_array(wt, "w"), numpy_helper.from_array(b, "b")])
        so = ort.SessionOptions()
        so.intra_op_num_threads = args.threads
        sess = ort.InferenceSession(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
                                    .SerializeToString(), so, providers=["CPUExecutionProvider"])
        t_ours = _median_time(ours, args.repeat)
        t_ort = _median_time(lambda sess=sess, x=x: sess.run(None, {"x": x}), args.repeat)
        diff = float(np.abs(y - sess.run(None, {"x": x})[0]).max())
        gflop = 2 * n * m * oh * ow * c * k * k / 1e9
        print(f"{name:24} {gflop:6.2f} {t_ours * 1e3:11.1f} {t_ort * 1e3:8.1f} {t_ours / t_ort:6.2f} {diff:9.1e}")
    state.close()


if __name__ == "__main__":
    main()
