"""The .mlir tests in filecheck/, one file per pass, checked with FileCheck (the `filecheck` package).

Each file holds `// RUN: hipdnn-ep-compile opt %s ARGS | filecheck %s [ARGS]` lines, as lit runs them
in MLIR projects. The compiler's side runs in this process (no interpreter start per file); its
output is piped into filecheck.  A RUN line may start with `not` when the command must fail.
"""

from __future__ import annotations

import contextlib
import io
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from hipdnn_ep_compiler.cli import main

FILES = sorted((Path(__file__).parent / "filecheck").glob("*.mlir"))


def _runs(path: Path) -> list[str]:
    return [line.split("RUN:", 1)[1].strip() for line in path.read_text().splitlines() if line.startswith("// RUN:")]


def _run_line(line: str, path: Path) -> None:
    tool, _, checker = (part.strip() for part in line.partition("|"))
    args = [str(path) if a == "%s" else a for a in shlex.split(tool)]
    expect_failure = args[0] == "not"
    args = args[1:] if expect_failure else args
    assert args[0] == "hipdnn-ep-compile", f"{path.name}: RUN lines start with [not] hipdnn-ep-compile: {line}"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(args[1:])
    assert (status != 0) == expect_failure, f"{path.name}: exit status {status} for {line}"
    check = [str(path) if a == "%s" else a for a in shlex.split(checker)]
    assert check[0] == "filecheck", f"{path.name}: RUN lines pipe into filecheck: {line}"
    result = subprocess.run([sys.executable, "-m", "filecheck", *check[1:]], input=out.getvalue(), text=True,
                            capture_output=True)
    assert result.returncode == 0, f"{path.name}: {line}\n{result.stdout}{result.stderr}\n--- output ---\n" \
                                   f"{out.getvalue()}"


def test_every_pass_has_a_filecheck_file():
    from hipdnn_ep_compiler.passes import PASSES

    names = {p.stem.replace("_", "-") for p in FILES}
    assert set(PASSES) | {"lower-to-llvm"} <= names


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_filecheck(path):
    lines = _runs(path)
    assert lines, f"{path.name} has no RUN line"
    for line in lines:
        _run_line(line, path)
