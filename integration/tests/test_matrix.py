"""integration/matrix: expected outcomes from wheel metadata, verdicts, releases found without tags."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
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


# ------------------------------------------------------------------ the downstream example column

def test_the_example_asks_for_the_abi_of_its_find_package(tmp_path):
    assert matrix.example_needs() == (1, 1)  # examples/custom_kernels/CMakeLists.txt
    cmakelists = tmp_path / "CMakeLists.txt"
    cmakelists.write_text("find_package( hipdnn_ep_runtime 1.3 CONFIG REQUIRED)\n")
    assert matrix.example_needs(cmakelists) == (1, 3)


def test_example_expectations_follow_the_abi():
    r11, r13, r20 = _runtime("1.1.0", 1), _runtime("1.3.0", 3), _runtime("2.0.0", 0, major=2)
    assert [matrix.example_build_expected((1, 1), r) for r in (r11, r13, r20)] == ["built", "built", "refused"]
    assert matrix.example_build_expected((1, 2), r11) == "refused"
    # built against 1.3 (its header's minor): refused by its own check on 1.1, fine on 1.3; 1.1 runs anywhere in 1.x
    assert matrix.example_run_expected(r13, r11) == "refused"
    assert matrix.example_run_expected(r13, r13) == "pass"
    assert matrix.example_run_expected(r11, r13) == "pass"
    assert matrix.example_run_expected(r11, r20) == "refused"


def test_example_verdicts():
    assert matrix.example_actual({"demo": PASS, "library": PASS}) == "pass"
    assert matrix.example_actual({"demo": REFUSED, "library": REFUSED}) == "refused"
    assert matrix.example_actual({"demo": PASS, "library": REFUSED}) == "fail", "the two ways in must agree"
    assert matrix.example_actual({"process": FAIL}) == "fail"
    built = matrix.ExampleBuild(_runtime("1.3.0", 3), "built", outcome="built", build=Path("b"),
                                runs={"1.1.0": {"demo": REFUSED, "library": REFUSED}},
                                run_expected={"1.1.0": "refused"})
    assert matrix.example_ok(built)
    built.run_expected["1.1.0"] = "pass"
    assert not matrix.example_ok(built)
    assert "**refused** (expected pass)" in matrix.example_table([built], (1, 1))
    # a link error when building is never a refusal
    assert not matrix.example_ok(matrix.ExampleBuild(_runtime("1.1.0", 1), "built", outcome="fail"))


def test_cmake_refusing_the_runtime_package_version_is_a_refusal(tmp_path):
    """A runtime wheel whose CMake package is of another ABI major: configuring the example is refused by
    CMake's version check (no compile, no link), which the matrix tells from a build failure."""
    if shutil.which("cmake") is None or shutil.which("c++") is None:
        pytest.skip("needs cmake and a C++ compiler")
    wheel = tmp_path / "hipdnn_ep_runtime-2.0.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("hipdnn_ep_runtime/cmake/hipdnn_ep_runtime-config.cmake",
                   "message(FATAL_ERROR \"an incompatible package must not be loaded\")\n")
        z.writestr("hipdnn_ep_runtime/cmake/hipdnn_ep_runtime-config-version.cmake",
                   'set(PACKAGE_VERSION "2.0.0")\nset(PACKAGE_VERSION_COMPATIBLE FALSE)\n')
    runtime = Wheel("runtime", "2.0.0", wheel, "2.0.0", (), (2, 0))
    got = matrix.build_example(runtime, tmp_path / "cache", (1, 1))
    assert (got.expected, got.outcome, got.build) == ("refused", "refused", None), got.message
    assert "compatible with requested version" in got.message
    assert matrix.example_ok(got)


# ------------------------------------------------------------------ EPContext cross-loads, pruned

def _written(tmp_path: Path, cell: Cell) -> Path:
    folder = tmp_path / cell.name
    folder.mkdir()
    (folder / "m_ctx.onnx").write_bytes(b"")
    (folder / "refusal_ctx.onnx").write_bytes(b"")  # the offline leg's own, never cross-loaded
    return folder


