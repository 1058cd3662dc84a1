"""Seeded fuzzing of compile-and-run: mutated small models and bad feeds, against ORT's CPU EP.

Each case compiles a model with hipdnn-ep-compiler (once per model) and runs one feed on the
runtime's CPU backend, in a child process (isolated.py), and asks ORT's CPU EP the same.  What may
happen: a clear refusal (one of our error types, with a message), or outputs equal to ORT's (same
shape, dtype and values).  What must not: a crash, a hang, an internal error, an accepted feed that
ORT refuses, or a silently different shape.

Models are a few small graphs of the ops whose shapes a model or a feed controls (Reshape, Expand,
Slice, Gather, Concat, Transpose, Squeeze, Unsqueeze, broadcasting), mutated: constants, dims,
attributes, element types, wiring, op types, truncated or garbled protobuf bytes.  Feeds: valid,
wrong rank, wrong dim, wrong dtype, empty, extreme integer values.  `--fuzz-seed` and
`--fuzz-models` (integration/conftest.py) choose the cases; a failure names the seed and the case.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import numpy as np
import onnx
import pytest
from isolated import Worker, load_outputs
from onnx import TensorProto, helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64
INTERESTING = [-(2**63), -(2**40), -3, -2, -1, 0, 1, 2, 3, 4, 5, 7, 2**31, 2**40, 2**62, 2**63 - 1]
DTYPES = [F, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.INT32, I64, TensorProto.BOOL, TensorProto.INT8]
NUMPY = {F: np.float32, TensorProto.FLOAT16: np.float16, TensorProto.DOUBLE: np.float64,
         TensorProto.INT32: np.int32, I64: np.int64, TensorProto.BOOL: np.bool_, TensorProto.INT8: np.int8,
         TensorProto.UINT8: np.uint8}
SWAPS = [{"Relu", "Sigmoid", "Tanh", "Neg", "Exp", "Identity"}, {"Add", "Sub", "Mul", "Div"},
         {"Squeeze", "Unsqueeze"}, {"ReduceSum", "ReduceMean", "ReduceMax"}, {"Reshape", "Expand"}]


def _vi(name, dims, dtype=F):
    return helper.make_tensor_value_info(name, dtype, dims)


def _c(name, values):
    return helper.make_tensor(name, I64, [len(values)], values)


def _m(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "fuzz", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def base_models() -> dict[str, onnx.ModelProto]:
    n = helper.make_node
    return {
        "reshape": _m([n("Reshape", ["x", "s"], ["r"]), n("Relu", ["r"], ["y"])],
                      [_vi("x", ["N", 4])], [_vi("y", ["A", 2])], [_c("s", [-1, 2])]),
        "reshape_fed": _m([n("Reshape", ["x", "s"], ["y"])], [_vi("x", ["N", 6]), _vi("s", [2], I64)],
                          [_vi("y", ["A", "B"])]),
        "transpose_reshape": _m([n("Transpose", ["x"], ["t"], perm=[0, 2, 1]), n("Reshape", ["t", "s"], ["y"])],
                                [_vi("x", ["B", "S", 4])], [_vi("y", ["B", "C"])], [_c("s", [0, -1])]),
        "gather": _m([n("Gather", ["x", "i"], ["y"], axis=0)], [_vi("x", ["N", 3]), _vi("i", ["K"], I64)],
                     [_vi("y", ["K", 3])]),
        "slice_add": _m([n("Slice", ["x", "st", "en", "ax", "sp"], ["s"]), n("Add", ["s", "z"], ["y"])],
                        [_vi("x", ["N", "M"]), _vi("z", ["P", "Q"])], [_vi("y", ["P", "Q"])],
                        [_c("st", [1, 0]), _c("en", [-1, 100]), _c("ax", [0, 1]), _c("sp", [1, 2])]),
        "concat_softmax": _m([n("Concat", ["x", "z"], ["c"], axis=0), n("Softmax", ["c"], ["y"], axis=-1)],
                             [_vi("x", ["N", 4]), _vi("z", ["M", 4])], [_vi("y", ["K", 4])]),
        "expand": _m([n("Expand", ["x", "s"], ["y"])], [_vi("x", ["N", 1])], [_vi("y", [3, "N", 4])],
                     [_c("s", [3, 1, 4])]),
        "squeeze_unsqueeze": _m([n("Squeeze", ["x", "a"], ["q"]), n("Unsqueeze", ["q", "b"], ["y"])],
                                [_vi("x", ["N", 1, 4])], [_vi("y", ["N", 4, 1])], [_c("a", [1]), _c("b", [2])]),
        "shape_chain": _m([n("Shape", ["x"], ["sh"]), n("Gather", ["sh", "k"], ["d"], axis=0),
                           n("Unsqueeze", ["d", "z0"], ["du"]), n("Concat", ["du", "m1"], ["tgt"], axis=0),
                           n("Reshape", ["x", "tgt"], ["r"]), n("ReduceSum", ["r", "ax"], ["y"], keepdims=0)],
                          [_vi("x", ["B", "S", 4])], [_vi("y", ["B"])],
                          [helper.make_tensor("k", I64, [], [0]), _c("z0", [0]),
                           _c("m1", [-1]), _c("ax", [1])]),
        "where_broadcast": _m([n("Greater", ["x", "z"], ["c"]), n("Where", ["c", "x", "z"], ["y"])],
                              [_vi("x", ["N", 1]), _vi("z", [1, "M"])], [_vi("y", ["N", "M"])]),
        "matmul_batched": _m([n("MatMul", ["x", "z"], ["y"])], [_vi("x", ["B", "N", "K"]), _vi("z", ["K", "M"])],
                             [_vi("y", ["B", "N", "M"])]),
        "gemm_layernorm": _m([n("Gemm", ["x", "w", "b"], ["g"], transB=1),
                              n("LayerNormalization", ["g", "sc", "bi"], ["y"], axis=-1, epsilon=1e-5)],
                             [_vi("x", ["N", 4])], [_vi("y", ["N", 3])],
                             [helper.make_tensor("w", F, [3, 4], np.linspace(-1, 1, 12).tolist()),
                              helper.make_tensor("b", F, [3], [0.1, 0.2, 0.3]),
                              helper.make_tensor("sc", F, [3], [1.0, 0.5, 2.0]),
                              helper.make_tensor("bi", F, [3], [0.0, 0.1, -0.1])]),
        "cast_reduce": _m([n("Cast", ["x"], ["c"], to=F), n("ReduceMax", ["c", "ax"], ["r"], keepdims=1),
                           n("Sub", ["c", "r"], ["y"])],
                          [_vi("x", ["N", "M"], TensorProto.INT32)], [_vi("y", ["N", "M"])], [_c("ax", [1])]),
        "matmul_bias": _m([n("MatMul", ["x", "w"], ["m"]), n("Add", ["m", "b"], ["y"])],
                          [_vi("x", ["N", 4])], [_vi("y", ["N", 3])],
                          [helper.make_tensor("w", F, [4, 3], np.linspace(-1, 1, 12).tolist()),
                           helper.make_tensor("b", F, [3], [0.5, -0.5, 0.25])]),
    }


# ---------------------------------------------------------------- mutations


def _mutate(rng: np.random.Generator, model: onnx.ModelProto) -> tuple[onnx.ModelProto | bytes, str]:
    """One or two mutations; returns the model (or raw bytes, for damaged protobufs) and what changed."""
    m = copy.deepcopy(model)
    what = []
    for _ in range(int(rng.integers(1, 3))):
        kind = str(rng.choice(["const", "const", "dim", "attr", "dtype", "wire", "op", "bytes"]))
        g = m.graph
        if kind == "const":
            ints = [t for t in g.initializer if t.data_type == I64 and t.int64_data]
            if not ints:
                continue
            t = ints[int(rng.integers(len(ints)))]
            k = int(rng.integers(len(t.int64_data)))
            t.int64_data[k] = int(rng.choice(INTERESTING))
            what.append(f"const {t.name}[{k}]={t.int64_data[k]}")
        elif kind == "dim":
            vi = g.input[int(rng.integers(len(g.input)))]
            dims = vi.type.tensor_type.shape.dim
            if not dims:
                continue
            d = dims[int(rng.integers(len(dims)))]
            choice = rng.choice([0, 1, 2, 3, 5, 2**31, 2**40, -1])
            if choice < 0:
                d.dim_param = "Z"
                what.append(f"dim {vi.name} -> Z")
            else:
                d.dim_value = int(choice)
                what.append(f"dim {vi.name} -> {int(choice)}")
        elif kind == "attr":
            attrs = [(nd, a) for nd in g.node for a in nd.attribute if a.type in (onnx.AttributeProto.INT,
                                                                                 onnx.AttributeProto.INTS)]
            if not attrs:
                continue
            nd, a = attrs[int(rng.integers(len(attrs)))]
            v = int(rng.integers(-3, 5))
            if a.type == onnx.AttributeProto.INT:
                a.i = v
            elif a.ints:
                a.ints[int(rng.integers(len(a.ints)))] = v
            what.append(f"attr {nd.op_type}.{a.name}")
        elif kind == "dtype":
            vi = g.input[int(rng.integers(len(g.input)))]
            vi.type.tensor_type.elem_type = int(rng.choice(DTYPES))
            what.append(f"dtype {vi.name} -> {vi.type.tensor_type.elem_type}")
        elif kind == "wire":
            nd = g.node[int(rng.integers(len(g.node)))]
            names = [i.name for i in g.input] + [t.name for t in g.initializer]
            if not nd.input:
                continue
            k = int(rng.integers(len(nd.input)))
            nd.input[k] = str(rng.choice(names))
            what.append(f"wire {nd.op_type}.input[{k}] <- {nd.input[k]}")
        elif kind == "op":
            nd = g.node[int(rng.integers(len(g.node)))]
            group = next((s for s in SWAPS if nd.op_type in s), None)
            if group is None:
                continue
            nd.op_type = str(rng.choice(sorted(group)))
            what.append(f"op -> {nd.op_type}")
        else:
            data = bytearray(m.SerializeToString())
            if rng.random() < 0.5:
                cut = int(rng.integers(1, len(data)))
                what.append(f"truncated at {cut} of {len(data)} bytes")
                return bytes(data[:cut]), "; ".join(what)
            for _ in range(int(rng.integers(1, 4))):
                data[int(rng.integers(len(data)))] = int(rng.integers(256))
            what.append("garbled bytes")
            return bytes(data), "; ".join(what)
    return m, "; ".join(what) or "unchanged"


# ---------------------------------------------------------------- feeds


def _declared(model) -> list[tuple[str, int, list]]:
    inits = {t.name for t in model.graph.initializer}
    out = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        t = vi.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else d.dim_param for d in t.shape.dim]
        out.append((vi.name, t.elem_type, dims))
    return out


def _array(rng, dtype: int, dims: list[int], extreme: bool = False) -> np.ndarray:
    np_type = NUMPY.get(dtype, np.float32)
    if np.issubdtype(np_type, np.integer):
        info = np.iinfo(np_type)
        pool = [v for v in INTERESTING if info.min <= v <= info.max] if extreme else list(range(-3, 4))
        return rng.choice(np.array(pool, dtype=np.int64), size=dims).astype(np_type)
    if np_type is np.bool_:
        return rng.random(dims) < 0.5
    return rng.standard_normal(dims).astype(np_type)


FEED_KINDS = ["valid", "valid", "wrong_rank", "wrong_dim", "wrong_dtype", "empty", "extreme_ints"]


def _feeds(rng, model, kind: str) -> dict[str, np.ndarray]:
    decl = _declared(model)
    sizes: dict[str, int] = {}
    feeds = {}
    for name, dtype, dims in decl:
        shape = []
        for d in dims:
            if isinstance(d, str):  # symbolic: one size per name (an unnamed dim gets its own)
                shape.append(sizes.setdefault(d, int(rng.integers(1, 5))) if d else int(rng.integers(1, 5)))
            else:
                shape.append(d if d <= 64 else int(rng.integers(1, 4)))  # a huge declared dim is fed small
        feeds[name] = _array(rng, dtype, shape, extreme=kind == "extreme_ints")
    if not feeds:
        return feeds
    victim = str(rng.choice(sorted(feeds)))
    a = feeds[victim]
    if kind == "wrong_rank":
        feeds[victim] = a.reshape((1, *a.shape)) if rng.random() < 0.5 or a.ndim == 0 else a.reshape(-1)
    elif kind == "wrong_dim" and a.ndim:
        shape = list(a.shape)
        shape[int(rng.integers(len(shape)))] += int(rng.integers(1, 3))
        feeds[victim] = _array(rng, next(t for n, t, _ in decl if n == victim), shape)
    elif kind == "wrong_dtype":
        feeds[victim] = a.astype(rng.choice([np.float64, np.int32, np.float16, np.int64]))
    elif kind == "empty" and a.ndim:
        shape = list(a.shape)
        shape[int(rng.integers(len(shape)))] = 0
        feeds[victim] = np.zeros(shape, a.dtype)
    return feeds


# ---------------------------------------------------------------- the test


@dataclass
class Outcome:
    case: str
    problem: str


def _compare(got: list[np.ndarray], want: list[np.ndarray]) -> str | None:
    if len(got) != len(want):
        return f"{len(got)} outputs, ORT has {len(want)}"
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        if g.shape != w.shape:
            return f"output {k} has shape {g.shape}, ORT's has {w.shape}"
        if g.dtype != w.dtype:
            return f"output {k} has dtype {g.dtype}, ORT's has {w.dtype}"
        tol = 2e-2 if g.dtype == np.float16 else 1e-4
        if g.dtype.kind in "fc":
            if not np.allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol, equal_nan=True):
                return f"output {k} values differ from ORT's"
        elif not np.array_equal(g, w):
            return f"output {k} values differ from ORT's"
    return None


def _judge(ours: dict, ref: dict, tmp) -> str | None:
    if "crash" in ours:
        return f"crashed (exit {ours['crash']}): {ours['stderr'][-400:]}"
    if "hang" in ours:
        return f"no answer within {ours['hang']} s"
    if not ours["ok"]:
        if not ours["clear"]:
            return f"unclear {ours['stage']} error {ours['type']}: {ours['message'][:300]}"
        return None
    if "crash" in ref or "hang" in ref:
        return None  # no reference to compare with
    if not ref["ok"]:
        return f"accepted what ORT's CPU EP refuses ({ref['message'][:200]})"
    return _compare(load_outputs(tmp / "artifact.npz"), load_outputs(tmp / "ort.npz"))


def test_fuzz_models_and_feeds(request, tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("hipdnn_ep_compiler", reason="needs the hipdnn-ep-compiler wheel")
    pytest.importorskip("hipdnn_ep_runtime", reason="needs the hipdnn-ep-runtime wheel")
    seed = request.config.getoption("--fuzz-seed")
    n_models = request.config.getoption("--fuzz-models")
    rng = np.random.default_rng(seed)
    bases = base_models()
    models: list[tuple[str, onnx.ModelProto | bytes, onnx.ModelProto]] = [(f"{k} (base)", m, m)
                                                                         for k, m in bases.items()]
    names = sorted(bases)
    for j in range(n_models):
        base = names[j % len(names)]
        mutated, what = _mutate(rng, bases[base])
        models.append((f"{base} #{j}: {what}", mutated, bases[base] if isinstance(mutated, bytes) else mutated))

    worker = Worker(timeout=60)
    problems: list[Outcome] = []
    cases = 0
    tally: dict[str, int] = {}
    start = time.perf_counter()
    try:
        for m_index, (label, model, declared) in enumerate(models):
            mdir = tmp_path / f"m{m_index}"
            mdir.mkdir()
            path = mdir / "m.onnx"
            path.write_bytes(model if isinstance(model, bytes) else model.SerializeToString())
            kinds = FEED_KINDS if "(base)" in label else list(rng.choice(FEED_KINDS, size=3, replace=False))
            for kind in kinds:
                try:
                    feeds = _feeds(rng, declared, kind)
                except (ValueError, TypeError, OverflowError):
                    continue  # a declared shape no feed can have (e.g. a negative dim)
                cdir = mdir / f"{cases}-{kind}"
                cdir.mkdir()
                np.savez(cdir / "feeds.npz", **feeds)
                req = {"model": str(path), "feeds": str(cdir / "feeds.npz"), "workdir": str(mdir)}
                ref = worker.run({**req, "action": "ort", "out": str(cdir / "ort.npz")})
                ours = worker.run({**req, "action": "artifact", "out": str(cdir / "artifact.npz")})
                cases += 1
                outcome = "ran" if ours["ok"] else f"refused at {ours.get('stage', '?')}"
                tally[outcome] = tally.get(outcome, 0) + 1
                problem = _judge(ours, ref, cdir)
                if problem:
                    problems.append(Outcome(f"{label}, feeds {kind} {({k: v.shape for k, v in feeds.items()})}",
                                            problem))
    finally:
        worker.close()
    elapsed = time.perf_counter() - start
    print(f"fuzz: seed {seed}, {len(models)} models, {cases} cases in {elapsed:.1f} s: {tally}")
    assert cases >= len(models), "too few cases ran"
    report = "\n".join(f"  {p.case}: {p.problem}" for p in problems[:15])
    assert not problems, (f"seed {seed}: {len(problems)} of {cases} cases went wrong (replay with "
                          f"--fuzz-seed {seed} --fuzz-models {n_models}):\n{report}")
