"""Every JSON document the EP reads has a size and a nesting bound; one that breaks a bound, or is not
JSON, is refused with a message naming it (or, for a file of the cache, is read as a miss), never a
crash.  The hand-written reader these tests were written against recursed once per '[' and
overflowed its stack (SIGSEGV) on each of them: they run the EP in a child process
(support/session_child.py), so that such a crash fails the test instead of ending the run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from conftest import NO_FALLBACK, Env, make_session
from models import elementwise

CHILD = Path(__file__).resolve().parent / "support" / "session_child.py"
DEEP = 50_000  # '[' characters: far beyond any stack frame budget of a recursive reader


def run_child(model: Path, options: dict[str, str], config: dict[str, str] | None = None,
              reference: Path | None = None) -> dict:
    spec = {"model": str(model), "options": options, "config": config or NO_FALLBACK}
    if reference:
        spec["reference"] = str(reference)
    proc = subprocess.run([sys.executable, str(CHILD), json.dumps(spec)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, f"the EP crashed (exit {proc.returncode}): {proc.stderr[-2000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _ctx(tmp_path: Path, devices, env: Env, embed: bool = True) -> tuple[Path, Path]:
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    out = tmp_path / "m_ctx.onnx"
    make_session(model, devices, env.options, dict(NO_FALLBACK, **{
        "ep.context_enable": "1", "ep.context_file_path": str(out), "ep.context_embed_mode": "1" if embed else "0"}))
    return model, out


def _with_notes(ctx: Path, notes: bytes, out: Path) -> Path:
    model = onnx.load(str(ctx))
    (node,) = [n for n in model.graph.node if n.op_type == "EPContext"]
    (attr,) = [a for a in node.attribute if a.name == "notes"]
    attr.s = notes
    onnx.save(model, str(out))
    return out


@pytest.mark.parametrize("notes, refusal", [
    (b"[" * DEEP, "nests JSON more than 64 levels deep"),
    (b'{"tag":' * 9_000, "nests JSON more than 64 levels deep"),
    (b'{"tag":"' + b"a" * 100_000 + b'"}', "more than the 65536 bytes"),
    (b'{"tag":"hmac-sha256:00", "compat', "is not valid JSON"),
    (b'{"tag":"\xff\xfe"}', "is not valid JSON"),
], ids=["50KB-of-[", "nested-objects", "too-big", "truncated", "not-utf8"])
def test_hostile_notes_are_refused(tmp_path: Path, ep_devices, env: Env, notes: bytes, refusal: str) -> None:
    """Issue 19, item 2: an EPContext model whose notes attribute is 50 KB of '[' crashed the host
    (SIGSEGV in the JSON reader) before any signature check."""
    model, ctx = _ctx(tmp_path, ep_devices, env)
    hostile = _with_notes(ctx, notes, tmp_path / "hostile.onnx")
    for trusted in ("0", "1"):  # the notes are read before the trust decision
        got = run_child(hostile, dict(env.options, trust_ep_context_code=trusted), reference=model)
        assert got["outcome"] == "refused", got
        assert "notes attribute of EPContext node" in got["message"] and refusal in got["message"], got


@pytest.mark.parametrize("notes", [b"[]", b'"a string"', b"null", b'{"tag": 5, "compatibility": ["x"]}'])
def test_notes_of_another_shape_are_foreign_code(tmp_path: Path, ep_devices, env: Env, notes: bytes) -> None:
    """Valid JSON without a string tag carries no proof of origin: refused unless trusted, run if trusted."""
    model, ctx = _ctx(tmp_path, ep_devices, env)
    other = _with_notes(ctx, notes, tmp_path / "other.onnx")
    got = run_child(other, env.options, reference=model)
    assert got["outcome"] == "refused" and "did not produce" in got["message"], got
    assert run_child(other, dict(env.options, trust_ep_context_code="1"), reference=model) == {"outcome": "ran"}


def _deep_answer_compiler(tmp_path: Path) -> Path:
    """An 'interpreter' whose compiler answers the capabilities request with a deeply nested field."""
    answer = '{"protocol": 2, "ok": true, "compiler_version": "9.0", "x": ' + "[" * DEEP + "]" * DEEP + "}"
    (tmp_path / "answer.json").write_text(answer)
    script = tmp_path / "python-deep"
    script.write_text(f"#!/bin/sh\nread -r line; cat '{tmp_path / 'answer.json'}'; echo; exec sleep 60\n")
    script.chmod(0o755)
    return script


def test_deeply_nested_compiler_answer_is_refused(tmp_path: Path, ep_devices, env: Env) -> None:
    """Issue 19, item 2: a compiler answer nested 50,000 deep crashed the host."""
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    options = dict(env.options, compiler_python=str(_deep_answer_compiler(tmp_path)))
    got = run_child(model, options)
    assert got["outcome"] == "refused", got
    assert "the compiler's answer nests JSON more than 64 levels deep" in got["message"], got


def _cached(tmp_path: Path, env: Env) -> Path:
    """A model compiled once into env's cache (support/, compilers/ and one entry written)."""
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    assert run_child(model, env.options) == {"outcome": "ran"}
    return model


@pytest.mark.parametrize("where", ["entry.json", "support", "compilers"])
@pytest.mark.parametrize("content", ["deep", "too-big", "truncated", "wrong-types"])
def test_damaged_cache_json_is_a_miss(tmp_path: Path, env: Env, where: str, content: str) -> None:
    """Issue 19, item 2: a nested entry.json, support/*.json or compilers/*.json crashed the next
    session.  Each is a file of the cache: a damaged one is read as a miss (asked or compiled again)."""
    model = _cached(tmp_path, env)
    files = ([*env.cache_dir.glob("*/entry.json")] if where == "entry.json"
             else [*(env.cache_dir / where).glob("*.json")])
    assert files, f"the first session wrote no {where} file"
    for f in files:
        text = f.read_text()
        f.write_text({"deep": "[" * DEEP + "]" * DEEP,
                      "too-big": text[:-1] + ',"pad":"' + "x" * (33 << 20) + '"}',
                      "truncated": text[: len(text) // 2],
                      "wrong-types": json.dumps({k: [v] for k, v in json.loads(text).items()})}[content])
    compiles = len(env.compiles())
    assert run_child(model, env.options) == {"outcome": "ran"}
    if where == "entry.json":
        assert len(env.compiles()) == compiles + 1, "the damaged entry is compiled again"
        assert json.loads(env.cache_entries()[0].joinpath("entry.json").read_text())["mac"]
