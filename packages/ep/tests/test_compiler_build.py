"""The compile cache keys on the compiler's content (its build id), not only its version: an edited
compiler source never reuses an artifact the old code built."""

from __future__ import annotations

import json
import shutil
import stat
import sys
from pathlib import Path

import hipdnn_ep_compiler
import numpy as np
from conftest import NO_FALLBACK, make_session
from models import elementwise, reference


def _python_over(src: Path, path: Path) -> Path:
    """An 'interpreter' for compiler_python that imports the compiler from `src` first."""
    path.write_text(f'#!/bin/sh\nPYTHONPATH="{src}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _entries(cache: Path) -> list[dict]:
    return [json.loads((e / "entry.json").read_text()) for e in sorted(cache.iterdir()) if (e / "entry.json").is_file()]


def test_an_edited_compiler_source_recompiles(tmp_path: Path, ep_devices) -> None:
    src = tmp_path / "src"
    copy = src / "hipdnn_ep_compiler"
    shutil.copytree(Path(hipdnn_ep_compiler.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    model = elementwise(tmp_path / "m.onnx", ["n", 4])
    cache = tmp_path / "cache"
    feeds = {k: np.random.default_rng(3).standard_normal((2, 4)).astype(np.float32) for k in ("x", "y")}

    def run(python: Path) -> None:
        # each path is another compiler process (the EP keeps one per interpreter path for its lifetime)
        sess = make_session(model, ep_devices, {"compiler_python": str(python), "cache_dir": str(cache)},
                            NO_FALLBACK)
        np.testing.assert_allclose(sess.run(None, feeds)[0], reference(feeds["x"], feeds["y"], "Mul"), rtol=1e-5)

    run(_python_over(src, tmp_path / "python-a"))
    run(_python_over(src, tmp_path / "python-b"))
    assert len(_entries(cache)) == 1, "the same compiler content hits the cache"

    edited = sorted((copy / "passes").glob("*.py"))[0]
    edited.write_text(edited.read_text() + "\n# an edited pass: other code, same version string\n")
    run(_python_over(src, tmp_path / "python-c"))
    entries = _entries(cache)
    assert len(entries) == 2, "an edited pass must not reuse the old artifact"
    assert len({e["compiler"] for e in entries}) == 1 and len({e["compiler_build"] for e in entries}) == 2


RENAMING_COMPILER = '''
import sys
from pathlib import Path

from hipdnn_ep_compiler.protocol import handle, serve


def renaming(request):
    response = handle(request)
    if request.get("action") == "compile" and response.get("ok"):
        folder = Path(response["artifact"])
        (folder / "program.so").rename(folder / "other.so")
    return response


sys.exit(serve(handler=renaming))
'''


def test_the_artifact_file_is_the_declared_one_not_any_so(tmp_path: Path, ep_devices) -> None:
    """The compiler's output folder must hold the file the manifest's [artifact] table names; the EP
    used to take whichever single *.so it found."""
    import pytest

    script = tmp_path / "renaming_compiler.py"
    script.write_text(RENAMING_COMPILER)
    python = tmp_path / "python-renaming"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}"\n')
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    model = elementwise(tmp_path / "m.onnx", [2, 4])
    with pytest.raises(Exception, match=r"artifact folder .* has no program\.so \(it holds: other\.so\).*install "
                                        r"matching hipdnn-ep-compiler and hipdnn-ep-runtime"):
        make_session(model, ep_devices, {"compiler_python": str(python), "cache_dir": str(tmp_path / "cache")},
                     NO_FALLBACK)