def test_cross_loads_pair_each_distinct_writer_with_each_distinct_reader(tmp_path):
    c2, c3, c4 = _compiler("0.2.0", 1), _compiler("0.3.0", 2), _compiler("0.4.0", 3)
    r2, r3 = _runtime("1.2.0", 2), _runtime("1.3.0", 3)
    cells = [Cell(c, r, EP_02, "cpu", expect(c, r, EP_02)) for c in (c2, c3, c4) for r in (r2, r3)]
    written = {c.name: _written(tmp_path, c) for c in cells}
    plan = matrix.cross_loads(cells, written, {c.name for c in cells})
    # readers (EP, runtime): one cell each; the compiler of a reading cell plays no part
    assert [(consumer.compiler.title, consumer.runtime.title) for consumer, _ in plan] == [("0.2.0", "1.2.0"),
                                                                                        ("0.2.0", "1.3.0")]
    # writers (EP, compiler, target ABI): 0.2.0 targets 1.1 beside both runtimes (one writer), 0.3.0 targets 1.2
    # beside both (one), 0.4.0 targets 1.2 and 1.3 (two)
    producers = plan[0][1]
    assert len(producers) == 4 and plan[1][1] == producers
    assert [p.name for p in producers] == [cells[0].name, cells[2].name, cells[4].name, cells[5].name]
    # every other cell names the row whose loads stand for its own
    assert cells[2].loads_in is cells[0] and cells[5].loads_in is cells[1]
    assert "as compiler 0.2.0's row" in matrix.table(cells[2:3])
    assert matrix.context_models(producers[0]) == ["m"]


def test_replayed_and_uninstalled_cells_neither_write_nor_read(tmp_path):
    c, r = _compiler("0.3.0", 2), _runtime("1.2.0", 2)
    ok = Cell(c, r, EP_02, "cpu", expect(c, r, EP_02))
    replay = Cell(c, r, EP_02, "cpu", expect(c, r, EP_02), replay=True)
    refused = Cell(c, _runtime("1.1.0", 1), EP_02, "cpu", expect(c, _runtime("1.1.0", 1), EP_02))
    written = {ok.name: _written(tmp_path, ok)}
    plan = matrix.cross_loads([ok, replay, refused], written, {ok.name, replay.name})
    assert [(consumer.name, [p.name for p in producers]) for consumer, producers in plan] == [(ok.name, [ok.name])]


# ------------------------------------------------------------------ the offline leg

def test_pip_check_conflicts_among_our_wheels_are_pips_refusal():
    text = """hipdnn-ep 0.2.0 has requirement hipdnn-ep-runtime<2,>=1.2, but you have hipdnn-ep-runtime 1.1.0.
hipdnn-ep-compiler 0.4.0 requires torch-mlir, which is not installed.
torch 2.11.0 has requirement sympy>=1.13, but you have sympy 1.12.
hipdnn_ep 0.3.0 has requirement hipdnn-ep-compiler[runtime]<1,>=0.5.0, but you have hipdnn-ep-compiler 0.4.0.
"""
    assert matrix.pip_conflicts(text) == [
        "hipdnn-ep 0.2.0 has requirement hipdnn-ep-runtime<2,>=1.2, but you have hipdnn-ep-runtime 1.1.0.",
        "hipdnn_ep 0.3.0 has requirement hipdnn-ep-compiler[runtime]<1,>=0.5.0, but you have hipdnn-ep-compiler 0.4.0.",
    ]
    assert matrix.pip_conflicts("No broken requirements found.\n") == []


def test_models_and_epcontext_models_load_on_an_older_onnxruntime(tmp_path):
    """Seen on the offline leg: models written here (onnx 1.23, IR 14; EPContext models stamped by ORT 1.32)
    were refused by onnxruntime 1.30 ('Unsupported model IR version') although nothing in them needs it."""
    import matrix_cell
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 14
    matrix_cell.save(model, tmp_path / "m.onnx")
    assert matrix_cell.onnx.load(tmp_path / "m.onnx").ir_version == matrix_cell.IR_VERSION <= 11  # 1.23 reads 11
    model.ir_version = 14
    matrix_cell.onnx.save(model, tmp_path / "m_ctx.onnx")  # as ORT stamps what it writes
    matrix_cell.restamp(tmp_path / "m_ctx.onnx", tmp_path / "m.onnx")
    assert matrix_cell.onnx.load(tmp_path / "m_ctx.onnx").ir_version == matrix_cell.IR_VERSION


def test_an_install_that_is_not_the_wheel_is_caught(tmp_path):
    """uv installed a cached earlier build of a same-named HEAD wheel; the matrix compares what was installed
    with the wheel's RECORD."""
    from base64 import urlsafe_b64encode
    from hashlib import sha256

    data = b"new library"
    digest = "sha256=" + urlsafe_b64encode(sha256(data).digest()).rstrip(b"=").decode()
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("pkg/lib.so", data)
        z.writestr("pkg-1.0.dist-info/RECORD", f"pkg/lib.so,{digest},{len(data)}\npkg-1.0.dist-info/RECORD,,\n")
    site = tmp_path / "site"
    (site / "pkg").mkdir(parents=True)
    assert matrix.installed_differs(site, wheel) == "pkg/lib.so is missing"
    (site / "pkg/lib.so").write_bytes(b"old library")
    assert matrix.installed_differs(site, wheel) == "pkg/lib.so differs from the wheel's"
    (site / "pkg/lib.so").write_bytes(data)
    assert matrix.installed_differs(site, wheel) == ""
