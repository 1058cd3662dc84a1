"""The .mlir tests in filecheck/, one file per pass, checked with FileCheck (the `filecheck` package).

Each file holds `// RUN: hipdnn-ep-compile opt %s ARGS | filecheck %s [ARGS]` lines, as lit runs them
in MLIR projects. The compiler's side runs in this process (no interpreter start per file), once per
RUN line; a RUN line may start with `not` when the command must fail (a case the pass refuses prints
`// error: <message>` in its place, see opt.py).  Each `// -----` case is a test of its own: its
part of the output is checked against its own CHECK lines only (a CHECK cannot match another case's
output), by each RUN line whose check prefix (`--check-prefix`, CHECK by default) the case uses.
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from hipdnn_ep_compiler.cli import main
from hipdnn_ep_compiler.opt import SPLIT

FILES = sorted((Path(__file__).parent / "filecheck").glob("*.mlir"))


def _runs(path: Path) -> list[str]:
    return [line.split("RUN:", 1)[1].strip() for line in path.read_text().splitlines() if line.startswith("// RUN:")]


def _cases(path: Path) -> list[tuple[int, str]]:
    """The `// -----` parts of a file, each with the number of lines before it."""
    cases, before = [], 0
    for part in path.read_text().split(f"\n{SPLIT}\n"):
        cases.append((before, part))
        before += part.count("\n") + 2
    return cases


@functools.cache
def _output(path: Path, line: str) -> list[str]:
    """The tool's output for one RUN line, cut into the parts of the cases."""
    tool = line.partition("|")[0].strip()
    args = [str(path) if a == "%s" else a for a in shlex.split(tool)]
    expect_failure = args[0] == "not"
    args = args[1:] if expect_failure else args
    assert args[0] == "hipdnn-ep-compile", f"{path.name}: RUN lines start with [not] hipdnn-ep-compile: {line}"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(args[1:])
    assert (status != 0) == expect_failure, f"{path.name}: exit status {status} for {line}\n{out.getvalue()}"
    return out.getvalue().split(f"\n{SPLIT}\n")


def _prefix(check: list[str]) -> str:
    for flag in ("--check-prefix", "-check-prefix"):
        if flag in check:
            return check[check.index(flag) + 1]
        if any(a.startswith(f"{flag}=") for a in check):
            return next(a for a in check if a.startswith(f"{flag}=")).split("=", 1)[1]
    return "CHECK"


def _uses(text: str, check: list[str]) -> bool:
    """Whether a case has lines for the check prefix of a RUN line's filecheck arguments."""
    return re.search(rf"\b{re.escape(_prefix(check))}(-[A-Z]+)?:", text) is not None


def _check_case(path: Path, k: int, tmp_path: Path) -> None:
    before, text = _cases(path)[k]
    checked = 0
    for line in _runs(path):
        check = shlex.split(line.partition("|")[2])
        assert check[0] == "filecheck", f"{path.name}: RUN lines pipe into filecheck: {line}"
        if not _uses(text, check):
            continue  # this RUN line checks other cases
        parts = _output(path, line)
        assert len(parts) == len(_cases(path)), f"{path.name}: {len(parts)} outputs for {len(_cases(path))} cases"
        # the case alone, at its line numbers in the file, so that filecheck's messages point into it
        case_file = tmp_path / path.name
        case_file.write_text("\n" * before + text)
        args = [str(case_file) if a == "%s" else a for a in check[1:]]
        result = subprocess.run([sys.executable, "-m", "filecheck", *args], input=parts[k], text=True,
                                capture_output=True)
        assert result.returncode == 0, f"{path.name} case {k + 1} (line {before + 1}): {line}\n" \
                                       f"{result.stdout}{result.stderr}\n--- output ---\n{parts[k]}"
        checked += 1
    assert checked, f"{path.name} case {k + 1} (line {before + 1}) has no check line for any RUN line"


CASES = [(path, k) for path in FILES for k in range(len(_cases(path)))]


def test_every_pass_has_a_filecheck_file():
    from hipdnn_ep_compiler.passes import PASSES

    names = {p.stem.replace("_", "-") for p in FILES}
    assert set(PASSES) | {"lower-to-llvm"} <= names
    for path in FILES:
        assert _runs(path), f"{path.name} has no RUN line"
        for line in _runs(path):
            check = shlex.split(line.partition("|")[2])
            assert any(_uses(text, check) for _, text in _cases(path)), f"{path.name}: no case checks {line}"


@pytest.mark.parametrize("path,k", CASES, ids=[f"{p.stem}-{k + 1}" for p, k in CASES])
def test_filecheck(path, k, tmp_path):
    _check_case(path, k, tmp_path)
