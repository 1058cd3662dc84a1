"""Seeded fuzzing of what the EP reads besides the model: EPContext node attributes and the
compile cache's JSON files.

A small model is compiled once through ONNX Runtime with the hipdnn-ep plugin, exported as EPContext
models (code embedded, and code in a file beside the model) and left in a compile cache (entry.json,
support/*.json, compilers/*.json).  Each case then mutates one thing and creates a session in a
child process (packages/ep/tests/support/session_child.py), comparing its outputs with ORT's CPU EP:

- EPContext attributes: `notes` (nested 65 to 200,000 deep, huge, truncated, not UTF-8, values of
  the wrong type, another tag), `ep_cache_context` (truncated, random or flipped code; paths that
  leave the folder, are absolute, empty, huge, a folder, missing), `embed_mode`, `main_context`,
  `source` (other values, the wrong attribute type, removed);
- cache files: deeply nested, bigger than their bound, truncated, random bytes, empty, a field of
  the wrong type, a field removed.

What may happen: a clear refusal (a message from hipdnn-ep) or outputs equal to ORT's.  What must
not: a crash, a hang, or outputs that differ.  `--fuzz-seed` and `--fuzz-ep-cases`
(integration/conftest.py) choose the cases; a failure names the seed and the case.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parents[2]
CHILD = ROOT / "packages/ep/tests/support/session_child.py"
NO_FALLBACK = {"session.disable_cpu_ep_fallback": "1"}
TIMEOUT_S = 90


def _model(path: Path) -> Path:
    n = helper.make_node
    x, y, z = (helper.make_tensor_value_info(v, TensorProto.FLOAT, ["n", 4]) for v in "xyz")
    g = helper.make_graph([n("Add", ["x", "y"], ["a"]), n("Mul", ["a", "y"], ["b"]), n("Relu", ["b"], ["z"])],
                          "g", [x, y], [z])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def _child(model: Path, options: dict, config: dict | None = None, reference: Path | None = None) -> dict:
    spec = {"model": str(model), "options": options, "config": {**NO_FALLBACK, **(config or {})},
            "reference": str(reference or model)}
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, str(CHILD), json.dumps(spec)], capture_output=True, text=True,
                              timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"outcome": "hang", "seconds": TIMEOUT_S}
    if proc.returncode != 0:
        return {"outcome": "crash", "message": f"exit {proc.returncode}: {proc.stderr[-600:]}"}
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "seconds": time.perf_counter() - start}


# ---------------------------------------------------------------- mutations


def _deep(rng) -> bytes:
    depth = int(rng.choice([65, 1000, 50_000, 200_000]))
    if rng.random() < 0.5:
        return b"[" * depth + (b"]" * depth if rng.random() < 0.5 else b"")
    return b'{"tag":' * depth + b"1" + b"}" * depth


def _json_mutation(rng, text: bytes, big: int) -> tuple[bytes, str]:
    """One mutation of a JSON document whose bound is `big` bytes."""
    # Nesting twice as often as the rest: what a recursive reader dies of.
    kind = str(rng.choice(["deep", "deep", "deep-field", "deep-field", "huge", "truncated", "random", "empty",
                           "wrong-type", "removed", "not-utf8"]))
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if kind == "deep":
        return _deep(rng), kind
    if kind == "deep-field" and isinstance(doc, dict) and doc:
        key = str(rng.choice(sorted(doc)))
        depth = int(rng.choice([65, 1000, 100_000]))
        return json.dumps({**doc, key: "@"}).encode().replace(b'"@"', b"[" * depth + b"]" * depth), f"deep {key}"
    if kind == "huge":
        pad = "x" * (big + int(rng.integers(1, 4096)))
        return (json.dumps({**doc, "pad": pad}) if isinstance(doc, dict) else '"' + pad + '"').encode(), kind
    if kind == "truncated" and text:
        return text[: int(rng.integers(0, len(text)))], kind
    if kind == "random":
        return rng.integers(0, 256, int(rng.integers(1, 4096)), dtype=np.uint8).tobytes(), kind
    if kind == "wrong-type" and isinstance(doc, dict) and doc:
        key = str(rng.choice(sorted(doc)))
        other = [None, True, 1e300, -1, 2**64, "x", [], {}, [doc[key]], {"v": doc[key]}]
        value = other[int(rng.integers(len(other)))]
        return json.dumps({**doc, key: value}).encode(), f"{key} = {json.dumps(value)[:20]}"
    if kind == "removed" and isinstance(doc, dict) and doc:
        key = str(rng.choice(sorted(doc)))
        return json.dumps({k: v for k, v in doc.items() if k != key}).encode(), f"without {key}"
    if kind == "not-utf8" and text:
        i = int(rng.integers(0, len(text)))
        return text[:i] + b"\xff\xfe" + text[i:], kind
    return b"", "empty"


def _attr(node: onnx.NodeProto, name: str) -> onnx.AttributeProto | None:
    found = [a for a in node.attribute if a.name == name]
    return found[0] if found else None


def _mutate_context(rng, model: onnx.ModelProto, embedded: bool) -> tuple[onnx.ModelProto, str, bool]:
    """(mutated copy, what changed, whether the code is still the genuine code)."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    (node,) = [n for n in model.graph.node if n.op_type == "EPContext"]
    target = str(rng.choice(["notes", "notes", "notes", "ep_cache_context", "ep_cache_context", "embed_mode",
                             "main_context", "source", "remove"]))
    if target == "notes":
        attr = _attr(node, "notes")
        attr.s, what = _json_mutation(rng, attr.s, 64 * 1024)
        return model, f"notes: {what}", True
    if target == "ep_cache_context":
        attr = _attr(node, "ep_cache_context")
        code = attr.s
        if embedded:
            kind = str(rng.choice(["truncated", "random", "flipped", "empty", "huge"]))
            if kind == "truncated":
                attr.s = code[: int(rng.integers(0, len(code)))]
            elif kind == "random":
                attr.s = rng.integers(0, 256, int(rng.integers(1, 1 << 16)), dtype=np.uint8).tobytes()
            elif kind == "flipped":
                i = int(rng.integers(0, len(code)))
                attr.s = code[:i] + bytes([code[i] ^ 0x40]) + code[i + 1:]
            elif kind == "huge":
                attr.s = code + bytes(int(rng.integers(1 << 20, 8 << 20)))
            else:
                attr.s = b""
            return model, f"embedded code {kind}", False
        paths = [b"../outside/program.so", b"/etc/passwd", b"", b"missing/program.so", b"a" * 5000,
                 code.rsplit(b"/", 1)[0], b"./" + code, code + b"\x00tail", b"/" + code]
        attr.s = paths[int(rng.integers(len(paths)))]
        return model, f"ep_cache_context path {attr.s[:40]!r}", attr.s == b"./" + code
    if target == "remove":
        name = str(rng.choice(["notes", "ep_cache_context", "embed_mode", "main_context", "source"]))
        node.attribute.remove(_attr(node, name))
        return model, f"without {name}", True
    attr = _attr(node, target)
    if rng.random() < 0.3:  # the wrong attribute type
        node.attribute.remove(attr)
        value = "1" if target != "source" else 1
        node.attribute.append(helper.make_attribute(target, value))
        return model, f"{target} as {type(value).__name__}", True
    if attr.type == onnx.AttributeProto.INT:
        attr.i = int(rng.choice([0, 1, 2, -1, 2**62]))
        return model, f"{target} = {attr.i}", True
    attr.s = rng.choice([b"OtherEP", b"", b"HipdnnEp" * 1000])
    return model, f"{target} = {attr.s[:20]!r}", True


