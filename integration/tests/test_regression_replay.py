"""The original regression, replayed against every gate of the ABI contract.

The runtime change that started this project did two things while the compiler kept emitting both
functions for every dynamic-shape graph (the host-scalar path):

- "removed": `hipdnn_ep_get_host_scratch_base` was deleted (every dynamic-shape session then died
  with `undefined symbol`);
- "narrowed": `hipdnn_ep_get_pool_base(state, needed_size, out)` lost its size parameter (C symbols
  carry no types, so that one linked and silently lost its grow-on-demand behaviour).

Each test below makes one of those changes the way a developer would and shows one gate refusing
it with the message that gate prints:

1. bump rules (`check-compat` against released/1.0.toml and released/1.1.toml);
2. the runtime's own build (`cmake/check_exports.cmake` runs `check-symbols` after linking;
   the generated header, `abi_check.cpp` and `-Werror=missing-declarations` see signatures);
3. the compiler's check of each runtime function against the target runtime's manifest;
4. `hipdnn_ep_artifact_open`'s check of an artifact's imports (manifest hashes, then `dlvsym`).

The modified runtimes are cheap: a stub library built from the generated files through the real
export gate (build-time gate), and copies of the installed runtime library whose embedded manifest
or dynamic symbol table is edited in place (load-time gate). The whole file takes about 15 s.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from models import shape_chain_model

ROOT = Path(__file__).resolve().parents[2]
ABI_DIR = ROOT / "packages/abi"
RUNTIME_DIR = ROOT / "packages/runtime"
if str(ABI_DIR) not in sys.path:
    sys.path.insert(0, str(ABI_DIR))
from hipdnn_ep_abi import DEFAULT_MANIFEST, generate, parse  # noqa: E402

pytestmark = pytest.mark.abi

SCRATCH = "hipdnn_ep_get_host_scratch_base"
POOL = "hipdnn_ep_get_pool_base"
POOL_PARAMS = 'params = ["hipdnn_ep_state_t* state", "uint64_t needed_size", "void** out_base"]'
POOL_PARAMS_NARROWED = 'params = ["hipdnn_ep_state_t* state", "void** out_base"]'


def _abi_test_helpers():
    """The ABI gate tests' helpers (manifest edits, stub definitions), loaded under a name of their own."""
    spec = importlib.util.spec_from_file_location("hipdnn_ep_abi_test_helpers", ABI_DIR / "tests/conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


helpers = _abi_test_helpers()


@dataclass(frozen=True)
class Regression:
    function: str
    manifest_text: str  # the committed manifest with the change made
    source_edit: str | None  # the changed C++ definition (None: deleted)


def _regressions() -> dict[str, Regression]:
    text = DEFAULT_MANIFEST.read_text()
    assert POOL_PARAMS in text, "the manifest no longer spells get_pool_base's parameters as this replay expects"
    return {
        "removed": Regression(SCRATCH, helpers.edit_function(text, SCRATCH, None), None),
        "narrowed": Regression(POOL, text.replace(POOL_PARAMS, POOL_PARAMS_NARROWED),
                               f"int32_t {POOL}(hipdnn_ep_state_t* state, void** out_base) "
                               "{ (void)state; *out_base = 0; return 0; }"),
    }


REGRESSIONS = _regressions()
CASES = sorted(REGRESSIONS)
MINOR = parse(DEFAULT_MANIFEST.read_text()).minor  # the regressions are made to the committed manifest, 1.MINOR


def _compact_json(manifest_text: str) -> str:
    """The manifest JSON exactly as the runtime embeds it (generate.manifest_data_cpp)."""
    return json.dumps(generate.manifest_json(parse(manifest_text)), separators=(",", ":"))


@pytest.fixture(scope="module")
def dynamic_artifact(compiler, tmp_path_factory):
    """A dynamic-shape artifact from the unchanged compiler: the one every regression must not reach."""
    return compiler.compile_model(shape_chain_model(), tmp_path_factory.mktemp("dynamic") / "artifact")


def test_the_compiler_still_emits_both_functions_for_dynamic_shapes(dynamic_artifact, compiler, tmp_path):
    """The premise: only dynamic shapes reach these functions, which is why fixed-shape CI missed it."""
    assert {SCRATCH, POOL} <= set(dynamic_artifact.imports)
    fixed = shape_chain_model()
    for d in fixed.graph.input[0].type.tensor_type.shape.dim:
        if d.dim_param:
            d.dim_value = 3
    assert SCRATCH not in compiler.compile_model(fixed, tmp_path / "fixed").imports


# ---------------------------------------------------------------- gate 1: bump rules


def _check_compat(manifest: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hipdnn_ep_abi", "--manifest", str(manifest), "check-compat"],
                          capture_output=True, text=True, env={"PYTHONPATH": str(ABI_DIR)})


@pytest.mark.parametrize("case", CASES)
def test_gate_bump_rules(case, tmp_path):
    regression = REGRESSIONS[case]
    manifest = tmp_path / "manifest.toml"
    manifest.write_text(regression.manifest_text)
    proc = _check_compat(manifest)
    print(proc.stdout, proc.stderr)
    assert proc.returncode == 1
    expected = {
        "removed": f"- {SCRATCH}: removed, but 1.1 exports it and artifacts built for it import it: bump the ABI major",
        "narrowed": f"- {POOL}: signature changed from 'int32_t {POOL}(hipdnn_ep_state_t*, uint64_t, void**)' to "
                    f"'int32_t {POOL}(hipdnn_ep_state_t*, void**)': artifacts built for 1.1 would call it wrongly",
    }[case]
    assert f"bump rules 1.1 (1.1.toml) -> 1.{MINOR}: 1 violation(s)" in proc.stdout + proc.stderr
    assert expected in proc.stdout + proc.stderr


def test_gate_bump_rules_passes_the_committed_manifest():
    proc = _check_compat(DEFAULT_MANIFEST)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ---------------------------------------------------------------- gate 2: the runtime's build

STUB_PROJECT = """cmake_minimum_required(VERSION 3.26)
project(replayed_runtime CXX)
include({module})
add_library(runtime SHARED stub.cpp {abi_check})
target_include_directories(runtime PRIVATE {include})
set_target_properties(runtime PROPERTIES CXX_STANDARD 17 CXX_VISIBILITY_PRESET hidden)
target_compile_options(runtime PRIVATE -Werror=missing-declarations)
target_link_options(runtime PRIVATE "LINKER:--version-script={map}")
hipdnn_ep_check_exports(runtime PYTHON {python} ABI_DIR {abi_dir})
"""


def _build_stub_runtime(tmp_path: Path, source_edit: str | None, omit: str | None) -> tuple[int, str, Path]:
    """Builds a runtime stand-in the way the runtime builds: definitions compiled against the generated
    header and abi_check.cpp, linked with the version script, then the export gate. `omit` drops a
    definition; `source_edit` adds one written differently."""
    cmake = shutil.which("cmake")
    if cmake is None or shutil.which("c++") is None:
        pytest.skip("needs cmake and a C++ compiler")
    manifest = parse(DEFAULT_MANIFEST.read_text())
    gen = tmp_path / "gen"
    generate.write_all(manifest, gen)
    project = tmp_path / "project"
    project.mkdir()
    source = helpers.stub_source(manifest, omit=frozenset({omit} if omit else ()))
    (project / "stub.cpp").write_text(source + (source_edit + "\n" if source_edit else ""))
    (project / "CMakeLists.txt").write_text(STUB_PROJECT.format(
        module=RUNTIME_DIR / "cmake/check_exports.cmake", abi_check=gen / "abi_check.cpp", include=gen / "include",
        map=gen / "runtime.map", python=sys.executable, abi_dir=ABI_DIR))
    build = tmp_path / "build"
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    subprocess.run([cmake, "-S", project, "-B", build, *generator], check=True, capture_output=True)
    proc = subprocess.run([cmake, "--build", build], capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr, build / "libruntime.so"


@pytest.mark.parametrize("case", CASES)
def test_gate_runtime_build(case, tmp_path):
    regression = REGRESSIONS[case]
    rc, log, library = _build_stub_runtime(tmp_path, regression.source_edit, omit=regression.function)
    print(log)
    assert rc != 0
    assert not library.exists(), "a runtime that breaks its manifest must leave no library behind"
    if case == "removed":
        # check-symbols after linking: the definition is gone, the header and version script still declare it
        assert (f"- {SCRATCH}: declared in the manifest (since 1.0, called by host and artifact) but not "
                "exported by libruntime.so") in log
        assert "deleted " in log and "its exports differ from manifest.toml. Fix: " in log
    else:
        # C symbols carry no types, so check-symbols cannot see this one: the generated header can, as
        # the runtime compiles every definition with -Werror=missing-declarations
        assert re.search(rf"error: no previous declaration for .int32_t {POOL}\(hipdnn_ep_state_t\*, void\*\*\)."
                         r" \[-Werror=missing-declarations\]", log), log


def test_gate_runtime_build_passes_every_definition(tmp_path):
    rc, log, library = _build_stub_runtime(tmp_path, None, omit=None)
    assert rc == 0, log
    assert library.exists()


def test_the_runtime_build_has_what_the_stand_in_replays():
    """The stand-in above is only evidence while the real build keeps both checks."""
    text = (RUNTIME_DIR / "CMakeLists.txt").read_text()
    assert "include(cmake/check_exports.cmake)" in text
    assert "hipdnn_ep_check_exports(hipdnn_ep_runtime " in text
    assert "-Werror=missing-declarations" in text


# ---------------------------------------------------------------- gate 3: the compiler


@pytest.mark.parametrize("case", CASES)
def test_gate_compiler_refuses_the_changed_runtime(case, compiler, tmp_path):
    manifest = tmp_path / "abi_manifest.json"  # what the changed runtime would ship and the EP hands over
    manifest.write_text(_compact_json(REGRESSIONS[case].manifest_text))
    with pytest.raises(compiler.AbiTargetError) as err:
        compiler.compile_model(shape_chain_model(), tmp_path / "artifact", manifest=manifest)
    message = str(err.value)
    print(message)
    if case == "removed":
        assert (f"'{SCRATCH}', which the runtime ABI manifest (abi_manifest.json, ABI 1.{MINOR}) does not declare"
                in message)
    else:
        assert (f"runtime function '{POOL}' is 'int32_t {POOL}(hipdnn_ep_state_t*, void**)' in the target manifest"
                in message)
        assert f"this compiler calls it as 'int32_t {POOL}(hipdnn_ep_state_t*, uint64_t, void**)'" in message
    assert "Fix: " in message
    assert not (tmp_path / "artifact" / "program.so").exists()


# ---------------------------------------------------------------- gate 4: the loader

# A fresh process: only the changed copy may carry the runtime's SONAME there.
OPEN_WITH = r"""
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1])
lib.hipdnn_ep_last_error.restype = ctypes.c_char_p
out = ctypes.c_void_p()
status = lib.hipdnn_ep_artifact_open(sys.argv[2].encode(), ctypes.byref(out))
print(json.dumps({"status": status, "message": (lib.hipdnn_ep_last_error() or b"").decode()}))
"""
ABI_MISMATCH = 7


@pytest.fixture(scope="module")
def runtime_from_this_tree(runtime):
    """The loader replays edit the installed library's embedded manifest, so it must be this tree's."""
    lib = ctypes.CDLL(runtime.library_path())
    lib.hipdnn_ep_abi_manifest.restype = ctypes.c_char_p
    if lib.hipdnn_ep_abi_manifest().decode().rstrip() != _compact_json(DEFAULT_MANIFEST.read_text()):
        pytest.skip("the installed hipdnn-ep-runtime was not built from this tree's manifest")
    return runtime


def _changed_runtime(runtime, directory: Path, *, manifest_text: str | None = None,
                     hide_export: str | None = None) -> Path:
    """A copy of the installed runtime library with its embedded manifest replaced (padded with JSON
    whitespace to the same length) and/or one dynamic symbol renamed away (same length)."""
    data = bytearray(Path(runtime.library_path()).read_bytes())

    def replace(old: bytes, new: bytes) -> None:
        at = data.find(old)
        assert at >= 0 and data.find(old, at + 1) < 0, f"{old[:40]!r}... is not exactly once in the library"
        assert len(new) <= len(old)
        data[at:at + len(old)] = new.ljust(len(old), b" ")

    if manifest_text is not None:
        replace(_compact_json(DEFAULT_MANIFEST.read_text()).encode(), _compact_json(manifest_text).encode())
    if hide_export is not None:
        name = b"\0" + hide_export.encode() + b"\0"
        replace(name, name[:-2] + b"X\0")
    out = directory / Path(runtime.library_path()).name
    out.write_bytes(bytes(data))
    return out


def _open(library: Path, artifact: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", OPEN_WITH, str(library), str(artifact)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, f"the loader crashed: {proc.stderr[-2000:]}"
    result = json.loads(proc.stdout)
    print(result["message"])
    return result


def test_gate_loader_refuses_a_runtime_that_stopped_exporting_the_function(runtime_from_this_tree, dynamic_artifact,
                                                                          tmp_path):
    """The historical form: the definition deleted, the manifest, header and version script unchanged."""
    library = _changed_runtime(runtime_from_this_tree, tmp_path, hide_export=SCRATCH)
    result = _open(library, dynamic_artifact.path)
    assert result["status"] == ABI_MISMATCH, result
    assert "undefined symbol" not in result["message"]
    assert (f"does not export 1 function that its own ABI manifest declares and the artifact imports: "
            f"[{SCRATCH}@HIPDNN_EP_1.0]") in result["message"]
    assert "Fix: reinstall a released runtime wheel" in result["message"]


@pytest.mark.parametrize("case", CASES)
def test_gate_loader_refuses_a_runtime_whose_manifest_changed(case, runtime_from_this_tree, dynamic_artifact, tmp_path):
    """The change made consistently (manifest and library agree), without the major bump: an artifact
    built before it is refused by name before its code is loaded."""
    library = _changed_runtime(runtime_from_this_tree, tmp_path, manifest_text=REGRESSIONS[case].manifest_text,
                               hide_export=SCRATCH if case == "removed" else None)
    result = _open(library, dynamic_artifact.path)
    assert result["status"] == ABI_MISMATCH, result
    message = result["message"]
    assert "undefined symbol" not in message
    assert f"cannot run on runtime ABI 1.{MINOR}" in message, message
    if case == "removed":
        assert f"missing 1 required import: [{SCRATCH} (since 1.0)]" in message
    else:
        assert f"{POOL}: artifact expects " in message
    assert "Fix: " in message


def test_gate_loader_accepts_the_unchanged_copy(runtime_from_this_tree, dynamic_artifact, tmp_path):
    """The copying itself changes nothing: the same artifact opens on an unedited copy."""
    library = _changed_runtime(runtime_from_this_tree, tmp_path, manifest_text=DEFAULT_MANIFEST.read_text())
    result = _open(library, dynamic_artifact.path)
    assert result["status"] == 0, result


# ---------------------------------------------------------------- gate 5: the matrix


@pytest.mark.parametrize("case", CASES)
def test_gate_matrix_reports_the_changed_runtime_as_caught(case, runtime_from_this_tree, tmp_path):
    """The matrix's cell for a runtime changed this way (integration/matrix builds it from HEAD's
    wheel and installs it as an ordinary runtime): its end-to-end tests through onnxruntime must not
    pass, and what stops them is a refusal of ours, never an undefined symbol or a crash."""
    pytest.importorskip("hipdnn_ep", reason="needs the hipdnn-ep wheel")
    pytest.importorskip("onnxruntime")
    sys.path.insert(0, str(ROOT / "integration"))
    try:
        import matrix
    finally:
        sys.path.pop(0)
    library = tmp_path / Path(runtime_from_this_tree.library_path()).name
    library.write_bytes(matrix._edit_library(Path(runtime_from_this_tree.library_path()).read_bytes(), case))
    results = matrix.run_cell_script(Path(sys.executable), "run", "--out", str(tmp_path / "cell"),
                                     "--runtime-library", str(library), timeout=600)
    print(json.dumps(results, indent=1)[:6000])
    dynamic = {k: r for k, r in results.items() if k in ("dynamic:dynamic_encoder", "dynamic:dynamic_shape_chain")}
    assert len(dynamic) == 2 and all(r["outcome"] == "refused" for r in dynamic.values()), results
    assert not any(r["outcome"] == "fail" for r in results.values()), results
    if case == "removed":
        assert any(f"{SCRATCH}@HIPDNN_EP_1.0" in r["message"] for r in dynamic.values())
    else:
        assert any(POOL in r["message"] for r in dynamic.values())
    cell = matrix.Cell(*(matrix.Wheel(p, "HEAD", Path("-"), "0", (), (1, MINOR)) for p in ("compiler", "runtime",
                                                                                          "ep")),
                       "cpu", matrix.Expected("pass", ""), replay=True, install="ok", results=results)
    caught, actual = matrix.cell_verdict(cell)
    assert caught and actual != "passed"
