"""integration/matrix.py: expected outcomes from wheel metadata, verdicts, releases found without tags."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import matrix  # noqa: E402
from matrix import Cell, Expected, Wheel, cell_verdict, expect  # noqa: E402


def _runtime(version: str, minor: int, major: int = 1) -> Wheel:
    return Wheel("runtime", version, Path(f"r-{version}.whl"), version, (), (major, minor))


def _compiler(version: str, minor: int, major: int = 1) -> Wheel:
    return Wheel("compiler", version, Path(f"c-{version}.whl"), version,
                 ("torch-mlir==20261001", f'hipdnn-ep-runtime<{major + 1},>={major}.0; extra == "runtime"'),
                 (major, minor))


def _ep(version: str, runtime_pin: str, compiler_pin: str, abi: tuple[int, int]) -> Wheel:
    return Wheel("ep", version, Path(f"e-{version}.whl"), version,
                 (f"hipdnn-ep-runtime{runtime_pin}", f"hipdnn-ep-compiler[runtime]{compiler_pin}"), abi)


EP_01 = _ep("0.1.0", "<2,>=1.1", "<1,>=0.2.0", (1, 1))
EP_02 = _ep("0.2.0", "<2,>=1.2", "<1,>=0.2.0", (1, 2))


def test_pins_decide_what_pip_refuses():
    got = expect(_compiler("0.3.0", 2), _runtime("1.1.0", 1), EP_02)
    assert got.outcome == "pip" and got.why == "hipdnn-ep 0.2.0 requires hipdnn-ep-runtime<2,>=1.2"
    got = expect(_compiler("0.1.0", 1), _runtime("1.2.0", 2), EP_01)
    assert got.outcome == "pip" and "hipdnn-ep-compiler[runtime]<1,>=0.2.0" in got.why
    # the compiler's own runtime pin counts because the EP asks for its [runtime] extra
    got = expect(_compiler("0.9.0", 1, major=2), _runtime("1.2.0", 2), EP_01)
    assert got.outcome == "pip" and got.why.startswith("hipdnn-ep-compiler 0.9.0 requires hipdnn-ep-runtime")


def test_the_target_is_the_older_of_the_runtime_and_the_compiler():
    assert expect(_compiler("0.2.0", 1), _runtime("1.2.0", 2), EP_02) == Expected("pass", "", (1, 1))
    assert expect(_compiler("0.3.0", 2), _runtime("1.2.0", 2), EP_01) == Expected("pass", "", (1, 2))
    assert expect(_compiler("0.3.0", 2), _runtime("1.1.0", 1), EP_01) == Expected("pass", "", (1, 1))


def test_abi_disagreements_that_pins_let_through_are_refused_by_our_checks():
    loose = _ep("0.9.0", ">=1.0", ">=0.1", (1, 2))
    got = expect(_compiler("0.3.0", 2), _runtime("1.1.0", 1), loose)
    assert got.outcome == "abi" and got.why == "the EP needs runtime ABI 1.2, the runtime has 1.1"


def _cell(expected: str, results: dict, *, install: str = "ok", replay: bool = False) -> Cell:
    cell = Cell(_compiler("0.3.0", 2), _runtime("1.2.0", 2), EP_02, "cpu", Expected(expected, ""), replay=replay)
    cell.install, cell.results = install, results
    return cell


PASS, REFUSED, FAIL = ({"outcome": o, "message": ""} for o in ("pass", "refused", "fail"))


def test_verdicts():
    assert cell_verdict(_cell("pass", {"dynamic:a": PASS, "fixed:b": PASS})) == (True, "passed")
    assert cell_verdict(_cell("pass", {"dynamic:a": REFUSED, "fixed:b": PASS})) == (False, "partly refused")
    assert cell_verdict(_cell("pip", {}, install="No solution found")) == (True, "refused by pip")
    assert cell_verdict(_cell("abi", {"setup": REFUSED})) == (True, "refused")
    assert cell_verdict(_cell("abi", {"dynamic:a": FAIL})) == (False, "FAILED"), "an unclear error is no refusal"
    # a replayed regression is caught when it does not pass, whatever its metadata claims
    assert cell_verdict(_cell("pass", {"dynamic:a": REFUSED, "fixed:b": PASS}, replay=True)) == \
        (True, "partly refused")
    assert cell_verdict(_cell("pass", {"dynamic:a": PASS}, replay=True)) == (False, "passed")
    cell = _cell("pass", {"dynamic:a": PASS})
    cell.load_expected, cell.loads = {"epcontext-load:x:m": "refused"}, {"epcontext-load:x:m": PASS}
    assert cell_verdict(cell) == (False, "passed"), "an EPContext load that should be refused passed"


def test_classification_of_cell_errors():
    import matrix_cell

    assert matrix_cell.classify("hipdnn-ep: ... cannot run on runtime ABI 1.1 ... Fix: pip install x") == "refused"
    assert matrix_cell.classify("undefined symbol: hipdnn_ep_get_host_scratch_base, version HIPDNN_EP_1.0") == "fail"
    assert matrix_cell.classify("Fix: ... symbol lookup error") == "fail"
    assert matrix_cell.classify("RuntimeError: something else") == "fail"


def test_the_table_names_every_cell(capsys):
    cells = [_cell("pass", {"dynamic:a": PASS, "fixed:b": PASS}), _cell("pip", {}, install="No solution")]
    cells[1].expected = Expected("pip", "hipdnn-ep 0.2.0 requires hipdnn-ep-runtime<2,>=1.2")
    text = matrix.table(cells)
    assert text.count("\n") == 4
    assert "| 0.3.0 | 1.2.0 | 0.2.0 | cpu | pass | ok | 1/1 pass | 1/1 pass | - | as expected: passed |" in text
    assert "as expected: passed" in text and "as expected: refused by pip" in text
    assert "refused: hipdnn-ep 0.2.0 requires hipdnn-ep-runtime<2,>=1.2" in text


def test_releases_are_sources_with_a_content_key():
    if subprocess.run(["git", "-C", str(matrix.ROOT), "rev-parse", "HEAD"], capture_output=True).returncode != 0:
        pytest.skip("needs the git checkout")
    found = matrix.sources()
    assert set(found) == {"runtime", "compiler", "ep"}
    for items in found.values():
        assert items, "every package has a release or HEAD"
        assert len({s.key for s in items}) == len(items), "one wheel per distinct content"
        assert all(s.label == "HEAD" or s.commit for s in items)


def test_a_run_starts_without_what_an_earlier_run_wrote(tmp_path):
    """EPContext models of an earlier run would be loaded as this run's (and ORT refuses to overwrite them)."""
    stale = tmp_path / "ctx" / "c0.3.0-r1.2.0-e0.2.0-cpu" / "dynamic_encoder_ctx.onnx"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old")
    matrix.run_matrix([], tmp_path)
    assert not stale.parent.exists()