def _mutate_cache(rng, cache: Path) -> str:
    files = sorted(cache.glob("*/entry.json")) + sorted(cache.glob("support/*.json")) + sorted(
        cache.glob("compilers/*.json"))
    victim = files[int(rng.integers(len(files)))]
    bound = 64 * 1024 if victim.name == "entry.json" else 32 << 20
    mutated, what = _json_mutation(rng, victim.read_bytes(), bound)
    victim.write_bytes(mutated)
    return f"{victim.relative_to(cache)}: {what}"


# ---------------------------------------------------------------- the test


def _judge(got: dict) -> str | None:
    if got["outcome"] in ("crash", "hang", "wrong"):
        return f"{got['outcome']}: {got.get('message', '')[:600]}"
    # ONNX Runtime's model checker refuses some mutations (an attribute of the wrong type) at load.
    ort_load = "INVALID_GRAPH" in got.get("message", "") and "Load model from" in got.get("message", "")
    if got["outcome"] == "refused" and "hipdnn-ep" not in got["message"] and not ort_load:
        return f"unclear refusal: {got['message'][:400]}"
    return None


def test_fuzz_ep_context_and_cache_files(request, tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("hipdnn_ep", reason="needs the hipdnn-ep wheel")
    pytest.importorskip("hipdnn_ep_compiler", reason="needs the hipdnn-ep-compiler wheel")
    pytest.importorskip("hipdnn_ep_runtime", reason="needs the hipdnn-ep-runtime wheel")
    seed = request.config.getoption("--fuzz-seed")
    n_cases = request.config.getoption("--fuzz-ep-cases")
    rng = np.random.default_rng(seed)

    # The genuine files: one cache (it holds the install key that signs the EPContext code).
    model = _model(tmp_path / "m.onnx")
    cache = tmp_path / "cache"
    contexts = {}
    for embed in (True, False):
        ctx = tmp_path / f"m_ctx_{int(embed)}.onnx"
        got = _child(model, {"cache_dir": str(cache)}, {"ep.context_enable": "1", "ep.context_file_path": str(ctx),
                                                        "ep.context_embed_mode": str(int(embed))})
        assert got["outcome"] == "ran", got
        contexts[embed] = onnx.load(str(ctx))

    # The cases, drawn in order from the seed; then run a few at a time (each in its own process).
    cases: list[tuple[str, Path, dict]] = []
    for case in range(n_cases):
        options = {"cache_dir": str(cache)}
        if case % 2 == 0:
            embedded = bool(rng.random() < 0.5)
            mutated, what, genuine = _mutate_context(rng, contexts[embedded], embedded)
            what = f"EPContext ({'embedded' if embedded else 'file'}) {what}"
            if genuine and rng.random() < 0.3:
                options["trust_ep_context_code"] = "1"
                what += ", trusted"
            path = tmp_path / f"m_ctx_{int(embedded)}_case{case}.onnx"  # beside the genuine code folder
            onnx.save(mutated, str(path))
        else:
            copy = tmp_path / f"cache{case}"
            shutil.copytree(cache, copy, symlinks=True)
            what = "cache " + _mutate_cache(rng, copy)
            options["cache_dir"] = str(copy)
            path = model
        cases.append((f"case {case} ({what})", path, options))

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 1))) as pool:
        outcomes = list(pool.map(lambda c: _child(c[1], c[2], reference=model), cases))
    elapsed = time.perf_counter() - start
    tally: dict[str, int] = {}
    problems: list[str] = []
    for (label, _, _), got in zip(cases, outcomes, strict=True):
        tally[got["outcome"]] = tally.get(got["outcome"], 0) + 1
        problem = _judge(got)
        if problem:
            problems.append(f"{label}: {problem}")
    slowest = max(zip(outcomes, cases, strict=True), key=lambda oc: oc[0].get("seconds", 0))
    print(f"fuzz-ep: seed {seed}, {n_cases} cases in {elapsed:.1f} s: {tally}; the slowest, "
          f"{slowest[0].get('seconds', 0):.1f} s: {slowest[1][0]}")
    assert tally.get("ran", 0) and tally.get("refused", 0), "the cases should both run and be refused"
    report = "\n".join(f"  {p}" for p in problems[:15])
    assert not problems, (f"seed {seed}: {len(problems)} of {n_cases} cases went wrong (replay with "
                          f"--fuzz-seed {seed} --fuzz-ep-cases {n_cases}):\n{report}")
