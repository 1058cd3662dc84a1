"""The compile cache through sessions on the real compiler and runtime: weights passed by
reference and out of the key, hits, misses and invalidation, and the runtime ABI and manifest
the key and the compile follow."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import hipdnn_ep_compiler
import numpy as np
import onnx
import pytest
from conftest import NO_FALLBACK, Env, cpu_session, make_session
from hipdnn_ep_compiler.abi import load_abi
from models import check_elementwise, elementwise, elementwise_feeds, many_initializers, with_weights
from onnx import TensorProto

COMPILER = f"hipdnn-ep-compiler {hipdnn_ep_compiler.__version__}"
# the newest runtime ABI the installed compiler targets
COMPILER_ABI = f"{load_abi().major}.{load_abi().minor}"


@pytest.mark.parametrize("n", [16, 512], ids=["inline-weights", "external-weights"])
def test_initializers_reach_the_program(tmp_path: Path, ep_devices, env: Env, n: int) -> None:
    model = with_weights(tmp_path / "w.onnx", n)
    sess = make_session(model, ep_devices, env.options, NO_FALLBACK)
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], cpu_session(model).run(None, {"x": x})[0], rtol=1e-6)
    (compiled,) = env.compiled_models()
    weights = {t.name: t.data_location == TensorProto.EXTERNAL for t in compiled.graph.initializer}
    assert weights == {"w_big": n * 4 > 1024, "w_small": n * 4 > 1024}
    assert {v.name for v in compiled.graph.value_info} == {"m", "s"}


def test_weights_are_passed_by_reference_and_are_not_part_of_the_cache_key(tmp_path: Path, ep_devices,
                                                                          env: Env) -> None:
    """Weights (initializers over 1 KiB) reach the compiler as names, element types and dims only:
    no weight bytes are written for it, and two models that differ only in their weights' values
    share one compiled artifact, each running with its own weights."""
    n = 512  # both initializers are 2 KiB
    models = [with_weights(tmp_path / f"w{seed}.onnx", n, seed) for seed in (1, 2)]
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    outputs = []
    for model in models:
        got = make_session(model, ep_devices, env.options, NO_FALLBACK).run(None, {"x": x})[0]
        np.testing.assert_allclose(got, cpu_session(model).run(None, {"x": x})[0], rtol=1e-6)
        outputs.append(got)
    assert not np.allclose(outputs[0], outputs[1]), "the two models' weights differ"
    assert len(env.compiles()) == 1, "only the weights' values differ: the second session hits the cache"
    assert len(env.cache_entries()) == 1

    copies = [Path(c) for r in env.requests() for c in [r.get("model_copy"), *r.get("model_copies", [])] if c]
    assert copies, "the spy recorded the support and compile requests' models"
    for copy in copies:
        assert sorted(p.name for p in copy.parent.iterdir()) in (["model.onnx"],
                                                                   ["model.onnx", "runtime_abi_manifest.json"])
        assert copy.stat().st_size < n * 4, "the model holds no weight bytes"
        sent = onnx.load(str(copy), load_external_data=False)
        assert {p.key: p.value for p in sent.metadata_props} == {"hipdnn_ep.weights": "host"}
        for t in sent.graph.initializer:
            assert t.data_location == TensorProto.EXTERNAL and not t.raw_data, t.name
    (entry,) = env.cache_entries()
    meta = hipdnn_ep_compiler.read_metadata(next(p for p in entry.rglob("*.so")))
    assert {w["name"]: w["source"] for w in meta["weights"]} == {"w_big": {"kind": "host"},
                                                                   "w_small": {"kind": "host"}}


def test_compile_cache_hit_miss_and_invalidation(tmp_path: Path, ep_devices, env: Env,
                                                 spy_python_other_version: Path) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    feeds = elementwise_feeds((2, 4))
    for _ in range(2):
        check_elementwise(make_session(model, ep_devices, env.options, NO_FALLBACK), feeds)
    assert len(env.compiles()) == 1, "the second session must hit the cache"

    check_elementwise(make_session(elementwise(tmp_path / "o.onnx", ["n", 4], middle="Add"), ep_devices, env.options,
                                   NO_FALLBACK), feeds, "Add")
    assert len(env.compiles()) == 2, "another graph is a miss"
    assert len(env.cache_entries()) == 2

    # Another compiler version is another key.
    other = dict(env.options, compiler_python=str(spy_python_other_version))
    check_elementwise(make_session(model, ep_devices, other, NO_FALLBACK), feeds)
    assert len(env.compiles()) == 3
    described = [json.loads((e / "entry.json").read_text()) for e in env.cache_entries()]
    assert sorted(d["compiler"] for d in described) == [COMPILER, COMPILER, COMPILER + "+other"]

    # A damaged entry is never used: it is recompiled.
    for entry in env.cache_entries():
        (entry / "entry.json").write_text((entry / "entry.json").read_text().replace('"cpu"', '"cuda"'))
    check_elementwise(make_session(model, ep_devices, env.options, NO_FALLBACK), feeds)
    assert len(env.compiles()) == 4


CHILD_SESSION = """
import json, sys
import hipdnn_ep, onnxruntime as ort
so = ort.SessionOptions()
so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
so.add_provider_for_devices(hipdnn_ep.register(ort), json.loads(sys.argv[2]))
ort.InferenceSession(sys.argv[1], sess_options=so, enable_fallback=0)
"""


def test_a_kept_compiler_answer_holds_only_under_the_same_python_environment(tmp_path: Path, env: Env,
                                                                           make_spy_python) -> None:
    """The same interpreter under another PYTHONPATH imports another compiler release. The compiler's
    capabilities kept on disk (its version among them, part of the cache key) were reused for it, so a
    process whose PYTHONPATH named a newer compiler got the older compiler's cached programs: seen on a GPU
    machine, where a compiler upgrade's fusion did not appear. Each session is made in a process of its own
    (nothing kept in memory), the second under another PYTHONPATH whose compiler announces another version."""
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    options = dict(env.options, compiler_python=str(make_spy_python({})))  # the spy reads its capabilities
    base = {k: v for k, v in os.environ.items() if k != "HIPDNN_EP_TEST_CAPABILITIES"}  # from the environment

    def session(extra_environ: dict[str, str]) -> None:
        out = subprocess.run([sys.executable, "-c", CHILD_SESSION, str(model), json.dumps(options)],
                             capture_output=True, text=True, timeout=120, env={**base, **extra_environ})
        assert out.returncode == 0, out.stderr

    session({})
    session({})
    assert len(env.compiles()) == 1, "the same environment: the kept answer and the cached program serve"
    other_site = tmp_path / "other-site"
    other_site.mkdir()
    newer = json.dumps({"compiler_version": hipdnn_ep_compiler.__version__ + "+newer"})
    session({"PYTHONPATH": os.pathsep.join(filter(None, [str(other_site), base.get("PYTHONPATH")])),
             "HIPDNN_EP_TEST_CAPABILITIES": newer})
    assert len(env.compiles()) == 2, "another PYTHONPATH may be another compiler: asked again, compiled again"
    described = sorted(json.loads((e / "entry.json").read_text())["compiler"] for e in env.cache_entries())
    assert described == [COMPILER, COMPILER + "+newer"]


def test_repeated_sessions_of_one_model_share_one_cache_entry(tmp_path: Path, ep_devices, env: Env) -> None:
    """The subgraph the EP writes, and so the cache key, depends on the graph's content only
    (ORT hands initializers over in an order that changes from session to session)."""
    model = many_initializers(tmp_path / "m.onnx")
    x = np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32)
    want = cpu_session(model).run(None, {"x": x})[0]
    for _ in range(6):
        np.testing.assert_allclose(make_session(model, ep_devices, env.options, NO_FALLBACK).run(None, {"x": x})[0],
                                   want, rtol=1e-5)
    assert len(env.compiles()) == 1
    assert len(env.cache_entries()) == 1


def test_runtime_abi_is_part_of_the_cache_key(tmp_path: Path, ep_devices, env: Env, runtime_reporting_abi) -> None:
    """A runtime of a newer minor than the compiler knows: the code is compiled
    anew (the key holds the runtime ABI) for the newest ABI the compiler knows."""
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    feeds = elementwise_feeds((2, 4))
    check_elementwise(make_session(model, ep_devices, env.options, NO_FALLBACK), feeds)
    newer = dict(env.options, runtime_library=str(runtime_reporting_abi(1, 7)))
    check_elementwise(make_session(model, ep_devices, newer, NO_FALLBACK), feeds)
    check_elementwise(make_session(model, ep_devices, newer, NO_FALLBACK), feeds)
    import hipdnn_ep_runtime

    runtime_abi = "{}.{}".format(*hipdnn_ep_runtime.abi_version())
    assert [r["abi"] for r in env.compiles()] == [COMPILER_ABI, COMPILER_ABI]
    described = sorted((json.loads((e / "entry.json").read_text()) for e in env.cache_entries()),
                       key=lambda d: d["abi"])
    assert [(d["abi"], d["target_abi"]) for d in described] == [(runtime_abi, COMPILER_ABI), ("1.7", COMPILER_ABI)]


def test_compiles_against_the_installed_runtime_manifest(tmp_path: Path, ep_devices, env: Env) -> None:
    """Each compile request carries the manifest of the runtime that will run the code."""
    import hipdnn_ep_runtime

    check_elementwise(make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, env.options, NO_FALLBACK),
                      elementwise_feeds((2, 4)))
    (request,) = env.compiles()
    assert Path(request["manifest"]).name == "runtime_abi_manifest.json"
    sent = Path(request["model_copy"]).parent / "runtime_abi_manifest.json"
    assert json.loads(sent.read_text()) == hipdnn_ep_runtime.abi_manifest()


def test_a_runtime_manifest_mismatch_is_found_at_compile_time(tmp_path: Path, ep_devices, env: Env) -> None:
    """A runtime whose manifest lacks a function the dynamic-shape code calls: the compile refuses,
    naming it, instead of producing code for the compiler's own idea of the runtime."""
    import hipdnn_ep_runtime

    real = Path(hipdnn_ep_runtime.library_path())
    manifest = hipdnn_ep_runtime.abi_manifest()
    manifest["functions"] = [f for f in manifest["functions"] if f["name"] != "hipdnn_ep_get_host_scratch_base"]
    text = json.dumps(manifest, separators=(",", ":"), ensure_ascii=False)
    c_string = text.replace("\\", "\\\\").replace('"', '\\"')
    src = tmp_path / "shim.c"
    src.write_text(f'const char* hipdnn_ep_abi_manifest(void) {{ return "{c_string}"; }}\n')
    shim = tmp_path / "libruntime_shim_manifest.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(shim), str(src), f"-Wl,-soname,{shim.name}",
                    "-Wl,--no-as-needed", f"-L{real.parent}", f"-l:{real.name}", f"-Wl,-rpath,{real.parent}"],
                   check=True)
    options = dict(env.options, runtime_library=str(shim))
    expected = (r"'hipdnn_ep_get_host_scratch_base', which the runtime ABI manifest "
                rf"\(runtime_abi_manifest\.json, ABI {re.escape(COMPILER_ABI)}\) does not declare")
    with pytest.raises(Exception, match=expected):
        make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, options, NO_FALLBACK)


def test_compiler_for_another_abi_major_is_refused(tmp_path: Path, ep_devices, env: Env,
                                                   spy_python_abi2: Path) -> None:
    options = dict(env.options, compiler_python=str(spy_python_abi2))
    expected = (rf"{COMPILER} cannot compile for the runtime's ABI {re.escape(COMPILER_ABI)} \(it targets ABI 2\.0, "
                r"2\.1\)\. "
                r"Fix: install a hipdnn-ep-compiler for runtime ABI major 1")
    with pytest.raises(Exception, match=expected):
        make_session(elementwise(tmp_path / "m.onnx", ["n", 4]), ep_devices, options, NO_FALLBACK)
    assert env.compiles() == []


def test_cache_disabled_compiles_every_session(tmp_path: Path, ep_devices, env: Env) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    options = dict(env.options, cache_enable="0")
    for _ in range(2):
        check_elementwise(make_session(model, ep_devices, options, NO_FALLBACK), elementwise_feeds((1, 4)))
    assert len(env.compiles()) == 2
    assert not env.cache_dir.exists(), "with the cache disabled no cache folder is created"


def test_two_processes_compiling_at_once_share_one_entry(tmp_path: Path, env: Env) -> None:
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    script = (
        "import sys, json, numpy as np, onnxruntime as ort, hipdnn_ep\n"
        "so = ort.SessionOptions(); so.add_session_config_entry('session.disable_cpu_ep_fallback', '1')\n"
        f"so.add_provider_for_devices(hipdnn_ep.register(ort), json.loads({json.dumps(json.dumps(env.options))}))\n"
        "s = ort.InferenceSession(sys.argv[1], sess_options=so, enable_fallback=0)\n"
        "x = np.ones((2, 4), np.float32); print(s.run(None, {'x': x, 'y': x})[0].sum())\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(model)], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert [float(o) for o in outs] == [16.0, 16.0]  # relu((1 + 1) * 1) * 8
    assert len(env.cache_entries()) == 1
    assert not list(env.cache_dir.glob(".tmp-*")), "temporary folders are cleaned up"
